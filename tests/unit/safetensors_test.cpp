// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The safetensors reader and writer: a round trip keeps every byte; every kind of corrupt file is
// rejected with a message naming the file, the offset and the value, before any allocation beyond
// the file's size; a writer killed at random moments or stopped by a full disk never leaves a
// damaged file in place.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <mpx/io/safetensors.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using Catch::Matchers::Contains;
using mpx::io::Dtype;

std::filesystem::path scratch_directory(const std::string& name) {
  const auto directory = std::filesystem::temp_directory_path() /
                         ("mpx_safetensors_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  return directory;
}

std::vector<std::byte> bytes_of(const std::string& text) {
  std::vector<std::byte> out(text.size());
  if (!text.empty()) std::memcpy(out.data(), text.data(), text.size());
  return out;
}

/// A file from a header text and a data buffer, with the length prefix the header needs.
std::string file_with_header(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t size = header.size();
  std::memcpy(out.data(), &size, 8);
  return out + header + data;
}

mpx::io::SafetensorsFile parse(const std::string& contents) {
  return mpx::io::parse_safetensors(bytes_of(contents), "<test>");
}

/// A valid two-tensor file: "a" F32 [2, 2] and "b" BF16 [3], with metadata.
std::string valid_file() {
  static const std::vector<float> a{1.0f, -2.5f, 3.25f, 0.0f};
  static const std::vector<std::uint16_t> b{0x3f80, 0xc000, 0x7f80};
  const std::vector<mpx::io::TensorToWrite> tensors{
      {"a", Dtype::F32, {2, 2}, std::as_bytes(std::span<const float>(a))},
      {"b", Dtype::BF16, {3}, std::as_bytes(std::span<const std::uint16_t>(b))}};
  return mpx::io::encode_safetensors(tensors, {{"k\"ey", "v\\al\n"}, {"step", "12"}});
}

}  // namespace

TEST_CASE("safetensors round trip keeps names, dtypes, shapes, bytes and metadata", "[io][safetensors]") {
  const std::string contents = valid_file();
  std::uint64_t header_size = 0;
  std::memcpy(&header_size, contents.data(), 8);
  CHECK(header_size % 8 == 0);  // the data buffer starts aligned
  const mpx::io::SafetensorsFile file = parse(contents);
  REQUIRE(file.tensors().size() == 2);
  CHECK(file.metadata().at("k\"ey") == "v\\al\n");
  CHECK(file.metadata().at("step") == "12");
  const mpx::io::TensorEntry& a = *file.find("a");
  CHECK(a.dtype == Dtype::F32);
  CHECK(a.shape == std::vector<std::int64_t>{2, 2});
  float values[4];
  std::memcpy(values, file.data(a).data(), 16);
  CHECK(values[1] == -2.5f);
  CHECK(values[2] == 3.25f);
  const mpx::io::TensorEntry& b = *file.find("b");
  CHECK(b.dtype == Dtype::BF16);
  CHECK(file.data(b).size() == 6);
  CHECK(file.find("c") == nullptr);

  const auto directory = scratch_directory("roundtrip");
  const auto path = directory / "x.safetensors";
  const std::vector<std::int32_t> ints{-1, 7, 1 << 30};
  const std::vector<mpx::io::TensorToWrite> tensors{
      {"scalar", Dtype::I32, {}, std::as_bytes(std::span<const std::int32_t>(ints).first(1))},
      {"empty", Dtype::F64, {0, 3}, {}},
      {"ints", Dtype::I32, {3}, std::as_bytes(std::span<const std::int32_t>(ints))}};
  mpx::io::save_safetensors(path, tensors);
  const mpx::io::SafetensorsFile loaded = mpx::io::load_safetensors(path);
  CHECK(loaded.metadata().empty());
  CHECK(loaded.find("scalar")->numel() == 1);
  CHECK(loaded.find("empty")->numel() == 0);
  CHECK(std::memcmp(loaded.data(*loaded.find("ints")).data(), ints.data(), 12) == 0);
  std::filesystem::remove_all(directory);
}

TEST_CASE("encode_safetensors rejects tensors whose bytes do not match, and duplicate names",
          "[io][safetensors]") {
  const std::vector<float> v(3);
  const auto bytes = std::as_bytes(std::span<const float>(v));
  const std::vector<mpx::io::TensorToWrite> wrong_size{{"x", Dtype::F32, {2, 2}, bytes}};
  CHECK_THROWS_WITH(mpx::io::encode_safetensors(wrong_size),
                    Contains("\"x\" has 12 bytes") && Contains("need 16"));
  const std::vector<mpx::io::TensorToWrite> duplicate{{"x", Dtype::F32, {3}, bytes},
                                                      {"x", Dtype::F32, {3}, bytes}};
  CHECK_THROWS_AS(mpx::io::encode_safetensors(duplicate), mpx::invalid_argument);
  const std::vector<mpx::io::TensorToWrite> reserved{{"__metadata__", Dtype::F32, {3}, bytes}};
  CHECK_THROWS_AS(mpx::io::encode_safetensors(reserved), mpx::invalid_argument);
}

TEST_CASE("load_safetensors rejects corrupt files with the offset and the value", "[io][safetensors]") {
  const std::string data16(16, '\x01');
  const auto rejects = [&](const std::string& contents, const std::string& expected) {
    CAPTURE(expected);
    try {
      (void)parse(contents);
      FAIL("accepted: " << contents.substr(std::min<std::size_t>(8, contents.size())));
    } catch (const mpx::io_error& e) {
      CHECK_THAT(e.what(), Contains("\"<test>\" at byte ") && Contains(expected));
    }
  };
  const std::string a_f32 = R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]})";

  SECTION("truncated files") {
    rejects("", "fewer than the 8");
    rejects("\x10\0\0", "fewer than the 8");
    const std::string good = valid_file();
    for (std::size_t cut : {std::size_t{8}, std::size_t{20}, good.size() - 1}) {
      CAPTURE(cut);
      CHECK_THROWS_AS(parse(good.substr(0, cut)), mpx::io_error);
    }
    rejects(file_with_header("{" + a_f32 + "}", data16.substr(0, 12)), "outside the data buffer of 12 bytes");
  }
  SECTION("header length beyond the file or absurd") {
    std::string huge = file_with_header("{}", "");
    const std::uint64_t absurd = ~std::uint64_t{0};
    std::memcpy(huge.data(), &absurd, 8);
    rejects(huge, "the header length is 18446744073709551615 bytes but only 2 follow it");
    std::string beyond = file_with_header("{" + a_f32 + "}", data16);
    const std::uint64_t too_long = beyond.size();
    std::memcpy(beyond.data(), &too_long, 8);
    rejects(beyond, "truncated or corrupt");
  }
  SECTION("not JSON, or not the JSON the format allows") {
    rejects(file_with_header("not json", ""), "the header must be a JSON object");
    rejects(file_with_header("[1, 2]", ""), "the header must be a JSON object");
    rejects(file_with_header("{\"a\" 1}", ""), "expected ':'");
    rejects(file_with_header("{" + a_f32, data16), "expected ',' or '}'");
    rejects(file_with_header("{" + a_f32 + "}x", data16), "unexpected 'x' after the header object");
    rejects(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", ""),
            "expected a non-negative integer");
    rejects(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,0]}}", ""),
            "non-integer number");
    rejects(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}",
                             data16.substr(0, 4)),
            "leading zero");
    rejects(file_with_header(
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]}}", ""),
            "exceeds 2^63 - 1");
    rejects(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", ""), "lacks \"data_offsets\"");
    rejects(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", ""),
            "unknown field \"x\"");
    rejects(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", ""),
            "data_offsets has 1 values");
    rejects(file_with_header("{\"__metadata__\":{\"k\":1}}", ""), "metadata value of \"k\" must be a string");
    rejects(file_with_header("{\"__metadata__\":{\"k\":\"\xff\"}}", ""), "invalid UTF-8 byte 0xff");
    rejects(file_with_header("{\"__metadata__\":{\"k\":\"\\ud800\"}}", ""), "unpaired UTF-16 surrogate");
    rejects(file_with_header("{\"__metadata__\":{\"k\":\"a\nb\"}}", ""), "control character 0x0a");
    rejects(file_with_header("{\"__metadata__\":{\"k\":\"abc", ""), "unterminated string");
  }
  SECTION("duplicate keys") {
    rejects(file_with_header("{" + a_f32 + "," + a_f32 + "}", data16), "duplicate tensor name \"a\"");
    rejects(file_with_header("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", ""),
            "duplicate metadata key \"k\"");
    rejects(file_with_header("{\"__metadata__\":{},\"__metadata__\":{}}", ""),
            "duplicate key \"__metadata__\"");
    rejects(
        file_with_header("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                         data16.substr(0, 4)),
        "duplicate field \"dtype\"");
  }
  SECTION("wrong dtype") {
    rejects(file_with_header("{\"a\":{\"dtype\":\"F33\",\"shape\":[4],\"data_offsets\":[0,16]}}", data16),
            "unknown dtype \"F33\"");
    rejects(file_with_header("{\"a\":{\"dtype\":\"F64\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", data16),
            "(16 bytes) but shape [2, 2] and dtype F64 need 32 bytes");
  }
  SECTION("offsets out of range, overlapping, leaving holes or trailing bytes") {
    rejects(file_with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[12,20]}}", data16),
            "data_offsets [12, 20], outside the data buffer of 16 bytes");
    rejects(file_with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[9,5]}}", data16),
            "data_offsets [9, 5]");
    rejects(file_with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[10],\"data_offsets\":[0,10]},"
                             "\"b\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[8,16]}}",
                             data16),
            "tensor \"b\" at data_offsets [8, 16] overlaps tensor \"a\", which ends at 10");
    rejects(file_with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[8,16]}}", data16),
            "hole: no tensor covers bytes [0, 8)");
    rejects(file_with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}", data16),
            "the tensors cover 8 bytes of data but the file holds 16");
    rejects(
        file_with_header(
            "{\"a\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904,8],\"data_offsets\":[0,16]}}", data16),
        "would hold more than 2^64 bytes");
  }
}

TEST_CASE("load_safetensors survives every single-bit flip and every truncation of a valid file",
          "[io][safetensors]") {
  // Exhaustive over a small file: each corrupt variant either parses (a flip inside the data, or one
  // that keeps the header valid) or throws io_error; nothing else may happen.
  const std::string good = valid_file();
  int rejected = 0, accepted = 0;
  for (std::size_t byte = 0; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = good;
      flipped[byte] = static_cast<char>(flipped[byte] ^ (1 << bit));
      try {
        (void)parse(flipped);
        ++accepted;
      } catch (const mpx::io_error&) {
        ++rejected;
      }
    }
  }
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    CHECK_THROWS_AS(parse(good.substr(0, cut)), mpx::io_error);
  }
  CAPTURE(accepted, rejected);
  CHECK(rejected > 0);
  CHECK(accepted >= 8 * 22);  // at least every flip of the 22 data bytes leaves a valid file
}

TEST_CASE("load_safetensors names the path of a missing or unreadable file", "[io][safetensors]") {
  const auto directory = scratch_directory("missing");
  CHECK_THROWS_WITH(mpx::io::load_safetensors(directory / "none.safetensors"),
                    Contains("none.safetensors") && Contains("cannot open"));
  CHECK_THROWS_WITH(mpx::io::load_safetensors(directory), Contains("not a regular file"));
  std::filesystem::remove_all(directory);
}

namespace {

/// State i of the kill test: tensor "values" holds 1000 copies of i, the metadata says i too.
std::string state_file(std::uint32_t i) {
  const std::vector<std::uint32_t> values(1000, i);
  const std::vector<std::uint32_t> tail(37, ~i);
  const std::vector<mpx::io::TensorToWrite> tensors{
      {"values", Dtype::U32, {1000}, std::as_bytes(std::span<const std::uint32_t>(values))},
      {"tail", Dtype::U32, {37}, std::as_bytes(std::span<const std::uint32_t>(tail))}};
  return mpx::io::encode_safetensors(tensors, {{"index", std::to_string(i)}});
}

/// The index of a consistent state file; fails the test for anything else.
std::uint32_t index_of(const std::filesystem::path& path) {
  const mpx::io::SafetensorsFile file = mpx::io::load_safetensors(path);
  const auto index = static_cast<std::uint32_t>(std::stoul(file.metadata().at("index")));
  const auto values = file.data(*file.find("values"));
  const auto tail = file.data(*file.find("tail"));
  for (std::size_t k = 0; k < 1000; ++k) {
    std::uint32_t v;
    std::memcpy(&v, values.data() + 4 * k, 4);
    REQUIRE(v == index);
  }
  for (std::size_t k = 0; k < 37; ++k) {
    std::uint32_t v;
    std::memcpy(&v, tail.data() + 4 * k, 4);
    REQUIRE(v == ~index);
  }
  return index;
}

}  // namespace

TEST_CASE("A checkpoint writer killed with SIGKILL at random moments never leaves a damaged file",
          "[io][safetensors][kill]") {
  // A child saves states 1, 2, 3, ... in a loop, reporting each completed save through a pipe; the
  // parent kills it after a random delay. The file must then load and be the last completed state
  // or the one being written (the rename may have landed just before the kill).
  const auto directory = scratch_directory("kill");
  const auto path = directory / "state.safetensors";
  mpx::io::write_file_atomically(path, state_file(0));
  std::mt19937 random(20261121u);
  std::uniform_int_distribution<int> delay_us(0, 30000);
  constexpr int trials = 150;
  std::uint32_t next_index = 1;
  int saw_in_flight = 0;
  for (int trial = 0; trial < trials; ++trial) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const std::uint32_t first = next_index;
    const ::pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::close(fds[0]);
      for (std::uint32_t i = first;; ++i) {
        mpx::io::write_file_atomically(path, state_file(i));
        if (::write(fds[1], &i, sizeof i) != sizeof i) ::_exit(3);
      }
    }
    ::close(fds[1]);
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
    REQUIRE(::kill(child, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFSIGNALED(status));
    std::uint32_t completed = first - 1, i = 0;
    while (::read(fds[0], &i, sizeof i) == sizeof i) completed = i;
    ::close(fds[0]);

    const std::uint32_t on_disk = index_of(path);
    CAPTURE(trial, completed, on_disk);
    CHECK((on_disk == completed || on_disk == completed + 1));
    saw_in_flight += on_disk == completed + 1 ? 1 : 0;
    next_index = std::max(on_disk, completed) + 1;
    // A killed writer may leave its temporary file behind (never the target): remove them.
    for (const auto& entry : std::filesystem::directory_iterator(directory)) {
      if (entry.path() != path) std::filesystem::remove(entry.path());
    }
  }
  CAPTURE(next_index, saw_in_flight);
  CHECK(next_index > trials);  // the children did save
  std::filesystem::remove_all(directory);
}

TEST_CASE("A save that hits a full disk throws and leaves the previous file untouched", "[io][safetensors]") {
  // RLIMIT_FSIZE makes write() fail with EFBIG part-way, as a full disk fails with ENOSPC; the child
  // reports what it saw through its exit code.
  const auto directory = scratch_directory("full");
  const auto path = directory / "state.safetensors";
  mpx::io::write_file_atomically(path, state_file(7));
  const ::pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const ::rlimit limit{1000, 1000};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      mpx::io::write_file_atomically(path, state_file(8));
    } catch (const mpx::io_error& e) {
      ::_exit(std::string(e.what()).find("state.safetensors") != std::string::npos ? 0 : 2);
    }
    ::_exit(1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(index_of(path) == 7);
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(directory)) ++entries;
  CHECK(entries == 1);  // the temporary file was removed
  std::filesystem::remove_all(directory);
}

}  // namespace MPX_UNITY_ID
}  // namespace
