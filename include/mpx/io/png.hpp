// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `write_png`: 8-bit grayscale or RGB PNG files, written atomically; `image_grid`: a batch of
/// images `[N, H, W, C]` tiled into one picture (a grid of generated samples).
///
/// The file is the smallest valid PNG: the signature, one IHDR chunk (bit depth 8, colour type 0 or
/// 2, no interlace), the deflated pixel rows (zlib) in IDAT chunks, and IEND, each chunk with its
/// CRC-32. Every row is stored with filter type 0 (None): sample grids are small, and the one filter
/// keeps the writer short enough to check byte by byte.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <zlib.h>

#include "mpx/error.hpp"
#include "mpx/io/atomic_file.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::io {

/// @brief An 8-bit image: `height` rows of `width` pixels of `channels` samples each (1: gray,
/// 3: red, green, blue), row-major with the channels interleaved; what `image_grid` makes and
/// `write_png` writes.
struct Image {
  std::int64_t width = 0;            ///< pixels per row
  std::int64_t height = 0;           ///< rows
  int channels = 0;                  ///< 1 (gray) or 3 (RGB)
  std::vector<std::uint8_t> pixels;  ///< `height * width * channels` samples
};

namespace detail {

/// The largest width or height PNG allows (2^31 - 1).
inline constexpr std::int64_t png_max_extent = std::numeric_limits<std::int32_t>::max();

/// Appends `value` as four big-endian bytes, PNG's order for every integer.
inline void append_be32(std::string& out, std::uint32_t value) {
  out.push_back(static_cast<char>((value >> 24) & 0xffu));
  out.push_back(static_cast<char>((value >> 16) & 0xffu));
  out.push_back(static_cast<char>((value >> 8) & 0xffu));
  out.push_back(static_cast<char>(value & 0xffu));
}

/// Appends one chunk: length, type, data, and the CRC-32 of type and data.
inline void append_png_chunk(std::string& out, std::string_view type, std::string_view data) {
  append_be32(out, static_cast<std::uint32_t>(data.size()));
  const std::size_t type_begin = out.size();
  out.append(type);
  out.append(data);
  const auto* crc_bytes = reinterpret_cast<const Bytef*>(out.data() + type_begin);
  const uLong crc = ::crc32(::crc32(0L, Z_NULL, 0), crc_bytes, static_cast<uInt>(type.size() + data.size()));
  append_be32(out, static_cast<std::uint32_t>(crc));
}

}  // namespace detail

/// @brief Writes an 8-bit PNG of `width` x `height` pixels to `path`, atomically (as
/// `write_file_atomically`: the old file or the new one, never a part).
///
/// Throws `mpx::invalid_argument` naming the path and the values when `width` or `height` is not in
/// `[1, 2^31 - 1]`, `channels` is neither 1 nor 3, or `pixels.size()` is not
/// `width * height * channels`; `mpx::io_error` naming the path when zlib or the file system fails
/// (a missing directory, a full disk), leaving no file behind.
///
/// @param path     the file to create or replace
/// @param width    pixels per row
/// @param height   rows
/// @param channels 1 (gray) or 3 (red, green, blue)
/// @param pixels   row-major samples, channels interleaved: `height * width * channels` bytes
inline void write_png(const std::filesystem::path& path, std::int64_t width, std::int64_t height,
                      int channels, std::span<const std::uint8_t> pixels) {
  using mpx::detail::concat;
  const auto where = [&] { return concat("mpx::io::write_png(\"", path.string(), "\"): "); };
  if (width < 1 || width > detail::png_max_extent || height < 1 || height > detail::png_max_extent) {
    throw invalid_argument(concat(where(), "width ", width, " and height ", height, " must be in [1, ",
                                  detail::png_max_extent, "]"));
  }
  if (channels != 1 && channels != 3) {
    throw invalid_argument(
        concat(where(), "channels is ", channels, "; PNG images here have 1 (gray) or 3 (RGB)"));
  }
  // Extents below 2^31 and at most 3 channels: the products stay far below 2^64.
  const auto row_bytes = static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(channels);
  const std::uint64_t expected = row_bytes * static_cast<std::uint64_t>(height);
  if (expected != pixels.size()) {
    throw invalid_argument(concat(where(), pixels.size(), " pixel bytes given; width ", width, " x height ",
                                  height, " x channels ", channels, " needs ", expected));
  }

  // The raw image data: each row preceded by its filter type byte (0, None).
  std::vector<Bytef> raw;
  raw.reserve(static_cast<std::size_t>((row_bytes + 1) * static_cast<std::uint64_t>(height)));
  for (std::int64_t y = 0; y < height; ++y) {
    raw.push_back(0);
    const auto row = pixels.subspan(static_cast<std::size_t>(row_bytes * static_cast<std::uint64_t>(y)),
                                    static_cast<std::size_t>(row_bytes));
    raw.insert(raw.end(), row.begin(), row.end());
  }
  uLongf deflated_size = ::compressBound(static_cast<uLong>(raw.size()));
  std::string deflated(deflated_size, '\0');
  const int status = ::compress2(reinterpret_cast<Bytef*>(deflated.data()), &deflated_size, raw.data(),
                                 static_cast<uLong>(raw.size()), Z_BEST_COMPRESSION);
  if (status != Z_OK) {
    throw io_error(
        concat(where(), "zlib's compress2 failed with status ", status, " on ", raw.size(), " bytes"));
  }
  deflated.resize(deflated_size);

  std::string file("\x89PNG\r\n\x1a\n", 8);
  std::string header;
  detail::append_be32(header, static_cast<std::uint32_t>(width));
  detail::append_be32(header, static_cast<std::uint32_t>(height));
  header.push_back(8);                                         // bit depth
  header.push_back(static_cast<char>(channels == 1 ? 0 : 2));  // colour type: gray or RGB
  header.append(3, '\0');  // compression (deflate), filter method (adaptive), interlace (none)
  detail::append_png_chunk(file, "IHDR", header);
  // A chunk holds at most 2^31 - 1 bytes; larger data continues in further IDAT chunks.
  constexpr std::size_t max_chunk = std::size_t{1} << 30;
  const std::string_view data = deflated;
  for (std::size_t begin = 0; begin < data.size(); begin += max_chunk) {
    detail::append_png_chunk(file, "IDAT", data.substr(begin, max_chunk));
  }
  detail::append_png_chunk(file, "IEND", {});
  write_file_atomically(path, file);
}

/// @brief Writes `image` to `path` as a PNG: `write_png(path, image.width, image.height,
/// image.channels, image.pixels)`, with its checks and errors.
/// @param path  the file to create or replace
/// @param image the pixels and their dimensions
inline void write_png(const std::filesystem::path& path, const Image& image) {
  write_png(path, image.width, image.height, image.channels, image.pixels);
}

/// @brief How `image_grid` lays out and maps a batch of images.
struct GridOptions {
  /// Images per grid row; the grid has `ceil(N / columns)` rows. As torchvision's `make_grid(nrow=8)`.
  std::int64_t columns = 8;
  /// Pixels of background around every image: between neighbours and along the grid's edges.
  std::int64_t padding = 2;
  /// The value shown as 0 (black); `[-1, 1]` is a diffusion model's image range.
  double low = -1.0;
  /// The value shown as 255 (white).
  double high = 1.0;
  /// The padding's value, and that of the cells after the last image.
  std::uint8_t background = 0;
};

/// @brief Tiles a batch of images into one picture, ready for `write_png`.
///
/// Image `i` goes to grid row `i / columns`, column `i % columns`; with `columns` capped at N, the
/// picture is `columns * (W + padding) + padding` wide and `rows * (H + padding) + padding` high, as
/// torchvision's `make_grid`. A value v becomes `round((v - low) / (high - low) * 255)` clamped to
/// [0, 255], halves rounding up (v = low is 0, v = high is 255); NaN becomes 0.
///
/// Throws `mpx::shape_error` naming the shape unless `images` is `[N, H, W, C]` with N, H, W > 0 and
/// C 1 or 3, and `mpx::invalid_argument` naming the values when `columns` < 1, `padding` < 0, or
/// `low` < `high` fails or either is not finite.
///
/// @param images  host images `[N, H, W, C]`, channels-last as mpx's image layers keep them
/// @param options layout and value range
/// @return the picture's pixels and dimensions
[[nodiscard]] inline Image image_grid(const Tensor<float, Host>& images, const GridOptions& options = {}) {
  using mpx::detail::concat;
  const Shape& shape = images.shape();
  if (shape.rank() != 4 || shape[0] < 1 || shape[1] < 1 || shape[2] < 1 || (shape[3] != 1 && shape[3] != 3)) {
    throw shape_error(concat("mpx::io::image_grid: images have shape ", shape,
                             "; expected [N, H, W, C] with N, H, W > 0 and C 1 (gray) or 3 (RGB)"));
  }
  if (options.columns < 1 || options.padding < 0) {
    throw invalid_argument(concat("mpx::io::image_grid: columns ", options.columns,
                                  " must be >= 1 and padding ", options.padding, " >= 0"));
  }
  if (!(std::isfinite(options.low) && std::isfinite(options.high) && options.low < options.high)) {
    throw invalid_argument(concat("mpx::io::image_grid: the value range [",
                                  mpx::detail::exact_text(options.low), ", ",
                                  mpx::detail::exact_text(options.high), "] must be finite with low < high"));
  }
  const std::int64_t count = shape[0], image_height = shape[1], image_width = shape[2];
  const int channels = static_cast<int>(shape[3]);
  const std::int64_t columns = std::min(options.columns, count);
  const std::int64_t rows = (count + columns - 1) / columns;
  const std::int64_t pad = options.padding;

  Image grid;
  grid.width = columns * (image_width + pad) + pad;
  grid.height = rows * (image_height + pad) + pad;
  grid.channels = channels;
  grid.pixels.assign(static_cast<std::size_t>(grid.width * grid.height * channels), options.background);

  const double scale = 255.0 / (options.high - options.low);
  const auto to_byte = [&](float value) -> std::uint8_t {
    const double level = std::floor((static_cast<double>(value) - options.low) * scale + 0.5);
    if (!(level > 0.0)) return 0;  // NaN as well
    return level >= 255.0 ? std::uint8_t{255} : static_cast<std::uint8_t>(level);
  };
  const std::span<const float> values = images.values();
  const std::int64_t image_row = image_width * channels;
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t top = (i / columns) * (image_height + pad) + pad;
    const std::int64_t left = (i % columns) * (image_width + pad) + pad;
    for (std::int64_t y = 0; y < image_height; ++y) {
      const float* source = values.data() + (i * image_height + y) * image_row;
      std::uint8_t* target = grid.pixels.data() + ((top + y) * grid.width + left) * channels;
      for (std::int64_t k = 0; k < image_row; ++k) target[k] = to_byte(source[k]);
    }
  }
  return grid;
}

}  // namespace mpx::io
