// The JSON that safetensors headers are made of: a strict reader (objects, arrays, strings,
// unsigned integers; nothing else a header needs) and string quoting for the writer. The reader
// never recurses deeper than kMaxJsonDepth and reports the byte where a header went wrong.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace flock::io {

constexpr int kMaxJsonDepth = 32;

struct Json {
  enum class Kind : uint8_t { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  // Numbers: only non-negative integers below 2^64 are exact; anything else (a sign, a fraction,
  // an exponent) is kept as text and rejected by whoever expects an integer.
  bool is_uint = false;
  uint64_t uint = 0;
  std::string text;  // a string's value, or a number's source text
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;  // in file order; duplicates are refused
};

// Parses `s` (one value, then only whitespace). Throws std::runtime_error with the offset and the
// reason; the caller turns it into ERR_FORMAT naming the file.
Json parse_json(const char* s, size_t n);

// Appends `s` as a JSON string literal (quotes, escapes for '"', '\\' and control characters).
void append_json_string(std::string& out, const std::string& s);
// The offset of the first byte of `text` that is not well-formed UTF-8 (RFC 3629), or n.
size_t invalid_utf8(const char* text, size_t n);

}  // namespace flock::io
