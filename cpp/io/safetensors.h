// The safetensors format: an 8-byte little-endian header length, a JSON header (per tensor its
// dtype, shape and data_offsets; an optional "__metadata__" of strings) padded with spaces to a
// multiple of 8 bytes, then the tensors' bytes back to back. Headers are checked completely
// before any data is read: a bounded length, known dtypes, and offset ranges that lie inside the
// file, match dtype size × shape, and tile the data section exactly (no overlap, no hole, no
// tail). A file that fails any check is ERR_FORMAT naming the file and the tensor.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>
#include "../tensor.h"

namespace flock::io {

// As the reference implementation: larger headers are refused before anything is allocated.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

using Metadata = std::vector<std::pair<std::string, std::string>>;

struct TensorInfo {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte range within the data section
};

struct Header {
  std::vector<TensorInfo> tensors;  // in header order
  Metadata metadata;
  uint64_t header_bytes = 0;  // the JSON with its padding
  uint64_t data_bytes = 0;
  uint64_t data_start() const { return 8 + header_bytes; }
};

// "F32", "BF16", ... as the format spells flockml's dtypes.
const char* format_dtype_name(DType t);

// An open safetensors file whose header has been read and validated.
class SafetensorsReader {
 public:
  SafetensorsReader(const std::string& path, const char* op);
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  const Header& header() const { return header_; }
  // Reads each pair's tensor into its buffer (t.end - t.begin bytes), splitting large reads into
  // pieces spread over a few threads (see parallel_read.cc). A file that shrank since the header
  // was read is ERR_FORMAT naming the tensor; another failure is ERR_IO naming it.
  void read_many(const std::vector<std::pair<const TensorInfo*, void*>>& work) const;

 private:
  [[noreturn]] void bad(const std::string& why) const;
  void parse(const char* json, size_t n);
  void validate();

  std::string path_;
  const char* op_;
  std::FILE* file_ = nullptr;
  int fd_ = -1;
  uint64_t file_bytes_ = 0;
  Header header_;
};

// One tensor to write: its bytes are `host` when given (staged from a device), else tensor.raw().
struct WriteEntry {
  std::string name;
  Tensor tensor;
  const void* host = nullptr;
};

// The header for `entries` written in the given order, padded with spaces so the data starts on a
// multiple of `data_align` bytes from the file's start. Throws ERR_ARG for a duplicate, empty or
// reserved name.
std::string make_header(const std::vector<WriteEntry>& entries, const Metadata& metadata, const char* op, size_t data_align = 8);

// Files with at least this many bytes of data start it on a block boundary (see AtomicFile).
constexpr uint64_t kAlignDataFrom = uint64_t(1) << 20;

// Writes `entries` to `path` atomically: a temporary file in the same directory, fsync, rename,
// fsync of the directory. Tensors of whole blocks go first, then larger elements, so every tensor
// starts on a multiple of its element size. Throws ERR_IO naming the path on any failure (and leaves no temporary file).
void write_safetensors(const std::string& path, std::vector<WriteEntry> entries, const Metadata& metadata, const char* op);

}  // namespace flock::io
