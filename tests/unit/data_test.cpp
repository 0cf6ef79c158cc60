// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The data layer: the IDX reader on hand-made files (gzip'd and raw, valid and corrupt), the
// Fashion-MNIST loader on small synthetic directories and, where the Debian package is installed, on
// the real files; Dataset::subset and sample shapes; the Batcher's coverage, determinism and shuffle
// distribution; and image augmentation, checked against torchvision's transforms written out step by step.
//
// IDX files are written here byte by byte from the format's definition, never by mpx, so a reader and
// a writer cannot agree on the same mistake. Expected statistics are recomputed in the test with a
// different (two-pass) formula from the loader's one-pass integer sums.

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>
#include <zlib.h>

#include <mpx/data/batcher.hpp>
#include <mpx/data/dataset.hpp>
#include <mpx/data/fashion_mnist.hpp>
#include <mpx/data/idx.hpp>
#include <mpx/data/image_augmentation.hpp>
#include <mpx/error.hpp>
#include <mpx/numeric/random.hpp>
#include <mpx/numeric/rounding.hpp>

#include "../support/temp_dir.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using mpx::data::Batcher;
using mpx::data::Dataset;
using mpx::data::LastBatch;
using Bytes = std::vector<std::uint8_t>;

// A scratch directory of this test file's own.
class TempDir : public mpx::test::TempDir {
 public:
  TempDir() : mpx::test::TempDir("mpx_data_test") {}
};

/// An IDX file from its parts: magic (0, 0, type, rank), big-endian dimensions, then `data`.
Bytes idx_file(std::uint8_t type, const std::vector<std::uint32_t>& dims, const Bytes& data) {
  Bytes bytes{0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (const std::uint32_t d : dims) {
    for (const int shift : {24, 16, 8, 0}) bytes.push_back(static_cast<std::uint8_t>(d >> shift));
  }
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

Bytes pattern(std::size_t count) {
  Bytes data(count);
  for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<std::uint8_t>((i * 37 + 11) % 256);
  return data;
}

void write_raw(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

void write_gz(const fs::path& path, const Bytes& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  if (!bytes.empty()) REQUIRE(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) > 0);
  REQUIRE(gzclose(file) == Z_OK);
}

Bytes file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The message of the `Exception` that `action` throws; fails the test if it throws nothing or
/// something else.
template <class Exception, class Action>
std::string thrown_message(Action&& action) {
  try {
    action();
  } catch (const Exception& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("threw an exception of another type: " << e.what());
  }
  FAIL("threw nothing");
  return {};
}

/// The message of the `mpx::io_error` that reading `path` throws.
std::string idx_error(const fs::path& path) {
  INFO("read_idx(" << path << ")");
  return thrown_message<mpx::io_error>([&] { (void)mpx::data::read_idx(path); });
}

/// Writes `bytes` both raw and gzip'd and returns the two error messages, for corruptions that must
/// be caught the same way whether or not the file is compressed.
std::array<std::string, 2> idx_errors_both_ways(const TempDir& dir, const std::string& name,
                                                const Bytes& bytes) {
  write_raw(dir / (name + ".raw"), bytes);
  write_gz(dir / (name + ".gz"), bytes);
  return {idx_error(dir / (name + ".raw")), idx_error(dir / (name + ".gz"))};
}

}  // namespace

TEST_CASE("read_idx reads gzip'd and uncompressed IDX files of rank 1 to 4", "[data][idx]") {
  const TempDir dir;
  const std::vector<std::vector<std::uint32_t>> shapes = {{7}, {3, 5}, {2, 3, 4}, {2, 1, 3, 5}, {300, 1000}};
  for (const auto& dims : shapes) {
    std::size_t count = 1;
    for (const std::uint32_t d : dims) count *= d;
    const Bytes data = pattern(count);
    const Bytes file = idx_file(0x08, dims, data);
    write_raw(dir / "array.raw", file);
    write_gz(dir / "array.gz", file);
    for (const char* name : {"array.raw", "array.gz"}) {
      INFO(name << " with " << dims.size() << " dimensions");
      const mpx::data::IdxArray array = mpx::data::read_idx(dir / name);
      REQUIRE(array.dims.size() == dims.size());
      for (std::size_t d = 0; d < dims.size(); ++d)
        CHECK(array.dims[d] == static_cast<std::int64_t>(dims[d]));
      CHECK(array.numel() == static_cast<std::int64_t>(count));
      CHECK(array.bytes == data);
    }
  }
}

TEST_CASE("read_idx reads a dimension with its high byte set as a big-endian value", "[data][idx]") {
  // 0x00000102 = 258: a little-endian reader would see 0x02010000 and reject it as too large.
  const TempDir dir;
  write_gz(dir / "wide.gz", idx_file(0x08, {258}, pattern(258)));
  const mpx::data::IdxArray array = mpx::data::read_idx(dir / "wide.gz");
  REQUIRE(array.dims.size() == 1);
  CHECK(array.dims[0] == 258);
}

TEST_CASE("read_idx rejects a header whose first two bytes are not zero", "[data][idx]") {
  const TempDir dir;
  Bytes file = idx_file(0x08, {4}, pattern(4));
  file[0] = 0x01;
  for (const std::string& message : idx_errors_both_ways(dir, "bad_magic", file)) {
    CHECK_THAT(message, Contains("bad_magic") && Contains("at byte 0") && Contains("bad magic") &&
                            Contains("0x01 0x00") && Contains("expected 0x00 0x00"));
  }
}

TEST_CASE("read_idx rejects element types other than unsigned byte, naming the type code", "[data][idx]") {
  const TempDir dir;
  // 0x0d is IDX's float type, 0x09 signed byte: valid IDX, but not what Fashion-MNIST uses.
  for (const std::uint8_t type : {std::uint8_t{0x0d}, std::uint8_t{0x09}}) {
    const std::string code = type == 0x0d ? "0x0d" : "0x09";
    for (const std::string& message : idx_errors_both_ways(dir, "type", idx_file(type, {4}, pattern(4)))) {
      CHECK_THAT(message,
                 Contains("at byte 2") && Contains("type code " + code) && Contains("expected 0x08"));
    }
  }
}

TEST_CASE("read_idx rejects rank 0 and rank 5", "[data][idx]") {
  const TempDir dir;
  for (const std::string& message : idx_errors_both_ways(dir, "rank0", Bytes{0, 0, 0x08, 0, 1, 2, 3})) {
    CHECK_THAT(message, Contains("at byte 3") && Contains("rank 0") && Contains("expected 1 to 4"));
  }
  const Bytes rank5 = idx_file(0x08, {1, 1, 1, 1, 2}, pattern(2));
  for (const std::string& message : idx_errors_both_ways(dir, "rank5", rank5)) {
    CHECK_THAT(message, Contains("at byte 3") && Contains("rank 5") && Contains("expected 1 to 4"));
  }
}

TEST_CASE("read_idx rejects a zero dimension, naming its position", "[data][idx]") {
  const TempDir dir;
  for (const std::string& message : idx_errors_both_ways(dir, "zero", idx_file(0x08, {3, 0, 2}, {}))) {
    CHECK_THAT(message, Contains("at byte 8") && Contains("dimension 1 is 0") && Contains("expected > 0"));
  }
}

TEST_CASE("read_idx rejects dimensions describing more than the size limit before allocating",
          "[data][idx]") {
  // Were the reader to allocate first, 2^48 bytes would end in std::bad_alloc (or the OOM killer),
  // not in an mpx::io_error.
  const TempDir dir;
  for (const std::string& message :
       idx_errors_both_ways(dir, "huge", idx_file(0x08, {65536, 65536, 65536}, pattern(16)))) {
    CHECK_THAT(message, Contains("at byte 4") && Contains("[65536, 65536, 65536]") &&
                            Contains("281474976710656 bytes") && Contains("limit of 1073741824 bytes"));
  }
  // A product that wraps a 64-bit integer must not pass as a small one: 2^32-1 four times wraps to a
  // small number under naive multiplication.
  const std::uint32_t max = 0xffffffffu;
  for (const std::string& message :
       idx_errors_both_ways(dir, "wrap", idx_file(0x08, {max, max, max, max}, {}))) {
    CHECK_THAT(message, Contains("more than 2^64") && Contains("limit of 1073741824 bytes"));
  }
  // One byte over the limit.
  for (const std::string& message : idx_errors_both_ways(dir, "over", idx_file(0x08, {(1u << 30) + 1}, {}))) {
    CHECK_THAT(message, Contains("describe 1073741825 bytes"));
  }
}

TEST_CASE("read_idx rejects truncated data and trailing bytes, naming the offsets", "[data][idx]") {
  const TempDir dir;
  // Header of a [4, 5] file: 4 + 2*4 = 12 bytes; its data is 20 bytes.
  const Bytes data = pattern(23);
  const Bytes short_by_one = idx_file(0x08, {4, 5}, Bytes(data.begin(), data.begin() + 19));
  for (const std::string& message : idx_errors_both_ways(dir, "short", short_by_one)) {
    CHECK_THAT(message, Contains("truncated data") && Contains("need 20 bytes of data from byte 12") &&
                            Contains("found 19") && Contains("at byte 31"));
  }
  const Bytes header_only = idx_file(0x08, {4, 5}, {});
  for (const std::string& message : idx_errors_both_ways(dir, "header_only", header_only)) {
    CHECK_THAT(message, Contains("truncated data") && Contains("found 0") && Contains("at byte 12"));
  }
  const Bytes three_extra = idx_file(0x08, {4, 5}, data);
  for (const std::string& message : idx_errors_both_ways(dir, "long", three_extra)) {
    CHECK_THAT(message, Contains("trailing bytes") && Contains("found 3 more") && Contains("at byte 32"));
  }
  // Far more trailing data than the reader bothers to count.
  Bytes huge_tail = idx_file(0x08, {4, 5}, pattern(20));
  huge_tail.resize(huge_tail.size() + 200000, 0);
  for (const std::string& message : idx_errors_both_ways(dir, "long_tail", huge_tail)) {
    CHECK_THAT(message, Contains("trailing bytes") && Contains("found at least") && Contains("at byte 32"));
  }
}

TEST_CASE(
    "read_idx grows its buffer with the data read: a 1 GiB claim over 10 bytes fails, large data reads whole",
    "[data][idx]") {
  // The data buffer doubles from 64 KiB as bytes arrive, so this claim costs 64 KiB, not 1 GiB (the
  // fuzz targets enforce the bound with -malloc_limit_mb).
  const TempDir dir;
  for (const std::string& message :
       idx_errors_both_ways(dir, "claims_a_gib", idx_file(0x08, {1u << 15, 1u << 15}, pattern(10)))) {
    CHECK_THAT(message,
               Contains("truncated data") && Contains("need 1073741824 bytes") && Contains("found 10"));
  }
  // 300,007 bytes cross the 64 KiB, 128 KiB and 256 KiB growth steps.
  const Bytes data = pattern(300007);
  write_gz(dir / "large.gz", idx_file(0x08, {300007}, data));
  const mpx::data::IdxArray array = mpx::data::read_idx(dir / "large.gz");
  REQUIRE(array.bytes.size() == data.size());
  CHECK(std::equal(array.bytes.begin(), array.bytes.end(), data.begin()));
}

TEST_CASE("read_idx rejects a truncated header", "[data][idx]") {
  const TempDir dir;
  for (const std::string& message : idx_errors_both_ways(dir, "magic3", Bytes{0, 0, 0x08})) {
    CHECK_THAT(message,
               Contains("truncated header") && Contains("found 3 of the 4 bytes") && Contains("at byte 3"));
  }
  // Rank 3 promises 12 bytes of dimensions; only 6 follow.
  for (const std::string& message :
       idx_errors_both_ways(dir, "dims", Bytes{0, 0, 0x08, 3, 0, 0, 0, 2, 0, 0})) {
    CHECK_THAT(message,
               Contains("truncated header") && Contains("found 6 of the 12 bytes") && Contains("at byte 10"));
  }
}

TEST_CASE("read_idx rejects a file that is neither gzip nor IDX", "[data][idx]") {
  const TempDir dir;
  const std::string text = "hello, this is not a dataset\n";
  write_raw(dir / "text.gz", Bytes(text.begin(), text.end()));
  CHECK_THAT(idx_error(dir / "text.gz"),
             Contains("text.gz") && Contains("bad magic") && Contains("0x68 0x65"));
}

TEST_CASE("read_idx rejects a cut-off or corrupt gzip stream", "[data][idx]") {
  const TempDir dir;
  write_gz(dir / "whole.gz", idx_file(0x08, {50, 40}, pattern(2000)));
  const Bytes compressed = file_bytes(dir / "whole.gz");
  REQUIRE(compressed.size() > 30);

  // Half of the compressed bytes: the deflate stream stops mid-way.
  write_raw(dir / "cut.gz",
            Bytes(compressed.begin(), compressed.begin() + static_cast<long>(compressed.size() / 2)));
  CHECK_THAT(idx_error(dir / "cut.gz"), Contains("cut.gz") && Contains("gzip stream"));

  // A wrong CRC-32 in the gzip trailer (the 8 bytes after the deflate data: CRC-32, then size): the
  // data decompresses in full, so only the checksum tells it is not what was written.
  Bytes bad_crc = compressed;
  bad_crc[bad_crc.size() - 8] ^= 0xff;
  write_raw(dir / "crc.gz", bad_crc);
  CHECK_THAT(idx_error(dir / "crc.gz"), Contains("crc.gz") && Contains("gzip stream"));
}

TEST_CASE("read_idx rejects an empty file", "[data][idx]") {
  const TempDir dir;
  for (const std::string& message : idx_errors_both_ways(dir, "empty", Bytes{})) {
    CHECK_THAT(message, Contains("empty") && Contains("at byte 0"));
  }
}

TEST_CASE("read_idx on a missing file names the path and the dataset-fashion-mnist package", "[data][idx]") {
  const TempDir dir;
  const std::string message = idx_error(dir / "no-such-file-idx3-ubyte.gz");
  CHECK_THAT(message, Contains((dir / "no-such-file-idx3-ubyte.gz").string()) && Contains("not found") &&
                          Contains("apt-get install dataset-fashion-mnist") &&
                          Contains("/usr/share/datasets/fashion-mnist") && Contains("MPX_FASHION_MNIST_DIR"));
  CHECK_THAT(idx_error(dir.path()), Contains("is a directory"));
}

namespace {

struct SyntheticSplit {
  std::vector<std::uint32_t> image_dims;  // [N, rows, cols]
  Bytes pixels;
  Bytes labels;
};

/// Writes the four Fashion-MNIST file names into `dir`; train gzip'd, test raw (read_idx reads both
/// under a .gz name, as zlib does).
void write_fashion_mnist(const TempDir& dir, const SyntheticSplit& train, const SyntheticSplit& test) {
  write_gz(dir / "train-images-idx3-ubyte.gz", idx_file(0x08, train.image_dims, train.pixels));
  write_gz(dir / "train-labels-idx1-ubyte.gz",
           idx_file(0x08, {static_cast<std::uint32_t>(train.labels.size())}, train.labels));
  write_raw(dir / "t10k-images-idx3-ubyte.gz", idx_file(0x08, test.image_dims, test.pixels));
  write_raw(dir / "t10k-labels-idx1-ubyte.gz",
            idx_file(0x08, {static_cast<std::uint32_t>(test.labels.size())}, test.labels));
}

SyntheticSplit synthetic_split(std::uint32_t count, std::uint32_t rows, std::uint32_t cols,
                               std::size_t salt) {
  SyntheticSplit split{{count, rows, cols}, Bytes(std::size_t{count} * rows * cols), Bytes(count)};
  for (std::size_t i = 0; i < split.pixels.size(); ++i) {
    split.pixels[i] = static_cast<std::uint8_t>((i * 97 + salt * 13 + (i * i) % 7) % 256);
  }
  for (std::size_t i = 0; i < count; ++i) split.labels[i] = static_cast<std::uint8_t>((i * 3 + salt) % 10);
  return split;
}

std::string load_error(const fs::path& dir) {
  INFO("load_fashion_mnist(" << dir << ")");
  return thrown_message<mpx::io_error>([&] { (void)mpx::data::load_fashion_mnist(dir); });
}

}  // namespace

TEST_CASE("load_fashion_mnist standardises both splits with the training set's mean and std",
          "[data][fashion_mnist]") {
  const TempDir dir;
  const SyntheticSplit train = synthetic_split(6, 2, 3, 1);
  const SyntheticSplit test = synthetic_split(4, 2, 3, 5);
  write_fashion_mnist(dir, train, test);

  // Two-pass statistics of the training pixels scaled to [0, 1].
  double mean = 0.0;
  for (const std::uint8_t p : train.pixels) mean += p / 255.0;
  mean /= static_cast<double>(train.pixels.size());
  double variance = 0.0;
  for (const std::uint8_t p : train.pixels) variance += (p / 255.0 - mean) * (p / 255.0 - mean);
  const double std_dev = std::sqrt(variance / static_cast<double>(train.pixels.size()));

  const mpx::data::FashionMnist data = mpx::data::load_fashion_mnist(dir.path());
  CHECK(data.pixel_mean == Approx(mean).epsilon(1e-12));
  CHECK(data.pixel_std == Approx(std_dev).epsilon(1e-12));
  // What inference applies to a pixel (saved beside the weights) gives the very floats training saw.
  const mpx::data::InputNormalization normalization = data.input_normalization();
  CHECK(normalization.mean == data.pixel_mean);
  CHECK(normalization.std_dev == data.pixel_std);
  for (std::size_t i = 0; i < test.pixels.size(); ++i)
    CHECK(data.test.images()[static_cast<std::int64_t>(i)] == normalization(test.pixels[i] / 255.0));
  for (const auto* pair : {&train, &test}) {
    const Dataset& set = pair == &train ? data.train : data.test;
    INFO((pair == &train ? "train" : "test"));
    REQUIRE(set.size() == static_cast<std::int64_t>(pair->labels.size()));
    REQUIRE(set.features() == 6);
    CHECK(set.classes() == 10);
    CHECK(set.images().shape() == mpx::Shape{set.size(), 6});
    for (std::size_t i = 0; i < pair->pixels.size(); ++i) {
      const double expected = (pair->pixels[i] / 255.0 - mean) / std_dev;
      CHECK(set.images()[static_cast<std::int64_t>(i)] == Approx(expected).margin(1e-5));
    }
    for (std::size_t i = 0; i < pair->labels.size(); ++i) CHECK(set.labels()[i] == pair->labels[i]);
  }
}

TEST_CASE("load_fashion_mnist with a given normalization maps pixels to [-1, 1] for diffusion",
          "[data][fashion_mnist]") {
  const TempDir dir;
  const SyntheticSplit train = synthetic_split(6, 2, 3, 1);
  const SyntheticSplit test = synthetic_split(4, 2, 3, 5);
  write_fashion_mnist(dir, train, test);
  const mpx::data::FashionMnist data =
      mpx::data::load_fashion_mnist(dir.path(), mpx::data::InputNormalization{.mean = 0.5, .std_dev = 0.5});
  CHECK(data.pixel_mean == 0.5);
  CHECK(data.pixel_std == 0.5);
  for (std::size_t i = 0; i < train.pixels.size(); ++i) {
    CHECK(data.train.images()[static_cast<std::int64_t>(i)] ==
          static_cast<float>((train.pixels[i] / 255.0 - 0.5) / 0.5));
  }
  for (std::size_t i = 0; i < test.pixels.size(); ++i) {
    const float value = data.test.images()[static_cast<std::int64_t>(i)];
    CHECK(value >= -1.0f);
    CHECK(value <= 1.0f);
    CHECK(value == static_cast<float>(2.0 * test.pixels[i] / 255.0 - 1.0));
  }
  CHECK_THROWS_AS(
      mpx::data::load_fashion_mnist(dir.path(), mpx::data::InputNormalization{.mean = 0.0, .std_dev = 0.0}),
      mpx::invalid_argument);
}

TEST_CASE("load_fashion_mnist rejects mismatched counts, labels above 9 and constant images",
          "[data][fashion_mnist]") {
  SECTION("five labels for six images") {
    const TempDir dir;
    SyntheticSplit train = synthetic_split(6, 2, 2, 1);
    train.labels.pop_back();
    write_fashion_mnist(dir, train, synthetic_split(2, 2, 2, 3));
    CHECK_THAT(load_error(dir.path()), Contains("train-labels-idx1-ubyte.gz") && Contains("holds 5 labels") &&
                                           Contains("holds 6 images"));
  }
  SECTION("label 10") {
    const TempDir dir;
    SyntheticSplit test = synthetic_split(4, 2, 2, 3);
    test.labels[2] = 10;
    write_fashion_mnist(dir, synthetic_split(6, 2, 2, 1), test);
    // The label of image 2 sits at byte 8 + 2.
    CHECK_THAT(load_error(dir.path()), Contains("t10k-labels-idx1-ubyte.gz") && Contains("at byte 10") &&
                                           Contains("label 10 of image 2") && Contains("expected 0 to 9"));
  }
  SECTION("test images of another size") {
    const TempDir dir;
    write_fashion_mnist(dir, synthetic_split(6, 2, 2, 1), synthetic_split(3, 2, 3, 3));
    CHECK_THAT(load_error(dir.path()),
               Contains("t10k-images-idx3-ubyte.gz") && Contains("2x3") && Contains("2x2"));
  }
  SECTION("images of rank 2") {
    const TempDir dir;
    write_fashion_mnist(dir, synthetic_split(6, 2, 2, 1), synthetic_split(3, 2, 2, 3));
    write_gz(dir / "train-images-idx3-ubyte.gz", idx_file(0x08, {6, 4}, pattern(24)));
    CHECK_THAT(load_error(dir.path()),
               Contains("train-images-idx3-ubyte.gz") && Contains("rank 2") && Contains("expected 3"));
  }
  SECTION("constant training images") {
    const TempDir dir;
    SyntheticSplit train = synthetic_split(6, 2, 2, 1);
    std::fill(train.pixels.begin(), train.pixels.end(), std::uint8_t{17});
    write_fashion_mnist(dir, train, synthetic_split(3, 2, 2, 3));
    CHECK_THAT(load_error(dir.path()), Contains("every training pixel is 17"));
  }
  SECTION("a missing file") {
    const TempDir dir;
    write_fashion_mnist(dir, synthetic_split(6, 2, 2, 1), synthetic_split(3, 2, 2, 3));
    fs::remove(dir / "t10k-labels-idx1-ubyte.gz");
    CHECK_THAT(load_error(dir.path()),
               Contains((dir / "t10k-labels-idx1-ubyte.gz").string()) && Contains("dataset-fashion-mnist"));
  }
  SECTION("a missing directory") {
    const TempDir dir;
    CHECK_THAT(load_error(dir / "nowhere"), Contains((dir / "nowhere").string()) && Contains("not found") &&
                                                Contains("apt-get install dataset-fashion-mnist"));
  }
}

TEST_CASE("default_fashion_mnist_dir honours MPX_FASHION_MNIST_DIR", "[data][fashion_mnist]") {
  const char* previous = std::getenv("MPX_FASHION_MNIST_DIR");
  const std::optional<std::string> saved = previous ? std::optional<std::string>(previous) : std::nullopt;

  ::setenv("MPX_FASHION_MNIST_DIR", "/somewhere/else", 1);
  CHECK(mpx::data::default_fashion_mnist_dir() == fs::path("/somewhere/else"));
  ::setenv("MPX_FASHION_MNIST_DIR", "", 1);  // set but empty counts as unset
  CHECK(mpx::data::default_fashion_mnist_dir() == fs::path("/usr/share/datasets/fashion-mnist"));
  ::unsetenv("MPX_FASHION_MNIST_DIR");
  CHECK(mpx::data::default_fashion_mnist_dir() == fs::path("/usr/share/datasets/fashion-mnist"));

  if (saved) ::setenv("MPX_FASHION_MNIST_DIR", saved->c_str(), 1);
}

namespace {

/// The real dataset, loaded once for every test that needs it; null where it is not installed.
const mpx::data::FashionMnist* real_fashion_mnist() {
  static const std::optional<mpx::data::FashionMnist> data = []() -> std::optional<mpx::data::FashionMnist> {
    const fs::path dir = mpx::data::default_fashion_mnist_dir();
    if (!fs::exists(dir / "train-images-idx3-ubyte.gz")) return std::nullopt;
    return mpx::data::load_fashion_mnist(dir);
  }();
  return data ? &*data : nullptr;
}

std::map<std::int32_t, std::int64_t> class_counts(const Dataset& set) {
  std::map<std::int32_t, std::int64_t> counts;
  for (const std::int32_t label : set.labels()) ++counts[label];
  return counts;
}

}  // namespace

TEST_CASE("load_fashion_mnist reads the real dataset: sizes, balanced labels, standardised pixels",
          "[data][fashion_mnist][real]") {
  const mpx::data::FashionMnist* data = real_fashion_mnist();
  if (data == nullptr) {
    WARN("SKIPPED: Fashion-MNIST not found in " << mpx::data::default_fashion_mnist_dir()
                                                << " (apt-get install dataset-fashion-mnist)");
    return;
  }
  CHECK(data->train.size() == 60000);
  CHECK(data->test.size() == 10000);
  CHECK(data->train.features() == 784);
  CHECK(data->test.features() == 784);
  CHECK(data->train.classes() == 10);

  // The dataset's README: 6000 training and 1000 test images per class.
  const auto train_counts = class_counts(data->train);
  const auto test_counts = class_counts(data->test);
  REQUIRE(train_counts.size() == 10);
  REQUIRE(test_counts.size() == 10);
  for (std::int32_t c = 0; c < 10; ++c) {
    CHECK(train_counts.at(c) == 6000);
    CHECK(test_counts.at(c) == 1000);
  }
  // First labels of each file, read from the files with Python's gzip module when writing this test.
  const std::vector<std::int32_t> train_head{9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
  const std::vector<std::int32_t> test_head{9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
  CHECK(std::vector<std::int32_t>(data->train.labels().begin(), data->train.labels().begin() + 10) ==
        train_head);
  CHECK(std::vector<std::int32_t>(data->test.labels().begin(), data->test.labels().begin() + 10) ==
        test_head);

  // The commonly published statistics of Fashion-MNIST's training pixels: mean 0.2860, std 0.3530.
  CHECK(data->pixel_mean == Approx(0.2860).margin(5e-4));
  CHECK(data->pixel_std == Approx(0.3530).margin(5e-4));

  // After standardisation the training pixels have mean 0 and std 1 (accumulated here in double).
  const auto moments = [](const Dataset& set) {
    double sum = 0.0;
    double sum_of_squares = 0.0;
    for (const float x : set.images().values()) {
      sum += x;
      sum_of_squares += static_cast<double>(x) * x;
    }
    const auto n = static_cast<double>(set.images().numel());
    const double mean = sum / n;
    return std::array<double, 2>{mean, std::sqrt(sum_of_squares / n - mean * mean)};
  };
  const auto [train_mean, train_std] = moments(data->train);
  CHECK(std::abs(train_mean) < 1e-5);
  CHECK(std::abs(train_std - 1.0) < 1e-5);
  // The test set went through the training transform: close to, but not exactly, standard.
  const auto [test_mean, test_std] = moments(data->test);
  CHECK(std::abs(test_mean) < 0.05);
  CHECK(std::abs(test_std - 1.0) < 0.05);
  // Black pixels (0) exist in both splits and must map to the same value.
  const auto lowest = [](const Dataset& set) {
    return *std::min_element(set.images().values().begin(), set.images().values().end());
  };
  CHECK(lowest(data->train) == lowest(data->test));
}

TEST_CASE("Dataset::subset copies a contiguous range of samples and rejects ranges outside the set",
          "[data][dataset]") {
  mpx::Tensor<float, mpx::Host> images(mpx::Shape{5, 3});
  for (std::int64_t i = 0; i < images.numel(); ++i) images[i] = static_cast<float>(i);
  const Dataset set(std::move(images), {0, 1, 2, 0, 1}, 3);

  const Dataset middle = set.subset(1, 3);
  REQUIRE(middle.size() == 3);
  CHECK(middle.features() == 3);
  CHECK(middle.classes() == 3);
  CHECK(middle.labels() == std::vector<std::int32_t>{1, 2, 0});
  for (std::int64_t i = 0; i < 9; ++i) CHECK(middle.images()[i] == static_cast<float>(i + 3));
  CHECK(middle.images().data() != set.images().data() + 3);  // a copy, not a view
  CHECK(set.image(4)[2] == 14.0f);

  CHECK(set.subset(5, 0).size() == 0);
  CHECK(set.subset(0, 5).size() == 5);
  CHECK_THAT(thrown_message<mpx::invalid_argument>([&] { (void)set.subset(3, 3); }),
             Contains("[3, 6)") && Contains("5 samples"));
  CHECK_THROWS_AS(set.subset(-1, 2), mpx::invalid_argument);

  const auto with_real = real_fashion_mnist();
  if (with_real != nullptr) {
    const Dataset first = with_real->train.subset(100, 50);
    CHECK(first.size() == 50);
    CHECK(std::equal(first.image(0).begin(), first.image(0).end(), with_real->train.image(100).begin()));
    CHECK(first.labels()[49] == with_real->train.labels()[149]);
  }
}

TEST_CASE("Dataset rejects images and labels that do not fit together", "[data][dataset]") {
  CHECK_THAT(thrown_message<mpx::shape_error>([&] {
               (void)Dataset(mpx::Tensor<float, mpx::Host>(mpx::Shape{4}), {0, 1, 0, 1}, 2);
             }),
             Contains("rank 2"));
  CHECK_THAT(thrown_message<mpx::shape_error>([&] {
               (void)Dataset(mpx::Tensor<float, mpx::Host>(mpx::Shape{4, 2}), {0, 1, 0}, 2);
             }),
             Contains("4 samples") && Contains("3 labels"));
  CHECK_THAT(thrown_message<mpx::invalid_argument>([&] {
               (void)Dataset(mpx::Tensor<float, mpx::Host>(mpx::Shape{2, 2}), {0, 2}, 2);
             }),
             Contains("label 2 of sample 1"));
  CHECK_THROWS_AS(Dataset(mpx::Tensor<float, mpx::Host>(mpx::Shape{2, 2}), {0, 0}, 0), mpx::invalid_argument);
}

namespace {

/// Sample i has features {i, i + 0.5} and label i mod 7, so a batch row shows which sample it came
/// from and whether its label travelled with it.
Dataset numbered_dataset(std::int64_t count) {
  mpx::Tensor<float, mpx::Host> images(mpx::Shape{count, 2});
  std::vector<std::int32_t> labels(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    images[2 * i] = static_cast<float>(i);
    images[2 * i + 1] = static_cast<float>(i) + 0.5f;
    labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % 7);
  }
  return Dataset(std::move(images), std::move(labels), 7);
}

/// Sample indices in the order one epoch deals them, checking each row against its label.
std::vector<std::int64_t> deal_epoch(Batcher& batcher, std::uint64_t epoch,
                                     std::vector<std::int64_t>* batch_sizes = nullptr) {
  batcher.start_epoch(epoch);
  std::vector<std::int64_t> seen;
  mpx::Tensor<float, mpx::Host> images;
  mpx::Tensor<std::int32_t, mpx::Host> labels;
  while (batcher.next(images, labels)) {
    REQUIRE(images.rank() == 2);
    REQUIRE(labels.shape() == mpx::Shape{images.shape()[0]});
    if (batch_sizes != nullptr) batch_sizes->push_back(images.shape()[0]);
    for (std::int64_t b = 0; b < images.shape()[0]; ++b) {
      const auto sample = static_cast<std::int64_t>(images[2 * b]);
      CHECK(images[2 * b + 1] == static_cast<float>(sample) + 0.5f);
      CHECK(labels[b] == sample % 7);
      seen.push_back(sample);
    }
  }
  return seen;
}

/// The shuffle exactly as Batcher's documentation states it, written independently of the class: the
/// order is a cross-machine contract (resuming a run elsewhere must see the same batches).
std::vector<std::int64_t> documented_order(std::int64_t n, std::uint64_t seed, std::uint64_t epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  std::uint64_t k = 0;
  for (std::int64_t i = n - 1; i >= 1; --i) {
    const std::uint64_t bound = static_cast<std::uint64_t>(i) + 1;
    const std::uint64_t reject_below = (std::uint64_t{1} << 32) % bound;  // 2^32 mod bound
    std::uint64_t product = 0;
    do {
      product = std::uint64_t{mpx::random_bits(seed, epoch, k++)} * bound;
    } while ((product & 0xffffffffu) < reject_below);
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(product >> 32)]);
  }
  return order;
}

}  // namespace

TEST_CASE("Batcher deals every sample exactly once per epoch, keeping or dropping the partial batch",
          "[data][batcher]") {
  const Dataset set = numbered_dataset(103);

  Batcher keep(set, {.batch_size = 10, .seed = 42, .shuffle = true, .last_batch = LastBatch::Keep});
  CHECK(keep.batches_per_epoch() == 11);
  for (std::uint64_t epoch : {0u, 1u, 7u}) {
    std::vector<std::int64_t> sizes;
    std::vector<std::int64_t> seen = deal_epoch(keep, epoch, &sizes);
    CHECK(std::vector<std::int64_t>(keep.order().begin(), keep.order().end()) == seen);
    CHECK(sizes.size() == 11);
    CHECK(sizes.back() == 3);
    std::sort(seen.begin(), seen.end());
    std::vector<std::int64_t> all(103);
    for (std::int64_t i = 0; i < 103; ++i) all[static_cast<std::size_t>(i)] = i;
    CHECK(seen == all);
  }

  Batcher drop(set, {.batch_size = 10, .seed = 42, .shuffle = true, .last_batch = LastBatch::Drop});
  CHECK(drop.batches_per_epoch() == 10);
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> seen = deal_epoch(drop, 0, &sizes);
  CHECK(sizes == std::vector<std::int64_t>(10, 10));
  // The dropped three are the last three of the epoch's order, and the rest are distinct.
  CHECK(std::equal(seen.begin(), seen.end(), drop.order().begin()));
  std::sort(seen.begin(), seen.end());
  CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());

  // A batch size dividing the set: nothing partial either way.
  const Dataset hundred = set.subset(0, 100);
  Batcher exact(hundred, {.batch_size = 25, .seed = 1, .shuffle = true, .last_batch = LastBatch::Drop});
  CHECK(exact.batches_per_epoch() == 4);
}

TEST_CASE("Batcher reuses the batch tensors and reallocates them only for a smaller last batch",
          "[data][batcher]") {
  const Dataset set = numbered_dataset(25);
  Batcher batcher(set, {.batch_size = 10, .seed = 3});
  mpx::Tensor<float, mpx::Host> images;
  mpx::Tensor<std::int32_t, mpx::Host> labels;
  REQUIRE(batcher.next(images, labels));
  const float* buffer = images.data();
  const std::int32_t* label_buffer = labels.data();
  CHECK(images.shape() == mpx::Shape{10, 2});
  CHECK(labels.shape() == mpx::Shape{10});
  REQUIRE(batcher.next(images, labels));
  CHECK(images.data() == buffer);
  CHECK(labels.data() == label_buffer);
  REQUIRE(batcher.next(images, labels));
  CHECK(images.shape() == mpx::Shape{5, 2});
  CHECK(labels.shape() == mpx::Shape{5});
  CHECK_FALSE(batcher.next(images, labels));
  CHECK_FALSE(batcher.next(images, labels));  // stays exhausted until the next start_epoch
  batcher.start_epoch(1);
  CHECK(batcher.next(images, labels));
  CHECK(images.shape() == mpx::Shape{10, 2});
}

TEST_CASE("Batcher's order depends only on seed and epoch and follows the documented shuffle",
          "[data][batcher]") {
  const Dataset set = numbered_dataset(1000);
  Batcher a(set, {.batch_size = 32, .seed = 2026});
  Batcher b(set, {.batch_size = 32, .seed = 2026});
  Batcher other_seed(set, {.batch_size = 32, .seed = 2027});

  const std::vector<std::int64_t> a3 = deal_epoch(a, 3);
  CHECK(deal_epoch(b, 3) == a3);
  (void)deal_epoch(a, 4);
  CHECK(deal_epoch(a, 3) == a3);  // an epoch can be regenerated after others
  CHECK(deal_epoch(a, 4) != a3);
  CHECK(deal_epoch(other_seed, 3) != a3);

  for (const std::uint64_t epoch : {0u, 1u, 3u}) {
    a.start_epoch(epoch);
    CHECK(std::vector<std::int64_t>(a.order().begin(), a.order().end()) ==
          documented_order(1000, 2026, epoch));
  }

  // Without shuffling every epoch is the dataset order.
  Batcher ordered(set, {.batch_size = 64, .seed = 2026, .shuffle = false});
  const std::vector<std::int64_t> in_order = deal_epoch(ordered, 5);
  CHECK(std::is_sorted(in_order.begin(), in_order.end()));
  CHECK(in_order.size() == 1000);
}

TEST_CASE("Batcher's shuffle draws every permutation of a small set equally often", "[data][batcher]") {
  // A biased shuffle (e.g. swapping with j in [0, i) instead of [0, i]) skews or misses permutations.
  // Pearson's chi-square over 24 permutations of 4 samples, 24000 epochs: 23 degrees of freedom, whose
  // 99.99th percentile is about 55. The draws are deterministic, so this either always passes or never.
  const Dataset set = numbered_dataset(4);
  Batcher batcher(set, {.batch_size = 4, .seed = 11});
  std::map<std::vector<std::int64_t>, int> counts;
  constexpr int epochs = 24000;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    batcher.start_epoch(static_cast<std::uint64_t>(epoch));
    ++counts[std::vector<std::int64_t>(batcher.order().begin(), batcher.order().end())];
  }
  REQUIRE(counts.size() == 24);
  const double expected = epochs / 24.0;
  double chi_square = 0.0;
  for (const auto& [order, count] : counts) chi_square += (count - expected) * (count - expected) / expected;
  INFO("chi-square = " << chi_square);
  CHECK(chi_square < 55.0);
}

TEST_CASE("The shuffle's bounded draw rejects exactly the words that would bias it", "[data][batcher]") {
  // With bound 3 * 2^30, 2^32 mod bound = 2^30: a quarter of all words are rejected, so the rejection
  // path (never reached by small datasets) is exercised and checked against the documented rule.
  constexpr std::uint64_t bound = 3ull << 30;
  constexpr std::uint64_t reject_below = (std::uint64_t{1} << 32) % bound;
  std::uint64_t draw = 0;
  std::uint64_t k = 0;
  std::array<int, 3> residues{};
  for (int n = 0; n < 4000; ++n) {
    std::uint64_t product = 0;
    do {
      product = std::uint64_t{mpx::random_bits(5, 9, k++)} * bound;
    } while ((product & 0xffffffffu) < reject_below);
    const std::uint32_t value =
        mpx::data::detail::uniform_below(static_cast<std::uint32_t>(bound), 5, 9, draw);
    REQUIRE(value == product >> 32);
    REQUIRE(draw == k);
    ++residues[value % 3];
  }
  // About a quarter of the words were rejected: 4000 accepted out of ~5333 drawn.
  CHECK(draw > 5000);
  CHECK(draw < 5700);
  // Without the rejection, value = floor(3x / 4) for a word x, which lands on multiples of 3 twice as
  // often as on other values (half of all draws instead of a third).
  for (const int count : residues) CHECK(std::abs(count - 4000 / 3) < 150);
}

TEST_CASE("Batcher rejects a batch size below one and handles an empty dataset", "[data][batcher]") {
  const Dataset set = numbered_dataset(5);
  CHECK_THAT(thrown_message<mpx::invalid_argument>([&] { (void)Batcher(set, {.batch_size = 0}); }),
             Contains("batch_size = 0"));
  const Dataset empty = set.subset(0, 0);
  Batcher batcher(empty, {.batch_size = 4});
  CHECK(batcher.batches_per_epoch() == 0);
  mpx::Tensor<float, mpx::Host> images;
  mpx::Tensor<std::int32_t, mpx::Host> labels;
  CHECK_FALSE(batcher.next(images, labels));
}

TEST_CASE(
    "Dataset's sample shape defaults to [features], can be set to one of as many elements, and survives "
    "subset",
    "[data][dataset]") {
  CHECK(Dataset{}.sample_shape() == mpx::Shape{0});
  Dataset set = numbered_dataset(6);
  CHECK(set.sample_shape() == mpx::Shape{2});
  CHECK(set.subset(1, 2).sample_shape() == mpx::Shape{2});

  mpx::Tensor<float, mpx::Host> pixels(mpx::Shape{5, 12});
  Dataset images(std::move(pixels), {0, 1, 2, 0, 1}, 3);
  CHECK(images.sample_shape() == mpx::Shape{12});
  images.set_sample_shape(mpx::Shape{2, 3, 2});
  CHECK(images.sample_shape() == mpx::Shape{2, 3, 2});
  CHECK(images.features() == 12);  // the storage is unchanged
  CHECK(images.images().shape() == mpx::Shape{5, 12});
  CHECK(images.subset(1, 3).sample_shape() == mpx::Shape{2, 3, 2});
  CHECK(images.subset(5, 0).sample_shape() == mpx::Shape{2, 3, 2});
  images.set_sample_shape(mpx::Shape{3, 4});
  CHECK(images.sample_shape() == mpx::Shape{3, 4});

  // Another element count, and a rank a batch could not add a dimension to; the shape is kept.
  CHECK_THAT(thrown_message<mpx::shape_error>([&] {
               images.set_sample_shape(mpx::Shape{2, 3, 3});
             }),
             Contains("set_sample_shape") && Contains("[2, 3, 3]") && Contains("18 elements") &&
                 Contains("[3, 4]") && Contains("12 features"));
  CHECK_THAT(thrown_message<mpx::shape_error>([&] {
               images.set_sample_shape(mpx::Shape{1, 2, 3, 2});
             }),
             Contains("[1, 2, 3, 2]") && Contains("rank 1 to 3"));
  CHECK(images.sample_shape() == mpx::Shape{3, 4});
}

TEST_CASE("Batcher gives batches the dataset's sample shape: [batch, 28, 28, 1] for images",
          "[data][batcher]") {
  constexpr std::int64_t samples = 10;
  mpx::Tensor<float, mpx::Host> pixels(mpx::Shape{samples, 784});
  for (std::int64_t i = 0; i < pixels.numel(); ++i) pixels[i] = static_cast<float>(i % 9973) * 0.25f;
  Dataset set(std::move(pixels), std::vector<std::int32_t>(samples, 1), 2);

  Batcher flat(set, {.batch_size = 4, .seed = 5});
  mpx::Tensor<float, mpx::Host> as_rows;
  mpx::Tensor<std::int32_t, mpx::Host> labels;
  REQUIRE(flat.next(as_rows, labels));
  CHECK(as_rows.shape() == mpx::Shape{4, 784});  // the MLP's batch, as before

  set.set_sample_shape(mpx::Shape{28, 28, 1});
  Batcher shaped(set, {.batch_size = 4, .seed = 5});
  mpx::Tensor<float, mpx::Host> images;
  REQUIRE(shaped.next(images, labels));
  CHECK(images.shape() == mpx::Shape{4, 28, 28, 1});
  CHECK(std::memcmp(images.data(), as_rows.data(), as_rows.size_bytes()) == 0);  // the same values
  REQUIRE(shaped.next(images, labels));
  REQUIRE(shaped.next(images, labels));
  CHECK(images.shape() == mpx::Shape{2, 28, 28, 1});  // the partial last batch
  // A shape set after the batcher was built applies from the next batch on.
  set.set_sample_shape(mpx::Shape{28, 28});
  shaped.start_epoch(1);
  REQUIRE(shaped.next(images, labels));
  CHECK(images.shape() == mpx::Shape{4, 28, 28});
}

namespace {

using mpx::data::ImageAugmentation;

/// Pixel (y, x, c) of an [H, W, C] image as a flat index.
std::int64_t at(const mpx::Shape& shape, std::int64_t y, std::int64_t x, std::int64_t c) {
  return (y * shape[1] + x) * shape[2] + c;
}

/// RandomCrop(padding=p, fill) then RandomHorizontalFlip written out step by step, as torchvision's
/// documentation describes them: pad every side with `fill`, cut the H x W window at (top, left),
/// mirror the columns. Independent of ImageAugmentation::apply, which works on clipped row ranges.
std::vector<float> torchvision_reference(const std::vector<float>& image, const mpx::Shape& shape,
                                         std::int64_t p, float fill, const ImageAugmentation::Draw& draw) {
  const std::int64_t h = shape[0], w = shape[1], ch = shape[2];
  const std::int64_t padded_w = w + 2 * p;
  std::vector<float> padded(static_cast<std::size_t>((h + 2 * p) * padded_w * ch), fill);
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x)
      for (std::int64_t c = 0; c < ch; ++c)
        padded[static_cast<std::size_t>(((y + p) * padded_w + x + p) * ch + c)] =
            image[static_cast<std::size_t>(at(shape, y, x, c))];
  std::vector<float> cropped(image.size());
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x)
      for (std::int64_t c = 0; c < ch; ++c)
        cropped[static_cast<std::size_t>(at(shape, y, x, c))] =
            padded[static_cast<std::size_t>(((draw.top + y) * padded_w + draw.left + x) * ch + c)];
  if (!draw.flip) return cropped;
  std::vector<float> flipped(image.size());
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x)
      for (std::int64_t c = 0; c < ch; ++c)
        flipped[static_cast<std::size_t>(at(shape, y, x, c))] =
            cropped[static_cast<std::size_t>(at(shape, y, w - 1 - x, c))];
  return flipped;
}

/// A 4 x 5 x 2 image whose value tells where it came from: 100 y + 10 x + c + 1 (never 0).
std::vector<float> labelled_image(const mpx::Shape& shape) {
  std::vector<float> image(static_cast<std::size_t>(shape.numel()));
  for (std::int64_t y = 0; y < shape[0]; ++y)
    for (std::int64_t x = 0; x < shape[1]; ++x)
      for (std::int64_t c = 0; c < shape[2]; ++c)
        image[static_cast<std::size_t>(at(shape, y, x, c))] = static_cast<float>(100 * y + 10 * x + c + 1);
  return image;
}

std::vector<float> applied(const ImageAugmentation& augmentation, const std::vector<float>& image,
                           const mpx::Shape& shape, const ImageAugmentation::Draw& draw) {
  std::vector<float> out(image.size(), std::nanf(""));
  augmentation.apply(image.data(), shape, draw, out.data());
  return out;
}

}  // namespace

TEST_CASE("ImageAugmentation::apply is torchvision's RandomCrop(padding) then RandomHorizontalFlip",
          "[data][augmentation]") {
  const mpx::Shape shape{4, 5, 2};
  const std::vector<float> image = labelled_image(shape);

  SECTION("a few pixels by hand") {
    const ImageAugmentation crop{.crop_padding = 1, .padding_value = -0.5f};
    // Window at (0, 0) of the padded image: the image moves one pixel down and right.
    const std::vector<float> shifted = applied(crop, image, shape, {.top = 0, .left = 0, .flip = false});
    CHECK(shifted[at(shape, 0, 3, 1)] == -0.5f);                        // the top padding row
    CHECK(shifted[at(shape, 2, 0, 0)] == -0.5f);                        // the left padding column
    CHECK(shifted[at(shape, 1, 1, 0)] == 1.0f);                         // image (0, 0, 0)
    CHECK(shifted[at(shape, 3, 4, 1)] == 100 * 2 + 10 * 3 + 1 + 1.0f);  // image (2, 3, 1)
    // Flip only: column x shows column 4 - x, both channels together.
    const ImageAugmentation flip{.horizontal_flip = true};
    const std::vector<float> mirrored = applied(flip, image, shape, {.top = 0, .left = 0, .flip = true});
    CHECK(mirrored[at(shape, 0, 0, 0)] == 41.0f);
    CHECK(mirrored[at(shape, 0, 0, 1)] == 42.0f);
    CHECK(mirrored[at(shape, 3, 4, 1)] == 302.0f);
    // The centre window of the padded image, unflipped, is the image itself.
    CHECK(applied(crop, image, shape, {.top = 1, .left = 1, .flip = false}) == image);
  }

  SECTION("every window and flip against the step-by-step reference") {
    // p = 6 exceeds both sides of the image: some windows hold padding only.
    for (const std::int64_t p : {0, 1, 2, 6}) {
      for (const float fill : {0.0f, -1.25f}) {
        const ImageAugmentation augmentation{
            .crop_padding = p, .padding_value = fill, .horizontal_flip = true};
        for (std::int64_t top = 0; top <= 2 * p; ++top) {
          for (std::int64_t left = 0; left <= 2 * p; ++left) {
            for (const bool flip : {false, true}) {
              const ImageAugmentation::Draw draw{.top = top, .left = left, .flip = flip};
              INFO("p " << p << ", fill " << fill << ", top " << top << ", left " << left << ", flip "
                        << flip);
              REQUIRE(applied(augmentation, image, shape, draw) ==
                      torchvision_reference(image, shape, p, fill, draw));
            }
          }
        }
      }
    }
  }

  SECTION("bf16 output is the fp32 output rounded") {
    const ImageAugmentation augmentation{.crop_padding = 2, .padding_value = 0.3f, .horizontal_flip = true};
    std::vector<float> fractional = image;
    for (float& value : fractional) value = value / 7.0f - 11.0f;  // values bf16 must round
    for (const ImageAugmentation::Draw draw :
         {ImageAugmentation::Draw{1, 3, false}, ImageAugmentation::Draw{4, 0, true}}) {
      const std::vector<float> wide = applied(augmentation, fractional, shape, draw);
      std::vector<Eigen::bfloat16> narrow(wide.size());
      augmentation.apply(fractional.data(), shape, draw, narrow.data());
      for (std::size_t i = 0; i < wide.size(); ++i) {
        INFO("element " << i);
        CHECK(Eigen::numext::bit_cast<std::uint16_t>(narrow[i]) ==
              Eigen::numext::bit_cast<std::uint16_t>(mpx::round_to<mpx::BFloat16>(wide[i])));
      }
    }
  }
}

TEST_CASE("ImageAugmentation's draws are the documented Philox words, uniform, and keyed by epoch and sample",
          "[data][augmentation]") {
  const ImageAugmentation augmentation{.crop_padding = 4, .horizontal_flip = true};
  constexpr std::uint64_t seed = 77;
  constexpr std::int64_t samples = 4000;
  std::array<std::int64_t, 9> tops{};
  std::array<std::int64_t, 9> lefts{};
  std::int64_t flips = 0;
  std::int64_t differ_from_next_epoch = 0;
  for (std::int64_t sample = 0; sample < samples; ++sample) {
    const ImageAugmentation::Draw draw = augmentation.draw(seed, 3, sample);
    // The words as the header documents them, recomputed here.
    const std::uint64_t stream = 0x8000000000000000ull + 3;
    const auto word = [&](std::uint64_t k) {
      return std::uint64_t{mpx::random_bits(seed, stream, 4 * static_cast<std::uint64_t>(sample) + k)};
    };
    REQUIRE(draw.top == static_cast<std::int64_t>((word(0) * 9) >> 32));
    REQUIRE(draw.left == static_cast<std::int64_t>((word(1) * 9) >> 32));
    REQUIRE(draw.flip == (word(2) >= 0x80000000u));
    REQUIRE(draw.top >= 0);
    REQUIRE(draw.top <= 8);
    REQUIRE(draw.left >= 0);
    REQUIRE(draw.left <= 8);
    const ImageAugmentation::Draw again = augmentation.draw(seed, 3, sample);
    REQUIRE((again.top == draw.top && again.left == draw.left && again.flip == draw.flip));
    ++tops[static_cast<std::size_t>(draw.top)];
    ++lefts[static_cast<std::size_t>(draw.left)];
    flips += draw.flip ? 1 : 0;
    const ImageAugmentation::Draw next_epoch = augmentation.draw(seed, 4, sample);
    if (next_epoch.top != draw.top || next_epoch.left != draw.left || next_epoch.flip != draw.flip)
      ++differ_from_next_epoch;
  }
  // 4000 / 9 = 444 expected per offset (standard deviation about 20); the bounds are 7 deviations wide.
  for (std::size_t offset = 0; offset < 9; ++offset) {
    INFO("offset " << offset);
    CHECK(tops[offset] > 300);
    CHECK(tops[offset] < 600);
    CHECK(lefts[offset] > 300);
    CHECK(lefts[offset] < 600);
  }
  CHECK(flips > 1800);  // 2000 expected, standard deviation about 32
  CHECK(flips < 2200);
  // Two draws agree by chance with probability 1/162.
  CHECK(differ_from_next_epoch > 3800);

  // A transform that is off draws nothing visible; the other one's draws do not move.
  const ImageAugmentation flip_only{.horizontal_flip = true};
  const ImageAugmentation crop_only{.crop_padding = 4};
  for (std::int64_t sample = 0; sample < 100; ++sample) {
    const ImageAugmentation::Draw both = augmentation.draw(seed, 0, sample);
    const ImageAugmentation::Draw flipped = flip_only.draw(seed, 0, sample);
    const ImageAugmentation::Draw cropped = crop_only.draw(seed, 0, sample);
    CHECK((flipped.top == 0 && flipped.left == 0 && flipped.flip == both.flip));
    CHECK((cropped.top == both.top && cropped.left == both.left && !cropped.flip));
  }
}

namespace {

/// 40 images of [6, 5, 2] whose values name the sample and the pixel (1000 s + index + 1); label s % 7.
Dataset image_dataset() {
  constexpr std::int64_t count = 40;
  mpx::Tensor<float, mpx::Host> pixels(mpx::Shape{count, 60});
  for (std::int64_t i = 0; i < pixels.numel(); ++i)
    pixels[i] = static_cast<float>(1000 * (i / 60) + i % 60 + 1) * 0.125f;
  std::vector<std::int32_t> labels(count);
  for (std::int64_t s = 0; s < count; ++s)
    labels[static_cast<std::size_t>(s)] = static_cast<std::int32_t>(s % 7);
  Dataset set(std::move(pixels), std::move(labels), 7);
  set.set_sample_shape(mpx::Shape{6, 5, 2});
  return set;
}

template <class T>
std::vector<mpx::Tensor<T, mpx::Host>> all_batches(Batcher& batcher, std::uint64_t epoch) {
  batcher.start_epoch(epoch);
  std::vector<mpx::Tensor<T, mpx::Host>> batches;
  mpx::Tensor<T, mpx::Host> images;
  mpx::Tensor<std::int32_t, mpx::Host> labels;
  while (batcher.next(images, labels)) batches.push_back(images.clone());
  return batches;
}

bool same_bytes(const mpx::Tensor<float, mpx::Host>& a, const mpx::Tensor<float, mpx::Host>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

}  // namespace

TEST_CASE("Batcher with augmentation: each sample gets its own draw, the same in every run, shard and resume",
          "[data][batcher][augmentation]") {
  const Dataset set = image_dataset();
  const mpx::Shape& shape = set.sample_shape();
  const ImageAugmentation augmentation{.crop_padding = 2, .padding_value = -3.0f, .horizontal_flip = true};
  const Batcher::Options options{.batch_size = 8, .seed = 9, .augmentation = augmentation};
  Batcher batcher(set, options);

  // Every row is the dataset's sample through apply, with the draw of (seed, epoch, sample index).
  batcher.start_epoch(2);
  mpx::Tensor<float, mpx::Host> images;
  mpx::Tensor<std::int32_t, mpx::Host> labels;
  std::int64_t row = 0;
  std::int64_t changed = 0;
  while (batcher.next(images, labels)) {
    REQUIRE(images.shape() == mpx::Shape{8, 6, 5, 2});
    for (std::int64_t b = 0; b < 8; ++b, ++row) {
      const std::int64_t sample = batcher.order()[static_cast<std::size_t>(row)];
      CHECK(labels[b] == sample % 7);
      const std::vector<float> source(set.image(sample).begin(), set.image(sample).end());
      const std::vector<float> expected =
          torchvision_reference(source, shape, 2, -3.0f, augmentation.draw(9, 2, sample));
      CHECK(std::memcmp(images.data() + b * 60, expected.data(), 60 * sizeof(float)) == 0);
      if (expected != source) ++changed;
    }
  }
  CHECK(row == 40);
  CHECK(changed > 30);  // 1 in 50 draws is the identity

  // The same seed, the same batches; another seed, others.
  Batcher twin(set, options);
  const auto first = all_batches<float>(batcher, 5);
  const auto second = all_batches<float>(twin, 5);
  REQUIRE(first.size() == 5);
  REQUIRE(second.size() == 5);
  for (std::size_t i = 0; i < first.size(); ++i) CHECK(same_bytes(first[i], second[i]));
  Batcher other_seed(set, {.batch_size = 8, .seed = 10, .augmentation = augmentation});
  CHECK_FALSE(same_bytes(all_batches<float>(other_seed, 5)[0], first[0]));

  // Resuming mid-epoch deals the batch the first run dealt there.
  Batcher resumed(set, options);
  resumed.resume(5, 24);
  REQUIRE(resumed.next(images, labels));
  CHECK(same_bytes(images, first[3]));

  // Two shards of 4 together are the unsharded batch of 8.
  const auto drop = [&](std::int64_t batch_size, std::int64_t index, std::int64_t count) {
    return Batcher::Options{.batch_size = batch_size,
                            .seed = 9,
                            .last_batch = LastBatch::Drop,
                            .shard = {.index = index, .count = count},
                            .augmentation = augmentation};
  };
  Batcher whole(set, drop(8, 0, 1));
  Batcher shard0(set, drop(4, 0, 2));
  Batcher shard1(set, drop(4, 1, 2));
  const auto wholes = all_batches<float>(whole, 1);
  const auto halves0 = all_batches<float>(shard0, 1);
  const auto halves1 = all_batches<float>(shard1, 1);
  REQUIRE(wholes.size() == 5);
  REQUIRE(halves0.size() == 5);
  REQUIRE(halves1.size() == 5);
  for (std::size_t i = 0; i < wholes.size(); ++i) {
    REQUIRE(halves0[i].shape() == mpx::Shape{4, 6, 5, 2});
    CHECK(std::memcmp(wholes[i].data(), halves0[i].data(), halves0[i].size_bytes()) == 0);
    CHECK(std::memcmp(wholes[i].data() + 240, halves1[i].data(), halves1[i].size_bytes()) == 0);
  }

  // A bf16 batch is the fp32 batch rounded.
  Batcher narrow(set, options);
  const auto narrow_batches = all_batches<Eigen::bfloat16>(narrow, 5);
  REQUIRE(narrow_batches.size() == first.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    REQUIRE(narrow_batches[i].shape() == first[i].shape());
    for (std::int64_t k = 0; k < first[i].numel(); ++k) {
      REQUIRE(Eigen::numext::bit_cast<std::uint16_t>(narrow_batches[i][k]) ==
              Eigen::numext::bit_cast<std::uint16_t>(mpx::round_to<mpx::BFloat16>(first[i][k])));
    }
  }
}

TEST_CASE("Batcher without augmentation copies samples unchanged, whatever the unused settings",
          "[data][batcher][augmentation]") {
  const Dataset set = image_dataset();
  Batcher plain(set, {.batch_size = 16, .seed = 4});
  Batcher disabled(set,
                   {.batch_size = 16, .seed = 4, .augmentation = {.crop_padding = 0, .padding_value = 7.0f}});
  CHECK_FALSE(disabled.options().augmentation.enabled());
  const auto plain_batches = all_batches<float>(plain, 3);
  const auto disabled_batches = all_batches<float>(disabled, 3);
  REQUIRE(plain_batches.size() == 3);
  REQUIRE(disabled_batches.size() == 3);
  for (std::size_t i = 0; i < plain_batches.size(); ++i) {
    CHECK(same_bytes(plain_batches[i], disabled_batches[i]));
    for (std::int64_t b = 0; b < plain_batches[i].shape()[0]; ++b) {
      const std::int64_t sample = plain.order()[i * 16 + static_cast<std::size_t>(b)];
      CHECK(std::memcmp(plain_batches[i].data() + b * 60, set.image(sample).data(), 60 * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("Batcher and ImageAugmentation reject invalid augmentation settings, naming them",
          "[data][batcher][augmentation]") {
  const Dataset images = image_dataset();
  CHECK_THAT(thrown_message<mpx::invalid_argument>(
                 [&] { (void)Batcher(images, {.augmentation = {.crop_padding = -1}}); }),
             Contains("mpx::data::Batcher") && Contains("crop_padding = -1") && Contains("expected 0 <="));
  CHECK_THAT(thrown_message<mpx::invalid_argument>([&] {
               (void)Batcher(images, {.augmentation = {.crop_padding = 2, .padding_value = std::nanf("")}});
             }),
             Contains("mpx::data::Batcher") && Contains("padding_value = nan") && Contains("finite"));
  CHECK_THROWS_AS(Batcher(images, {.augmentation = {.padding_value = INFINITY, .horizontal_flip = true}}),
                  mpx::invalid_argument);

  // Enabled augmentation needs [H, W, C] samples; a disabled one takes any shape.
  const Dataset rows = numbered_dataset(10);
  CHECK_THAT(thrown_message<mpx::invalid_argument>(
                 [&] { (void)Batcher(rows, {.augmentation = {.horizontal_flip = true}}); }),
             Contains("mpx::data::Batcher") && Contains("[2]") && Contains("[H, W, C]") &&
                 Contains("set_sample_shape"));
  CHECK_NOTHROW(Batcher(rows, {.augmentation = {.padding_value = 1.0f}}));

  // A shape changed after construction is caught by next.
  Dataset reshaped = image_dataset();
  Batcher batcher(reshaped, {.batch_size = 4, .augmentation = {.crop_padding = 1}});
  reshaped.set_sample_shape(mpx::Shape{60});
  mpx::Tensor<float, mpx::Host> batch;
  mpx::Tensor<std::int32_t, mpx::Host> labels;
  CHECK_THAT(thrown_message<mpx::invalid_argument>([&] { (void)batcher.next(batch, labels); }),
             Contains("mpx::data::Batcher::next") && Contains("[60]"));

  CHECK_THAT(thrown_message<mpx::invalid_argument>([&] {
               ImageAugmentation{.crop_padding = 3}.validate("here", mpx::Shape{4, 4});
             }),
             Contains("here: augmentation (crop_padding = 3") && Contains("[4, 4]"));
}

TEST_CASE("Augmented image batches for a convolutional network, as docs/data.md shows them",
          "[data][batcher][augmentation]") {
  mpx::Tensor<float, mpx::Host> pixels(mpx::Shape{300, 784});
  for (std::int64_t i = 0; i < pixels.numel(); ++i) pixels[i] = static_cast<float>((i * 37) % 255) / 255.0f;
  Dataset train(std::move(pixels), std::vector<std::int32_t>(300, 0), 10);
  const std::uint64_t epoch = 0;
  std::int64_t steps = 0;
  // [image_augmentation]
  train.set_sample_shape(mpx::Shape{28, 28, 1});  // [H, W, C]: batches become [batch, 28, 28, 1]
  mpx::data::Batcher batcher(train, {.batch_size = 128,
                                     .seed = 1,
                                     .last_batch = mpx::data::LastBatch::Drop,
                                     .augmentation = {.crop_padding = 2, .horizontal_flip = true}});
  mpx::Tensor<float, mpx::Host> images;  // each image padded by 2, cropped at random, mirrored half the time
  mpx::Tensor<std::int32_t, mpx::Host> labels;
  for (batcher.start_epoch(epoch); batcher.next(images, labels);) ++steps;  // a training step here
  // [image_augmentation]
  CHECK(steps == 2);
  CHECK(images.shape() == mpx::Shape{128, 28, 28, 1});
}

}  // namespace MPX_UNITY_ID
}  // namespace
