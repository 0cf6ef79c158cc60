// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Which CPU GEMM should mpx use? The shapes mpx's CPU workloads run (the char-GPT's and the MLPs'
// Linear layers, forward A*B^T, input gradient A*B and weight gradient A^T*B, and 2048^3), timed in
// each packaged library this machine has, in the same run:
//   fp32: Eigen's own parallel product (mpx's GEMM before oneDNN), OpenBLAS and BLIS (cblas_sgemm,
//         loaded with dlopen so that their identical symbols cannot clash), oneDNN (dnnl_sgemm), and
//         mpx::cpu::gemm<Float> as it is built (its kernel library and fixed tiles, gemm_kernel.hpp);
//   bf16 operands, fp32 result: widen to fp32 + Eigen, mpx::cpu::gemm<BFloat16> (widen, then its
//         kernel), widen + OpenBLAS, oneDNN's bf16 matmul primitive (native AVX512_BF16 / AMX where
//         the CPU has them).
// Every library's result is checked against an fp64 reference before it is timed. The libraries of a
// case are timed in turn, repetition by repetition, and the medians are reported with their ratio to
// Eigen, as a table and as JSON (--json PATH). The machine's fp32 peak is measured too (independent
// FMAs in registers on every thread), so that each GFLOP/s is also a share of it.
//
// Threads: OMP_NUM_THREADS for Eigen, BLIS (OpenMP build) and oneDNN; OpenBLAS (pthreads build) is
// told the same count through openblas_set_num_threads.
//
// Usage: gemm_libraries_cpu [--json PATH] [--repetitions N]
#include <dlfcn.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#if MPX_HAS_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "mpx/backend/cpu/gemm.hpp"
#include "mpx/experiment/usage.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"
#include "report.hpp"

namespace {

using mpx::bench::Clock;

// ---- the libraries --------------------------------------------------------------------------------

// cblas_sgemm as OpenBLAS and BLIS export it (CBLAS enum values: RowMajor 101, NoTrans 111, Trans 112).
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                            float*, int);
using SetThreads = void (*)(int);

struct Cblas {
  std::string name;
  CblasSgemm sgemm = nullptr;
};

// A cblas library by file name, loaded privately (RTLD_LOCAL: its symbols stay out of the process's).
std::optional<Cblas> load_cblas(const std::string& name, const char* file, const char* threads_function,
                                int threads) {
  void* handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return std::nullopt;
  auto sgemm = reinterpret_cast<CblasSgemm>(dlsym(handle, "cblas_sgemm"));
  if (sgemm == nullptr) return std::nullopt;
  if (threads_function != nullptr) {
    if (auto set = reinterpret_cast<SetThreads>(dlsym(handle, threads_function))) set(threads);
  }
  return Cblas{name, sgemm};
}

// ---- shapes ---------------------------------------------------------------------------------------

// op(A) is M x K, op(B) is K x N; A and B row-major as a Linear layer holds them.
struct Shape {
  std::string workload;
  std::string role;  // "forward", "input grad", "weight grad", "square"
  std::int64_t m, n, k;
  bool transpose_a, transpose_b;
};

// A Linear layer of `in` -> `out` features over `rows` rows: its three GEMMs.
void add_linear(std::vector<Shape>& shapes, const std::string& workload, std::int64_t rows, std::int64_t in,
                std::int64_t out) {
  shapes.push_back({workload, "forward", rows, out, in, false, true});      // X W^T
  shapes.push_back({workload, "input grad", rows, in, out, false, false});  // dY W
  shapes.push_back({workload, "weight grad", out, in, rows, true, false});  // dY^T X
}

std::vector<Shape> workload_shapes() {
  std::vector<Shape> shapes;
  // bench/train_cpu's char-GPT: batch 16 x context 64 tokens, width 128, MLP 512, vocabulary ~96.
  const std::int64_t tokens = 16 * 64;
  add_linear(shapes, "char-GPT qkv", tokens, 128, 384);
  add_linear(shapes, "char-GPT mlp up", tokens, 128, 512);
  add_linear(shapes, "char-GPT mlp down", tokens, 512, 128);
  add_linear(shapes, "char-GPT head", tokens, 128, 96);
  // The Fashion-MNIST MLP (batch 128) and the wide MLP (batch 256).
  add_linear(shapes, "MLP 784-512", 128, 784, 512);
  add_linear(shapes, "wide MLP 4096-4096", 256, 4096, 4096);
  shapes.push_back({"square", "square", 2048, 2048, 2048, false, false});
  return shapes;
}

// ---- data and reference ---------------------------------------------------------------------------

struct Operands {
  std::vector<float> a, b;                // fp32 values, already bf16-representable
  std::vector<Eigen::bfloat16> a16, b16;  // the same values in bf16
  std::int64_t rows_a, cols_a, rows_b, cols_b;
};

// Random values in [-1, 1) rounded to bf16, so that fp32 and bf16 runs multiply the same numbers.
Operands make_operands(const Shape& s, std::mt19937& rng) {
  Operands o;
  o.rows_a = s.transpose_a ? s.k : s.m;
  o.cols_a = s.transpose_a ? s.m : s.k;
  o.rows_b = s.transpose_b ? s.n : s.k;
  o.cols_b = s.transpose_b ? s.k : s.n;
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const auto fill = [&](std::vector<float>& v, std::vector<Eigen::bfloat16>& v16, std::int64_t count) {
    v.resize(static_cast<std::size_t>(count));
    v16.resize(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      v16[i] = mpx::round_to<mpx::BFloat16>(uniform(rng));
      v[i] = static_cast<float>(v16[i]);
    }
  };
  fill(o.a, o.a16, o.rows_a * o.cols_a);
  fill(o.b, o.b16, o.rows_b * o.cols_b);
  return o;
}

// The largest |C - reference| / max |reference| over a sample of elements, the reference in fp64.
double relative_error(const Shape& s, const Operands& o, const std::vector<float>& c) {
  double worst = 0.0, largest = 0.0;
  const std::int64_t stride = std::max<std::int64_t>(1, s.m * s.n / 4096);
  for (std::int64_t index = 0; index < s.m * s.n; index += stride) {
    const std::int64_t i = index / s.n, j = index % s.n;
    double sum = 0.0;
    for (std::int64_t p = 0; p < s.k; ++p) {
      const double x = s.transpose_a ? o.a[p * o.cols_a + i] : o.a[i * o.cols_a + p];
      const double y = s.transpose_b ? o.b[j * o.cols_b + p] : o.b[p * o.cols_b + j];
      sum += x * y;
    }
    worst = std::max(worst, std::fabs(c[static_cast<std::size_t>(index)] - sum));
    largest = std::max(largest, std::fabs(sum));
  }
  return largest > 0.0 ? worst / largest : worst;
}

// ---- one library on one shape ---------------------------------------------------------------------

// mpx's GEMM as built here: its fp32 kernel's library (gemm_kernel.hpp) in the name.
const std::string mpx_gemm_name = std::string("mpx (") + mpx::cpu::gemm_kernel_library + ")";

struct Candidate {
  std::string library;
  std::string precision;  // "fp32" or "bf16"
  std::function<void(std::vector<float>& c)> run;
};

std::vector<Candidate> candidates(const Shape& s, const Operands& o, const std::vector<Cblas>& cblas) {
  std::vector<Candidate> out;
  const auto as_tensor = [](auto& values, std::int64_t rows, std::int64_t cols) {
    using T = std::remove_cvref_t<decltype(values[0])>;
    return mpx::Tensor<T>::view(const_cast<T*>(values.data()), mpx::Shape{rows, cols});
  };
  const mpx::GemmConfig config{.transpose_a = s.transpose_a ? mpx::Transpose::Yes : mpx::Transpose::No,
                               .transpose_b = s.transpose_b ? mpx::Transpose::Yes : mpx::Transpose::No};
  // Eigen's own product, threaded by Eigen, on fp32 operands (widened first for bf16).
  const auto eigen_product = [&s](const float* a_data, const float* b_data, float* c_data) {
    using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Eigen::Map<const Matrix> a(a_data, s.transpose_a ? s.k : s.m, s.transpose_a ? s.m : s.k);
    const Eigen::Map<const Matrix> b(b_data, s.transpose_b ? s.n : s.k, s.transpose_b ? s.k : s.n);
    Eigen::Map<Matrix> c(c_data, s.m, s.n);
    if (!s.transpose_a && !s.transpose_b) c.noalias() = a * b;
    if (!s.transpose_a && s.transpose_b) c.noalias() = a * b.transpose();
    if (s.transpose_a && !s.transpose_b) c.noalias() = a.transpose() * b;
    if (s.transpose_a && s.transpose_b) c.noalias() = a.transpose() * b.transpose();
  };
  out.push_back({"Eigen", "fp32", [&, eigen_product](std::vector<float>& c) {
                   eigen_product(o.a.data(), o.b.data(), c.data());
                 }});
  out.push_back({mpx_gemm_name, "fp32", [&, config](std::vector<float>& c) {
                   const auto a = as_tensor(o.a, o.rows_a, o.cols_a);
                   const auto b = as_tensor(o.b, o.rows_b, o.cols_b);
                   auto d = mpx::Tensor<float>::view(c.data(), mpx::Shape{s.m, s.n});
                   mpx::cpu::gemm<mpx::Float>(a, b, d, config);
                 }});
  for (const Cblas& library : cblas) {
    out.push_back({library.name, "fp32", [&, library](std::vector<float>& c) {
                     library.sgemm(101, s.transpose_a ? 112 : 111, s.transpose_b ? 112 : 111, int(s.m),
                                   int(s.n), int(s.k), 1.0f, o.a.data(), int(o.cols_a), o.b.data(),
                                   int(o.cols_b), 0.0f, c.data(), int(s.n));
                   }});
  }
#if MPX_HAS_ONEDNN
  out.push_back({"oneDNN", "fp32", [&](std::vector<float>& c) {
                   dnnl_sgemm(s.transpose_a ? 'T' : 'N', s.transpose_b ? 'T' : 'N', s.m, s.n, s.k, 1.0f,
                              o.a.data(), o.cols_a, o.b.data(), o.cols_b, 0.0f, c.data(), s.n);
                 }});
#endif
  out.push_back({"widen + Eigen", "bf16", [&, eigen_product](std::vector<float>& c) {
                   thread_local std::vector<float> a, b;
                   a.assign(o.a16.begin(), o.a16.end());
                   b.assign(o.b16.begin(), o.b16.end());
                   eigen_product(a.data(), b.data(), c.data());
                 }});
  out.push_back({mpx_gemm_name, "bf16", [&, config](std::vector<float>& c) {
                   const auto a = as_tensor(o.a16, o.rows_a, o.cols_a);
                   const auto b = as_tensor(o.b16, o.rows_b, o.cols_b);
                   auto d = mpx::Tensor<float>::view(c.data(), mpx::Shape{s.m, s.n});
                   mpx::cpu::gemm<mpx::BFloat16>(a, b, d, config);
                 }});
  if (!cblas.empty()) {
    // Widen both operands to fp32 (as mpx does), then the first cblas library's sgemm.
    out.push_back(
        {"widen + " + cblas.front().name, "bf16", [&, library = cblas.front()](std::vector<float>& c) {
           thread_local std::vector<float> a, b;
           a.resize(o.a16.size());
           b.resize(o.b16.size());
           for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(o.a16[i]);
           for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(o.b16[i]);
           library.sgemm(101, s.transpose_a ? 112 : 111, s.transpose_b ? 112 : 111, int(s.m), int(s.n),
                         int(s.k), 1.0f, a.data(), int(o.cols_a), b.data(), int(o.cols_b), 0.0f, c.data(),
                         int(s.n));
         }});
  }
#if MPX_HAS_ONEDNN
  // oneDNN's matmul primitive: bf16 A and B (transposes as strides), fp32 C, created once per shape.
  struct Matmul {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    dnnl::memory::desc a, b, c;
    dnnl::matmul primitive;
  };
  auto matmul = std::make_shared<Matmul>();
  using dt = dnnl::memory::data_type;
  const dnnl::memory::dims a_strides =
      s.transpose_a ? dnnl::memory::dims{1, s.m} : dnnl::memory::dims{s.k, 1};
  const dnnl::memory::dims b_strides =
      s.transpose_b ? dnnl::memory::dims{1, s.k} : dnnl::memory::dims{s.n, 1};
  matmul->a = dnnl::memory::desc({s.m, s.k}, dt::bf16, a_strides);
  matmul->b = dnnl::memory::desc({s.k, s.n}, dt::bf16, b_strides);
  matmul->c = dnnl::memory::desc({s.m, s.n}, dt::f32, dnnl::memory::dims{s.n, 1});
  matmul->primitive = dnnl::matmul(
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(matmul->a, matmul->b, matmul->c), matmul->engine));
  out.push_back({"oneDNN", "bf16", [&, matmul](std::vector<float>& c) {
                   dnnl::memory a(matmul->a, matmul->engine, const_cast<Eigen::bfloat16*>(o.a16.data()));
                   dnnl::memory b(matmul->b, matmul->engine, const_cast<Eigen::bfloat16*>(o.b16.data()));
                   dnnl::memory d(matmul->c, matmul->engine, c.data());
                   matmul->primitive.execute(matmul->stream,
                                             {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, d}});
                   matmul->stream.wait();
                 }});
#endif
  return out;
}

// ---- the machine's fp32 peak ----------------------------------------------------------------------

// GFLOP/s of independent fused multiply-adds in registers on every thread: 16 chains of 16-float
// (AVX-512) or 8-float (AVX2) vectors, enough to fill two FMA pipes' latency. The best of 5 runs, as
// a peak should be (a run that shared a core with another process is slower, never faster).
double peak_gflops_once(int threads) {
  constexpr std::int64_t iterations = 4'000'000;
  const auto start = Clock::now();
#pragma omp parallel num_threads(threads)
  {
#if defined(__AVX512F__)
    __m512 acc[16];
    for (auto& a : acc) a = _mm512_set1_ps(0.0f);
    const __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
    for (std::int64_t i = 0; i < iterations; ++i) {
      for (auto& a : acc) a = _mm512_fmadd_ps(x, y, a);
      for (auto& a : acc) asm volatile("" : "+v"(a));  // no instruction: keeps each FMA in the loop
    }
    __m512 total = acc[0];
    for (int i = 1; i < 16; ++i) total = _mm512_add_ps(total, acc[i]);  // every chain is live
    volatile float sink = _mm512_reduce_add_ps(total);
    (void)sink;
#else
    __m256 acc[16];
    for (auto& a : acc) a = _mm256_set1_ps(0.0f);
    const __m256 x = _mm256_set1_ps(1.0000001f), y = _mm256_set1_ps(0.9999999f);
    for (std::int64_t i = 0; i < iterations; ++i) {
      for (auto& a : acc) a = _mm256_fmadd_ps(x, y, a);
      for (auto& a : acc) asm volatile("" : "+v"(a));  // no instruction: keeps each FMA in the loop
    }
    __m256 total = acc[0];
    for (int i = 1; i < 16; ++i) total = _mm256_add_ps(total, acc[i]);  // every chain is live
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, total);
    volatile float sink = lanes[0];
    (void)sink;
#endif
  }
  const double seconds = mpx::bench::elapsed_ms(start) / 1000.0;
#if defined(__AVX512F__)
  constexpr double lanes = 16;
#else
  constexpr double lanes = 8;
#endif
  return 2.0 * lanes * 16.0 * static_cast<double>(iterations) * threads / seconds / 1e9;
}

double measured_peak_gflops(int threads) {
  double best = 0.0;
  for (int run = 0; run < 5; ++run) best = std::max(best, peak_gflops_once(threads));
  return best;
}

struct Result {
  Shape shape;
  std::string library, precision;
  double median_ms = 0, gflops = 0, vs_eigen = 0, error = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const mpx::experiment::Usage usage("gemm_libraries_cpu", "[--json PATH] [--repetitions N]");
  std::string json_path = "gemm_libraries_cpu.json";
  int repetitions = 15;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    const std::string value = usage.value_after(argc, argv, i);
    if (option == "--json")
      json_path = value;
    else if (option == "--repetitions")
      repetitions = static_cast<int>(usage.number(option, value, 3, 1000));
    else
      usage.fail("unknown option " + option);
  }
  const int threads = mpx::bench::openmp_threads();
  std::vector<Cblas> cblas;
  if (auto library = load_cblas("OpenBLAS", "libopenblas.so.0", "openblas_set_num_threads", threads))
    cblas.push_back(*library);
  if (auto library = load_cblas("BLIS", "libblis.so.4", "bli_thread_set_num_threads", threads))
    cblas.push_back(*library);
  std::printf("%s\nthreads %d; libraries: Eigen%s%s\n", mpx::bench::machine_line().c_str(), threads,
              cblas.empty() ? "" : (", " + cblas.front().name).c_str(),
              cblas.size() > 1 ? (", " + cblas.back().name).c_str() : "");
#if MPX_HAS_ONEDNN
  std::printf("oneDNN %d.%d.%d\n", dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch);
#endif
  const double peak = measured_peak_gflops(threads);
  std::printf("measured fp32 peak (FMAs in registers, %d thread(s)): %.1f GFLOP/s\n\n", threads, peak);

  std::mt19937 rng(7);
  std::vector<Result> results;
  std::printf("%-20s %-12s %5s %5s %5s  %-20s %-5s %9s %8s %6s %8s %9s\n", "workload", "GEMM", "M", "N", "K",
              "library", "type", "median ms", "GFLOP/s", "peak", "vs Eigen", "rel error");
  for (const Shape& s : workload_shapes()) {
    const Operands operands = make_operands(s, rng);
    std::vector<Candidate> list = candidates(s, operands, cblas);
    std::vector<std::vector<double>> times(list.size());
    std::vector<double> errors(list.size());
    std::vector<float> c(static_cast<std::size_t>(s.m * s.n));
    for (std::size_t i = 0; i < list.size(); ++i) {  // checked (and warmed) before timing
      std::fill(c.begin(), c.end(), std::nanf(""));
      list[i].run(c);
      errors[i] = relative_error(s, operands, c);
      if (!(errors[i] < 1e-4)) {
        std::fprintf(stderr, "gemm_libraries_cpu: %s %s on %s %s is wrong: relative error %g\n",
                     list[i].library.c_str(), list[i].precision.c_str(), s.workload.c_str(), s.role.c_str(),
                     errors[i]);
        return 1;
      }
    }
    const double flops = 2.0 * static_cast<double>(s.m * s.n * s.k);
    const int reps = std::max(3, std::min(repetitions, static_cast<int>(2e10 / flops)));
    for (int r = 0; r < reps; ++r) {
      for (std::size_t i = 0; i < list.size(); ++i) {
        const auto start = Clock::now();
        list[i].run(c);
        times[i].push_back(mpx::bench::elapsed_ms(start));
      }
    }
    double eigen_fp32 = 0, eigen_bf16 = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      Result result{s, list[i].library, list[i].precision, mpx::bench::median(times[i]), 0, 0, errors[i]};
      result.gflops = flops / result.median_ms / 1e6;
      if (list[i].library == "Eigen" || list[i].library == "widen + Eigen")
        (list[i].precision == "fp32" ? eigen_fp32 : eigen_bf16) = result.median_ms;
      results.push_back(result);
    }
    for (std::size_t i = results.size() - list.size(); i < results.size(); ++i) {
      Result& result = results[i];
      result.vs_eigen = (result.precision == "fp32" ? eigen_fp32 : eigen_bf16) / result.median_ms;
      std::printf("%-20s %-12s %5lld %5lld %5lld  %-20s %-5s %9.3f %8.1f %5.0f%% %7.2fx %9.1e\n",
                  s.workload.c_str(), s.role.c_str(), static_cast<long long>(s.m),
                  static_cast<long long>(s.n), static_cast<long long>(s.k), result.library.c_str(),
                  result.precision.c_str(), result.median_ms, result.gflops, 100.0 * result.gflops / peak,
                  result.vs_eigen, result.error);
    }
  }

  std::ostringstream json;
  json << "{\n  \"benchmark\": \"gemm_libraries_cpu\",\n  \"machine\": " << mpx::bench::machine_json()
       << ",\n  \"threads\": " << threads << ",\n  \"peak_gflops\": " << peak << ",\n  \"results\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    json << "    {\"workload\": \"" << r.shape.workload << "\", \"gemm\": \"" << r.shape.role
         << "\", \"m\": " << r.shape.m << ", \"n\": " << r.shape.n << ", \"k\": " << r.shape.k
         << ", \"library\": \"" << r.library << "\", \"operands\": \"" << r.precision
         << "\", \"median_ms\": " << r.median_ms << ", \"gflops\": " << r.gflops
         << ", \"vs_eigen\": " << r.vs_eigen << ", \"relative_error\": " << r.error << "}"
         << (i + 1 < results.size() ? "," : "") << "\n";
  }
  json << "  ]\n}\n";
  mpx::bench::write_json(json_path, json.str());
  std::printf("\nwrote %s\n", json_path.c_str());
  return 0;
}
