// A parameter server's shared-memory buffer: one POSIX shared-memory object that a worker creates
// (exclusively, mode 0600) and its server maps, so gradients and parameters between ranks of one
// host go through memory instead of a socket. The worker unlinks the name once the server has
// mapped it (or failed to); the memory goes with the last mapping.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace flock::dist {

class PsBuffer {
 public:
  // Creates `name` with `bytes` bytes and maps it; open() maps an existing one, which must have
  // exactly `bytes` bytes. Both fail with ERR_IO naming the object and why.
  static std::shared_ptr<PsBuffer> create(const std::string& name, size_t bytes);
  static std::shared_ptr<PsBuffer> open(const std::string& name, size_t bytes);
  static void unlink(const std::string& name);  // ENOENT is not an error
  // The names create() and open() accept: "/flockml-ps-" then 1 to 96 of [0-9a-z-].
  static bool valid_name(const std::string& name);

  PsBuffer(const PsBuffer&) = delete;
  PsBuffer& operator=(const PsBuffer&) = delete;
  ~PsBuffer();

  char* data() const { return static_cast<char*>(base_); }
  size_t size() const { return bytes_; }

 private:
  PsBuffer(void* base, size_t bytes) : base_(base), bytes_(bytes) {}
  void* base_;
  size_t bytes_;
};

}  // namespace flock::dist
