// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Experiment records as Hana-reflected structs, written as CSV, JSON or a Markdown table and
/// read back from CSV and JSON, without hand-written field lists: the struct's member names are the
/// columns (keys), its values the rows.
/// @code
/// struct EpochRecord {
///   BOOST_HANA_DEFINE_STRUCT(EpochRecord, (std::string, precision), (int, epoch), (double, loss));
/// };
/// mpx::experiment::write_csv("metrics.csv", records);
/// auto again = mpx::experiment::from_csv<EpochRecord>(mpx::io::read_file("metrics.csv"));
/// @endcode
///
/// Members may be `std::string`, `bool`, integers and floating-point numbers. Numbers are written
/// with enough digits to read back bit-identically; JSON has no infinities or NaN, so non-finite
/// numbers are written there as the strings "inf", "-inf" and "nan".

#include <charconv>
#include <cmath>
#include <concepts>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <boost/hana/accessors.hpp>
#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/define_struct.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>

#include "mpx/error.hpp"
#include "mpx/io/atomic_file.hpp"
#include "mpx/io/json.hpp"
#include "mpx/io/read_file.hpp"

namespace mpx::experiment {

/// @brief A struct whose members Hana can enumerate (declared with BOOST_HANA_DEFINE_STRUCT).
template <class R>
concept Record = boost::hana::Struct<R>::value;

namespace detail {

template <class T>
concept RecordField =
    std::same_as<T, std::string> || std::same_as<T, bool> || std::integral<T> || std::floating_point<T>;

// Calls f(name, member) for each member of `record`, in declaration order.
template <Record R, class F>
void for_each_field(R& record, F&& f) {
  boost::hana::for_each(boost::hana::accessors<std::remove_const_t<R>>(), [&](auto accessor) {
    auto& member = boost::hana::second(accessor)(record);
    static_assert(RecordField<std::remove_cvref_t<decltype(member)>>,
                  "mpx::experiment records: members must be std::string, bool, integers or "
                  "floating-point numbers");
    f(std::string_view(boost::hana::to<const char*>(boost::hana::first(accessor))), member);
  });
}

template <Record R>
std::vector<std::string> field_names() {
  std::vector<std::string> names;
  R probe{};
  for_each_field(probe, [&](std::string_view name, auto&) { names.emplace_back(name); });
  return names;
}

template <std::floating_point T>
std::string number_text(T value) {
  std::ostringstream out;
  out << std::setprecision(std::numeric_limits<T>::max_digits10) << value;
  return out.str();
}

// One CSV field: numbers with enough digits to round-trip, text quoted when it needs to be.
template <class T>
void write_csv_field(std::ostream& out, const T& value) {
  if constexpr (std::same_as<T, std::string>) {
    if (value.find_first_of(",\"\n\r") == std::string::npos) {
      out << value;
    } else {
      out << '"';
      for (const char c : value) {
        if (c == '"') out << '"';
        out << c;
      }
      out << '"';
    }
  } else if constexpr (std::same_as<T, bool>) {
    out << (value ? "true" : "false");
  } else if constexpr (std::floating_point<T>) {
    out << number_text(value);
  } else {
    out << +value;  // + prints 8-bit integers as numbers
  }
}

// Reads `text` into `value`; throws io_error naming where the text came from.
template <class T>
void parse_field(std::string_view text, T& value, const std::string& where) {
  const auto bad = [&](const char* expected) {
    throw io_error(mpx::detail::concat(where, ": \"", text, "\" is not ", expected));
  };
  if constexpr (std::same_as<T, std::string>) {
    value.assign(text);
  } else if constexpr (std::same_as<T, bool>) {
    if (text == "true") {
      value = true;
    } else if (text == "false") {
      value = false;
    } else {
      bad("true or false");
    }
  } else if constexpr (std::integral<T>) {
    const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (status != std::errc() || end != text.data() + text.size()) bad("an integer in range");
  } else {
    // strtod reads "inf", "-inf" and "nan" as well as the digits to_csv and to_json write; a number
    // too large for T must not quietly become infinite, and neither spaces nor hex are ever written.
    const std::string copy(text);
    const bool non_finite_word = copy == "inf" || copy == "-inf" || copy == "nan" || copy == "-nan";
    if (copy.empty() || copy.find_first_of(" \t\n\rxX") != std::string::npos) bad("a number");
    char* end = nullptr;
    const long double number = std::strtold(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size()) bad("a number");
    value = static_cast<T>(number);
    if (!std::isfinite(value) && !non_finite_word) bad("a number in range");
  }
}

// Splits CSV text into rows of fields (RFC 4180: quoted fields may hold commas, quotes and newlines).
inline std::vector<std::vector<std::string>> csv_rows(std::string_view text, std::string_view source) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  bool field_started = false;
  std::size_t line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field.push_back('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field.push_back(c);
      }
    } else if (c == '"' && field.empty() && !field_started) {
      quoted = true;
      field_started = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      field_started = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      row.push_back(std::move(field));
      field.clear();
      field_started = false;
      rows.push_back(std::move(row));
      row.clear();
      ++line;
    } else {
      field.push_back(c);
      field_started = true;
    }
  }
  if (quoted) throw io_error(mpx::detail::concat(source, ": unterminated quoted field at line ", line));
  if (field_started || !row.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace detail

/// @brief The records as CSV text: a header of member names, then one line per record.
template <Record R>
[[nodiscard]] std::string to_csv(std::span<const R> records) {
  std::ostringstream out;
  const auto names = detail::field_names<R>();
  for (std::size_t i = 0; i < names.size(); ++i) out << (i == 0 ? "" : ",") << names[i];
  out << '\n';
  for (const R& record : records) {
    bool first = true;
    detail::for_each_field(record, [&](std::string_view, const auto& value) {
      if (!first) out << ',';
      detail::write_csv_field(out, value);
      first = false;
    });
    out << '\n';
  }
  return out.str();
}

/// @brief The records as a JSON array of objects, one object per line, keys in member order.
template <Record R>
[[nodiscard]] std::string to_json(std::span<const R> records) {
  std::ostringstream out;
  out << '[';
  for (std::size_t r = 0; r < records.size(); ++r) {
    out << (r == 0 ? "\n  {" : ",\n  {");
    bool first = true;
    detail::for_each_field(records[r], [&](std::string_view name, const auto& value) {
      using T = std::remove_cvref_t<decltype(value)>;
      out << (first ? "" : ", ") << io::json::quote(name) << ": ";
      first = false;
      if constexpr (std::same_as<T, std::string>) {
        out << io::json::quote(value);
      } else if constexpr (std::same_as<T, bool>) {
        out << (value ? "true" : "false");
      } else if constexpr (std::floating_point<T>) {
        if (std::isfinite(value)) {
          out << detail::number_text(value);
        } else {
          out << (std::isnan(value) ? "\"nan\"" : value > 0 ? "\"inf\"" : "\"-inf\"");
        }
      } else {
        out << +value;
      }
    });
    out << '}';
  }
  out << (records.empty() ? "]\n" : "\n]\n");
  return out.str();
}

/// @brief The records as a Markdown table (numbers to 4 significant digits), for reading.
template <Record R>
[[nodiscard]] std::string to_table(std::span<const R> records) {
  std::ostringstream out;
  const auto names = detail::field_names<R>();
  out << '|';
  for (const auto& name : names) out << ' ' << name << " |";
  out << "\n|";
  for (std::size_t i = 0; i < names.size(); ++i) out << " --- |";
  out << '\n';
  for (const R& record : records) {
    out << '|';
    detail::for_each_field(record, [&](std::string_view, const auto& value) {
      using T = std::remove_cvref_t<decltype(value)>;
      out << ' ';
      if constexpr (std::same_as<T, std::string>) {
        for (const char c : value) {
          if (c == '|') {
            out << "\\|";
          } else {
            out << (c == '\n' || c == '\r' ? ' ' : c);  // a row is one line
          }
        }
      } else if constexpr (std::same_as<T, bool>) {
        out << (value ? "yes" : "no");
      } else if constexpr (std::floating_point<T>) {
        char text[32];
        std::snprintf(text, sizeof text, "%.4g", static_cast<double>(value));
        out << text;
      } else {
        out << +value;
      }
      out << " |";
    });
    out << '\n';
  }
  return out.str();
}

/// @brief Reads records from CSV text written by `to_csv`; throws `mpx::io_error` naming `source`,
/// the row and the column when the header does not list R's members in order or a value does not
/// parse.
template <Record R>
[[nodiscard]] std::vector<R> from_csv(std::string_view text, std::string_view source = "CSV text") {
  const auto rows = detail::csv_rows(text, source);
  const auto names = detail::field_names<R>();
  if (rows.empty() || rows.front() != names) {
    std::string expected;
    for (const auto& name : names) expected.append(expected.empty() ? "" : ",").append(name);
    throw io_error(mpx::detail::concat(source, ": the header must be \"", expected, "\""));
  }
  std::vector<R> records;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].size() == 1 && rows[r][0].empty()) continue;  // a blank line
    if (rows[r].size() != names.size()) {
      throw io_error(mpx::detail::concat(source, ": row ", r, " has ", rows[r].size(), " fields; expected ",
                                         names.size()));
    }
    R record{};
    std::size_t column = 0;
    detail::for_each_field(record, [&](std::string_view name, auto& value) {
      detail::parse_field(rows[r][column++], value,
                          mpx::detail::concat(source, ": row ", r, ", column ", name));
    });
    records.push_back(std::move(record));
  }
  return records;
}

/// @brief Reads records from JSON text written by `to_json` (an array of objects, each with exactly
/// R's members); throws `mpx::io_error` naming `source`, the record (from 1) and the key on any
/// mismatch.
template <Record R>
[[nodiscard]] std::vector<R> from_json(std::string_view text, std::string_view source = "JSON text") {
  const io::json::Value document = io::json::parse(text, source);
  if (document.kind != io::json::Value::Kind::array) {
    throw io_error(mpx::detail::concat(source, ": expected a JSON array of records"));
  }
  const std::size_t fields = detail::field_names<R>().size();
  std::vector<R> records;
  for (std::size_t r = 0; r < document.items.size(); ++r) {
    const io::json::Value& object = document.items[r];
    if (object.kind != io::json::Value::Kind::object || object.keys.size() != fields) {
      throw io_error(
          mpx::detail::concat(source, ": record ", r + 1, " must be an object with ", fields, " keys"));
    }
    R record{};
    detail::for_each_field(record, [&](std::string_view name, auto& value) {
      using T = std::remove_cvref_t<decltype(value)>;
      const std::string where = mpx::detail::concat(source, ": record ", r + 1, ", key ", name);
      const io::json::Value* field = object.find(name);
      if (field == nullptr) throw io_error(mpx::detail::concat(where, ": missing"));
      using Kind = io::json::Value::Kind;
      const bool kind_fits = std::same_as<T, std::string> ? field->kind == Kind::string
                             : std::same_as<T, bool>      ? field->kind == Kind::boolean
                             : std::floating_point<T>
                                 ? field->kind == Kind::number || field->kind == Kind::string
                                 : field->kind == Kind::number;
      if (!kind_fits) throw io_error(mpx::detail::concat(where, ": wrong JSON type"));
      if constexpr (std::same_as<T, bool>) {
        value = field->boolean;
      } else if constexpr (std::floating_point<T>) {
        if (field->kind == Kind::string && field->text != "inf" && field->text != "-inf" &&
            field->text != "nan") {
          throw io_error(mpx::detail::concat(where, ": \"", field->text, "\" is not a number"));
        }
        detail::parse_field(field->text, value, where);
      } else {
        detail::parse_field(field->text, value, where);
      }
    });
    records.push_back(std::move(record));
  }
  return records;
}

/// @brief Writes `to_csv(records)` to `path` atomically (see io::write_file_atomically).
template <Record R>
void write_csv(const std::filesystem::path& path, std::span<const R> records) {
  io::write_file_atomically(path, to_csv(records));
}

/// @brief Writes `to_json(records)` to `path` atomically (see io::write_file_atomically).
template <Record R>
void write_json(const std::filesystem::path& path, std::span<const R> records) {
  io::write_file_atomically(path, to_json(records));
}

}  // namespace mpx::experiment
