// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Experiment records as Hana-reflected structs, written as CSV without hand-written field
/// lists: the struct's member names are the header, its values the rows.
/// @code
/// struct EpochRecord {
///   BOOST_HANA_DEFINE_STRUCT(EpochRecord, (std::string, precision), (int, epoch), (double, loss));
/// };
/// mpx::experiment::write_csv("metrics.csv", records);
/// @endcode

#include <concepts>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <span>
#include <sstream>
#include <string>

#include <boost/hana/accessors.hpp>
#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/define_struct.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>

#include "mpx/io/atomic_file.hpp"

namespace mpx::experiment {

/// @brief A struct whose members Hana can enumerate (declared with BOOST_HANA_DEFINE_STRUCT).
template <class R>
concept Record = boost::hana::Struct<R>::value;

namespace detail {
// One CSV field: numbers with enough digits to round-trip, text quoted when it needs to be.
template <class T>
void write_field(std::ostream& out, const T& value) {
  if constexpr (std::same_as<T, std::string>) {
    if (value.find_first_of(",\"\n") == std::string::npos) {
      out << value;
    } else {
      out << '"';
      for (const char c : value) out << (c == '"' ? "\"\"" : std::string(1, c));
      out << '"';
    }
  } else if constexpr (std::same_as<T, bool>) {
    out << (value ? "true" : "false");
  } else if constexpr (std::floating_point<T>) {
    out << std::setprecision(std::numeric_limits<T>::max_digits10) << value;
  } else {
    out << value;
  }
}
}  // namespace detail

/// @brief The records as CSV text: a header of member names, then one line per record.
template <Record R>
[[nodiscard]] std::string to_csv(std::span<const R> records) {
  std::ostringstream out;
  bool first = true;
  boost::hana::for_each(boost::hana::accessors<R>(), [&](auto accessor) {
    out << (first ? "" : ",") << boost::hana::to<const char*>(boost::hana::first(accessor));
    first = false;
  });
  out << '\n';
  for (const R& record : records) {
    first = true;
    boost::hana::for_each(boost::hana::accessors<R>(), [&](auto accessor) {
      if (!first) out << ',';
      detail::write_field(out, boost::hana::second(accessor)(record));
      first = false;
    });
    out << '\n';
  }
  return out.str();
}

/// @brief Writes `to_csv(records)` to `path` atomically (see io::write_file_atomically).
template <Record R>
void write_csv(const std::filesystem::path& path, std::span<const R> records) {
  io::write_file_atomically(path, to_csv(records));
}

}  // namespace mpx::experiment
