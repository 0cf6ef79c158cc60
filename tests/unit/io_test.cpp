// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Atomic file replacement and CSV records: what the example's metrics (and later checkpoints) rely on.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <mpx/experiment/records.hpp>
#include <mpx/io/atomic_file.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

std::filesystem::path fresh_directory(const std::string& name) {
  const auto directory = std::filesystem::temp_directory_path() / ("mpx_io_test_" + name);
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  return directory;
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t entries_in(const std::filesystem::path& directory) {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(directory)) ++count;
  return count;
}

struct Row {
  BOOST_HANA_DEFINE_STRUCT(Row, (std::string, name), (int, epoch), (double, loss), (bool, stepped));
};

}  // namespace

TEST_CASE("write_file_atomically replaces the file, leaves no temporary and applies the umask", "[io]") {
  const auto directory = fresh_directory("replace");
  const auto path = directory / "metrics.csv";
  mpx::io::write_file_atomically(path, "first\n");
  mpx::io::write_file_atomically(path, "second, longer contents\n");
  CHECK(read_all(path) == "second, longer contents\n");
  CHECK(entries_in(directory) == 1);  // the temporary was renamed, not left behind

  const ::mode_t previous = ::umask(027);
  mpx::io::write_file_atomically(path, "x");
  ::umask(previous);
  struct stat status {};
  REQUIRE(::stat(path.c_str(), &status) == 0);
  CHECK((status.st_mode & 0777) == (0666 & ~027));
  std::filesystem::remove_all(directory);
}

TEST_CASE("write_file_atomically into a missing directory throws io_error naming the path", "[io]") {
  const auto directory = fresh_directory("missing");
  const auto path = directory / "no" / "such" / "file.csv";
  REQUIRE_THROWS_AS(mpx::io::write_file_atomically(path, "x"), mpx::io_error);
  REQUIRE_THROWS_WITH(mpx::io::write_file_atomically(path, "x"), Catch::Contains(path.string()));
  CHECK(entries_in(directory) == 0);
  std::filesystem::remove_all(directory);
}

TEST_CASE("to_csv writes member names as the header and quotes text that needs it", "[io][records]") {
  const std::vector<Row> rows{{"fp32", 1, 0.5, true}, {"a \"b\", c", 2, 0.1, false}};
  CHECK(mpx::experiment::to_csv(std::span<const Row>(rows)) ==
        "name,epoch,loss,stepped\n"
        "fp32,1,0.5,true\n"
        "\"a \"\"b\"\", c\",2,0.10000000000000001,false\n");
}

}  // namespace MPX_UNITY_ID
}  // namespace
