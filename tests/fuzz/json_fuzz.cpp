// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// libFuzzer target for the JSON reader and the JSON records reader: any input either parses or
// throws mpx::io_error, and a string that parsed is written back by json::quote into JSON that reads
// back to the same string. Anything else (a crash, a sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <mpx/experiment/records.hpp>
#include <mpx/io/json.hpp>

namespace {
struct Record {
  BOOST_HANA_DEFINE_STRUCT(Record, (std::string, name), (bool, ok), (std::int64_t, count), (double, value),
                           (float, scale));
};

// Every string in the document survives quote -> parse unchanged.
void check_strings(const mpx::io::json::Value& value) {
  using Kind = mpx::io::json::Value::Kind;
  if (value.kind == Kind::string &&
      mpx::io::json::parse(mpx::io::json::quote(value.text)).text != value.text) {
    std::abort();
  }
  for (const auto& item : value.items) check_strings(item);
  for (const auto& key : value.keys) {
    if (mpx::io::json::parse(mpx::io::json::quote(key)).text != key) std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    check_strings(mpx::io::json::parse(text, "fuzz input"));
  } catch (const mpx::io_error&) {
  }
  try {
    (void)mpx::experiment::from_json<Record>(text, "fuzz input");
  } catch (const mpx::io_error&) {
  }
  return 0;
}
