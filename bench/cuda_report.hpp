// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// What the CUDA benchmarks share: the device JSON object (name, driver, CUDA runtime and cuBLASLt
// versions), the no-device exit, CUDA-event timing, random device tensors, a normwise error, and a
// raw cublasLtMatmul written independently of mpx's mapping, the reference mpx's GEMMs are timed
// against. Needs nvcc and mpx::cuda.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <mpx/cuda.hpp>

#include "report.hpp"

namespace mpx::bench {

/// Exit code of a benchmark that found no CUDA device (CTest's and the session script's "skipped").
inline constexpr int k_no_device_exit = 77;

/// Whether a CUDA device is present; says so on stdout when none is, for `return k_no_device_exit`.
inline bool cuda_device_present(const char* program) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    (void)cudaGetLastError();
    std::printf("%s: no CUDA device present; nothing to measure (exit code 77)\n", program);
    return false;
  }
  return true;
}

/// The "device" JSON object: name, compute capability, memory, driver, CUDA runtime and cuBLASLt
/// versions, and the matmul workspace mpx uses.
inline std::string device_json(const CudaContext& context) {
  int driver = 0;
  int runtime = 0;
  MPX_CUDA_CHECK(cudaDriverGetVersion(&driver));
  MPX_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  const auto& p = context.properties();
  std::ostringstream out;
  out << "{\"name\": \"" << json_escape(p.name) << "\", \"compute_capability\": \"" << p.major << "."
      << p.minor << "\", \"multiprocessors\": " << p.multiProcessorCount
      << ", \"memory_bytes\": " << p.totalGlobalMem << ", \"driver_version\": " << driver
      << ", \"cuda_runtime_version\": " << runtime << ", \"cublaslt_version\": " << cublasLtGetVersion()
      << ", \"workspace_bytes\": " << context.workspace_bytes() << "}";
  return out.str();
}

/// The lines a benchmark prints above its table: the host, then the device.
inline void print_machine(const CudaContext& context) {
  std::printf("%s\n%s, sm_%d%d\n\n", machine_line().c_str(), context.properties().name,
              context.properties().major, context.properties().minor);
}

/// Times work queued on a stream with a pair of CUDA events.
class EventTimer {
 public:
  EventTimer() {
    MPX_CUDA_CHECK(cudaEventCreate(&start_));
    MPX_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  ~EventTimer() {
    (void)cudaEventDestroy(start_);
    (void)cudaEventDestroy(stop_);
  }

  /// Milliseconds between an event recorded before `f()` and one after it, waiting for the second:
  /// `f` must queue its work on `stream` (the host may run ahead of it; the events measure the
  /// device).
  template <class F>
  double milliseconds(F&& f, cudaStream_t stream) {
    MPX_CUDA_CHECK(cudaEventRecord(start_, stream));
    f();
    MPX_CUDA_CHECK(cudaEventRecord(stop_, stream));
    MPX_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    MPX_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

/// The median of repeated timings and their spread, in milliseconds.
struct Timing {
  double median = 0, min = 0, max = 0;

  /// Each figure divided by `n` (a group of n steps timed together -> per step).
  [[nodiscard]] Timing per(int n) const { return {median / n, min / n, max / n}; }
};

/// Milliseconds of `f` over `repetitions` timings after `warmup` untimed calls.
template <class F>
Timing time_ms(F&& f, cudaStream_t stream, int warmup, int repetitions) {
  for (int i = 0; i < warmup; ++i) f();
  EventTimer timer;
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(repetitions));
  for (int i = 0; i < repetitions; ++i) samples.push_back(timer.milliseconds(f, stream));
  const auto [low, high] = std::minmax_element(samples.begin(), samples.end());
  return {median(samples), *low, *high};
}

/// Median milliseconds of `f` over `repetitions` timings after `warmup` untimed calls.
template <class F>
double median_ms(F&& f, cudaStream_t stream, int warmup, int repetitions) {
  return time_ms(std::forward<F>(f), stream, warmup, repetitions).median;
}

/// mpx and a raw reference timed alternately, so that clock and thermal drift hit both alike.
struct AlternatingTiming {
  double mpx_ms = 0, raw_ms = 0;          ///< medians
  double mpx_tflops = 0, raw_tflops = 0;  ///< from the medians
  double ratio = 0;                       ///< raw_ms / mpx_ms: mpx's speed as a fraction of raw's
};

/// Times `run_mpx` and `run_raw` alternately, `repetitions` times each after `warmup` untimed pairs.
template <class Mpx, class Raw>
AlternatingTiming time_alternately(Mpx&& run_mpx, Raw&& run_raw, double flops, int repetitions,
                                   cudaStream_t stream, int warmup = 3) {
  for (int i = 0; i < warmup; ++i) {
    run_mpx();
    run_raw();
  }
  EventTimer timer;
  std::vector<double> mpx_samples;
  std::vector<double> raw_samples;
  for (int i = 0; i < repetitions; ++i) {
    mpx_samples.push_back(timer.milliseconds(run_mpx, stream));
    raw_samples.push_back(timer.milliseconds(run_raw, stream));
  }
  AlternatingTiming t;
  t.mpx_ms = median(mpx_samples);
  t.raw_ms = median(raw_samples);
  t.mpx_tflops = flops / (t.mpx_ms * 1e9);
  t.raw_tflops = flops / (t.raw_ms * 1e9);
  t.ratio = t.raw_ms / t.mpx_ms;
  return t;
}

/// The command line of the benchmarks that time square problems against raw cuBLASLt.
struct SquareRunOptions {
  std::string json_path;                        ///< --json PATH (default: <program>.json)
  std::vector<std::int64_t> sizes{4096, 8192};  ///< --sizes 4096,8192
  int repetitions = 20;                         ///< --repetitions N
};

/// Parses `--json PATH`, `--sizes a,b,...`, `--repetitions N` and `--quick` (4096 only, 5
/// repetitions); prints the usage line and exits 2 on anything else.
inline SquareRunOptions parse_square_run_options(int argc, char** argv, const char* program) {
  SquareRunOptions options;
  options.json_path = std::string(program) + ".json";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) {
      options.json_path = argv[++i];
    } else if (arg == "--quick") {
      options.sizes = {4096};
      options.repetitions = 5;
    } else if (arg == "--repetitions" && i + 1 < argc) {
      options.repetitions = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--sizes" && i + 1 < argc) {
      options.sizes.clear();
      std::stringstream list(argv[++i]);
      std::string item;
      while (std::getline(list, item, ',')) options.sizes.push_back(std::stoll(item));
    } else {
      std::fprintf(stderr, "usage: %s [--json PATH] [--sizes 4096,8192] [--repetitions N] [--quick]\n",
                   program);
      std::exit(2);
    }
  }
  return options;
}

/// A host tensor of uniform random values in [-scale, -scale/64] U [scale/64, scale] (never zero,
/// so an unwritten output or a skipped operand cannot pass a check), rounded to `T`.
template <class T>
Tensor<T, Host> random_host_tensor(const Shape& shape, std::mt19937& rng, float scale = 1.0f) {
  std::uniform_real_distribution<float> magnitude(scale / 64.0f, scale);
  std::bernoulli_distribution negative(0.5);
  Tensor<T, Host> tensor(shape);
  for (T& v : tensor.values()) {
    const float x = magnitude(rng);
    v = static_cast<T>(negative(rng) ? -x : x);
  }
  return tensor;
}

/// `random_host_tensor` copied to the device.
template <class T>
Tensor<T, Cuda> random_device_tensor(const Shape& shape, std::mt19937& rng, float scale = 1.0f) {
  return to_device(random_host_tensor<T>(shape, rng, scale));
}

/// Value of an element as a double, for any storage type.
template <class T>
double as_double(T x) {
  return static_cast<double>(static_cast<float>(x));
}

/// ||a - b|| / ||b|| over all elements (NaN when either holds NaN or inf, or `b` is zero), the
/// normwise error METHOD.md uses.
template <class A, class B>
double relative_error(const Tensor<A, Host>& a, const Tensor<B, Host>& b) {
  if (a.numel() != b.numel()) return std::nan("");
  double difference = 0;
  double reference = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    const double x = as_double(a[i]);
    const double y = as_double(b[i]);
    difference += (x - y) * (x - y);
    reference += y * y;
  }
  const double error = std::sqrt(difference) / std::sqrt(reference);
  return std::isfinite(error) ? error : std::nan("");
}

/// The normwise error a benchmark's check allows for a result computed in `Compute` against
/// another computation of the same function (another algorithm, order or fusion): a wrong result
/// (wrong operand, missed epilogue, unwritten rows) is off by O(1), rounding by far less.
template <NumericTag Compute>
constexpr double check_tolerance() {
  if constexpr (std::is_same_v<Compute, Double>) return 1e-12;
  if constexpr (std::is_same_v<Compute, Float>) return 1e-4;  // sums of thousands in two orders
  if constexpr (std::is_same_v<Compute, TF32>) return 2e-3;
  if constexpr (std::is_same_v<Compute, Half>) return 5e-3;
  return 2e-2;  // BFloat16: 8 significant bits
}

/// Whether `error` passes `tolerance`; NaN never does.
inline bool within(double error, double tolerance) {
  return error <= tolerance;
}

/// A raw cuBLASLt matmul D = op(A) op(B) over row-major matrices (op(A) [M,K], op(B) [K,N], D [M,N]),
/// alpha = 1, beta = 0, no epilogue, the first algorithm the heuristic offers for the context's
/// workspace. Written independently of mpx's mapping: a row-major matrix is its column-major
/// transpose, so cuBLASLt computes D^T = op(B)^T op(A)^T with its A := our B and its B := our A,
/// each keeping its own transpose flag.
class RawMatmul {
 public:
  /// Operands of type `operand_type` (A and B), D of type `output_type`, computing in `compute`.
  RawMatmul(cudaDataType_t operand_type, cudaDataType_t output_type, cublasComputeType_t compute,
            std::int64_t m, std::int64_t n, std::int64_t k, bool transpose_a, bool transpose_b,
            CudaContext& context)
      : context_(context) {
    MPX_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, compute, CUDA_R_32F));
    const cublasOperation_t transa = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t transb = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    MPX_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
    MPX_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
    // Our B as stored: [N, K] when transposed, else [K, N]; column-major it is [cols, rows].
    const auto u = [](std::int64_t x) { return static_cast<std::uint64_t>(x); };
    const std::int64_t b_cols = transpose_b ? k : n;
    const std::int64_t b_rows = transpose_b ? n : k;
    MPX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a_, operand_type, u(b_cols), u(b_rows), b_cols));
    const std::int64_t a_cols = transpose_a ? m : k;
    const std::int64_t a_rows = transpose_a ? k : m;
    MPX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b_, operand_type, u(a_cols), u(a_rows), a_cols));
    MPX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d_, output_type, u(n), u(m), n));
    cublasLtMatmulPreference_t preference = nullptr;
    MPX_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    const std::uint64_t workspace = context.workspace_bytes();
    MPX_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace));
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(context.cublaslt(), desc_, a_, b_, d_, d_,
                                                                 preference, 1, &result, &returned);
    (void)cublasLtMatmulPreferenceDestroy(preference);
    if (status != CUBLAS_STATUS_SUCCESS || returned == 0) {
      destroy();
      throw error(detail::concat("bench::RawMatmul: cuBLASLt offered no algorithm for M = ", m, ", N = ", n,
                                 ", K = ", k));
    }
    algo_ = result.algo;
  }
  RawMatmul(const RawMatmul&) = delete;
  RawMatmul& operator=(const RawMatmul&) = delete;
  ~RawMatmul() { destroy(); }

  /// D = op(A) op(B) on the context's stream.
  void run(const void* a, const void* b, void* d) const {
    const float alpha = 1.0f;
    const float beta = 0.0f;
    MPX_CUBLAS_CHECK(cublasLtMatmul(context_.cublaslt(), desc_, &alpha, b, a_, a, b_, &beta, d, d_, d, d_,
                                    &algo_, context_.workspace(), context_.workspace_bytes(),
                                    context_.stream()));
  }

 private:
  void destroy() noexcept {
    if (a_ != nullptr) (void)cublasLtMatrixLayoutDestroy(a_);
    if (b_ != nullptr) (void)cublasLtMatrixLayoutDestroy(b_);
    if (d_ != nullptr) (void)cublasLtMatrixLayoutDestroy(d_);
    if (desc_ != nullptr) (void)cublasLtMatmulDescDestroy(desc_);
    a_ = b_ = d_ = nullptr;
    desc_ = nullptr;
  }

  CudaContext& context_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

/// A `RawMatmul` whose operands are in `Compute`'s storage type and D in `Output`'s.
template <NumericTag Compute, NumericTag Output = Compute>
RawMatmul raw_matmul(std::int64_t m, std::int64_t n, std::int64_t k, bool transpose_a, bool transpose_b,
                     CudaContext& context) {
  return RawMatmul(cuda_traits<Compute>::data_type, cuda_traits<Output>::data_type,
                   cuda_traits<Compute>::compute_type, m, n, k, transpose_a, transpose_b, context);
}

}  // namespace mpx::bench
