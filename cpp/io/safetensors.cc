#include "safetensors.h"
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <unordered_set>
#include "atomic_file.h"
#include "json.h"

namespace flock::io {
namespace {

struct FormatDType {
  const char* name;
  DType dtype;
};
const FormatDType kFormatDTypes[] = {
    {"F32", DType::f32}, {"F64", DType::f64}, {"BF16", DType::bf16}, {"F16", DType::f16},
    {"I32", DType::i32}, {"I64", DType::i64}, {"U8", DType::u8},     {"BOOL", DType::boolean},
};

std::string quoted(const std::string& name) { return "'" + name + "'"; }

}  // namespace

const char* format_dtype_name(DType t) {
  for (const auto& d : kFormatDTypes)
    if (d.dtype == t) return d.name;
  fail(Code::DType, "safetensors: no format name for dtype ", dtype_name(t));
}

SafetensorsReader::SafetensorsReader(const std::string& path, const char* op) : path_(path), op_(op) {
  file_ = open_for_read(path);
  if (!file_) fail(Code::IO, op, ": cannot open ", path, ": ", std::strerror(errno));
  fd_ = fileno(file_);
  try {
    struct stat st;
    if (::fstat(fd_, &st) != 0) fail(Code::IO, op, ": cannot stat ", path, ": ", std::strerror(errno));
    if (!S_ISREG(st.st_mode)) fail(Code::IO, op, ": ", path, " is not a regular file");
    file_bytes_ = static_cast<uint64_t>(st.st_size);
    if (file_bytes_ < 8) bad("truncated: " + std::to_string(file_bytes_) + " bytes, shorter than the 8-byte header length");
    unsigned char len[8];
    if (!pread_all(fd_, len, 8, 0)) bad("truncated while reading the header length");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
    if (n > kMaxHeaderBytes)
      bad("header length " + std::to_string(n) + " exceeds the limit of " + std::to_string(kMaxHeaderBytes) + " bytes");
    if (n > file_bytes_ - 8)
      bad("truncated: the header is " + std::to_string(n) + " bytes but only " + std::to_string(file_bytes_ - 8) +
          " follow the length");
    std::string json(static_cast<size_t>(n), '\0');
    if (!pread_all(fd_, json.data(), json.size(), 8)) bad("truncated while reading the header");
    header_.header_bytes = n;
    header_.data_bytes = file_bytes_ - 8 - n;
    parse(json.data(), json.size());
    validate();
  } catch (...) {
    std::fclose(file_);
    file_ = nullptr;
    throw;
  }
}

SafetensorsReader::~SafetensorsReader() {
  if (file_) std::fclose(file_);
}

void SafetensorsReader::bad(const std::string& why) const { fail(Code::Format, op_, ": ", path_, ": ", why); }

void SafetensorsReader::parse(const char* text, size_t n) {
  if (n == 0 || text[0] != '{') bad("the header is not a JSON object");
  // JSON text is UTF-8; a name in another encoding would come out mangled, not refused.
  if (const size_t at = invalid_utf8(text, n); at < n) bad("the header is not valid UTF-8 (byte " + std::to_string(at) + ")");
  Json doc;
  try {
    doc = parse_json(text, n);
  } catch (const std::runtime_error& e) {
    bad(std::string("malformed header: ") + e.what());
  }
  auto as_uint = [&](const Json& v, const std::string& tensor, const char* field) {
    if (v.kind != Json::Kind::Number || !v.is_uint)
      bad("tensor " + quoted(tensor) + ": " + field + " must hold non-negative integers, got " +
          (v.kind == Json::Kind::Number ? v.text : "a non-number"));
    return v.uint;
  };
  for (const auto& [name, entry] : doc.members) {
    if (name == "__metadata__") {
      if (entry.kind != Json::Kind::Object) bad("__metadata__ must be an object of strings");
      for (const auto& [k, v] : entry.members) {
        if (v.kind != Json::Kind::String) bad("__metadata__ entry " + quoted(k) + " must be a string");
        header_.metadata.emplace_back(k, v.text);
      }
      continue;
    }
    if (entry.kind != Json::Kind::Object) bad("tensor " + quoted(name) + ": entry must be an object");
    const Json *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
    for (const auto& [k, v] : entry.members) {
      if (k == "dtype")
        dtype = &v;
      else if (k == "shape")
        shape = &v;
      else if (k == "data_offsets")
        offsets = &v;
    }
    if (!dtype || !shape || !offsets) bad("tensor " + quoted(name) + ": entry needs dtype, shape and data_offsets");
    TensorInfo t;
    t.name = name;
    if (dtype->kind != Json::Kind::String) bad("tensor " + quoted(name) + ": dtype must be a string");
    bool known = false;
    for (const auto& d : kFormatDTypes)
      if (dtype->text == d.name) {
        t.dtype = d.dtype;
        known = true;
      }
    if (!known)
      bad("tensor " + quoted(name) + ": unsupported dtype '" + dtype->text +
          "' (flockml reads F32, F64, BF16, F16, I32, I64, U8, BOOL)");
    if (shape->kind != Json::Kind::Array) bad("tensor " + quoted(name) + ": shape must be an array");
    if (shape->items.size() > 16)
      bad("tensor " + quoted(name) + ": " + std::to_string(shape->items.size()) + " dimensions (at most 16 are supported)");
    for (const Json& d : shape->items) {
      const uint64_t s = as_uint(d, name, "shape");
      if (s > (uint64_t(1) << 48)) bad("tensor " + quoted(name) + ": dimension " + std::to_string(s) + " is too large");
      t.shape.push_back(static_cast<int64_t>(s));
    }
    if (offsets->kind != Json::Kind::Array || offsets->items.size() != 2)
      bad("tensor " + quoted(name) + ": data_offsets must be [begin, end]");
    t.begin = as_uint(offsets->items[0], name, "data_offsets");
    t.end = as_uint(offsets->items[1], name, "data_offsets");
    header_.tensors.push_back(std::move(t));
  }
}

void SafetensorsReader::validate() {
  const uint64_t data = header_.data_bytes;
  for (const TensorInfo& t : header_.tensors) {
    uint64_t bytes = dtype_size(t.dtype);
    for (int64_t s : t.shape) {
      const auto d = static_cast<uint64_t>(s);
      if (d != 0 && bytes > UINT64_MAX / d) bad("tensor " + quoted(t.name) + ": shape " + shape_str(t.shape) + " overflows");
      bytes *= d;
    }
    if (t.begin > t.end)
      bad("tensor " + quoted(t.name) + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
          "] end before they begin");
    if (t.end - t.begin != bytes)
      bad("tensor " + quoted(t.name) + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "] hold " +
          std::to_string(t.end - t.begin) + " bytes, but " + format_dtype_name(t.dtype) + " " + shape_str(t.shape) + " needs " +
          std::to_string(bytes));
    if (t.end > data)
      bad("truncated: tensor " + quoted(t.name) + " ends at data byte " + std::to_string(t.end) + " but the file holds " +
          std::to_string(data) + " bytes of data");
  }
  // Sorted by range, the tensors must tile [0, data) exactly: each starts where the last ended.
  std::vector<const TensorInfo*> order;
  order.reserve(header_.tensors.size());
  for (const TensorInfo& t : header_.tensors) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t at = 0;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo* t : order) {
    if (t->begin < at)
      bad("tensor " + quoted(t->name) + ": data_offsets [" + std::to_string(t->begin) + ", " + std::to_string(t->end) +
          "] overlap tensor " + quoted(prev->name) + " [" + std::to_string(prev->begin) + ", " + std::to_string(prev->end) + "]");
    if (t->begin > at)
      bad("tensor " + quoted(t->name) + ": data begins at byte " + std::to_string(t->begin) + ", leaving a gap after byte " +
          std::to_string(at));
    at = t->end;
    prev = t;
  }
  if (at != data) bad(std::to_string(data - at) + " bytes of data follow the last tensor (the header does not describe them)");
}

std::string make_header(const std::vector<WriteEntry>& entries, const Metadata& metadata, const char* op, size_t data_align) {
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      if (i) json += ',';
      append_json_string(json, metadata[i].first);
      json += ':';
      append_json_string(json, metadata[i].second);
    }
    json += '}';
  }
  std::unordered_set<std::string> seen;
  uint64_t at = 0;
  for (const WriteEntry& e : entries) {
    if (e.name.empty()) fail(Code::Arg, op, ": tensor names must not be empty");
    if (e.name == "__metadata__") fail(Code::Arg, op, ": '__metadata__' is reserved by the format and cannot name a tensor");
    if (!seen.insert(e.name).second) fail(Code::Arg, op, ": duplicate tensor name '", e.name, "'");
    if (json.size() > 1) json += ',';
    append_json_string(json, e.name);
    json += ":{\"dtype\":\"";
    json += format_dtype_name(e.tensor.dtype);
    json += "\",\"shape\":[";
    for (size_t d = 0; d < e.tensor.shape.size(); ++d) {
      if (d) json += ',';
      json += std::to_string(e.tensor.shape[d]);
    }
    const uint64_t end = at + e.tensor.nbytes();
    json += "],\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(end) + "]}";
    at = end;
  }
  json += '}';
  json.append((data_align - (8 + json.size()) % data_align) % data_align, ' ');  // data starts on a multiple of data_align
  if (json.size() > kMaxHeaderBytes)
    fail(Code::Arg, op, ": the header would be ", json.size(), " bytes, over the format's limit of ", kMaxHeaderBytes);
  return json;
}

void write_safetensors(const std::string& path, std::vector<WriteEntry> entries, const Metadata& metadata, const char* op) {
  // Tensors of whole blocks first (each then starts on a block boundary, so AtomicFile writes it
  // straight from memory), then larger elements first, so every tensor starts on a multiple of its
  // element size.
  const auto whole_blocks = [](const WriteEntry& e) { return e.tensor.nbytes() % kBlockAlign == 0; };
  std::stable_sort(entries.begin(), entries.end(), [&](const WriteEntry& a, const WriteEntry& b) {
    if (whole_blocks(a) != whole_blocks(b)) return whole_blocks(a);
    return dtype_size(a.tensor.dtype) > dtype_size(b.tensor.dtype);
  });
  uint64_t data_bytes = 0;
  for (const WriteEntry& e : entries) data_bytes += e.tensor.nbytes();
  // Large files start their data on a block boundary (the header's padding is at most 4 KiB).
  const std::string header = make_header(entries, metadata, op, data_bytes >= kAlignDataFrom ? kBlockAlign : 8);
  AtomicFile file(path, op);
  unsigned char len[8];
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i, n >>= 8) len[i] = static_cast<unsigned char>(n & 0xff);
  file.write(len, 8);
  file.write(header.data(), header.size());
  for (const WriteEntry& e : entries) file.write(e.host ? e.host : e.tensor.raw(), e.tensor.nbytes());
  file.commit();
}

}  // namespace flock::io
