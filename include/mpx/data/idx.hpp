// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `read_idx`: a validating reader for IDX files (the MNIST / Fashion-MNIST format), gzip'd
/// or not.
///
/// Layout of an IDX file: bytes 0-1 are zero, byte 2 is the element type code, byte 3 the rank r,
/// then r big-endian uint32 dimensions, then the elements in row-major order. Every check happens
/// before the data is read, and the data buffer grows only with the bytes actually read, so a corrupt
/// header cannot make the reader claim more memory than the (decompressed) data holds (at most twice
/// as much, plus 64 KiB), and
/// every failure is an `mpx::io_error` naming the file, the byte offset in the decompressed stream
/// and the value found against the one expected.

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <zlib.h>

#include "mpx/error.hpp"

namespace mpx::data {

/// @brief Largest data section `read_idx` accepts (1 GiB). Fashion-MNIST's largest file holds 47 MB;
/// the cap exists so that a corrupt header fails with a message instead of an allocation of
/// petabytes.
inline constexpr std::uint64_t max_idx_data_bytes = std::uint64_t{1} << 30;

/// @brief The only IDX element type read: unsigned byte, the type of every Fashion-MNIST file.
inline constexpr std::uint8_t idx_type_unsigned_byte = 0x08;

/// @brief Contents of an IDX file: its dimensions and its elements as raw bytes, row-major.
struct IdxArray {
  std::vector<std::int64_t> dims;   ///< 1 to 4 extents, each > 0
  std::vector<std::uint8_t> bytes;  ///< exactly the product of `dims` elements

  /// @brief Number of elements: the product of `dims`.
  [[nodiscard]] std::int64_t numel() const noexcept { return static_cast<std::int64_t>(bytes.size()); }
};

namespace detail {

using mpx::detail::concat;

/// Two lowercase hex digits, for bytes of a magic number.
[[nodiscard]] inline std::string hex_byte(std::uint8_t value) {
  constexpr const char* digits = "0123456789abcdef";
  return {digits[value >> 4], digits[value & 0xf]};
}

/// Where the Fashion-MNIST files come from; appended to every "file not found" message so that the
/// reader of the message knows the one command that fixes it.
inline constexpr const char* fashion_mnist_install_hint =
    "the Fashion-MNIST files come from the Debian package dataset-fashion-mnist "
    "(`apt-get install dataset-fashion-mnist` puts them in /usr/share/datasets/fashion-mnist); "
    "set MPX_FASHION_MNIST_DIR or pass a directory to mpx::data::load_fashion_mnist to read them "
    "from elsewhere";

/// Owns a zlib `gzFile` and counts the decompressed bytes consumed, so errors can name offsets.
/// zlib reads files without a gzip header transparently, which is why one reader serves both forms.
class GzReader {
 public:
  explicit GzReader(const std::filesystem::path& path) : path_(path) {
    std::error_code status;
    if (!std::filesystem::exists(path, status)) {
      fail_at_open(concat("file not found; ", fashion_mnist_install_hint));
    }
    if (std::filesystem::is_directory(path, status)) {
      fail_at_open("is a directory, expected an IDX file");
    }
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) {
      fail_at_open(concat("cannot be opened (", errno != 0 ? std::strerror(errno) : "out of memory", ")"));
    }
    // A larger input buffer than zlib's 8 KiB default roughly halves the time to inflate 47 MB.
    gzbuffer(file_, 1u << 17);
  }

  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;
  ~GzReader() {
    if (file_ != nullptr) gzclose_r(file_);
  }

  [[nodiscard]] std::uint64_t offset() const noexcept { return offset_; }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  /// Reads up to `count` bytes; returns how many were read (fewer only at the end of the stream).
  /// A corrupt or cut-off gzip stream is an error, not a short read.
  std::size_t read(void* destination, std::size_t count) {
    auto* out = static_cast<unsigned char*>(destination);
    std::size_t total = 0;
    while (total < count) {
      // gzread takes an unsigned length and returns an int: stay well inside both.
      const std::size_t chunk = std::min<std::size_t>(count - total, std::size_t{1} << 30);
      const int got = gzread(file_, out + total, static_cast<unsigned>(chunk));
      if (got < 0) fail_stream();
      total += static_cast<std::size_t>(got);
      offset_ += static_cast<std::uint64_t>(got);
      if (got == 0) break;
    }
    if (total < count) fail_stream_if_broken();
    return total;
  }

  /// Throws `io_error` "<where>: <path> at byte <offset>: <what>".
  template <class... Parts>
  [[noreturn]] void fail(std::uint64_t at, Parts&&... what) const {
    throw io_error(concat("mpx::data::read_idx: \"", path_.string(), "\" at byte ", at, ": ",
                          std::forward<Parts>(what)...));
  }

 private:
  [[noreturn]] void fail_at_open(const std::string& what) const {
    throw io_error(concat("mpx::data::read_idx: \"", path_.string(), "\": ", what));
  }

  [[noreturn]] void fail_stream() const {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    fail(offset_, "the gzip stream is corrupt (zlib: ", message != nullptr ? message : "unknown error",
         ", code ", code, ")");
  }

  // A short read is the normal end of the data unless zlib flagged the stream: Z_BUF_ERROR means a
  // gzip file cut off mid-stream, which must not pass for a merely short IDX file.
  void fail_stream_if_broken() const {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    if (code != Z_OK) {
      fail(offset_,
           "the gzip stream ends early or is corrupt (zlib: ", message != nullptr ? message : "unknown error",
           ", code ", code, ")");
    }
  }

  std::filesystem::path path_;
  gzFile file_ = nullptr;
  std::uint64_t offset_ = 0;
};

/// Multiplies without wrapping: the result saturates at the largest uint64.
[[nodiscard]] constexpr std::uint64_t saturating_multiply(std::uint64_t a, std::uint64_t b) noexcept {
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  return (b != 0 && a > max / b) ? max : a * b;
}

}  // namespace detail

/// @brief Reads and validates one IDX file of unsigned bytes, gzip'd or uncompressed.
///
/// Checks, in stream order: the two zero bytes of the magic, the type code (0x08 only), the rank
/// (1 to 4), each dimension (> 0), their product (at most `max_idx_data_bytes`), and that exactly
/// that many data bytes follow, with nothing after them.
///
/// @throws mpx::io_error naming the file, the byte offset in the decompressed stream and the values
/// found against those expected; for a missing file, the message says where Fashion-MNIST comes from.
[[nodiscard]] inline IdxArray read_idx(const std::filesystem::path& path) {
  detail::GzReader in(path);

  std::array<std::uint8_t, 4> magic{};
  const std::size_t magic_read = in.read(magic.data(), magic.size());
  if (magic_read == 0) {
    in.fail(0, "the file is empty; expected a 4-byte IDX magic number");
  }
  if (magic_read < magic.size()) {
    in.fail(magic_read, "truncated header: found ", magic_read, " of the 4 bytes of the IDX magic number");
  }
  if (magic[0] != 0 || magic[1] != 0) {
    in.fail(0, "bad magic: the first two bytes are 0x", detail::hex_byte(magic[0]), " 0x",
            detail::hex_byte(magic[1]), ", expected 0x00 0x00 (not an IDX file)");
  }
  if (magic[2] != idx_type_unsigned_byte) {
    in.fail(2, "unsupported element type code 0x", detail::hex_byte(magic[2]),
            ", expected 0x08 (unsigned byte, the only type Fashion-MNIST uses)");
  }
  const int rank = magic[3];
  if (rank < 1 || rank > 4) {
    in.fail(3, "rank ", rank, " is not supported; expected 1 to 4");
  }

  std::array<std::uint8_t, 16> dim_bytes{};
  const std::size_t dims_size = 4 * static_cast<std::size_t>(rank);
  const std::size_t dims_read = in.read(dim_bytes.data(), dims_size);
  if (dims_read < dims_size) {
    in.fail(4 + dims_read, "truncated header: found ", dims_read, " of the ", dims_size, " bytes of the ",
            rank, " dimension(s)");
  }

  IdxArray result;
  result.dims.reserve(static_cast<std::size_t>(rank));
  std::uint64_t numel = 1;
  std::string dims_text;
  for (int d = 0; d < rank; ++d) {
    const std::uint8_t* b = dim_bytes.data() + 4 * d;
    // IDX stores dimensions big-endian, whatever the host's byte order.
    const std::uint32_t extent = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                                 (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
    if (extent == 0) {
      in.fail(4 + 4 * d, "dimension ", d, " is 0, expected > 0");
    }
    result.dims.push_back(static_cast<std::int64_t>(extent));
    numel = detail::saturating_multiply(numel, extent);
    dims_text += (d == 0 ? "[" : ", ") + std::to_string(extent);
  }
  dims_text += "]";
  if (numel > max_idx_data_bytes) {
    const std::string size_text = numel == std::numeric_limits<std::uint64_t>::max()
                                      ? std::string("more than 2^64")
                                      : std::to_string(numel);
    in.fail(4, "dimensions ", dims_text, " describe ", size_text, " bytes of data, more than the limit of ",
            max_idx_data_bytes, " bytes (mpx::data::max_idx_data_bytes); the header is corrupt");
  }

  const std::uint64_t data_offset = in.offset();
  // The buffer grows with the data actually read (doubling from 64 KiB), so a header that claims
  // more than the stream holds costs at most twice what is there, never what the header claims.
  std::size_t data_read = 0;
  const auto wanted = static_cast<std::size_t>(numel);
  while (data_read < wanted) {
    const std::size_t chunk = std::min(wanted - data_read, std::max(data_read, std::size_t{1} << 16));
    result.bytes.resize(data_read + chunk);
    const std::size_t got = in.read(result.bytes.data() + data_read, chunk);
    data_read += got;
    if (got < chunk) break;
  }
  if (data_read < wanted) {
    in.fail(in.offset(), "truncated data: dimensions ", dims_text, " need ", numel,
            " bytes of data from byte ", data_offset, ", found ", data_read);
  }

  // Count what follows the data, but only up to a bound: a gzip bomb appended to a valid file must
  // not keep the reader busy for long.
  std::array<std::uint8_t, 4096> tail{};
  std::uint64_t trailing = 0;
  constexpr std::uint64_t trailing_bound = std::uint64_t{1} << 16;
  while (trailing < trailing_bound) {
    const std::size_t got = in.read(tail.data(), tail.size());
    trailing += got;
    if (got < tail.size()) break;
  }
  if (trailing > 0) {
    in.fail(data_offset + numel, "trailing bytes: expected the file to end after the ", numel,
            " data bytes of dimensions ", dims_text, ", found ",
            trailing >= trailing_bound ? "at least " : "", trailing, " more");
  }
  return result;
}

}  // namespace mpx::data
