#include "json.h"
#include <stdexcept>
#include <unordered_set>

namespace flock::io {
namespace {

class Parser {
 public:
  Parser(const char* s, size_t n) : s_(s), n_(n) {}

  Json document() {
    Json v = value(0);
    skip_ws();
    if (i_ != n_) error("unexpected data after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& why) const {
    throw std::runtime_error(why + " at byte " + std::to_string(i_) + " of the header");
  }
  void skip_ws() {
    while (i_ < n_ && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  char peek() {
    skip_ws();
    if (i_ >= n_) error("unexpected end of the header");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) error(std::string("expected '") + c + "'");
    ++i_;
  }
  void literal(const char* word) {
    for (const char* p = word; *p; ++p, ++i_)
      if (i_ >= n_ || s_[i_] != *p) error(std::string("expected '") + word + "'");
  }

  Json value(int depth) {
    if (depth > kMaxJsonDepth) error("JSON nested too deeply");
    Json v;
    const char c = peek();
    if (c == '{') {
      v.kind = Json::Kind::Object;
      ++i_;
      if (peek() == '}') {
        ++i_;
        return v;
      }
      std::unordered_set<std::string> seen;
      for (;;) {
        if (peek() != '"') error("expected a member name");
        std::string key = string();
        if (!seen.insert(key).second) error("duplicate name \"" + key + "\"");
        expect(':');
        v.members.emplace_back(std::move(key), value(depth + 1));
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::Kind::Array;
      ++i_;
      if (peek() == ']') {
        ++i_;
        return v;
      }
      for (;;) {
        v.items.push_back(value(depth + 1));
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::Kind::String;
      v.text = string();
      return v;
    }
    if (c == 't') {
      literal("true");
      v.kind = Json::Kind::Bool;
      v.boolean = true;
      return v;
    }
    if (c == 'f') {
      literal("false");
      v.kind = Json::Kind::Bool;
      return v;
    }
    if (c == 'n') {
      literal("null");
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    error(std::string("unexpected character '") + c + "'");
  }

  Json number() {
    Json v;
    v.kind = Json::Kind::Number;
    const size_t start = i_;
    bool plain = true;  // digits only
    if (s_[i_] == '-') {
      plain = false;
      ++i_;
    }
    if (i_ >= n_ || s_[i_] < '0' || s_[i_] > '9') error("malformed number");
    while (i_ < n_ && ((s_[i_] >= '0' && s_[i_] <= '9') || s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E' || s_[i_] == '+' ||
                       s_[i_] == '-')) {
      if (s_[i_] < '0' || s_[i_] > '9') plain = false;
      ++i_;
    }
    v.text.assign(s_ + start, i_ - start);
    if (!plain) return v;
    if (v.text.size() > 1 && v.text[0] == '0') error("malformed number (leading zero)");
    uint64_t x = 0;
    for (char d : v.text) {
      const uint64_t digit = static_cast<uint64_t>(d - '0');
      if (x > (UINT64_MAX - digit) / 10) return v;  // too large: not an exact integer
      x = x * 10 + digit;
    }
    v.is_uint = true;
    v.uint = x;
    return v;
  }

  unsigned hex4() {
    if (n_ - i_ < 4) error("truncated \\u escape");
    unsigned x = 0;
    for (int k = 0; k < 4; ++k, ++i_) {
      const char h = s_[i_];
      x <<= 4;
      if (h >= '0' && h <= '9')
        x |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        x |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        x |= static_cast<unsigned>(h - 'A' + 10);
      else
        error("malformed \\u escape");
    }
    return x;
  }

  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    for (;;) {
      if (i_ >= n_) error("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= n_) error("unterminated string");
      const char e = s_[i_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xd800 && cp < 0xdc00) {  // a surrogate pair
            if (n_ - i_ < 2 || s_[i_] != '\\' || s_[i_ + 1] != 'u') error("unpaired surrogate in a \\u escape");
            i_ += 2;
            const unsigned lo = hex4();
            if (lo < 0xdc00 || lo >= 0xe000) error("unpaired surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          } else if (cp >= 0xdc00 && cp < 0xe000) {
            error("unpaired surrogate in a \\u escape");
          }
          put_utf8(out, cp);
          break;
        }
        default:
          error("invalid escape in a string");
      }
    }
  }

  const char* s_;
  size_t n_;
  size_t i_ = 0;
};

}  // namespace

Json parse_json(const char* s, size_t n) { return Parser(s, n).document(); }

size_t invalid_utf8(const char* text, size_t n) {
  const auto* s = reinterpret_cast<const unsigned char*>(text);
  for (size_t i = 0; i < n;) {
    const unsigned c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The continuation bytes' count, and the range of the second byte (RFC 3629: no overlong
    // forms, no surrogates, nothing above U+10FFFF).
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
      len = 1;
    else if (c == 0xE0)
      len = 2, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC)
      len = 2;
    else if (c == 0xED)
      len = 2, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF)
      len = 2;
    else if (c == 0xF0)
      len = 3, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3)
      len = 3;
    else if (c == 0xF4)
      len = 3, hi = 0x8F;
    else
      return i;
    if (i + len >= n) return i;  // cut short
    if (s[i + 1] < lo || s[i + 1] > hi) return i;
    for (size_t k = 2; k <= len; ++k)
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
    i += len + 1;
  }
  return n;
}

void append_json_string(std::string& out, const std::string& s) {
  static const char hex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (u < 0x20) {
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else
      out += c;
  }
  out += '"';
}

}  // namespace flock::io
