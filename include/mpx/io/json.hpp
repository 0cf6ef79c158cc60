// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief A small, strict JSON reader (RFC 8259) and the string escaping a writer needs: enough for
/// mpx's own files (experiment records), with errors that give the byte offset.
///
/// Numbers keep their text, so that integers up to 64 bits and doubles both read back exactly.
/// Nesting is limited (a hostile file cannot exhaust the stack) and duplicate keys are errors.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "mpx/error.hpp"

namespace mpx::io::json {

/// @brief A parsed JSON value.
struct Value {
  /// What the value is.
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;    ///< which of the members below holds the value
  bool boolean = false;      ///< for Kind::boolean
  std::string text;          ///< Kind::string: the decoded string; Kind::number: the number as written
  std::vector<Value> items;  ///< Kind::array
  std::vector<std::pair<std::string, Value>> members;  ///< Kind::object, in file order

  /// @brief The member called `key`, or null when there is none (objects only).
  [[nodiscard]] const Value* find(std::string_view key) const noexcept {
    for (const auto& [name, value] : members) {
      if (name == key) return &value;
    }
    return nullptr;
  }
};

/// @brief `text` as a JSON string literal, quotes included.
[[nodiscard]] inline std::string quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (const char c : text) {
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          constexpr char hex[] = "0123456789abcdef";
          out.append("\\u00");
          out.push_back(hex[(c >> 4) & 0xF]);
          out.push_back(hex[c & 0xF]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

namespace detail {

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  Value document() {
    Value value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the JSON value");
    return value;
  }

 private:
  static constexpr int max_depth = 64;

  [[noreturn]] void fail(std::string_view what) const {
    throw io_error(mpx::detail::concat(source_, ": invalid JSON at byte ", pos_, ": ", what));
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  [[nodiscard]] char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void expect(char c) {
    if (peek() != c) fail(mpx::detail::concat("expected '", c, "'"));
    ++pos_;
  }

  bool consume_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Value parse_value(int depth) {
    if (depth >= max_depth) fail("nested deeper than 64 levels");
    skip_space();
    Value value;
    const char c = peek();
    if (c == '{') {
      value.kind = Value::Kind::object;
      ++pos_;
      skip_space();
      if (peek() == '}') {
        ++pos_;
        return value;
      }
      std::unordered_set<std::string> keys;
      while (true) {
        skip_space();
        if (peek() != '"') fail("expected a string key");
        std::string key = parse_string();
        if (!keys.insert(key).second) fail(mpx::detail::concat("duplicate key ", quote(key)));
        skip_space();
        expect(':');
        value.members.emplace_back(std::move(key), parse_value(depth + 1));
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return value;
      }
    }
    if (c == '[') {
      value.kind = Value::Kind::array;
      ++pos_;
      skip_space();
      if (peek() == ']') {
        ++pos_;
        return value;
      }
      while (true) {
        value.items.push_back(parse_value(depth + 1));
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return value;
      }
    }
    if (c == '"') {
      value.kind = Value::Kind::string;
      value.text = parse_string();
      return value;
    }
    if (consume_word("true")) {
      value.kind = Value::Kind::boolean;
      value.boolean = true;
      return value;
    }
    if (consume_word("false")) {
      value.kind = Value::Kind::boolean;
      return value;
    }
    if (consume_word("null")) return value;
    if (c == '-' || (c >= '0' && c <= '9')) {
      value.kind = Value::Kind::number;
      value.text = parse_number();
      return value;
    }
    fail(pos_ < text_.size() ? "expected a value" : "unexpected end of input");
  }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  std::string parse_number() {
    const std::size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (is_digit(peek())) {
      while (is_digit(peek())) ++pos_;
    } else {
      fail("expected a digit");
    }
    if (peek() == '.') {
      ++pos_;
      if (!is_digit(peek())) fail("expected a digit after '.'");
      while (is_digit(peek())) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!is_digit(peek())) fail("expected a digit in the exponent");
      while (is_digit(peek())) ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  unsigned hex_digits() {
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      unsigned digit = 0;
      if (c >= '0' && c <= '9') {
        digit = static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<unsigned>(c - 'A' + 10);
      } else {
        fail("expected four hex digits after \\u");
      }
      code = code * 16 + digit;
      ++pos_;
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (code >> 6)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (code >> 12)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (code >> 18)));
      out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_];
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      ++pos_;
      if (c == '"') return out;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      const char escape = peek();
      ++pos_;
      switch (escape) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          unsigned code = hex_digits();
          if (code >= 0xD800 && code < 0xDC00) {  // a surrogate pair spells one code point
            if (!consume_word("\\u")) fail("unpaired surrogate");
            const unsigned low = hex_digits();
            if (low < 0xDC00 || low >= 0xE000) fail("unpaired surrogate");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code < 0xE000) {
            fail("unpaired surrogate");
          }
          append_utf8(out, code);
          break;
        }
        default: --pos_; fail("unknown escape");
      }
    }
  }

  std::string_view text_;
  std::string_view source_;
  std::size_t pos_ = 0;
};

}  // namespace detail

/// @brief Parses `text` as one JSON value; throws `mpx::io_error` naming `source` (a file name or
/// a description) and the byte offset of the first problem.
[[nodiscard]] inline Value parse(std::string_view text, std::string_view source = "JSON text") {
  return detail::Parser(text, source).document();
}

}  // namespace mpx::io::json
