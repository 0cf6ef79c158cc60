// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// PNG files read back chunk by chunk (signature, CRCs, IHDR, inflated rows), image grids on small
// hand-computed cases, and the writer's errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <zlib.h>

#include <mpx/io/png.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

std::filesystem::path fresh_directory(const std::string& name) {
  const auto directory = std::filesystem::temp_directory_path() / ("mpx_png_test_" + name);
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  return directory;
}

std::vector<std::uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::uint32_t be32(const std::vector<std::uint8_t>& bytes, std::size_t at) {
  return (std::uint32_t{bytes.at(at)} << 24) | (std::uint32_t{bytes.at(at + 1)} << 16) |
         (std::uint32_t{bytes.at(at + 2)} << 8) | std::uint32_t{bytes.at(at + 3)};
}

struct Chunk {
  std::string type;
  std::vector<std::uint8_t> data;
};

// Parses a PNG file's chunks after checking its signature and every chunk's CRC-32.
std::vector<Chunk> read_chunks(const std::vector<std::uint8_t>& file) {
  const std::vector<std::uint8_t> signature{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  REQUIRE(file.size() >= signature.size());
  REQUIRE(std::vector<std::uint8_t>(file.begin(), file.begin() + 8) == signature);
  std::vector<Chunk> chunks;
  std::size_t at = 8;
  while (at < file.size()) {
    REQUIRE(at + 12 <= file.size());
    const std::uint32_t length = be32(file, at);
    REQUIRE(at + 12 + length <= file.size());
    Chunk chunk;
    chunk.type.assign(file.begin() + static_cast<std::ptrdiff_t>(at + 4),
                      file.begin() + static_cast<std::ptrdiff_t>(at + 8));
    chunk.data.assign(file.begin() + static_cast<std::ptrdiff_t>(at + 8),
                      file.begin() + static_cast<std::ptrdiff_t>(at + 8 + length));
    const uLong crc = ::crc32(::crc32(0L, Z_NULL, 0), file.data() + at + 4, 4 + length);
    INFO("chunk " << chunk.type << " at byte " << at);
    CHECK(be32(file, at + 8 + length) == static_cast<std::uint32_t>(crc));
    chunks.push_back(std::move(chunk));
    at += 12 + length;
  }
  CHECK(at == file.size());
  return chunks;
}

struct DecodedPng {
  std::uint32_t width = 0, height = 0;
  int channels = 0;
  std::vector<std::uint8_t> filters;  // one per row
  std::vector<std::uint8_t> pixels;   // the rows without their filter bytes
};

// Checks the chunk order and IHDR's fixed fields, inflates the IDAT data and splits it into rows.
DecodedPng decode(const std::filesystem::path& path) {
  const std::vector<Chunk> chunks = read_chunks(read_bytes(path));
  REQUIRE(chunks.size() >= 3);
  REQUIRE(chunks.front().type == "IHDR");
  REQUIRE(chunks.back().type == "IEND");
  CHECK(chunks.back().data.empty());
  const std::vector<std::uint8_t>& ihdr = chunks.front().data;
  REQUIRE(ihdr.size() == 13);
  DecodedPng png;
  png.width = be32(ihdr, 0);
  png.height = be32(ihdr, 4);
  CHECK(ihdr[8] == 8);  // bit depth
  REQUIRE((ihdr[9] == 0 || ihdr[9] == 2));
  png.channels = ihdr[9] == 0 ? 1 : 3;
  CHECK(ihdr[10] == 0);  // deflate
  CHECK(ihdr[11] == 0);  // adaptive filtering
  CHECK(ihdr[12] == 0);  // no interlace
  std::vector<std::uint8_t> deflated;
  for (std::size_t i = 1; i + 1 < chunks.size(); ++i) {
    REQUIRE(chunks[i].type == "IDAT");
    deflated.insert(deflated.end(), chunks[i].data.begin(), chunks[i].data.end());
  }
  const std::size_t row_bytes = std::size_t{png.width} * static_cast<std::size_t>(png.channels);
  std::vector<std::uint8_t> raw((row_bytes + 1) * png.height + 1);  // one spare byte: no more data
  uLongf raw_size = raw.size();
  REQUIRE(::uncompress(raw.data(), &raw_size, deflated.data(), deflated.size()) == Z_OK);
  REQUIRE(raw_size == (row_bytes + 1) * png.height);
  for (std::size_t y = 0; y < png.height; ++y) {
    png.filters.push_back(raw[y * (row_bytes + 1)]);
    const auto row = raw.begin() + static_cast<std::ptrdiff_t>(y * (row_bytes + 1) + 1);
    png.pixels.insert(png.pixels.end(), row, row + static_cast<std::ptrdiff_t>(row_bytes));
  }
  return png;
}

std::vector<std::uint8_t> pattern(std::size_t size) {
  std::vector<std::uint8_t> pixels(size);
  for (std::size_t i = 0; i < size; ++i) pixels[i] = static_cast<std::uint8_t>((i * 37 + i / 7) % 256);
  return pixels;
}

std::size_t entries_in(const std::filesystem::path& directory) {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(directory)) ++count;
  return count;
}

}  // namespace

TEST_CASE("write_png writes a PNG whose chunks, CRCs, header and inflated rows read back", "[io][png]") {
  const auto directory = fresh_directory("roundtrip");
  for (const int channels : {1, 3}) {
    const std::int64_t width = 7, height = 5;
    const std::vector<std::uint8_t> pixels = pattern(static_cast<std::size_t>(width * height * channels));
    const auto path = directory / ("image_" + std::to_string(channels) + ".png");
    mpx::io::write_png(path, width, height, channels, pixels);
    INFO("channels " << channels);
    const DecodedPng png = decode(path);
    CHECK(png.width == width);
    CHECK(png.height == height);
    CHECK(png.channels == channels);
    CHECK(png.filters == std::vector<std::uint8_t>(height, 0));
    CHECK(png.pixels == pixels);
  }
  // A second write replaces the file and leaves no temporary beside it.
  const auto path = directory / "image_1.png";
  const mpx::io::Image image{2, 1, 1, {0, 255}};
  mpx::io::write_png(path, image);
  CHECK(decode(path).pixels == image.pixels);
  CHECK(entries_in(directory) == 2);
  std::filesystem::remove_all(directory);
}

TEST_CASE("write_png rejects bad arguments with invalid_argument naming the values", "[io][png]") {
  const auto directory = fresh_directory("arguments");
  const auto path = directory / "bad.png";
  const std::vector<std::uint8_t> pixels(12);
  CHECK_THROWS_MATCHES(mpx::io::write_png(path, 0, 3, 1, pixels), mpx::invalid_argument,
                       Catch::Message("mpx::io::write_png(\"" + path.string() +
                                      "\"): width 0 and height 3 must be in [1, 2147483647]"));
  CHECK_THROWS_WITH(mpx::io::write_png(path, 4, -1, 1, pixels), Catch::Contains("height -1"));
  CHECK_THROWS_WITH(mpx::io::write_png(path, std::int64_t{1} << 31, 1, 1, pixels),
                    Catch::Contains("width 2147483648"));
  CHECK_THROWS_MATCHES(mpx::io::write_png(path, 2, 2, 4, pixels), mpx::invalid_argument,
                       Catch::Message("mpx::io::write_png(\"" + path.string() +
                                      "\"): channels is 4; PNG images here have 1 (gray) or 3 (RGB)"));
  CHECK_THROWS_MATCHES(mpx::io::write_png(path, 2, 3, 3, pixels), mpx::invalid_argument,
                       Catch::Message("mpx::io::write_png(\"" + path.string() +
                                      "\"): 12 pixel bytes given; width 2 x height 3 x channels 3 needs 18"));
  CHECK_THROWS_WITH(mpx::io::write_png(path, 2, 2, 1, pixels),
                    Catch::Contains("12 pixel bytes given") && Catch::Contains("needs 4"));
  CHECK(entries_in(directory) == 0);
  std::filesystem::remove_all(directory);
}

TEST_CASE("write_png into a missing directory throws io_error naming the path and leaves no file",
          "[io][png]") {
  const auto directory = fresh_directory("missing");
  const auto path = directory / "no" / "such" / "grid.png";
  const std::vector<std::uint8_t> pixels(4, 128);
  CHECK_THROWS_MATCHES(mpx::io::write_png(path, 2, 2, 1, pixels), mpx::io_error,
                       Catch::Predicate<mpx::io_error>([&](const mpx::io_error& e) {
                         return std::string(e.what()).find(path.string()) != std::string::npos;
                       }));
  CHECK(entries_in(directory) == 0);
  std::filesystem::remove_all(directory);
}

TEST_CASE("image_grid tiles images with padding and maps [low, high] to 0..255", "[io][png]") {
  // Three 2x2 gray images, two columns, padding 1: a 7 x 7 grid whose last cell stays background.
  mpx::Tensor<float, mpx::Host> images(mpx::Shape{3, 2, 2, 1});
  const std::vector<float> values{-1.0f, 1.0f,  0.0f,   0.5f,   // image 0
                                  -2.0f, 3.0f,  -0.5f,  0.25f,  // image 1: clamped both ways
                                  NAN,   0.99f, -0.99f, 1.0f};  // image 2
  std::copy(values.begin(), values.end(), images.values().begin());
  const mpx::io::Image grid =
      mpx::io::image_grid(images, {.columns = 2, .padding = 1, .low = -1.0, .high = 1.0, .background = 9});
  CHECK(grid.width == 7);
  CHECK(grid.height == 7);
  CHECK(grid.channels == 1);
  // (v + 1) * 127.5 rounded half up: 0 -> 127.5 -> 128, 0.5 -> 191.25 -> 191, -0.5 -> 63.75 -> 64,
  // 0.25 -> 159.375 -> 159, 0.99 -> 253.725 -> 254, -0.99 -> 1.275 -> 1; NaN -> 0.
  const std::vector<std::uint8_t> expected{
      9, 9,   9,   9, 9,  9,   9,  //
      9, 0,   255, 9, 0,  255, 9,  //
      9, 128, 191, 9, 64, 159, 9,  //
      9, 9,   9,   9, 9,  9,   9,  //
      9, 0,   254, 9, 9,  9,   9,  //
      9, 1,   255, 9, 9,  9,   9,  //
      9, 9,   9,   9, 9,  9,   9,  //
  };
  CHECK(grid.pixels == expected);

  // RGB keeps the channels interleaved; [0, 1] maps 0.5 to 127.5 -> 128; columns beyond N are dropped.
  mpx::Tensor<float, mpx::Host> colour(mpx::Shape{1, 1, 2, 3});
  const std::vector<float> rgb{0.0f, 0.5f, 1.0f, 1.0f, 0.0f, 0.2f};
  std::copy(rgb.begin(), rgb.end(), colour.values().begin());
  const mpx::io::Image strip =
      mpx::io::image_grid(colour, {.columns = 8, .padding = 0, .low = 0.0, .high = 1.0});
  CHECK(strip.width == 2);
  CHECK(strip.height == 1);
  CHECK(strip.channels == 3);
  CHECK(strip.pixels == std::vector<std::uint8_t>{0, 128, 255, 255, 0, 51});
}

TEST_CASE("image_grid rejects bad shapes and options naming the values", "[io][png]") {
  const mpx::Tensor<float, mpx::Host> two_channels(mpx::Shape{1, 2, 2, 2});
  CHECK_THROWS_MATCHES(
      mpx::io::image_grid(two_channels), mpx::shape_error,
      Catch::Message("mpx::io::image_grid: images have shape [1, 2, 2, 2]; expected [N, H, W, C] "
                     "with N, H, W > 0 and C 1 (gray) or 3 (RGB)"));
  CHECK_THROWS_AS(mpx::io::image_grid(mpx::Tensor<float, mpx::Host>(mpx::Shape{4, 4})), mpx::shape_error);
  const mpx::Tensor<float, mpx::Host> images(mpx::Shape{2, 2, 2, 1});
  CHECK_THROWS_MATCHES(mpx::io::image_grid(images, {.columns = 0}), mpx::invalid_argument,
                       Catch::Message("mpx::io::image_grid: columns 0 must be >= 1 and padding 2 >= 0"));
  CHECK_THROWS_WITH(mpx::io::image_grid(images, {.padding = -1}), Catch::Contains("padding -1"));
  CHECK_THROWS_MATCHES(
      mpx::io::image_grid(images, {.low = 1.0, .high = 1.0}), mpx::invalid_argument,
      Catch::Message("mpx::io::image_grid: the value range [1, 1] must be finite with low < high"));
  CHECK_THROWS_WITH(mpx::io::image_grid(images, {.high = std::numeric_limits<double>::infinity()}),
                    Catch::Contains("[-1, inf]"));
}

TEST_CASE("image_grid's picture writes as a PNG that reads back", "[io][png]") {
  const auto directory = fresh_directory("grid");
  mpx::Tensor<float, mpx::Host> images(mpx::Shape{5, 3, 4, 1});
  for (std::int64_t i = 0; i < images.numel(); ++i) images[i] = static_cast<float>(i % 11) / 5.0f - 1.0f;
  const mpx::io::Image grid = mpx::io::image_grid(images, {.columns = 3});
  mpx::io::write_png(directory / "grid.png", grid);
  const DecodedPng png = decode(directory / "grid.png");
  CHECK(png.width == 3 * (4 + 2) + 2);
  CHECK(png.height == 2 * (3 + 2) + 2);
  CHECK(png.pixels == grid.pixels);
  std::filesystem::remove_all(directory);
}

}  // namespace MPX_UNITY_ID
}  // namespace
