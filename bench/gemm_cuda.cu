// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx::cuda::gemm against a raw cublasLtMatmul call with the same operands, layouts, algorithm search
// and workspace, in the same process: bf16, fp16, tf32 and fp32 at 4096^3 and 8192^3, Y = X * W^T
// (a Linear layer's forward), D in the compute type. The two are timed alternately with CUDA events,
// the median of each is reported with TFLOP/s and the ratio mpx / raw (the issue's bar: >= 0.98), as
// a table and as JSON (--json PATH, default gemm_cuda.json) with the device name, driver, CUDA runtime
// and cuBLASLt versions. Before timing, mpx's result is compared with the raw one.
//
// Usage: gemm_cuda [--json PATH] [--sizes 4096,8192] [--repetitions N] [--quick]
// (--quick: 4096^3 only, 5 repetitions, for a session that must fit a time limit).
// Exits 77 with a message when no CUDA device is present.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <mpx/cuda.hpp>

#include "cuda_report.hpp"

namespace {

constexpr double k_required_ratio = 0.98;

struct Result {
  std::string precision;
  std::int64_t size = 0;
  int repetitions = 0;
  mpx::bench::AlternatingTiming timing;
  double max_abs_difference = 0;
};

template <mpx::NumericTag Compute>
Result run_case(std::int64_t size, int repetitions) {
  using S = mpx::storage_t<Compute>;
  mpx::CudaContext& context = mpx::cuda_context();
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  mpx::Tensor<S> x_host(mpx::Shape{size, size});
  mpx::Tensor<S> w_host(mpx::Shape{size, size});
  for (S& v : x_host.values()) v = static_cast<S>(dist(rng));
  for (S& v : w_host.values()) v = static_cast<S>(dist(rng));
  const auto x = mpx::to_device(x_host);
  const auto w = mpx::to_device(w_host);
  auto y_mpx = mpx::Tensor<S, mpx::Cuda>::uninitialized(mpx::Shape{size, size});
  auto y_raw = mpx::Tensor<S, mpx::Cuda>::uninitialized(mpx::Shape{size, size});
  const auto raw = mpx::bench::raw_matmul<Compute>(size, size, size, false, true, context);
  const mpx::GemmConfig config{.transpose_b = mpx::Transpose::Yes};
  const auto run_mpx = [&] { mpx::cuda::gemm<Compute>(x, w, y_mpx, config); };
  const auto run_raw = [&] { raw.run(x.data(), w.data(), y_raw.data()); };

  run_mpx();
  run_raw();
  const auto a = mpx::to_host(y_mpx);
  const auto b = mpx::to_host(y_raw);
  Result r;
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    r.max_abs_difference =
        std::max(r.max_abs_difference, std::abs(mpx::bench::as_double(a[i]) - mpx::bench::as_double(b[i])));
  }

  const double flops =
      2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
  r.precision = std::string(mpx::numeric_traits<Compute>::name);
  r.size = size;
  r.repetitions = repetitions;
  r.timing = mpx::bench::time_alternately(run_mpx, run_raw, flops, repetitions, context.stream());
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const auto [json_path, sizes, repetitions] = mpx::bench::parse_square_run_options(argc, argv, "gemm_cuda");
  if (!mpx::bench::cuda_device_present("gemm_cuda")) return mpx::bench::k_no_device_exit;
  try {
    mpx::CudaContext& context = mpx::cuda_context();
    mpx::bench::print_machine(context);
    std::printf("%-10s %6s %10s %10s %10s %10s %8s %12s\n", "precision", "size", "mpx ms", "raw ms",
                "mpx TF/s", "raw TF/s", "ratio", "max |diff|");
    std::vector<Result> results;
    for (const std::int64_t size : sizes) {
      results.push_back(run_case<mpx::BFloat16>(size, repetitions));
      results.push_back(run_case<mpx::Half>(size, repetitions));
      results.push_back(run_case<mpx::TF32>(size, repetitions));
      results.push_back(run_case<mpx::Float>(size, repetitions));
    }
    bool all_met = true;
    std::ostringstream json;
    json << "{\"benchmark\": \"gemm_cuda\", \"machine\": " << mpx::bench::machine_json()
         << ", \"device\": " << mpx::bench::device_json(context)
         << ", \"required_ratio\": " << k_required_ratio << ", \"cases\": [";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      const bool met = r.timing.ratio >= k_required_ratio;
      all_met = all_met && met;
      std::printf("%-10s %6lld %10.3f %10.3f %10.1f %10.1f %8.3f %12.3g%s\n", r.precision.c_str(),
                  static_cast<long long>(r.size), r.timing.mpx_ms, r.timing.raw_ms, r.timing.mpx_tflops,
                  r.timing.raw_tflops, r.timing.ratio, r.max_abs_difference, met ? "" : "  (below the bar)");
      json << (i == 0 ? "" : ", ") << "{\"precision\": \"" << r.precision << "\", \"m\": " << r.size
           << ", \"n\": " << r.size << ", \"k\": " << r.size
           << ", \"layout\": \"A*B^T\", \"repetitions\": " << r.repetitions
           << ", \"mpx_median_ms\": " << r.timing.mpx_ms << ", \"raw_median_ms\": " << r.timing.raw_ms
           << ", \"mpx_tflops\": " << r.timing.mpx_tflops << ", \"raw_tflops\": " << r.timing.raw_tflops
           << ", \"ratio_mpx_over_raw\": " << r.timing.ratio
           << ", \"max_abs_difference\": " << r.max_abs_difference
           << ", \"bar_met\": " << (met ? "true" : "false") << "}";
    }
    json << "], \"all_bars_met\": " << (all_met ? "true" : "false") << "}\n";
    mpx::bench::write_json(json_path, json.str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_cuda: %s\n", e.what());
    return 1;
  }
}
