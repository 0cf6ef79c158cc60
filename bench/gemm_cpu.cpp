// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// GFLOP/s of mpx::cpu::gemm for fp32, tf32, fp16 and bf16 storage at 512^3, 1024^3 and 2048^3, D in
// the compute type and the Default epilogue, for A * B^T (what a Linear layer's forward does) and
// A * B. Each case is checked against fp64 dot products before it is timed; the four precisions of a
// size are timed in turn, repetition by repetition, and the median of each is reported as a table
// and as JSON (--json PATH, default gemm_cpu.json).
//
// Usage: gemm_cpu [--json PATH]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <Eigen/Core>

#include "../tests/support/tolerances.hpp"
#include "mpx/backend/cpu/gemm.hpp"
#include "mpx/config.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"
#include "report.hpp"

namespace {

using mpx::bench::Clock;

/// The project's bar: 16-bit storage must reach this fraction of fp32's throughput at 1024^3.
constexpr double k_required_ratio = 0.8;
constexpr std::int64_t k_bar_size = 1024;

struct CaseResult {
  std::string precision;
  std::string layout;  // "A*B^T" or "A*B"
  std::int64_t m = 0, n = 0, k = 0;
  int repetitions = 0;
  double median_ms = 0, min_ms = 0, gflops = 0, ratio_to_fp32 = 0;
};

// Enough runs for a stable median while keeping the whole benchmark near a minute on 2 cores: a
// 2048^3 fp32 GEMM is ~17 GFLOP, so it gets few.
int repetitions_for(std::int64_t size) {
  if (size <= 512) return 31;
  if (size <= 1024) return 21;
  return 9;
}

template <class T>
mpx::Tensor<T> random_tensor(const mpx::Shape& shape, std::mt19937_64& rng) {
  // Uniform in [-1, 1] with full fp32 mantissas (so TF32 really rounds), never all zero.
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  auto tensor = mpx::Tensor<T>::uninitialized(shape);
  for (T& element : tensor.values()) element = static_cast<T>(distribution(rng));
  return tensor;
}

template <class Compute, class S>
double compute_value(S stored) {
  if constexpr (std::is_same_v<Compute, mpx::TF32>) {
    return static_cast<double>(mpx::round_tf32(stored));
  } else {
    return static_cast<double>(static_cast<float>(stored));
  }
}

// Checks sampled entries of D against fp64 dot products of the compute-type operands, with the
// tolerance the unit tests use; exits with a message on the first wrong entry.
template <class Compute, class S, class TD>
void verify(const mpx::Tensor<S>& a, const mpx::Tensor<S>& b, const mpx::Tensor<TD>& d, bool b_transposed,
            std::string_view label) {
  const std::int64_t m = d.shape()[0], n = d.shape()[1], k = a.shape()[1];
  const auto tolerance = mpx::test::gemm_tolerance<Compute, mpx::tag_of_t<TD>>(k);
  std::mt19937_64 rng(7);
  std::vector<std::pair<std::int64_t, std::int64_t>> samples = {
      {0, 0}, {m - 1, n - 1}, {0, n - 1}, {m - 1, 0}};
  for (int i = 0; i < 28; ++i) {
    samples.emplace_back(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(m)),
                         static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n)));
  }
  for (const auto& [row, col] : samples) {
    double expected = 0, magnitude = 0;
    for (std::int64_t p = 0; p < k; ++p) {
      const double product = compute_value<Compute>(a[row * k + p]) *
                             compute_value<Compute>(b_transposed ? b[col * k + p] : b[p * n + col]);
      expected += product;
      magnitude += std::fabs(product);
    }
    const double actual = static_cast<double>(static_cast<float>(d[row * n + col]));
    const double bound = tolerance.bound(magnitude, expected);
    if (!(std::fabs(actual - expected) <= bound)) {
      std::fprintf(stderr,
                   "gemm_cpu: WRONG RESULT for %.*s: D[%lld, %lld] = %.9g but the fp64 reference is %.9g "
                   "(|error| %.3g > tolerance %.3g); not timing a wrong GEMM\n",
                   static_cast<int>(label.size()), label.data(), static_cast<long long>(row),
                   static_cast<long long>(col), actual, expected, std::fabs(actual - expected), bound);
      std::exit(EXIT_FAILURE);
    }
  }
}

/// One timed configuration: its operands, D, and the call that runs it.
struct Case {
  CaseResult result;
  std::function<void()> run;
  std::vector<double> times_ms;
};

template <class Compute>
std::unique_ptr<Case> make_case(std::int64_t size, bool b_transposed) {
  using S = mpx::storage_t<Compute>;
  const std::int64_t m = size, n = size, k = size;
  std::mt19937_64 rng(static_cast<std::uint64_t>(size) * 2654435761u + (b_transposed ? 1 : 0));
  auto a = std::make_shared<mpx::Tensor<S>>(random_tensor<S>(mpx::Shape{m, k}, rng));
  auto b = std::make_shared<mpx::Tensor<S>>(
      random_tensor<S>(b_transposed ? mpx::Shape{n, k} : mpx::Shape{k, n}, rng));
  auto d = std::make_shared<mpx::Tensor<S>>(mpx::Tensor<S>::uninitialized(mpx::Shape{m, n}));
  const mpx::GemmConfig config{.transpose_b = b_transposed ? mpx::Transpose::Yes : mpx::Transpose::No};

  auto c = std::make_unique<Case>();
  CaseResult& result = c->result;
  result.precision = std::string(mpx::numeric_traits<Compute>::name);
  result.layout = b_transposed ? "A*B^T" : "A*B";
  result.m = m;
  result.n = n;
  result.k = k;
  result.repetitions = repetitions_for(size);
  c->run = [a, b, d, config] { mpx::cpu::gemm<Compute>(*a, *b, *d, config); };

  // The first call checks the result and warms caches, page mappings and OpenMP's thread pool.
  c->run();
  verify<Compute>(*a, *b, *d, b_transposed,
                  result.precision + " " + result.layout + " " + std::to_string(size));
  return c;
}

// Times every case of one size, repetition by repetition in turn, so that load from other processes
// on a shared machine falls on all precisions alike and their ratios stay meaningful.
void time_interleaved(std::vector<std::unique_ptr<Case>>& cases) {
  const int repetitions = cases.front()->result.repetitions;
  for (int r = 0; r < repetitions; ++r) {
    for (auto& c : cases) {
      const auto start = Clock::now();
      c->run();
      const auto stop = Clock::now();
      c->times_ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }
  }
  for (auto& c : cases) {
    std::vector<double>& times = c->times_ms;
    std::sort(times.begin(), times.end());
    CaseResult& result = c->result;
    result.median_ms = times[times.size() / 2];
    result.min_ms = times.front();
    result.gflops = 2.0 * static_cast<double>(result.m) * static_cast<double>(result.n) *
                    static_cast<double>(result.k) / (result.median_ms * 1e-3) / 1e9;
  }
}

std::string to_json(const std::vector<CaseResult>& results) {
  std::ostringstream out;
  out.precision(6);
  out << "{\n  \"benchmark\": \"gemm_cpu\",\n  \"machine\": " << mpx::bench::machine_json() << ",\n"
      << "  \"statistic\": \"median\",\n  \"required_ratio_at_1024\": " << k_required_ratio << ",\n"
      << "  \"cases\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const CaseResult& r = results[i];
    out << "    {\"precision\": \"" << r.precision << "\", \"layout\": \"" << r.layout << "\", \"m\": " << r.m
        << ", \"n\": " << r.n << ", \"k\": " << r.k << ", \"repetitions\": " << r.repetitions
        << ", \"median_ms\": " << r.median_ms << ", \"min_ms\": " << r.min_ms << ", \"gflops\": " << r.gflops
        << ", \"ratio_to_fp32\": " << r.ratio_to_fp32 << "}" << (i + 1 < results.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path = "gemm_cpu.json";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (arg == "--help" || arg == "-h") {
      std::printf("usage: %s [--json PATH]   (default PATH: gemm_cpu.json)\n", argv[0]);
      return EXIT_SUCCESS;
    } else {
      std::fprintf(stderr, "gemm_cpu: unknown argument '%s'; usage: %s [--json PATH]\n", argv[i], argv[0]);
      return EXIT_FAILURE;
    }
  }

  std::printf("mpx::cpu::gemm: %s\n", mpx::bench::machine_line().c_str());
  std::printf("D in the compute type, Default epilogue; median of repeated runs\n\n");
  std::printf("%-6s %-6s %6s %5s %11s %11s %9s %9s\n", "layout", "prec", "size", "reps", "median ms",
              "min ms", "GFLOP/s", "vs fp32");

  std::vector<CaseResult> results;
  for (const bool b_transposed : {true, false}) {
    for (const std::int64_t size : {512, 1024, 2048}) {
      std::vector<std::unique_ptr<Case>> cases;
      cases.push_back(make_case<mpx::Float>(size, b_transposed));
      cases.push_back(make_case<mpx::TF32>(size, b_transposed));
      cases.push_back(make_case<mpx::Half>(size, b_transposed));
      cases.push_back(make_case<mpx::BFloat16>(size, b_transposed));
      time_interleaved(cases);
      const double fp32_gflops = cases.front()->result.gflops;
      for (auto& c : cases) {
        CaseResult& r = c->result;
        r.ratio_to_fp32 = r.gflops / fp32_gflops;
        std::printf("%-6s %-6s %6lld %5d %11.2f %11.2f %9.1f %8.2fx\n", r.layout.c_str(), r.precision.c_str(),
                    static_cast<long long>(size), r.repetitions, r.median_ms, r.min_ms, r.gflops,
                    r.ratio_to_fp32);
        results.push_back(r);
      }
      std::fflush(stdout);
    }
  }

  std::printf("\nBar: 16-bit storage >= %.1fx fp32 at %lld^3\n", k_required_ratio,
              static_cast<long long>(k_bar_size));
  for (const CaseResult& r : results) {
    if (r.m == k_bar_size && (r.precision == "fp16" || r.precision == "bf16")) {
      std::printf("  %-5s %-6s %.2fx  %s\n", r.precision.c_str(), r.layout.c_str(), r.ratio_to_fp32,
                  r.ratio_to_fp32 >= k_required_ratio ? "meets the bar" : "MISSES the bar");
    }
  }

  mpx::bench::write_json(json_path, to_json(results));
  return EXIT_SUCCESS;
}
