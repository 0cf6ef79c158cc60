// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Experiment records through CSV, JSON and Markdown: every member type reads back bit for bit
// (infinities, NaN, -0, subnormals, 64-bit extremes, awkward text), bad input is an io_error naming the
// row or record and the column or key, and the JSON reader is strict and names the byte offset.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/experiment/records.hpp>
#include <mpx/io/json.hpp>
#include <mpx/io/read_file.hpp>

#include "../support/error_matchers.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

namespace ex = mpx::experiment;
namespace json = mpx::io::json;
using mpx::test::MessageContains;

struct Sample {
  BOOST_HANA_DEFINE_STRUCT(Sample, (std::string, text), (bool, flag), (std::int64_t, big), (int, count),
                           (float, single), (double, value), (std::uint64_t, unsigned_big),
                           (std::int8_t, tiny));
};

template <class T>
using limits = std::numeric_limits<T>;

const std::vector<std::string> texts{
    "comma, \"quoted\" and\nnewline",
    "unicode: \xC3\xA9, \xE6\xBC\xA2\xE5\xAD\x97, \xF0\x9D\x84\x9E",
    "pipe | bar",
    "",
    "plain",
    "\r\n and a lone \r",
    "tab\t and \\ backslash",
    "\x01 control \x1f",
    " leading and trailing spaces ",
    "\"starts with a quote",
};
/// The values a float type must survive: infinities, NaN, both zeros, the smallest and largest
/// subnormals, the smallest normal, 0.1 (not a short binary fraction), the extremes, and `extra`.
template <class T>
std::vector<T> special_values(T extra) {
  using L = limits<T>;
  return {L::infinity(),
          -L::infinity(),
          L::quiet_NaN(),
          T(-0.0),
          T(0.0),
          L::denorm_min(),
          L::min() - L::denorm_min(),
          L::min(),
          T(0.1),
          L::max(),
          L::lowest(),
          T(1) / T(3),
          extra};
}
const std::vector<float> floats = special_values(-3.5e-42f);  // a subnormal float
const std::vector<double> doubles = special_values(-123456789.123456789e-300);
const std::vector<std::int64_t> int64s{limits<std::int64_t>::min(), limits<std::int64_t>::max(), 0, -1};
const std::vector<int> ints{limits<int>::min(), limits<int>::max(), 0, 42, -7};
const std::vector<std::uint64_t> uint64s{limits<std::uint64_t>::max(), 0, 1};
const std::vector<std::int8_t> int8s{-128, 127, 0};

std::vector<Sample> samples() {
  std::vector<Sample> rows;
  for (std::size_t i = 0; i < 13; ++i) {
    rows.push_back({texts[i % texts.size()], i % 2 == 0, int64s[i % int64s.size()], ints[i % ints.size()],
                    floats[i % floats.size()], doubles[i % doubles.size()], uint64s[i % uint64s.size()],
                    int8s[i % int8s.size()]});
  }
  return rows;
}

template <class T>
bool same_bits(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if constexpr (sizeof(T) == 4) {
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
  } else {
    return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
  }
}

void check_identical(const std::vector<Sample>& read, const std::vector<Sample>& written) {
  REQUIRE(read.size() == written.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    INFO("record " << i);
    CHECK(read[i].text == written[i].text);
    CHECK(read[i].flag == written[i].flag);
    CHECK(read[i].big == written[i].big);
    CHECK(read[i].count == written[i].count);
    CHECK(same_bits(read[i].single, written[i].single));
    CHECK(same_bits(read[i].value, written[i].value));
    CHECK(read[i].unsigned_big == written[i].unsigned_big);
    CHECK(read[i].tiny == written[i].tiny);
  }
}

struct Small {
  BOOST_HANA_DEFINE_STRUCT(Small, (std::string, name), (int, epoch), (double, loss), (bool, ok),
                           (float, scale));
};

template <class F>
void check_io_error(F&& f, std::initializer_list<std::string> fragments) {
  CHECK_THROWS_MATCHES(f(), mpx::io_error, MessageContains(fragments));
}

std::filesystem::path fresh_directory(const std::string& name) {
  const auto directory = std::filesystem::temp_directory_path() / ("mpx_records_test_" + name);
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  return directory;
}

}  // namespace

TEST_CASE("Records read back from to_csv bit for bit: text, bool, 64-bit extremes, inf, NaN, -0, subnormals",
          "[experiment][records][csv]") {
  const auto written = samples();
  const std::string csv = ex::to_csv(std::span<const Sample>(written));
  INFO(csv);
  check_identical(ex::from_csv<Sample>(csv), written);
  // CRLF line ends (a file edited on Windows) read the same.
  std::string crlf;
  bool quoted = false;
  for (const char c : csv) {
    if (c == '"') quoted = !quoted;
    if (c == '\n' && !quoted) crlf.push_back('\r');
    crlf.push_back(c);
  }
  check_identical(ex::from_csv<Sample>(crlf), written);
  // No records: just the header.
  CHECK(ex::to_csv(std::span<const Sample>()) == "text,flag,big,count,single,value,unsigned_big,tiny\n");
  CHECK(ex::from_csv<Sample>(ex::to_csv(std::span<const Sample>())).empty());
}

TEST_CASE("Records read back from to_json bit for bit: text, bool, 64-bit extremes, inf, NaN, -0, subnormals",
          "[experiment][records][json]") {
  const auto written = samples();
  const std::string text = ex::to_json(std::span<const Sample>(written));
  INFO(text);
  check_identical(ex::from_json<Sample>(text), written);
  // It is standard JSON: non-finite numbers are strings, and the strict parser accepts the whole file.
  const json::Value document = json::parse(text);
  REQUIRE(document.kind == json::Value::Kind::array);
  CHECK(document.items.at(0).find("single")->kind == json::Value::Kind::string);
  CHECK(document.items.at(0).find("single")->text == "inf");
  CHECK(document.items.at(2).find("value")->text == "nan");
  CHECK(document.items.at(3).find("value")->text == "-0");
  CHECK(document.items.at(0).find("big")->text == "-9223372036854775808");
  CHECK(ex::to_json(std::span<const Sample>()) == "[]\n");
  CHECK(ex::from_json<Sample>("[]").empty());
}

TEST_CASE("to_table writes a Markdown table: 4 significant digits, yes/no, escaped pipes",
          "[experiment][records]") {
  const std::vector<Small> rows{{"bf16|pure", 3, 0.123456, true, 65536.0f},
                                {"x", -1, 1234567.0, false, limits<float>::infinity()}};
  CHECK(ex::to_table(std::span<const Small>(rows)) ==
        "| name | epoch | loss | ok | scale |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| bf16\\|pure | 3 | 0.1235 | yes | 6.554e+04 |\n"
        "| x | -1 | 1.235e+06 | no | inf |\n");
}

TEST_CASE("from_csv reads subnormals, the words for non-finite numbers and a trailing blank line",
          "[experiment][records][csv]") {
  const auto records =
      ex::from_csv<Small>("name,epoch,loss,ok,scale\nx,1,4.9406564584124654e-324,true,inf\n\n");
  REQUIRE(records.size() == 1);
  CHECK(records[0].loss == std::numeric_limits<double>::denorm_min());
  CHECK(records[0].scale == std::numeric_limits<float>::infinity());
}

TEST_CASE("from_csv rejects bad input with an io_error naming the source, row and column",
          "[experiment][records][csv]") {
  const std::string header = "name,epoch,loss,ok,scale\n";
  const auto read = [](const std::string& text) { return ex::from_csv<Small>(text, "runs.csv"); };
  check_io_error([&] { return read("name,epoch,loss,scale,ok\nx,1,0.5,1,true\n"); },
                 {"runs.csv", "header", "name,epoch,loss,ok,scale"});
  check_io_error([&] { return read(""); }, {"runs.csv", "header"});
  check_io_error([&] { return read(header + "x,1,0.5,true,1\nx,1,0.5,true\n"); },
                 {"runs.csv", "row 2", "4 fields", "expected 5"});
  check_io_error([&] { return read(header + "x,1,0.5,true,1,extra\n"); }, {"runs.csv", "row 1", "6 fields"});
  check_io_error([&] { return read(header + "x,1,0.5x,true,1\n"); },
                 {"runs.csv", "row 1", "column loss", "0.5x"});
  check_io_error([&] { return read(header + "x,1,,true,1\n"); }, {"runs.csv", "row 1", "column loss"});
  check_io_error([&] { return read(header + "x,1,0.5,yes,1\n"); }, {"runs.csv", "row 1", "column ok", "yes"});
  check_io_error([&] { return read(header + "x,1,0.5,True,1\n"); }, {"runs.csv", "row 1", "column ok"});
  check_io_error([&] { return read(header + "x,2147483648,0.5,true,1\n"); },
                 {"runs.csv", "row 1", "column epoch", "2147483648"});
  check_io_error([&] { return read(header + "x,1.5,0.5,true,1\n"); }, {"runs.csv", "row 1", "column epoch"});
  check_io_error([&] { return read(header + "\"x,1,0.5,true,1\n"); }, {"runs.csv", "unterminated"});
  // Numbers too large for their column do not quietly become infinite; spaces and hex are not numbers.
  check_io_error([&] { return read(header + "x,1,1e999,true,1\n"); }, {"row 1", "column loss", "in range"});
  check_io_error([&] { return read(header + "x,1,0.5,true,1e39\n"); }, {"row 1", "column scale", "in range"});
  check_io_error([&] { return read(header + "x,1, 1,true,1\n"); }, {"row 1", "column loss"});
  check_io_error([&] { return read(header + "x,1,0x10,true,1\n"); }, {"row 1", "column loss", "0x10"});
  check_io_error(
      [] {
        return ex::from_csv<Sample>(
            "text,flag,big,count,single,value,unsigned_big,tiny\n"
            "a,true,9223372036854775808,1,1,1,1,1\n");
      },
      {"CSV text", "row 1", "column big"});
  check_io_error(
      [] {
        return ex::from_csv<Sample>(
            "text,flag,big,count,single,value,unsigned_big,tiny\n"
            "a,true,1,1,1,1,-1,1\n");
      },
      {"row 1", "column unsigned_big"});
  check_io_error(
      [] {
        return ex::from_csv<Sample>(
            "text,flag,big,count,single,value,unsigned_big,tiny\n"
            "a,true,1,1,1,1,1,128\n");
      },
      {"row 1", "column tiny", "128"});
}

TEST_CASE("from_json rejects bad input with an io_error naming the source, record and key",
          "[experiment][records][json]") {
  const auto read = [](const std::string& text) { return ex::from_json<Small>(text, "runs.json"); };
  const std::string good = R"({"name": "x", "epoch": 1, "loss": 0.5, "ok": true, "scale": 1})";
  REQUIRE(read("[" + good + "]").size() == 1);
  check_io_error([&] { return read(good); }, {"runs.json", "array"});
  check_io_error([&] { return read("[" + good + ", 3]"); }, {"runs.json", "record 2", "object"});
  check_io_error([&] { return read(R"([{"name": "x", "epoch": 1, "loss": 0.5, "ok": true}])"); },
                 {"runs.json", "record 1", "5 keys"});
  check_io_error([&] { return read(R"([{"name": "x", "epoch": 1, "loss": 0.5, "ok": true, "scal": 1}])"); },
                 {"runs.json", "record 1", "key scale", "missing"});
  check_io_error([&] { return read(R"([{"name": 1, "epoch": 1, "loss": 0.5, "ok": true, "scale": 1}])"); },
                 {"runs.json", "record 1", "key name", "type"});
  check_io_error(
      [&] { return read(R"([{"name": "x", "epoch": "1", "loss": 0.5, "ok": true, "scale": 1}])"); },
      {"runs.json", "record 1", "key epoch", "type"});
  check_io_error([&] { return read(R"([{"name": "x", "epoch": 1, "loss": 0.5, "ok": 1, "scale": 1}])"); },
                 {"runs.json", "record 1", "key ok", "type"});
  check_io_error(
      [&] { return read(R"([{"name": "x", "epoch": 1, "loss": "fast", "ok": true, "scale": 1}])"); },
      {"runs.json", "record 1", "key loss", "fast"});
  check_io_error([&] { return read(R"([{"name": "x", "epoch": 1, "loss": null, "ok": true, "scale": 1}])"); },
                 {"runs.json", "record 1", "key loss"});
  check_io_error(
      [&] {
        return read("[" + good + R"(, {"name": "x", "epoch": 1e3, "loss": 0.5, "ok": true,
                                   "scale": 1}])");
      },
      {"runs.json", "record 2", "key epoch", "1e3"});
  check_io_error(
      [&] { return read(R"([{"name": "x", "epoch": 4294967296, "loss": 0.5, "ok": true, "scale": 1}])"); },
      {"runs.json", "record 1", "key epoch", "4294967296"});
  // Invalid JSON is reported by the parser, with the source and the byte offset.
  check_io_error([&] { return read("[" + good); }, {"runs.json", "byte 63"});
}

TEST_CASE("json::parse reads nested documents, escapes and surrogate pairs, and keeps numbers as text",
          "[io][json]") {
  const json::Value v = json::parse(
      " {\"a\": [1, -2.5e+3, 0, -0, 0.5E-7, 123456789012345678901234567890, {\"b\": null}],\n"
      "  \"s\": \"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9 \\u6F22 \\ud834\\udd1e\",\n"
      "  \"t\": true, \"f\": false, \"e\": {}, \"n\": []} \n");
  REQUIRE(v.kind == json::Value::Kind::object);
  REQUIRE(v.keys.size() == 6);
  CHECK(v.keys[0] == "a");  // file order
  CHECK(v.keys[5] == "n");
  const json::Value& a = *v.find("a");
  REQUIRE(a.kind == json::Value::Kind::array);
  REQUIRE(a.items.size() == 7);
  const std::vector<std::string> numbers{"1",  "-2.5e+3", "0",
                                         "-0", "0.5E-7",  "123456789012345678901234567890"};
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    CHECK(a.items[i].kind == json::Value::Kind::number);
    CHECK(a.items[i].text == numbers[i]);
  }
  CHECK(a.items[6].find("b")->kind == json::Value::Kind::null);
  CHECK(v.find("s")->text == "q\" b\\ s/ \b\f\n\r\t \xC3\xA9 \xE6\xBC\xA2 \xF0\x9D\x84\x9E");
  CHECK(v.find("t")->kind == json::Value::Kind::boolean);
  CHECK(v.find("t")->boolean);
  CHECK(v.find("f")->kind == json::Value::Kind::boolean);
  CHECK_FALSE(v.find("f")->boolean);
  CHECK(v.find("e")->kind == json::Value::Kind::object);
  CHECK(v.find("e")->keys.empty());
  CHECK(v.find("n")->items.empty());
  CHECK(v.find("missing") == nullptr);
  // 64 levels of nesting are fine.
  CHECK(json::parse(std::string(64, '[') + std::string(64, ']')).kind == json::Value::Kind::array);
}

TEST_CASE("json::quote escapes what JSON requires, and parse reads every quoted string back", "[io][json]") {
  CHECK(json::quote("a\"b\\c\nd") == "\"a\\\"b\\\\c\\nd\"");
  CHECK(json::quote(std::string("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
  // Every ASCII byte, NUL included, and UTF-8 of two, three and four bytes.
  std::string all;
  for (int c = 1; c < 128; ++c) all.push_back(static_cast<char>(c));
  all.push_back('\0');
  all.append("\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");  // é € 😀
  const std::string quoted = json::quote(all);
  CHECK(std::none_of(quoted.begin(), quoted.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20; }));
  CHECK(json::parse(quoted).text == all);
  // JSON text is UTF-8: a string that is not (here a lone continuation byte) is rejected, not guessed.
  CHECK_THROWS_AS(json::parse(json::quote("a\x80"
                                          "b")),
                  mpx::io_error);
}

TEST_CASE("json::parse rejects invalid JSON with an io_error naming the source and the byte offset",
          "[io][json]") {
  const auto rejects = [](const std::string& text, std::size_t offset, const std::string& what) {
    INFO(text);
    check_io_error([&] { return json::parse(text, "doc.json"); },
                   {"doc.json", "at byte " + std::to_string(offset) + ":", what});
  };
  rejects("[1] x", 4, "after the JSON value");
  rejects("{} {}", 3, "after the JSON value");
  rejects("{\"a\":1,\"a\":2}", 7, "duplicate key \"a\"");
  rejects(std::string(66, '[') + std::string(66, ']'), 64, "deeper than 64");
  rejects(std::string(1000, '['), 64, "deeper than 64");  // stops before the stack could
  rejects("{\"a\":" + std::string(70, '[') + std::string(70, ']') + "}", 68, "deeper than 64");
  rejects("\"a\\x\"", 3, "invalid escape");
  rejects("\"a\\", 0, "unterminated string");
  rejects("\"abc", 0, "unterminated string");
  rejects("[\"abc", 1, "unterminated string");
  rejects("01", 1, "after the JSON value");
  rejects("[01]", 2, "expected ',' or ']'");
  rejects("-", 1, "expected a digit");
  rejects("1.", 2, "digit after '.'");
  rejects("1e+", 3, "exponent");
  rejects("\"\\ud800\"", 1, "unpaired UTF-16 surrogate");
  rejects("\"\\ud800\\u0041\"", 1, "unpaired UTF-16 surrogate");
  rejects("\"\\udc00\"", 1, "unpaired UTF-16 surrogate");
  rejects("\"\\u12G4\"", 5, "invalid hex digit");
  rejects("", 0, "unexpected end of input");
  rejects("   ", 3, "unexpected end of input");
  rejects("[1,]", 3, "expected a value");
  rejects("[1 2]", 3, "expected ',' or ']'");
  rejects("{\"a\" 1}", 5, "expected ':'");
  rejects("{\"a\":1,}", 7, "expected a string key");
  rejects("{a:1}", 1, "expected a string key");
  rejects("tru", 0, "expected a value");
  rejects("NaN", 0, "expected a value");
  rejects("'a'", 0, "expected a value");
  rejects("+1", 0, "expected a value");
}

TEST_CASE("json::parse gives the byte of a control character inside a string", "[io][json]") {
  // The raw newline is byte 2.
  check_io_error([] { return json::parse("\"a\nb\"", "doc.json"); }, {"at byte 2:", "control character"});
}

TEST_CASE("json::parse rejects 65 levels of nesting", "[io][json]") {
  check_io_error([] { return json::parse(std::string(65, '[') + std::string(65, ']')); }, {"deeper than 64"});
}

TEST_CASE("write_csv and write_json write files that read_file and from_csv / from_json read back",
          "[experiment][records][io]") {
  const auto directory = fresh_directory("write");
  const auto written = samples();
  ex::write_csv(directory / "runs.csv", std::span<const Sample>(written));
  ex::write_json(directory / "runs.json", std::span<const Sample>(written));
  const std::string csv = mpx::io::read_file(directory / "runs.csv");
  const std::string text = mpx::io::read_file(directory / "runs.json");
  CHECK(csv == ex::to_csv(std::span<const Sample>(written)));
  CHECK(text == ex::to_json(std::span<const Sample>(written)));
  check_identical(ex::from_csv<Sample>(csv), written);
  check_identical(ex::from_json<Sample>(text), written);
  std::filesystem::remove_all(directory);
}

TEST_CASE("read_file of a missing file throws io_error naming the path and the reason", "[io]") {
  const auto path = fresh_directory("missing") / "no_such_file.json";
  check_io_error([&] { return mpx::io::read_file(path); },
                 {"mpx::io::read_file", path.string(), "No such file"});
  std::filesystem::remove_all(path.parent_path());
}

TEST_CASE("read_file of a directory throws io_error naming the path", "[io]") {
  // libstdc++'s filebuf would throw std::ios_base::failure ("Is a directory") without the path.
  const auto directory = fresh_directory("directory");
  check_io_error([&] { return mpx::io::read_file(directory); }, {"mpx::io::read_file", directory.string()});
  std::filesystem::remove_all(directory);
}

}  // namespace MPX_UNITY_ID
}  // namespace
