// The file calls that need <fcntl.h>. It declares a global `struct flock`, which collides with our
// namespace, so this header and its .cc stay outside namespace flock and include none of ours.
#pragma once

namespace flock_sys {

// Creates `path` exclusively for writing (close-on-exec). With `direct`, asks for O_DIRECT and
// falls back to a page-cache file where the file system refuses it; `*direct` says which it got.
// Returns the descriptor, or -1 with errno.
int create_exclusive(const char* path, bool* direct);

// Turns O_DIRECT off (a file system may accept the flag at open and refuse the I/O); false with errno.
bool clear_direct(int fd);

// Opens `path` read-only (close-on-exec); -1 with errno.
int open_read(const char* path);

}  // namespace flock_sys
