// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief A small, strict JSON reader (RFC 8259) and the string and number text a writer needs: enough for
/// mpx's own files (experiment records, safetensors headers), with errors that give the byte offset.
///
/// Numbers keep their text, so that integers up to 64 bits and doubles both read back exactly.
/// Nesting is limited (a hostile file cannot exhaust the stack), duplicate keys are errors, and
/// strings must be valid UTF-8.

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "mpx/error.hpp"

namespace mpx::io::json {

/// @brief A parsed JSON value.
struct Value {
  /// What the value is.
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;  ///< which of the members below holds the value
  bool boolean = false;    ///< for Kind::boolean
  std::string text;        ///< Kind::string: the decoded string; Kind::number: the number as written
  /// Kind::array: the elements; Kind::object: the members' values, in file order.
  std::vector<Value> items;
  /// Kind::object: the members' names; `keys[i]` names `items[i]`.
  std::vector<std::string> keys;

  /// @brief The member called `key`, or null when there is none (objects only).
  [[nodiscard]] const Value* find(std::string_view key) const noexcept {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == key) return &items[i];
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

/// @brief `value` as a JSON number: integers exactly, floating point as the shortest decimal that
/// reads back to the same value in its own type (1e-05f prints "1e-05"); `null` for inf and NaN,
/// which JSON cannot hold.
template <class T>
requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) [[nodiscard]] std::string number(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(value)) return "null";
  }
  return mpx::detail::exact_text(value);
}

namespace detail {

/// The lexical layer both of mpx's JSON readers stand on (the generic `json::parse` below and the
/// safetensors header reader): a position in the text, whitespace, punctuation and strict strings
/// (escapes and surrogate pairs decoded to UTF-8, control characters and malformed UTF-8 rejected).
/// Errors are `io_error`s "<prefix><base + offset>: <what>".
class Cursor {
 public:
  Cursor(std::string_view text, std::string prefix, std::size_t base = 0)
      : prefix_(std::move(prefix)), base_(base), text_(text) {}

  template <class... Parts>
  [[noreturn]] void fail(std::size_t at, const Parts&... what) const {
    throw io_error(mpx::detail::concat(prefix_, base_ + at, ": ", what...));
  }

  [[nodiscard]] std::string_view text() const noexcept { return text_; }
  [[nodiscard]] std::size_t position() const noexcept { return position_; }
  [[nodiscard]] bool at_end() const noexcept { return position_ >= text_.size(); }
  [[nodiscard]] char peek() const noexcept { return position_ < text_.size() ? text_[position_] : '\0'; }
  void advance(std::size_t count = 1) noexcept { position_ += count; }

  bool consume(char c) noexcept {
    if (position_ < text_.size() && text_[position_] == c) {
      ++position_;
      return true;
    }
    return false;
  }
  bool consume(std::string_view word) noexcept {
    if (text_.substr(position_, word.size()) != word) return false;
    position_ += word.size();
    return true;
  }
  void expect(char c, const char* what) {
    if (!consume(c)) fail(position_, what, " (found ", describe_char(), ")");
  }
  void skip_space() noexcept {
    while (position_ < text_.size() && (text_[position_] == ' ' || text_[position_] == '\t' ||
                                        text_[position_] == '\n' || text_[position_] == '\r')) {
      ++position_;
    }
  }

  /// The character at the position, for messages: 'x', "byte 0x1f" or "the end of the text".
  [[nodiscard]] std::string describe_char() const {
    if (position_ >= text_.size()) return "the end of the text";
    const auto c = static_cast<unsigned char>(text_[position_]);
    if (c >= 0x20 && c < 0x7f) return mpx::detail::concat("'", static_cast<char>(c), "'");
    return mpx::detail::concat("byte 0x", hex(c));
  }

  static std::string hex(unsigned char value) {
    constexpr const char* digits = "0123456789abcdef";
    return {digits[value >> 4], digits[value & 0xf]};
  }

  /// Text from a file for a message: at most 64 characters, control characters escaped.
  static std::string printable(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size() && i < 64; ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c < 0x20 || c == 0x7f) {
        out.append("\\x").append(hex(c));
      } else {
        out.push_back(static_cast<char>(c));
      }
    }
    if (text.size() > 64) out.append("...");
    return out;
  }

  /// A JSON string at the position, decoded.
  std::string parse_string() {
    if (peek() != '"') fail(position_, "found ", describe_char(), ", expected a string");
    const std::size_t start = position_++;
    std::string out;
    for (;;) {
      if (position_ >= text_.size()) fail(start, "unterminated string");
      const auto c = static_cast<unsigned char>(text_[position_]);
      if (c == '"') {
        ++position_;
        return out;
      }
      if (c < 0x20) fail(position_, "control character 0x", hex(c), " inside a string");
      if (c == '\\') {
        ++position_;
        if (position_ >= text_.size()) fail(start, "unterminated string");
        const char e = text_[position_++];
        switch (e) {
          case '"': out.push_back('"'); break;
          case '\\': out.push_back('\\'); break;
          case '/': out.push_back('/'); break;
          case 'b': out.push_back('\b'); break;
          case 'f': out.push_back('\f'); break;
          case 'n': out.push_back('\n'); break;
          case 'r': out.push_back('\r'); break;
          case 't': out.push_back('\t'); break;
          case 'u': append_escaped_code_point(out); break;
          default: fail(position_ - 1, "invalid escape '\\", printable(std::string_view(&e, 1)), "'");
        }
        continue;
      }
      if (c < 0x80) {
        out.push_back(static_cast<char>(c));
        ++position_;
        continue;
      }
      // Multi-byte UTF-8: validate the lead byte, the continuation bytes and overlong/surrogate forms.
      const std::size_t at = position_;
      int length = 0;
      std::uint32_t code = 0;
      if (c >= 0xc2 && c <= 0xdf) {
        length = 2, code = c & 0x1fu;
      } else if (c >= 0xe0 && c <= 0xef) {
        length = 3, code = c & 0x0fu;
      } else if (c >= 0xf0 && c <= 0xf4) {
        length = 4, code = c & 0x07u;
      } else {
        fail(at, "invalid UTF-8 byte 0x", hex(c));
      }
      if (at + static_cast<std::size_t>(length) > text_.size()) fail(at, "truncated UTF-8 sequence");
      for (int k = 1; k < length; ++k) {
        const auto next = static_cast<unsigned char>(text_[at + static_cast<std::size_t>(k)]);
        if ((next & 0xc0u) != 0x80u)
          fail(at + static_cast<std::size_t>(k), "invalid UTF-8 continuation byte 0x", hex(next));
        code = (code << 6) | (next & 0x3fu);
      }
      if ((length == 3 && (code < 0x800 || (code >= 0xd800 && code <= 0xdfff))) ||
          (length == 4 && (code < 0x10000 || code > 0x10ffff))) {
        fail(at, "invalid UTF-8 sequence (overlong, surrogate or beyond U+10FFFF)");
      }
      out.append(text_.substr(at, static_cast<std::size_t>(length)));
      position_ = at + static_cast<std::size_t>(length);
    }
  }

 private:
  void append_escaped_code_point(std::string& out) {
    const std::size_t at = position_ - 2;
    std::uint32_t code = parse_hex4();
    if (code >= 0xd800 && code <= 0xdbff) {
      if (!(position_ + 1 < text_.size() && text_[position_] == '\\' && text_[position_ + 1] == 'u')) {
        fail(at, "unpaired UTF-16 surrogate in a \\u escape");
      }
      position_ += 2;
      const std::uint32_t low = parse_hex4();
      if (low < 0xdc00 || low > 0xdfff) fail(at, "unpaired UTF-16 surrogate in a \\u escape");
      code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
    } else if (code >= 0xdc00 && code <= 0xdfff) {
      fail(at, "unpaired UTF-16 surrogate in a \\u escape");
    }
    if (code < 0x80) {
      out.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (code >> 6)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
    } else if (code < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (code >> 12)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (code >> 18)));
      out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
    }
  }

  std::uint32_t parse_hex4() {
    std::uint32_t value = 0;
    for (int k = 0; k < 4; ++k) {
      if (position_ >= text_.size()) fail(position_, "truncated \\u escape");
      const char h = text_[position_];
      std::uint32_t digit = 0;
      if (h >= '0' && h <= '9') {
        digit = static_cast<std::uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        digit = static_cast<std::uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        digit = static_cast<std::uint32_t>(h - 'A' + 10);
      } else {
        fail(position_, "invalid hex digit ", describe_char(), " in a \\u escape");
      }
      value = value * 16 + digit;
      ++position_;
    }
    return value;
  }

  std::string prefix_;
  std::size_t base_ = 0;

 protected:
  std::string_view text_;     // NOLINT: the readers built on the cursor scan it directly
  std::size_t position_ = 0;  // NOLINT
};

// The generic reader: any JSON value, nested at most 64 levels.
class Parser : Cursor {
 public:
  Parser(std::string_view text, std::string_view source)
      : Cursor(text, mpx::detail::concat(source, ": invalid JSON at byte ")) {}

  Value document() {
    Value value = parse_value(0);
    skip_space();
    if (!at_end()) fail(position(), "unexpected text after the JSON value");
    return value;
  }

 private:
  static constexpr int max_depth = 64;

  Value parse_value(int depth) {
    if (depth >= max_depth) fail(position(), "nested deeper than 64 levels");
    skip_space();
    Value value;
    const char c = peek();
    if (consume('{')) {
      value.kind = Value::Kind::object;
      skip_space();
      if (consume('}')) return value;
      std::unordered_set<std::string> keys;
      while (true) {
        skip_space();
        if (peek() != '"') fail(position(), "expected a string key");
        const std::size_t key_at = position();
        std::string key = parse_string();
        if (!keys.insert(key).second) fail(key_at, "duplicate key ", quote(key));
        skip_space();
        expect(':', "expected ':' after a key");
        value.keys.push_back(std::move(key));
        value.items.push_back(parse_value(depth + 1));
        skip_space();
        if (consume('}')) return value;
        expect(',', "expected ',' or '}' in an object");
      }
    }
    if (consume('[')) {
      value.kind = Value::Kind::array;
      skip_space();
      if (consume(']')) return value;
      while (true) {
        value.items.push_back(parse_value(depth + 1));
        skip_space();
        if (consume(']')) return value;
        expect(',', "expected ',' or ']' in an array");
      }
    }
    if (c == '"') {
      value.kind = Value::Kind::string;
      value.text = parse_string();
      return value;
    }
    if (consume(std::string_view("true"))) {
      value.kind = Value::Kind::boolean;
      value.boolean = true;
      return value;
    }
    if (consume(std::string_view("false"))) {
      value.kind = Value::Kind::boolean;
      return value;
    }
    if (consume(std::string_view("null"))) return value;
    if (c == '-' || (c >= '0' && c <= '9')) {
      value.kind = Value::Kind::number;
      value.text = parse_number();
      return value;
    }
    fail(position(), at_end() ? "unexpected end of input" : "expected a value");
  }

  static bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

  // A number as RFC 8259 spells it, returned as written.
  std::string parse_number() {
    const std::size_t start = position();
    consume('-');
    if (!consume('0')) {
      if (!is_digit(peek())) fail(position(), "expected a digit");
      while (is_digit(peek())) advance();
    }
    if (consume('.')) {
      if (!is_digit(peek())) fail(position(), "expected a digit after '.'");
      while (is_digit(peek())) advance();
    }
    if (consume('e') || consume('E')) {
      if (!consume('+')) consume('-');
      if (!is_digit(peek())) fail(position(), "expected a digit in the exponent");
      while (is_digit(peek())) advance();
    }
    return std::string(text().substr(start, position() - start));
  }
};

}  // namespace detail

/// @brief Parses `text` as one JSON value; throws `mpx::io_error` naming `source` (a file name or
/// a description) and the byte offset of the first problem.
[[nodiscard]] inline Value parse(std::string_view text, std::string_view source = "JSON text") {
  return detail::Parser(text, source).document();
}

}  // namespace mpx::io::json
