// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// What every benchmark reports beside its numbers: the machine and software it ran on, medians, and
// JSON written atomically.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <Eigen/Core>

#include "mpx/backend/cpu/gemm_kernel.hpp"
#include "mpx/config.hpp"
#include "mpx/io/atomic_file.hpp"

namespace mpx::bench {

#ifdef MPX_BENCH_CHECK_ONLY
/// A benchmark built for a compile check only (CMake's MPX_BENCH_CHECK_ONLY=ON, as scripts/test.sh
/// configures CI's build: -O1) would time code that users never run, so it stops before main.
inline const bool refused_check_only_build = [] {
  std::fprintf(stderr,
               "mpx bench: this program was built with MPX_BENCH_CHECK_ONLY=ON (compiled at -O1 to check that "
               "it builds; its timings would mislead). Configure with -DMPX_BENCH_CHECK_ONLY=OFF and build it "
               "again to run it.\n");
  std::exit(2);
  return true;
}();
#endif

using Clock = std::chrono::steady_clock;

/// Milliseconds since `start`.
inline double elapsed_ms(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// Median of the samples (the upper one of the middle two for an even count).
inline double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples.empty() ? 0.0 : samples[samples.size() / 2];
}

inline std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        const auto start = line.find_first_not_of(' ', colon + 1);
        return start == std::string::npos ? std::string() : line.substr(start);
      }
    }
  }
  return "unknown";
}

inline int openmp_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

inline std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

inline std::string json_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out;
}

/// The library under mpx::cpu::gemm's products, with its version where it has one ("oneDNN 2.6.3").
inline std::string cpu_gemm_kernel() {
  std::ostringstream kernel;  // (not string +: GCC 12 warns falsely on " " + std::to_string)
  kernel << cpu::gemm_kernel_library;
#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
  const dnnl_version_t* version = dnnl_version();
  kernel << ' ' << version->major << '.' << version->minor << '.' << version->patch;
#endif
  return kernel.str();
}

/// One line describing the machine, for the top of a benchmark's table.
inline std::string machine_line() {
  std::ostringstream out;
  out << cpu_model() << ", " << std::thread::hardware_concurrency() << " cores, " << openmp_threads()
      << " OpenMP threads, Eigen " << EIGEN_WORLD_VERSION << "." << EIGEN_MAJOR_VERSION << "."
      << EIGEN_MINOR_VERSION << ", CPU GEMM on " << cpu_gemm_kernel() << ", " << __VERSION__;
  return out.str();
}

/// The "machine" JSON object: CPU, cores, threads, compiler, library versions, date.
inline std::string machine_json() {
  std::ostringstream out;
  out << "{\"cpu_model\": \"" << json_escape(cpu_model())
      << "\", \"cores\": " << std::thread::hardware_concurrency()
      << ", \"openmp_threads\": " << openmp_threads() << ", \"eigen_threads\": " << Eigen::nbThreads()
      << ", \"compiler\": \"" << json_escape(__VERSION__) << "\", \"eigen_version\": \""
      << EIGEN_WORLD_VERSION << "." << EIGEN_MAJOR_VERSION << "." << EIGEN_MINOR_VERSION
      << "\", \"cpu_gemm_kernel\": \"" << json_escape(cpu_gemm_kernel()) << "\", \"mpx_version\": \""
      << Version::major << "." << Version::minor << "." << Version::patch << "\", \"date\": \"" << utc_now()
      << "\"}";
  return out.str();
}

/// Writes a benchmark's JSON document atomically and says where.
inline void write_json(const std::string& path, const std::string& document) {
  io::write_file_atomically(path, document);
  std::printf("\nwrote %s\n", path.c_str());
}

}  // namespace mpx::bench
