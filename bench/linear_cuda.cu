// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// What does mpx's Linear layer cost beyond its matmuls? One nn::Linear<P, GELU, Cuda> with a bias,
// forward then backward with the input gradient (bias + GELU in the forward epilogue, GELU's
// derivative, dW with the bias gradient in its BGRAD epilogue, dX), against the three raw
// cublasLtMatmul calls of the same shapes with no epilogue: Y = X W^T (compute type), dW = dZ^T X
// (fp32) and dX = dZ W (compute type). Per precision (bf16, fp16, tf32, fp32) and size (batch = in =
// out = S). The two are timed alternately with CUDA events after a warm-up; the medians, TFLOP/s
// and the ratio raw / mpx are printed and written as JSON (--json PATH, default linear_cuda.json)
// with the device, driver, CUDA runtime and cuBLASLt versions. The issue's bar: ratio >= 0.95.
//
// Before timing, the layer is checked against the raw GEMMs on the same random (never zero)
// operands: its output against gelu(X W^T + b) computed on the host from the raw product, and its
// dW, db and dX against raw GEMMs fed dZ = gelu'(X W^T + b) * dY computed on the host, each by the
// normwise error ||mpx - ref|| / ||ref|| within the precision's tolerance; a failed check exits 1.
//
// Usage: linear_cuda [--json PATH] [--sizes 4096,8192] [--repetitions N] [--quick]
// (--quick: size 4096 only, 5 repetitions, for a session that must fit a time limit).
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

constexpr double k_required_ratio = 0.95;

struct Result {
  std::string precision;
  std::int64_t size = 0;
  int repetitions = 0;
  mpx::bench::AlternatingTiming timing;
  double error_y = 0, error_dw = 0, error_db = 0, error_dx = 0, tolerance = 0;
};

template <mpx::PrecisionPolicy P>
Result run_case(std::int64_t size, int repetitions) {
  using Compute = typename P::compute_type;
  using T = mpx::compute_t<P>;
  mpx::CudaContext& context = mpx::cuda_context();
  const std::int64_t batch = size;
  const std::int64_t in = size;
  const std::int64_t out = size;
  std::mt19937 rng(7);

  mpx::nn::Linear<P, mpx::nn::Activation::GELU, mpx::Cuda> layer(in, out);
  layer.initialize(3, 0);
  // A random bias (the default is zero, which would hide a bias that is never added).
  const auto bias_host = mpx::bench::random_host_tensor<float>(mpx::Shape{out}, rng, 0.5f);
  mpx::copy(layer.bias()->master(), bias_host);
  layer.bias()->refresh_compute_copy();
  const auto x = mpx::bench::random_device_tensor<T>(mpx::Shape{batch, in}, rng);
  const auto dy = mpx::bench::random_device_tensor<T>(mpx::Shape{batch, out}, rng);
  // One training step's worth of the layer: zero_grad (lazy: the GEMMs overwrite), forward, backward.
  const auto step_mpx = [&] {
    layer.for_each_parameter([](std::string_view, auto& p) { p.zero_grad(); });
    (void)layer.forward(x);
    (void)layer.backward(dy, true);
  };

  // The raw GEMMs: Y = X W^T, dW = dZ^T X (fp32), dX = dZ W.
  const auto& w = layer.weight().compute();
  const auto raw_forward = mpx::bench::raw_matmul<Compute>(batch, out, in, false, true, context);
  const auto raw_weight_grad =
      mpx::bench::raw_matmul<Compute, mpx::Float>(out, in, batch, true, false, context);
  const auto raw_input_grad = mpx::bench::raw_matmul<Compute>(batch, in, out, false, false, context);
  auto y_raw = mpx::Tensor<T, mpx::Cuda>::uninitialized(mpx::Shape{batch, out});
  auto dw_raw = mpx::Tensor<float, mpx::Cuda>::uninitialized(mpx::Shape{out, in});
  auto dx_raw = mpx::Tensor<T, mpx::Cuda>::uninitialized(mpx::Shape{batch, in});

  // ---- check: mpx against the raw GEMMs and a host epilogue ----
  layer.for_each_parameter([](std::string_view, auto& p) { p.zero_grad(); });
  const auto y_mpx = mpx::to_host(layer.forward(x));
  const auto dx_mpx = mpx::to_host(*layer.backward(dy, true));
  const auto dw_mpx = mpx::to_host(layer.weight().grad());
  const auto db_mpx = mpx::to_host(layer.bias()->grad());
  raw_forward.run(x.data(), w.data(), y_raw.data());
  const auto y_product = mpx::to_host(y_raw);
  const auto bias = mpx::to_host(layer.bias()->compute());
  const auto dy_host = mpx::to_host(dy);
  // The epilogue adds the bias to the fp32 product and stores the pre-activation in T; the raw
  // product was rounded to T before the bias, which moves pre by at most an ulp of T.
  mpx::Tensor<float, mpx::Host> y_ref(mpx::Shape{batch, out});
  auto dz_host = mpx::Tensor<T, mpx::Host>::uninitialized(mpx::Shape{batch, out});
  std::vector<double> db_ref(static_cast<std::size_t>(out), 0.0);
  for (std::int64_t i = 0; i < batch; ++i) {
    for (std::int64_t j = 0; j < out; ++j) {
      const std::int64_t e = i * out + j;
      const float pre = static_cast<float>(
          mpx::round_to<Compute>(static_cast<float>(y_product[e]) + static_cast<float>(bias[j])));
      y_ref[e] = mpx::gelu_tanh(pre);
      dz_host[e] = mpx::round_to<Compute>(mpx::gelu_tanh_derivative(pre) * static_cast<float>(dy_host[e]));
      db_ref[static_cast<std::size_t>(j)] += static_cast<double>(static_cast<float>(dz_host[e]));
    }
  }
  const auto dz = mpx::to_device(dz_host);
  raw_weight_grad.run(dz.data(), x.data(), dw_raw.data());
  raw_input_grad.run(dz.data(), w.data(), dx_raw.data());
  mpx::Tensor<double, mpx::Host> db_ref_tensor(mpx::Shape{out});
  for (std::int64_t j = 0; j < out; ++j) db_ref_tensor[j] = db_ref[static_cast<std::size_t>(j)];

  Result r;
  r.tolerance = mpx::bench::check_tolerance<Compute>();
  r.error_y = mpx::bench::relative_error(y_mpx, y_ref);
  r.error_dw = mpx::bench::relative_error(dw_mpx, mpx::to_host(dw_raw));
  r.error_db = mpx::bench::relative_error(db_mpx, db_ref_tensor);
  r.error_dx = mpx::bench::relative_error(dx_mpx, mpx::to_host(dx_raw));
  if (!(mpx::bench::within(r.error_y, r.tolerance) && mpx::bench::within(r.error_dw, r.tolerance) &&
        mpx::bench::within(r.error_db, r.tolerance) && mpx::bench::within(r.error_dx, r.tolerance))) {
    std::fprintf(stderr,
                 "linear_cuda: %s size %lld: mpx's Linear disagrees with the raw GEMMs (normwise errors: "
                 "y %.3g, dW %.3g, db %.3g, dX %.3g; tolerance %.3g)\n",
                 P::name.data(), static_cast<long long>(size), r.error_y, r.error_dw, r.error_db, r.error_dx,
                 r.tolerance);
    std::exit(EXIT_FAILURE);
  }

  // ---- timing, alternating ----
  const auto step_raw = [&] {
    raw_forward.run(x.data(), w.data(), y_raw.data());
    raw_weight_grad.run(dz.data(), x.data(), dw_raw.data());
    raw_input_grad.run(dz.data(), w.data(), dx_raw.data());
  };
  const double flops =
      3.0 * 2.0 * static_cast<double>(batch) * static_cast<double>(in) * static_cast<double>(out);
  r.precision = std::string(P::name);
  r.size = size;
  r.repetitions = repetitions;
  r.timing = mpx::bench::time_alternately(step_mpx, step_raw, flops, repetitions, context.stream());
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const auto [json_path, sizes, repetitions] =
      mpx::bench::parse_square_run_options(argc, argv, "linear_cuda");
  if (!mpx::bench::cuda_device_present("linear_cuda")) return mpx::bench::k_no_device_exit;
  try {
    mpx::CudaContext& context = mpx::cuda_context();
    mpx::bench::print_machine(context);
    std::printf("Linear(S, S) + bias + GELU, batch S: forward + backward with dX vs the three raw GEMMs\n");
    std::printf("%-10s %6s %10s %10s %10s %10s %8s %10s\n", "precision", "S", "mpx ms", "raw ms", "mpx TF/s",
                "raw TF/s", "ratio", "max error");
    std::vector<Result> results;
    for (const std::int64_t size : sizes) {
      results.push_back(run_case<mpx::bf16_mixed>(size, repetitions));
      results.push_back(run_case<mpx::fp16_mixed>(size, repetitions));
      results.push_back(run_case<mpx::tf32>(size, repetitions));
      results.push_back(run_case<mpx::fp32>(size, repetitions));
    }
    bool all_met = true;
    std::ostringstream json;
    json << "{\"benchmark\": \"linear_cuda\", \"machine\": " << mpx::bench::machine_json()
         << ", \"device\": " << mpx::bench::device_json(context) << ", \"statistic\": \"median\""
         << ", \"layer\": \"Linear + bias + GELU, forward + backward with input gradient\""
         << ", \"reference\": \"raw cublasLtMatmul: X W^T, dZ^T X (fp32 out), dZ W; no epilogues\""
         << ", \"required_ratio\": " << k_required_ratio << ", \"cases\": [";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      const bool met = r.timing.ratio >= k_required_ratio;
      all_met = all_met && met;
      const double max_error = std::max({r.error_y, r.error_dw, r.error_db, r.error_dx});
      std::printf("%-10s %6lld %10.3f %10.3f %10.1f %10.1f %8.3f %10.2g%s\n", r.precision.c_str(),
                  static_cast<long long>(r.size), r.timing.mpx_ms, r.timing.raw_ms, r.timing.mpx_tflops,
                  r.timing.raw_tflops, r.timing.ratio, max_error, met ? "" : "  (below the bar)");
      json << (i == 0 ? "" : ", ") << "{\"precision\": \"" << r.precision << "\", \"batch\": " << r.size
           << ", \"in_features\": " << r.size << ", \"out_features\": " << r.size
           << ", \"repetitions\": " << r.repetitions << ", \"mpx_median_ms\": " << r.timing.mpx_ms
           << ", \"raw_median_ms\": " << r.timing.raw_ms << ", \"mpx_tflops\": " << r.timing.mpx_tflops
           << ", \"raw_tflops\": " << r.timing.raw_tflops << ", \"ratio_raw_over_mpx\": " << r.timing.ratio
           << ", \"check\": {\"error_y\": " << r.error_y << ", \"error_dw\": " << r.error_dw
           << ", \"error_db\": " << r.error_db << ", \"error_dx\": " << r.error_dx
           << ", \"tolerance\": " << r.tolerance << "}, \"bar_met\": " << (met ? "true" : "false") << "}";
    }
    json << "], \"all_bars_met\": " << (all_met ? "true" : "false") << "}\n";
    mpx::bench::write_json(json_path, json.str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "linear_cuda: %s\n", e.what());
    return 1;
  }
}
