// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The safetensors format (Hugging Face): a validating reader and an atomic writer.
///
/// Layout: an unsigned 64-bit little-endian header length N, N bytes of UTF-8 JSON, then the data
/// buffer. The JSON is an object mapping each tensor name to `{"dtype": "F32", "shape": [2, 3],
/// "data_offsets": [begin, end]}` (offsets relative to the data buffer), plus an optional
/// `"__metadata__"` object of string to string. The tensors tile the data buffer exactly: sorted by
/// offset, each begins where the previous ends, the first at 0 and the last at the end of the file.
///
/// The reader checks everything before it allocates anything beyond the file itself: the header
/// length against the file size, the JSON syntax (strict: no duplicate keys, no unknown fields, no
/// trailing characters but the format's space padding), each dtype, each shape's product times the
/// element size against its byte range, and that the ranges neither overlap, leave holes nor run past
/// the end. A failure is an `mpx::io_error` naming the file, the byte offset and the value found.
/// mpx reads and writes the data in the host's byte order and therefore requires a little-endian
/// host, as the format does.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mpx/error.hpp"
#include "mpx/io/atomic_file.hpp"
#include "mpx/io/json.hpp"
#include "mpx/io/read_file.hpp"

namespace mpx::io {

static_assert(std::endian::native == std::endian::little,
              "mpx::io: safetensors data is little-endian and mpx reads it in place; big-endian hosts are "
              "not supported");

/// @brief Element types of the safetensors format.
enum class Dtype : std::uint8_t {
  F64,
  F32,
  F16,
  BF16,
  F8_E4M3,
  F8_E5M2,
  I64,
  I32,
  I16,
  I8,
  U64,
  U32,
  U16,
  U8,
  BOOL
};

namespace detail {
struct DtypeInfo {
  Dtype dtype;
  std::string_view name;
  std::size_t size;
};
inline constexpr DtypeInfo dtype_table[] = {
    {Dtype::F64, "F64", 8},   {Dtype::F32, "F32", 4},         {Dtype::F16, "F16", 2},
    {Dtype::BF16, "BF16", 2}, {Dtype::F8_E4M3, "F8_E4M3", 1}, {Dtype::F8_E5M2, "F8_E5M2", 1},
    {Dtype::I64, "I64", 8},   {Dtype::I32, "I32", 4},         {Dtype::I16, "I16", 2},
    {Dtype::I8, "I8", 1},     {Dtype::U64, "U64", 8},         {Dtype::U32, "U32", 4},
    {Dtype::U16, "U16", 2},   {Dtype::U8, "U8", 1},           {Dtype::BOOL, "BOOL", 1},
};
}  // namespace detail

/// @brief The format's name of `dtype` ("F32", "BF16", ...).
[[nodiscard]] constexpr std::string_view dtype_name(Dtype dtype) noexcept {
  return detail::dtype_table[static_cast<std::size_t>(dtype)].name;
}

/// @brief Bytes per element of `dtype`.
[[nodiscard]] constexpr std::size_t dtype_size(Dtype dtype) noexcept {
  return detail::dtype_table[static_cast<std::size_t>(dtype)].size;
}

/// @brief Largest header `load_safetensors` accepts (100 MB, the limit of the reference
/// implementation); a longer one is rejected as corrupt before anything is read.
inline constexpr std::uint64_t max_safetensors_header_bytes = 100'000'000;

/// @brief One tensor to write: its name, dtype, shape and raw little-endian bytes (not copied; they
/// must stay alive until the write returns).
struct TensorToWrite {
  std::string name;                  ///< its key in the header
  Dtype dtype = Dtype::F32;          ///< element type
  std::vector<std::int64_t> shape;   ///< extents, outermost first
  std::span<const std::byte> bytes;  ///< the data: product of the shape times the element size
};

/// @brief Where one tensor of a parsed file lies.
struct TensorEntry {
  Dtype dtype = Dtype::F32;         ///< element type
  std::vector<std::int64_t> shape;  ///< extents, outermost first
  std::uint64_t begin = 0;          ///< offset of its first byte in the data buffer
  std::uint64_t end = 0;            ///< offset one past its last byte

  /// @brief Number of elements: the product of `shape` (1 for a scalar).
  [[nodiscard]] std::int64_t numel() const noexcept {
    std::int64_t n = 1;
    for (const std::int64_t extent : shape) n *= extent;
    return n;
  }
};

/// @brief A validated safetensors file held in memory: its metadata and its tensors, whose bytes are
/// views into the one buffer the file was read into.
class SafetensorsFile {
 public:
  /// @brief The `__metadata__` map (empty when the file has none).
  [[nodiscard]] const std::map<std::string, std::string>& metadata() const noexcept { return metadata_; }
  /// @brief Every tensor by name.
  [[nodiscard]] const std::map<std::string, TensorEntry>& tensors() const noexcept { return tensors_; }
  /// @brief The tensor called `name`, or null.
  [[nodiscard]] const TensorEntry* find(std::string_view name) const {
    const auto it = tensors_.find(std::string(name));
    return it == tensors_.end() ? nullptr : &it->second;
  }
  /// @brief The raw little-endian bytes of `entry` (which must come from this file).
  [[nodiscard]] std::span<const std::byte> data(const TensorEntry& entry) const noexcept {
    return std::span<const std::byte>(contents_).subspan(data_start_ + entry.begin, entry.end - entry.begin);
  }
  /// @brief Where the file came from (for messages).
  [[nodiscard]] const std::string& source() const noexcept { return source_; }

 private:
  friend SafetensorsFile parse_safetensors(std::vector<std::byte> contents, std::string source);
  std::vector<std::byte> contents_;
  std::size_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, TensorEntry> tensors_;
  std::string source_;
};

namespace detail {

using mpx::detail::concat;

/// Throws `io_error` "mpx::io::load_safetensors: "<source>" at byte <at>: <what>".
template <class... Parts>
[[noreturn]] void fail_at(const std::string& source, std::uint64_t at, const Parts&... what) {
  throw io_error(concat("mpx::io::load_safetensors: \"", source, "\" at byte ", at, ": ", what...));
}

/// A strict recursive-descent reader of exactly the JSON a safetensors header may hold. It never
/// recurses deeper than three levels (header object, tensor object, shape array), so no input can
/// exhaust the stack, and everything it stores is bounded by the header's length.
class HeaderParser : json::detail::Cursor {
 public:
  // Offsets in messages count from the start of the file: the header follows its 8-byte length.
  HeaderParser(std::string_view text, const std::string& source)
      : Cursor(text, concat("mpx::io::load_safetensors: \"", source, "\" at byte "), 8) {}

  /// Fills `metadata` and `tensors`, and `positions` with the offset (in the file) of each tensor's entry.
  void parse(std::map<std::string, std::string>& metadata, std::map<std::string, TensorEntry>& tensors,
             std::map<std::string, std::uint64_t>& positions) {
    skip_space();
    expect('{', "the header must be a JSON object");
    skip_space();
    bool seen_metadata = false;
    if (!consume('}')) {
      for (;;) {
        skip_space();
        const std::size_t key_at = position_;
        std::string key = parse_string();
        skip_space();
        expect(':', "expected ':' after an object key");
        skip_space();
        if (key == "__metadata__") {
          if (seen_metadata) fail(key_at, "duplicate key \"__metadata__\"");
          seen_metadata = true;
          parse_metadata(metadata);
        } else {
          if (tensors.count(key) != 0) fail(key_at, "duplicate tensor name \"", printable(key), "\"");
          TensorEntry entry = parse_tensor(key);
          positions.emplace(key, 8 + key_at);
          tensors.emplace(std::move(key), std::move(entry));
        }
        skip_space();
        if (consume('}')) break;
        expect(',', "expected ',' or '}' after a value in the header object");
      }
    }
    // The format pads the header with spaces to a multiple of 8 bytes; nothing else may follow.
    while (position_ < text_.size() && text_[position_] == ' ') ++position_;
    if (position_ != text_.size()) {
      fail(position_, "unexpected ", describe_char(), " after the header object");
    }
  }

 private:
  void parse_metadata(std::map<std::string, std::string>& metadata) {
    expect('{', "\"__metadata__\" must be an object of string values");
    skip_space();
    if (consume('}')) return;
    for (;;) {
      skip_space();
      const std::size_t key_at = position_;
      std::string key = parse_string();
      if (metadata.count(key) != 0) fail(key_at, "duplicate metadata key \"", printable(key), "\"");
      skip_space();
      expect(':', "expected ':' after a metadata key");
      skip_space();
      if (peek() != '"') fail(position_, "metadata value of \"", printable(key), "\" must be a string");
      std::string value = parse_string();
      metadata.emplace(std::move(key), std::move(value));
      skip_space();
      if (consume('}')) return;
      expect(',', "expected ',' or '}' in \"__metadata__\"");
    }
  }

  TensorEntry parse_tensor(const std::string& name) {
    const std::size_t start = position_;
    expect('{', "a tensor's entry must be an object with \"dtype\", \"shape\" and \"data_offsets\"");
    TensorEntry entry;
    bool has_dtype = false, has_shape = false, has_offsets = false;
    skip_space();
    if (!consume('}')) {
      for (;;) {
        skip_space();
        const std::size_t key_at = position_;
        const std::string key = parse_string();
        skip_space();
        expect(':', "expected ':' after a key");
        skip_space();
        bool* seen = nullptr;
        if (key == "dtype") {
          seen = &has_dtype;
          const std::size_t value_at = position_;
          const std::string value = parse_string();
          bool known = false;
          for (const DtypeInfo& info : dtype_table) {
            if (info.name == value) {
              entry.dtype = info.dtype;
              known = true;
            }
          }
          if (!known)
            fail(value_at, "tensor \"", printable(name), "\" has unknown dtype \"", printable(value), "\"");
        } else if (key == "shape") {
          seen = &has_shape;
          entry.shape = parse_integer_array(name, "shape");
        } else if (key == "data_offsets") {
          seen = &has_offsets;
          const std::size_t value_at = position_;
          const std::vector<std::int64_t> offsets = parse_integer_array(name, "data_offsets");
          if (offsets.size() != 2) {
            fail(value_at, "tensor \"", printable(name), "\": data_offsets has ", offsets.size(),
                 " values, expected 2 ([begin, end])");
          }
          entry.begin = static_cast<std::uint64_t>(offsets[0]);
          entry.end = static_cast<std::uint64_t>(offsets[1]);
        } else {
          fail(key_at, "tensor \"", printable(name), "\" has unknown field \"", printable(key),
               "\"; expected dtype, shape and data_offsets");
        }
        if (*seen) fail(key_at, "tensor \"", printable(name), "\" has a duplicate field \"", key, "\"");
        *seen = true;
        skip_space();
        if (consume('}')) break;
        expect(',', "expected ',' or '}' in a tensor's entry");
      }
    }
    if (!(has_dtype && has_shape && has_offsets)) {
      fail(start, "tensor \"", printable(name), "\" lacks ",
           !has_dtype   ? "\"dtype\""
           : !has_shape ? "\"shape\""
                        : "\"data_offsets\"");
    }
    return entry;
  }

  std::vector<std::int64_t> parse_integer_array(const std::string& name, const char* field) {
    expect('[', "expected an array of integers");
    std::vector<std::int64_t> values;
    skip_space();
    if (consume(']')) return values;
    for (;;) {
      skip_space();
      values.push_back(parse_integer(name, field));
      skip_space();
      if (consume(']')) return values;
      expect(',', "expected ',' or ']' in an array");
    }
  }

  // A non-negative integer without sign, fraction, exponent or leading zeros, at most 2^63 - 1.
  std::int64_t parse_integer(const std::string& name, const char* field) {
    const std::size_t start = position_;
    if (position_ >= text_.size() || text_[position_] < '0' || text_[position_] > '9') {
      fail(position_, "tensor \"", printable(name), "\": ", field, " holds ", describe_char(),
           ", expected a non-negative integer");
    }
    std::uint64_t value = 0;
    while (position_ < text_.size() && text_[position_] >= '0' && text_[position_] <= '9') {
      const auto digit = static_cast<std::uint64_t>(text_[position_] - '0');
      if (value > (static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) - digit) / 10) {
        fail(start, "tensor \"", printable(name), "\": a value of ", field, " exceeds 2^63 - 1");
      }
      value = value * 10 + digit;
      ++position_;
    }
    if (position_ - start > 1 && text_[start] == '0') {
      fail(start, "tensor \"", printable(name), "\": ", field, " holds a number with a leading zero");
    }
    if (position_ < text_.size() &&
        (text_[position_] == '.' || text_[position_] == 'e' || text_[position_] == 'E')) {
      fail(start, "tensor \"", printable(name), "\": ", field, " holds a non-integer number");
    }
    return static_cast<std::int64_t>(value);
  }
};

/// Multiplies without wrapping; false when the product exceeds `limit`.
[[nodiscard]] constexpr bool multiply_within(std::uint64_t& product, std::uint64_t factor,
                                             std::uint64_t limit) noexcept {
  if (factor != 0 && product > limit / factor) return false;
  product *= factor;
  return product <= limit;
}

/// Appends `text` as a JSON string.
inline void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (c < 0x20) {
      constexpr const char* digits = "0123456789abcdef";
      out.append("\\u00");
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 0xf]);
    } else {
      out.push_back(ch);
    }
  }
  out.push_back('"');
}

}  // namespace detail

/// @brief Parses and validates a whole safetensors file held in `contents`; `source` names it in
/// messages (a path, or "<memory>").
/// @throws mpx::io_error naming `source`, the byte offset and the offending value.
[[nodiscard]] inline SafetensorsFile parse_safetensors(std::vector<std::byte> contents, std::string source) {
  const auto fail = [&](std::uint64_t at, const auto&... what) { detail::fail_at(source, at, what...); };
  const std::uint64_t size = contents.size();
  if (size < 8) fail(0, "the file has ", size, " bytes, fewer than the 8 of the header length");
  std::uint64_t header_size = 0;
  std::memcpy(&header_size, contents.data(), 8);  // little-endian, as the host (checked above)
  if (header_size > size - 8) {
    fail(0, "the header length is ", header_size, " bytes but only ", size - 8, " follow it (file size ",
         size, "); the file is truncated or corrupt");
  }
  if (header_size > max_safetensors_header_bytes) {
    fail(0, "the header length ", header_size, " exceeds the limit of ", max_safetensors_header_bytes,
         " bytes");
  }
  if (header_size < 2) fail(0, "the header length is ", header_size, "; expected a JSON object");

  SafetensorsFile file;
  file.source_ = source;
  const std::string_view header(reinterpret_cast<const char*>(contents.data()) + 8,
                                static_cast<std::size_t>(header_size));
  std::map<std::string, std::uint64_t> positions;
  detail::HeaderParser(header, file.source_).parse(file.metadata_, file.tensors_, positions);

  // Each byte range must match its shape and dtype, and together they must tile the data buffer.
  const std::uint64_t data_start = 8 + header_size;
  const std::uint64_t data_size = size - data_start;
  std::vector<std::pair<const std::string*, const TensorEntry*>> by_offset;
  by_offset.reserve(file.tensors_.size());
  for (const auto& [name, entry] : file.tensors_) {
    std::uint64_t bytes = dtype_size(entry.dtype);
    std::string shape_text = "[";
    for (std::size_t d = 0; d < entry.shape.size(); ++d) {
      if (d != 0) shape_text.append(", ");
      shape_text.append(std::to_string(entry.shape[d]));
    }
    shape_text.append("]");
    const std::uint64_t at = positions.at(name);
    for (const std::int64_t extent : entry.shape) {
      if (!detail::multiply_within(bytes, static_cast<std::uint64_t>(extent),
                                   std::numeric_limits<std::uint64_t>::max())) {
        fail(at, "tensor \"", name, "\" of shape ", shape_text, " and dtype ", dtype_name(entry.dtype),
             " would hold more than 2^64 bytes");
      }
    }
    if (entry.begin > entry.end || entry.end > data_size) {
      fail(at, "tensor \"", name, "\" has data_offsets [", entry.begin, ", ", entry.end,
           "], outside the data buffer of ", data_size, " bytes");
    }
    if (entry.end - entry.begin != bytes) {
      fail(at, "tensor \"", name, "\" has data_offsets [", entry.begin, ", ", entry.end, "] (",
           entry.end - entry.begin, " bytes) but shape ", shape_text, " and dtype ", dtype_name(entry.dtype),
           " need ", bytes, " bytes");
    }
    by_offset.emplace_back(&name, &entry);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](const auto& a, const auto& b) {
    return a.second->begin != b.second->begin ? a.second->begin < b.second->begin
                                              : a.second->end < b.second->end;
  });
  std::uint64_t expected_begin = 0;
  const std::string* previous = nullptr;
  for (const auto& [name, entry] : by_offset) {
    if (entry->begin < expected_begin) {
      fail(data_start + entry->begin, "tensor \"", *name, "\" at data_offsets [", entry->begin, ", ",
           entry->end, "] overlaps tensor \"", *previous, "\", which ends at ", expected_begin);
    }
    if (entry->begin > expected_begin) {
      fail(data_start + expected_begin, "the data buffer has a hole: no tensor covers bytes [",
           expected_begin, ", ", entry->begin, ")");
    }
    expected_begin = entry->end;
    previous = name;
  }
  if (expected_begin != data_size) {
    fail(data_start + expected_begin, "the tensors cover ", expected_begin,
         " bytes of data but the file holds ", data_size, " after the header; the file has trailing bytes");
  }
  file.data_start_ = static_cast<std::size_t>(data_start);
  file.contents_ = std::move(contents);
  return file;
}

/// @brief Reads and validates the safetensors file at `path`. Allocates the file's size once (after
/// checking it with fstat), plus the parsed header.
/// @throws mpx::io_error naming the path, the byte offset and the offending value.
[[nodiscard]] inline SafetensorsFile load_safetensors(const std::filesystem::path& path) {
  return parse_safetensors(read_file_bytes(path), path.string());
}

/// @brief The bytes of a safetensors file holding `tensors` (in the order given) and `metadata`.
/// The header is padded with spaces to a multiple of 8 bytes, so that the data is aligned.
/// @throws mpx::invalid_argument for duplicate or empty names, a name "__metadata__", a negative
/// extent or a byte span whose size does not match its shape and dtype.
[[nodiscard]] inline std::string encode_safetensors(std::span<const TensorToWrite> tensors,
                                                    const std::map<std::string, std::string>& metadata = {}) {
  using mpx::detail::concat;
  std::string header = "{";
  if (!metadata.empty()) {
    header.append("\"__metadata__\":{");
    bool first = true;
    for (const auto& [key, value] : metadata) {
      if (!first) header.push_back(',');
      first = false;
      detail::append_json_string(header, key);
      header.push_back(':');
      detail::append_json_string(header, value);
    }
    header.push_back('}');
  }
  std::vector<std::string_view> names;
  std::uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__") {
      throw invalid_argument(concat("mpx::io::encode_safetensors: invalid tensor name \"", t.name, "\""));
    }
    if (std::find(names.begin(), names.end(), t.name) != names.end()) {
      throw invalid_argument(concat("mpx::io::encode_safetensors: duplicate tensor name \"", t.name, "\""));
    }
    names.push_back(t.name);
    std::uint64_t bytes = dtype_size(t.dtype);
    for (const std::int64_t extent : t.shape) {
      if (extent < 0) {
        throw invalid_argument(
            concat("mpx::io::encode_safetensors: tensor \"", t.name, "\" has negative extent ", extent));
      }
      bytes *= static_cast<std::uint64_t>(extent);
    }
    if (bytes != t.bytes.size()) {
      throw invalid_argument(concat("mpx::io::encode_safetensors: tensor \"", t.name, "\" has ",
                                    t.bytes.size(), " bytes, but its shape and dtype ", dtype_name(t.dtype),
                                    " need ", bytes));
    }
    if (header.size() > 1) header.push_back(',');
    detail::append_json_string(header, t.name);
    header.append(":{\"dtype\":\"").append(dtype_name(t.dtype)).append("\",\"shape\":[");
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      if (d != 0) header.push_back(',');
      header.append(std::to_string(t.shape[d]));
    }
    header.append("],\"data_offsets\":[").append(std::to_string(offset)).append(",");
    offset += bytes;
    header.append(std::to_string(offset)).append("]}");
  }
  header.push_back('}');
  header.append((8 - header.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + header.size() + static_cast<std::size_t>(offset));
  const std::uint64_t header_size = header.size();
  out.append(reinterpret_cast<const char*>(&header_size), 8);
  out.append(header);
  for (const TensorToWrite& t : tensors)
    out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return out;
}

/// @brief Writes `tensors` and `metadata` to `path` in the safetensors format, atomically (see
/// `write_file_atomically`): on failure `path` keeps its previous contents.
inline void save_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                             const std::map<std::string, std::string>& metadata = {}) {
  write_file_atomically(path, encode_safetensors(tensors, metadata));
}

}  // namespace mpx::io
