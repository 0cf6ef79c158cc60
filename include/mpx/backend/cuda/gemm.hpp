// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `mpx::cuda::gemm`: the GEMM contract of backend/gemm_spec.hpp (the one `mpx::cpu::gemm`
/// implements) through cuBLASLt, with descriptors, layouts and the chosen algorithm cached per shape.
///
/// Row-major to column-major: a row-major M x N matrix is the column-major N x M matrix in the same
/// memory, so row-major D = op(A) op(B) is computed as column-major D^T = op(B)^T op(A)^T: cuBLASLt's
/// "A" is our B (with our B's transpose flag), its "B" is our A, and its m, n are our N, M. A bias per
/// column of our D is then one per row of cuBLASLt's D, which is what its BIAS epilogues expect, and
/// our BGradA / BGradB are its BGRADB / BGRADA.
///
/// Every mpx epilogue is a cuBLASLt one (BIAS, RELU_BIAS, RELU_AUX_BIAS, DRELU, DRELU_BGRAD, GELU_BIAS,
/// GELU_AUX_BIAS, DGELU, DGELU_BGRAD, BGRADA/B); the ReLU mask is cuBLASLt's bit mask, with leading
/// dimension `relu_mask_words(N)` * 32 bits (gemm_spec.hpp); where cuBLASLt offers no DRELU alone,
/// DRelu runs as DRELU_BGRAD with a bias gradient it drops. When the heuristic returns no algorithm
/// for a fused epilogue (a type or alignment it does not support), or `cublasLtMatmul` itself refuses
/// the algorithm the heuristic offered (NOT_SUPPORTED or INVALID_VALUE: cuBLASLt documents bias
/// gradients only in D's type, and mpx asks for fp32 ones), the plan remembers the refusal and the
/// call runs a plain GEMM into an fp32 (fp64) scratch buffer and a kernel that applies the epilogue.
/// `gemm_path_counts()` tells which path each call took. The scratch buffer belongs to the calling
/// thread, grows outside CUDA graph capture only, and is never freed while a graph may still use it
/// (see `detail::GemmScratch`), so the unfused path can be captured. Those kernels are CUDA code
/// (gemm_epilogue.cuh), reached through launcher pointers that any nvcc translation unit including
/// <mpx/cuda.hpp> sets, so `gemm` has one body under every compiler; in a program with no such unit
/// that path throws `mpx::error`.
///
/// The body (`detail::run_gemm`) serves `gemm_scaled` too (gemm_scaled.cuh): FP8 operands of two types,
/// their inverse scales as CUBLASLT_MATMUL_DESC_A/B_SCALE_POINTER and FAST_ACCUM in the plan's key.
///
/// A batched call (`GemmConfig::batch_count` > 1, Default epilogue only) is one strided-batched
/// cuBLASLt matmul: each layout carries CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT and, as its
/// CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, the element count of one of its matrices.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error "mpx/backend/cuda/gemm.hpp needs the CUDA backend: link mpx::cuda (which defines MPX_HAS_CUDA=1)"
#endif  // !MPX_HAS_CUDA

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/context.hpp"
#include "mpx/backend/cuda/data_type.hpp"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

/// @brief `mpx::GemmOperands` for device tensors.
template <Element TD, class Acc = accumulate_t<TD>>
using GemmOperands = mpx::GemmOperands<TD, Acc, Cuda>;

namespace detail {

// Largest power of two dividing the address, up to 256: cuBLASLt's default for every
// CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES (cublasLt.h), so that a call on pool memory (256-byte
// aligned) asks the heuristic exactly what a raw cublasLtMatmul with default preferences asks, and
// gets the same algorithm.
inline constexpr int max_alignment_class = 256;
inline int alignment_class(const void* pointer) noexcept {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  int alignment = max_alignment_class;
  while (alignment > 1 && address % static_cast<std::uintptr_t>(alignment) != 0) alignment /= 2;
  return alignment;
}

// The alignment that holds for every matrix of a strided batch: matrix i starts at pointer +
// i * stride and its columns at multiples of the leading dimension, so the class is the largest power
// of two dividing the pointer, the leading dimension and the batch stride (all in bytes). The base
// pointer alone would promise cuBLASLt 256 bytes for, say, per-head matrices of 5 x 8 fp16 values,
// whose second matrix starts 80 bytes further on.
inline int alignment_class(const void* pointer, std::int64_t leading_dimension_bytes,
                           std::int64_t batch_stride_bytes) noexcept {
  int alignment = alignment_class(pointer);
  for (const std::int64_t bytes : {leading_dimension_bytes, batch_stride_bytes}) {
    while (alignment > 1 && bytes % alignment != 0) alignment /= 2;
  }
  return alignment;
}

// Everything that determines the descriptors, the layouts and the algorithm of a call.
struct GemmKey {
  int device = 0;
  std::uintptr_t handle = 0;         // the cuBLASLt handle (one per context) the plan was made with
  std::size_t workspace_bytes = 0;   // the heuristic only offers algorithms that fit this workspace
  std::int64_t m = 0, n = 0, k = 0;  // our (row-major) problem
  bool transpose_a = false, transpose_b = false;
  cudaDataType_t a_type{}, b_type{}, d_type{};  // our A's, our B's, D's
  cudaDataType_t bias_type{};                   // of the bias or bias gradient, where the epilogue has one
  cublasComputeType_t compute_type{};
  Epilogue epilogue = Epilogue::Default;  // the one run by cuBLASLt (Default on the unfused path)
  bool separate_c = false;                // C is its own tensor rather than D
  bool beta_zero = true;
  int align_a = 0, align_b = 0, align_c = 0, align_d = 0, align_bias = 0, align_aux = 0;
  std::int64_t batch = 1;  // strided batch count (m, n, k and the a/b extents are per matrix)
  // FP8 operands (gemm_scaled.cuh): each with its inverse scale (A/B_SCALE_POINTER), and whether
  // cuBLASLt's fast accumulation is on (CUBLASLT_MATMUL_DESC_FAST_ACCUM).
  bool scaled = false, fast_accumulation = false;
  // Block-scaled operands (gemm_block_scaled.cuh): our A's and B's cublasLtMatmulMatrixScale_t
  // (CUBLASLT_MATMUL_DESC_A/B_SCALE_MODE; 0, SCALAR_32F, for one scale per tensor).
  std::int32_t a_scale_mode = 0, b_scale_mode = 0;

  bool operator==(const GemmKey&) const = default;
};

struct GemmKeyHash {
  std::size_t operator()(const GemmKey& key) const noexcept {
    std::size_t h = 0;
    const auto mix = [&h](std::int64_t value) {
      h ^= std::hash<std::int64_t>{}(value) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    };
    for (const std::int64_t v : {std::int64_t{key.device},
                                 key.m,
                                 key.n,
                                 key.k,
                                 std::int64_t{key.transpose_a},
                                 std::int64_t{key.transpose_b},
                                 std::int64_t{key.a_type},
                                 std::int64_t{key.b_type},
                                 std::int64_t{key.d_type},
                                 std::int64_t{key.bias_type},
                                 std::int64_t{key.compute_type},
                                 static_cast<std::int64_t>(key.epilogue),
                                 std::int64_t{key.separate_c},
                                 std::int64_t{key.beta_zero},
                                 std::int64_t{key.align_a},
                                 std::int64_t{key.align_b},
                                 std::int64_t{key.align_c},
                                 std::int64_t{key.align_d},
                                 std::int64_t{key.align_bias},
                                 std::int64_t{key.align_aux},
                                 key.batch,
                                 std::int64_t{key.scaled},
                                 std::int64_t{key.fast_accumulation},
                                 std::int64_t{key.a_scale_mode},
                                 std::int64_t{key.b_scale_mode}}) {
      mix(v);
    }
    mix(static_cast<std::int64_t>(key.handle));
    mix(static_cast<std::int64_t>(key.workspace_bytes));
    return h;
  }
};

// The cached cuBLASLt objects of one key. `found` is false when the heuristic offered no algorithm;
// `refused` when cublasLtMatmul rejected the one it offered (the key then always takes the unfused
// path, without asking cuBLASLt again).
struct GemmPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;  // cuBLASLt's A, B, C, D
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
  bool refused = false;

  GemmPlan() = default;
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;
  ~GemmPlan() {
    if (a != nullptr) (void)cublasLtMatrixLayoutDestroy(a);
    if (b != nullptr) (void)cublasLtMatrixLayoutDestroy(b);
    if (c != nullptr) (void)cublasLtMatrixLayoutDestroy(c);
    if (d != nullptr) (void)cublasLtMatrixLayoutDestroy(d);
    if (desc != nullptr) (void)cublasLtMatmulDescDestroy(desc);
  }
};

// One cache per host thread: descriptors get their pointer attributes set per call, which must not
// race. Keys include the device, so one thread may use several.
inline std::unordered_map<GemmKey, std::unique_ptr<GemmPlan>, GemmKeyHash>& gemm_plans() {
  thread_local std::unordered_map<GemmKey, std::unique_ptr<GemmPlan>, GemmKeyHash> plans;
  return plans;
}

// cuBLASLt's epilogue for a fused mpx epilogue, or nothing (false) where it has none that fits.
constexpr bool cublaslt_epilogue(Epilogue epilogue, cublasLtEpilogue_t& out) noexcept {
  switch (epilogue) {
    case Epilogue::Default: out = CUBLASLT_EPILOGUE_DEFAULT; return true;
    case Epilogue::Bias: out = CUBLASLT_EPILOGUE_BIAS; return true;
    case Epilogue::ReluBias: out = CUBLASLT_EPILOGUE_RELU_BIAS; return true;
    case Epilogue::ReluAuxBias: out = CUBLASLT_EPILOGUE_RELU_AUX_BIAS; return true;
    case Epilogue::DRelu: out = CUBLASLT_EPILOGUE_DRELU; return true;
    case Epilogue::DReluBGrad: out = CUBLASLT_EPILOGUE_DRELU_BGRAD; return true;
    case Epilogue::GeluBias: out = CUBLASLT_EPILOGUE_GELU_BIAS; return true;
    case Epilogue::GeluAuxBias: out = CUBLASLT_EPILOGUE_GELU_AUX_BIAS; return true;
    case Epilogue::DGelu: out = CUBLASLT_EPILOGUE_DGELU; return true;
    case Epilogue::DGeluBGrad: out = CUBLASLT_EPILOGUE_DGELU_BGRAD; return true;
    case Epilogue::BGradA: out = CUBLASLT_EPILOGUE_BGRADB; return true;  // operands are swapped
    case Epilogue::BGradB: out = CUBLASLT_EPILOGUE_BGRADA; return true;
  }
  return false;
}
// The swap docs/cuda.md states: Linear's bias gradient (our BGradA) is cuBLASLt's BGRADB.
static_assert([] {
  cublasLtEpilogue_t a{}, b{};
  return cublaslt_epilogue(Epilogue::BGradA, a) && a == CUBLASLT_EPILOGUE_BGRADB &&
         cublaslt_epilogue(Epilogue::BGradB, b) && b == CUBLASLT_EPILOGUE_BGRADA;
}());

template <class T>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value,
                   const char* name) {
  const cublasStatus_t status = cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value));
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw cuda_error(mpx::detail::concat("cublasLtMatmulDescSetAttribute(", name, ") failed with ",
                                         cublasLtGetStatusName(status), " (", cublasLtGetStatusString(status),
                                         ")"));
  }
}

// Builds the plan of `key` (descriptors, layouts, heuristic). ld_* are our row-major leading dims.
inline std::unique_ptr<GemmPlan> make_plan(const GemmKey& key, const GemmShape& g, std::int64_t a_rows,
                                           std::int64_t a_cols, std::int64_t b_rows, std::int64_t b_cols,
                                           cudaDataType_t c_type, cudaDataType_t bias_type,
                                           CudaContext& context) {
  auto plan = std::make_unique<GemmPlan>();
  const cudaDataType_t scale_type = key.compute_type == CUBLAS_COMPUTE_64F ? CUDA_R_64F : CUDA_R_32F;
  MPX_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->desc, key.compute_type, scale_type));
  // cuBLASLt's A is our B, its B is our A.
  const cublasOperation_t op_a = key.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = key.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, op_a, "TRANSA");
  set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, op_b, "TRANSB");
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  (void)cublaslt_epilogue(key.epilogue, epilogue);
  set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue, "EPILOGUE");
  if (key.scaled) {
    const std::int8_t fast = key.fast_accumulation ? 1 : 0;
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast, "FAST_ACCUM");
#if CUBLAS_VERSION >= 120800
    if (key.a_scale_mode != 0 || key.b_scale_mode != 0) {  // cuBLASLt's A is our B
      set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, key.b_scale_mode, "A_SCALE_MODE");
      set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, key.a_scale_mode, "B_SCALE_MODE");
    }
#endif  // CUBLAS_VERSION >= 120800
  }
  if (reads_bias(key.epilogue) || writes_bias_grad(key.epilogue)) {
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<std::int32_t>(bias_type),
                  "BIAS_DATA_TYPE");
  }
  if (writes_aux(key.epilogue) || reads_aux(key.epilogue)) {
    // Our aux is row-major M x N: column-major N x M with leading dimension N.
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, static_cast<std::int64_t>(g.n),
                  "EPILOGUE_AUX_LD");
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE,
                  static_cast<std::int32_t>(key.d_type), "EPILOGUE_AUX_DATA_TYPE");
  }
  if (writes_relu_mask(key.epilogue) || reads_relu_mask(key.epilogue)) {
    // The bit mask's leading dimension counts bits (a multiple of 128); it has no data type.
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, relu_mask_words(g.n) * 32,
                  "EPILOGUE_AUX_LD");
  }
  // Stored (pre-op) matrices, column-major view: our row-major R x C is column-major C x R, ld = C.
  MPX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->a, key.b_type, static_cast<std::uint64_t>(b_cols),
                                              static_cast<std::uint64_t>(b_rows), b_cols));
  MPX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->b, key.a_type, static_cast<std::uint64_t>(a_cols),
                                              static_cast<std::uint64_t>(a_rows), a_cols));
  MPX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->c, c_type, static_cast<std::uint64_t>(g.n),
                                              static_cast<std::uint64_t>(g.m), g.n));
  MPX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->d, key.d_type, static_cast<std::uint64_t>(g.n),
                                              static_cast<std::uint64_t>(g.m), g.n));
  if (key.batch > 1) {
    // Strided batch: every operand holds `batch` matrices one after another.
    const auto set_batch = [&](cublasLtMatrixLayout_t layout, std::int64_t matrix_elements) {
      const auto count = static_cast<std::int32_t>(key.batch);
      MPX_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                        sizeof(count)));
      MPX_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                        &matrix_elements, sizeof(matrix_elements)));
    };
    set_batch(plan->a, b_rows * b_cols);
    set_batch(plan->b, a_rows * a_cols);
    set_batch(plan->c, g.m * g.n);
    set_batch(plan->d, g.m * g.n);
  }

  cublasLtMatmulPreference_t preference = nullptr;
  MPX_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const auto set_preference = [&](cublasLtMatmulPreferenceAttributes_t attribute, auto value) {
    const cublasStatus_t status =
        cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof(value));
    if (status != CUBLAS_STATUS_SUCCESS) {
      (void)cublasLtMatmulPreferenceDestroy(preference);
      MPX_CUBLAS_CHECK(status);
    }
  };
  set_preference(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                 static_cast<std::uint64_t>(context.workspace_bytes()));
  set_preference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, static_cast<std::uint32_t>(key.align_b));
  set_preference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, static_cast<std::uint32_t>(key.align_a));
  set_preference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, static_cast<std::uint32_t>(key.align_c));
  set_preference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, static_cast<std::uint32_t>(key.align_d));
  // Split-K only where it cannot cost precision. Left to itself the heuristic picks, for small
  // products, split-K schemes that break the one rounding of the fp32-accumulated product into D:
  // partial sums kept in D's type (REDUCTION_SCHEME_OUTPUT_TYPE, or added into D in place: INPLACE),
  // and, with a 16-bit D, even partials kept in fp32 (COMPUTE_TYPE) had the bias added after the
  // sum was rounded into D. Seen on an H200 (cuBLASLt 13.1): fp16 37 x 19 x 23 with DRELU ran 20
  // splits in fp16, 7 ulps off; bf16 with a bias 16 splits, every element rounded twice
  // (tests/cuda/gemm_mixed_host_test.cpp). So a D narrower than fp32 gets no split-K, an fp32 or
  // fp64 D only partials in its compute type.
  const bool narrow_d = key.d_type != CUDA_R_32F && key.d_type != CUDA_R_64F;  // any D narrower than fp32
  set_preference(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                 static_cast<std::uint32_t>(narrow_d ? CUBLASLT_REDUCTION_SCHEME_NONE
                                                     : CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE));

  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  // NOT_SUPPORTED (or no result) means no kernel for this combination: the caller falls back.
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      context.cublaslt(), plan->desc, plan->a, plan->b, plan->c, plan->d, preference, 1, &result, &returned);
  (void)cublasLtMatmulPreferenceDestroy(preference);
  if (status == CUBLAS_STATUS_SUCCESS && returned > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
    plan->algo = result.algo;
    plan->found = true;
  } else if (status != CUBLAS_STATUS_SUCCESS && status != CUBLAS_STATUS_NOT_SUPPORTED &&
             status != CUBLAS_STATUS_INVALID_VALUE) {
    // INVALID_VALUE: a combination cuBLASLt rejects (e.g. a bias gradient type it does not take);
    // like NOT_SUPPORTED it sends the call to the unfused path. Anything else is a real failure.
    MPX_CUBLAS_CHECK(status);
  }
  return plan;
}

// The result of one cuBLASLt matmul call (or false when no algorithm exists for it).
struct MatmulCall {
  GemmKey key;
  std::int64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0;
  cudaDataType_t c_type{}, bias_type{};
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* d = nullptr;
  const void* alpha = nullptr;
  const void* beta = nullptr;
  const void* bias = nullptr;  // bias or bias gradient pointer
  void* aux = nullptr;
  // With key.scaled: what our A's and B's sums are multiplied by (device memory): a float each, or
  // under block scale modes their block scales in cuBLASLt's layout.
  const void* a_scale_inverse = nullptr;
  const void* b_scale_inverse = nullptr;
};

// What happened to one cuBLASLt call.
enum class MatmulOutcome {
  ran,           // queued
  no_algorithm,  // the heuristic offered none (now or when the plan was made)
  refused,       // cublasLtMatmul rejected the offered algorithm (now or before)
};

// Statuses with which cublasLtMatmul says "not this combination" rather than "something broke":
// NOT_SUPPORTED (no kernel for it) and INVALID_VALUE (a parameter combination it rejects, such as a
// bias-gradient type other than D's, which cublasLt.h documents as the only one).
constexpr bool is_refusal(cublasStatus_t status) noexcept {
  return status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE;
}

// Runs `call` with its cached plan. With `may_refuse` (a fused epilogue, which has an unfused
// fallback) a refusal is remembered in the plan and reported; otherwise it throws like any failure.
inline MatmulOutcome run_matmul(const MatmulCall& call, const GemmShape& g, CudaContext& context,
                                bool may_refuse = false) {
  auto& plans = gemm_plans();
  auto it = plans.find(call.key);
  if (it == plans.end()) {
    it = plans
             .emplace(call.key, make_plan(call.key, g, call.a_rows, call.a_cols, call.b_rows, call.b_cols,
                                          call.c_type, call.bias_type, context))
             .first;
  }
  GemmPlan& plan = *it->second;
  if (plan.refused) return MatmulOutcome::refused;
  if (!plan.found) return MatmulOutcome::no_algorithm;
  if (call.bias != nullptr)
    set_attribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, call.bias, "BIAS_POINTER");
  if (call.aux != nullptr) {
    set_attribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, call.aux, "EPILOGUE_AUX_POINTER");
  }
  if (call.key.scaled) {  // cuBLASLt's A is our B
    set_attribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, call.b_scale_inverse, "A_SCALE_POINTER");
    set_attribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, call.a_scale_inverse, "B_SCALE_POINTER");
  }
  const cublasStatus_t status = cublasLtMatmul(
      context.cublaslt(), plan.desc, call.alpha, call.b, plan.a, call.a, plan.b, call.beta, call.c, plan.c,
      call.d, plan.d, &plan.algo, context.workspace(), context.workspace_bytes(), context.stream());
  if (may_refuse && is_refusal(status)) {
    plan.refused = true;
    return MatmulOutcome::refused;
  }
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw cuda_error(mpx::detail::concat("cublasLtMatmul failed with ", cublasLtGetStatusName(status), " (",
                                         cublasLtGetStatusString(status), ") for M=", g.m, " N=", g.n,
                                         " K=", g.k, ", epilogue ", to_string(call.key.epilogue)));
  }
  return MatmulOutcome::ran;
}

}  // namespace detail

/// @brief How `mpx::cuda::gemm` and `gemm_scaled` calls on this thread ran, counted per call since the last
/// `reset_gemm_path_counts()`: the tests and benchmarks assert the path they mean to measure.
struct GemmPathCounts {
  std::int64_t fused = 0;         ///< one cuBLASLt call with the epilogue fused (Default included)
  std::int64_t unfused = 0;       ///< a plain cuBLASLt GEMM (or none, for K = 0) and mpx's epilogue kernel
  std::int64_t no_algorithm = 0;  ///< of the unfused: the heuristic offered no fused algorithm
  std::int64_t refused = 0;       ///< of the unfused: cublasLtMatmul refused the fused algorithm
                                  ///< (now, or earlier for the same plan, which remembers it)
  std::int64_t decoded = 0;       ///< `gemm_scaled` calls cuBLASLt has no FP8 kernel for (a dimension or
                                  ///< leading dimension off 16 bytes), run on the codes decoded into bf16

  /// @brief Every count equal.
  bool operator==(const GemmPathCounts&) const = default;
};

namespace detail {
inline GemmPathCounts& gemm_path_counts_of_thread() noexcept {
  thread_local GemmPathCounts counts;
  return counts;
}

// The unfused path's fp32 (fp64) product: one buffer per thread and device that only grows. It
// grows only outside CUDA graph capture (DeviceMemory refuses an allocation during capture), so
// run an eager call of the largest shape before capturing; buffers it outgrew are kept until
// `clear_gemm_cache()`, because a captured graph may still read them.
class GemmScratch {
 public:
  // At least `bytes` bytes, 256-byte aligned.
  void* get(std::size_t bytes) {
    if (bytes > capacity_) {
      const std::size_t grown = std::max(bytes, capacity_ * 2);
      void* fresh = DeviceMemory<Cuda>::allocate(grown);
      if (current_ != nullptr) retired_.push_back({current_, capacity_});
      current_ = fresh;
      capacity_ = grown;
    }
    return current_;
  }
  // Frees every buffer (ordered after the work queued on the stream).
  void release() noexcept {
    for (const Block& block : retired_) DeviceMemory<Cuda>::deallocate(block.pointer, block.bytes);
    retired_.clear();
    DeviceMemory<Cuda>::deallocate(current_, capacity_);
    current_ = nullptr;
    capacity_ = 0;
  }
  GemmScratch() = default;
  GemmScratch(const GemmScratch&) = delete;
  GemmScratch& operator=(const GemmScratch&) = delete;
  ~GemmScratch() { release(); }

 private:
  struct Block {
    void* pointer;
    std::size_t bytes;
  };
  void* current_ = nullptr;
  std::size_t capacity_ = 0;
  std::vector<Block> retired_;
};

inline std::unordered_map<int, GemmScratch>& gemm_scratches() {
  thread_local std::unordered_map<int, GemmScratch> scratch;
  return scratch;
}

// Where D += A B with a 16-bit D gets its copy of C (see `gemm`): a buffer of its own, because the
// fused path's DRELU fallback and the unfused path use gemm_scratches() in the same call.
inline std::unordered_map<int, GemmScratch>& gemm_c_copies() {
  thread_local std::unordered_map<int, GemmScratch> copies;
  return copies;
}

// Where `gemm_scaled` decodes FP8 operands cuBLASLt has no FP8 kernel for (gemm_scaled.cuh): A's and
// B's bf16 copies; the product goes to gemm_scratches(), which the bf16 GEMM of them does not use.
struct DecodedOperands {
  GemmScratch a, b;
};
inline std::unordered_map<int, DecodedOperands>& gemm_decoded_operands() {
  thread_local std::unordered_map<int, DecodedOperands> operands;
  return operands;
}

// The unfused path's kernel launchers. They are CUDA code, which only nvcc can compile, while
// `gemm` must have one body whichever compiler includes this header (a second body of the same
// inline function would break the one-definition rule). So the body calls them through these
// pointers, constant-initialised to null and set during static initialisation by
// gemm_epilogue.cuh, which every nvcc translation unit including <mpx/cuda.hpp> reaches. The
// signatures are those of `launch_apply_epilogue` and `launch_reduce_operand` there.
template <class Acc, class DT>
struct UnfusedEpilogue {
  using Launch = void (*)(const Acc* t, const DT* c, Acc beta, DT* d, const DT* bias, DT* aux,
                          std::int32_t* relu_mask, Acc* bias_grad, Epilogue epilogue, std::int64_t m,
                          std::int64_t n, cudaStream_t stream);
  static inline Launch launch = nullptr;
};
template <class Acc, class ST, bool Tf32>
struct UnfusedOperandReduction {
  using Source = ST;  // the operand's device element type
  using Launch = void (*)(const ST* x, Acc* out, std::int64_t count_i, std::int64_t count_j,
                          std::int64_t stride_i, std::int64_t stride_j, cudaStream_t stream);
  static inline Launch launch = nullptr;
};

// The launchers `gemm<Compute, TD>` calls: the epilogue writes D's device type; the reduction reads
// A and B's, rounded to TF32 first for a format kept in fp32's storage (TF32).
template <NumericTag Compute, Element TD>
using UnfusedEpilogueFor =
    UnfusedEpilogue<accumulate_t<Compute>, typename cuda_traits<tag_of_t<TD>>::device_type>;
template <NumericTag Compute>
using UnfusedOperandReductionFor =
    UnfusedOperandReduction<accumulate_t<Compute>, typename cuda_traits<Compute>::device_type,
                            !owns_storage_v<Compute>>;

// `launch`, or an mpx::error saying why the unfused path cannot run in this program.
template <class Launch>
Launch unfused_launcher(Launch launch, const char* where, Epilogue epilogue, const GemmShape& g) {
  if (launch == nullptr) {
    throw error(mpx::detail::concat(
        where, ": epilogue ", to_string(epilogue), " for M=", g.m, " N=", g.n, " K=", g.k,
        " needs the unfused path (no fused cuBLASLt kernel), which is CUDA code: compile a translation unit ",
        "of this program that includes <mpx/cuda.hpp> with nvcc"));
  }
  return launch;
}

}  // namespace detail

/// @brief Frees this thread's cached cuBLASLt descriptors, layouts and algorithms, and the unfused
/// path's scratch buffers (a CUDA graph captured with them must not be replayed afterwards).
inline void clear_gemm_cache() noexcept {
  detail::gemm_plans().clear();
  for (auto& [device, scratch] : detail::gemm_scratches()) scratch.release();
  for (auto& [device, copy] : detail::gemm_c_copies()) copy.release();
  for (auto& [device, decoded] : detail::gemm_decoded_operands()) {
    decoded.a.release();
    decoded.b.release();
  }
}

/// @brief How this thread's `gemm` calls ran since the last reset (see `GemmPathCounts`).
[[nodiscard]] inline GemmPathCounts gemm_path_counts() noexcept {
  return detail::gemm_path_counts_of_thread();
}

/// @brief Zeroes this thread's `gemm_path_counts()`.
inline void reset_gemm_path_counts() noexcept {
  detail::gemm_path_counts_of_thread() = {};
}

/// @brief Number of cached plans on this thread (each a distinct shape/type/epilogue/alignment).
[[nodiscard]] inline std::size_t gemm_cache_size() noexcept {
  return detail::gemm_plans().size();
}

namespace detail {

// How `run_gemm` ran a call.
enum class GemmRun {
  fused,                 // one cuBLASLt call, the epilogue in it
  unfused,               // a plain cuBLASLt product (or none, for K = 0) and mpx's epilogue kernel
  no_product_algorithm,  // cuBLASLt has no kernel for the product itself; nothing was written
};

// A call's problem and operands: our row-major m, n, k and transposes, the operands' cuBLASLt types
// and the compute type, the batch, and A's and B's memory with their per-matrix extents. `run_gemm`
// adds the rest (device, handle, workspace, C and D, alignments, epilogue).
inline MatmulCall operand_call(const GemmShape& g, const GemmConfig& config, const void* a,
                               const Shape& a_shape, cudaDataType_t a_type, const void* b,
                               const Shape& b_shape, cudaDataType_t b_type,
                               cublasComputeType_t compute_type) {
  MatmulCall call;
  call.key.m = g.m;
  call.key.n = g.n;
  call.key.k = g.k;
  call.key.transpose_a = config.transpose_a == Transpose::Yes;
  call.key.transpose_b = config.transpose_b == Transpose::Yes;
  call.key.a_type = a_type;
  call.key.b_type = b_type;
  call.key.compute_type = compute_type;
  call.key.batch = g.batch;
  call.a_rows = a_shape.rows() / g.batch;  // per matrix of a batch
  call.a_cols = a_shape.cols();
  call.b_rows = b_shape.rows() / g.batch;
  call.b_cols = b_shape.cols();
  call.a = a;
  call.b = b;
  return call;
}

// The body of `gemm` and `gemm_scaled` (gemm_scaled.cuh): D = epilogue(alpha op(A) op(B) + beta C),
// `call` holding what `operand_call` sets (and, for FP8 operands, the scaled flags and the inverse
// scales); `a_bytes` and `b_bytes` are the sizes of A's and B's elements. cuBLASLt with the epilogue
// fused first, else the unfused path (see the file comment). `Reduction` is the unfused launcher
// slot of an operand's bias gradient (BGradA/BGradB), or void for a caller that rejects those
// epilogues. With `product_fallback`, a product cuBLASLt has no kernel for is reported
// (`no_product_algorithm`, before anything is written) for the caller to run another way; without,
// it throws mpx::cuda_error.
template <class Acc, Element TD, class Reduction>
GemmRun run_gemm(const char* where, const GemmShape& g, const GemmConfig& config,
                 const mpx::GemmOperands<TD, Acc, Cuda>& operands, Tensor<TD, Cuda>& d, MatmulCall call,
                 std::int64_t a_bytes, std::int64_t b_bytes, bool product_fallback, CudaContext& context) {
  const Epilogue epilogue = config.epilogue;
  GemmPathCounts& counts = gemm_path_counts_of_thread();

  const Acc alpha = static_cast<Acc>(config.alpha);
  const Acc beta = static_cast<Acc>(config.beta);
  const void* c_pointer = operands.c != nullptr ? operands.c->data() : d.data();
  // D += A B in place with a 16-bit D: cuBLASLt rounded the product into D's type before adding C
  // when C was D's own memory (on an H200, cuBLASLt 13.1: every element from 64 x 48 x 32 up to
  // 1024^3, bf16 and fp16; tests/cuda/gemm_mixed_host_test.cpp), and added the fp32 product to C
  // before the one rounding when C was a separate copy. So C is given as a copy: one pass over D,
  // small beside the product, for the fp32 accumulation the CPU does too.
  bool c_copied = false;
  if (beta != Acc(0) && c_pointer == d.data() && sizeof(TD) < sizeof(float) && g.k > 0) {
    const std::size_t bytes = static_cast<std::size_t>(d.numel()) * sizeof(TD);
    void* copy = gemm_c_copies()[context.device()].get(bytes);
    MPX_CUDA_CHECK(cudaMemcpyAsync(copy, d.data(), bytes, cudaMemcpyDeviceToDevice, context.stream()));
    c_pointer = copy;
    c_copied = true;
  }

  call.key.device = context.device();
  call.key.handle = reinterpret_cast<std::uintptr_t>(context.cublaslt());
  call.key.workspace_bytes = context.workspace_bytes();
  call.key.d_type = cuda_traits<tag_of_t<TD>>::data_type;
  call.key.separate_c = operands.c != nullptr || c_copied;
  call.key.beta_zero = beta == Acc(0);
  if (g.batch > 1) {  // what holds for every matrix of the batch (row-major: ld = columns)
    constexpr auto d_bytes = static_cast<std::int64_t>(sizeof(TD));
    call.key.align_a = alignment_class(call.a, call.a_cols * a_bytes, call.a_rows * call.a_cols * a_bytes);
    call.key.align_b = alignment_class(call.b, call.b_cols * b_bytes, call.b_rows * call.b_cols * b_bytes);
    call.key.align_c = alignment_class(c_pointer, g.n * d_bytes, g.m * g.n * d_bytes);
    call.key.align_d = alignment_class(d.data(), g.n * d_bytes, g.m * g.n * d_bytes);
  } else {
    call.key.align_a = alignment_class(call.a);
    call.key.align_b = alignment_class(call.b);
    call.key.align_c = alignment_class(c_pointer);
    call.key.align_d = alignment_class(d.data());
  }
  call.c_type = call.key.d_type;
  call.c = c_pointer;
  call.d = d.data();
  call.alpha = &alpha;
  call.beta = &beta;

  // A k = 0 product is all zeros; cuBLASLt's handling of k = 0 varies, so it goes the unfused way.
  cublasLtEpilogue_t fused{};
  // cuBLASLt requires the GELU aux leading dimension (our N) to be a multiple of 8.
  const bool aux_ld_ok = !(writes_aux(epilogue) || reads_aux(epilogue)) || g.n % 8 == 0;
  // fp64 is the reference precision: its GELU must be gelu_tanh in double, as on the CPU. cuBLASLt's
  // fp64 GELU epilogues compute another GELU (on an H200 it missed the double one by more than
  // 1e-13 relative), so fp64 GELU goes the unfused way, through mpx's kernel.
  constexpr bool reference_precision = std::is_same_v<Acc, double>;
  const bool gelu_ok = !(reference_precision && is_gelu_epilogue(epilogue));
  MatmulOutcome fused_outcome = MatmulOutcome::no_algorithm;
  if (g.k > 0 && aux_ld_ok && gelu_ok && cublaslt_epilogue(epilogue, fused)) {
    MatmulCall fused_call = call;
    fused_call.key.epilogue = epilogue;
    if (reads_bias(epilogue)) {
      fused_call.bias = operands.bias->data();
      fused_call.bias_type = call.key.d_type;
      fused_call.key.bias_type = fused_call.bias_type;
      fused_call.key.align_bias = alignment_class(fused_call.bias);
    } else if (writes_bias_grad(epilogue)) {
      fused_call.bias = operands.bias_grad->data();
      fused_call.bias_type = cuda_traits<tag_of_t<Acc>>::data_type;
      fused_call.key.bias_type = fused_call.bias_type;
      fused_call.key.align_bias = alignment_class(fused_call.bias);
    }
    if (operands.aux != nullptr && (writes_aux(epilogue) || reads_aux(epilogue))) {
      fused_call.aux = operands.aux->data();
      fused_call.key.align_aux = alignment_class(fused_call.aux);
    } else if (writes_relu_mask(epilogue) || reads_relu_mask(epilogue)) {
      fused_call.aux = operands.relu_mask->data();
      fused_call.key.align_aux = alignment_class(fused_call.aux);
    }
    fused_outcome =
        run_matmul(fused_call, g, context, /*may_refuse=*/epilogue != Epilogue::Default || product_fallback);
    if (fused_outcome != MatmulOutcome::ran && epilogue == Epilogue::DRelu) {
      // cublasLt.h documents its ReLU mask as an input of DRELU_BGRAD only. Where DRELU alone is
      // not offered, DRELU_BGRAD gives the same D in one kernel; its bias gradient, in D's type
      // (the type cublasLt.h documents), goes to scratch and is dropped.
      MatmulCall with_bias_grad = fused_call;
      with_bias_grad.key.epilogue = Epilogue::DReluBGrad;
      with_bias_grad.bias = gemm_scratches()[context.device()].get(
          static_cast<std::size_t>(g.n) * sizeof(std::int64_t));  // room for any D type
      with_bias_grad.bias_type = call.key.d_type;
      with_bias_grad.key.bias_type = call.key.d_type;
      with_bias_grad.key.align_bias = alignment_class(with_bias_grad.bias);
      fused_outcome = run_matmul(with_bias_grad, g, context, /*may_refuse=*/true);
    }
    if (fused_outcome == MatmulOutcome::ran) {
      ++counts.fused;
      return GemmRun::fused;
    }
    if (epilogue == Epilogue::Default) {  // nothing unfused to try: the product itself has no kernel
      if (product_fallback) return GemmRun::no_product_algorithm;
      throw cuda_error(mpx::detail::concat(where, ": cuBLASLt has no algorithm for M=", g.m, " N=", g.n,
                                           " K=", g.k, " (A ", call.a_rows, " x ", call.a_cols, ", B ",
                                           call.b_rows, " x ", call.b_cols, " per matrix)"));
    }
  }
  // Counted once the unfused path has its product (an FP8 product may have none either).
  const auto count_unfused = [&] {
    ++counts.unfused;
    if (g.k > 0 && cublaslt_epilogue(epilogue, fused) && aux_ld_ok && gelu_ok) {
      ++(fused_outcome == MatmulOutcome::refused ? counts.refused : counts.no_algorithm);
    }
  };

  // The unfused path: look its kernels up first, so that a program without them fails before work.
  using DT = typename cuda_traits<tag_of_t<TD>>::device_type;
  const bool elementwise =
      epilogue != Epilogue::Default && epilogue != Epilogue::BGradA && epilogue != Epilogue::BGradB;
  const bool operand_bias_grad = epilogue == Epilogue::BGradA || epilogue == Epilogue::BGradB;
  const auto apply_epilogue = elementwise || g.k == 0
                                  ? unfused_launcher(UnfusedEpilogue<Acc, DT>::launch, where, epilogue, g)
                                  : nullptr;
  [[maybe_unused]] const auto reduce_operand = [&] {
    if constexpr (std::is_void_v<Reduction>) {
      if (operand_bias_grad) {
        throw invalid_argument(
            mpx::detail::concat(where, ": epilogue ", to_string(epilogue), " is not offered here"));
      }
      return nullptr;
    } else {
      return operand_bias_grad ? unfused_launcher(Reduction::launch, where, epilogue, g) : nullptr;
    }
  }();
  const Acc zero = 0;
  const cudaStream_t stream = context.stream();
  if (!elementwise) {
    // D = alpha op(A) op(B) + beta C without epilogue, then the operand's bias gradient.
    if (g.k > 0) {
      if (run_matmul(call, g, context, /*may_refuse=*/product_fallback) != MatmulOutcome::ran) {
        if (product_fallback) return GemmRun::no_product_algorithm;
        throw cuda_error(
            mpx::detail::concat(where, ": cuBLASLt has no algorithm for M=", g.m, " N=", g.n, " K=", g.k));
      }
    } else {  // a null product is zero: D = beta C, over every matrix of a batch
      apply_epilogue(nullptr, static_cast<const DT*>(c_pointer), beta, reinterpret_cast<DT*>(d.data()),
                     nullptr, nullptr, nullptr, nullptr, Epilogue::Default, g.batch * g.m, g.n, stream);
    }
    count_unfused();
    if constexpr (!std::is_void_v<Reduction>) {
      if (operand_bias_grad) {
        const bool a_side = epilogue == Epilogue::BGradA;
        const bool transposed = a_side ? call.key.transpose_a : call.key.transpose_b;
        const std::int64_t cols = a_side ? call.a_cols : call.b_cols;
        // BGradA sums op(A) (M x K) along k; BGradB sums op(B) (K x N) along k.
        std::int64_t stride_i = 0;
        std::int64_t stride_j = 0;
        if (a_side) {
          stride_i = transposed ? 1 : cols;
          stride_j = transposed ? cols : 1;
        } else {
          stride_i = transposed ? cols : 1;
          stride_j = transposed ? 1 : cols;
        }
        const auto* source = static_cast<const typename Reduction::Source*>(a_side ? call.a : call.b);
        reduce_operand(source, operands.bias_grad->data(), a_side ? g.m : g.n, g.k, stride_i, stride_j,
                       stream);
      }
    }
    return GemmRun::unfused;
  }
  // t = alpha op(A) op(B) in Acc (in the thread's scratch buffer; null for K = 0, a zero product),
  // then epilogue(t + beta C) rounded into D.
  Acc* t = nullptr;
  if (g.k > 0) {
    t = static_cast<Acc*>(
        gemm_scratches()[context.device()].get(static_cast<std::size_t>(g.m * g.n) * sizeof(Acc)));
    MatmulCall plain = call;
    plain.key.d_type = cuda_traits<tag_of_t<Acc>>::data_type;
    plain.key.separate_c = false;
    plain.key.beta_zero = true;
    plain.key.align_c = alignment_class(t);
    plain.key.align_d = plain.key.align_c;
    plain.c_type = plain.key.d_type;
    plain.c = t;
    plain.d = t;
    plain.beta = &zero;
    if (run_matmul(plain, g, context, /*may_refuse=*/product_fallback) != MatmulOutcome::ran) {
      if (product_fallback) return GemmRun::no_product_algorithm;
      throw cuda_error(mpx::detail::concat(where, ": cuBLASLt has no algorithm for the unfused M=", g.m,
                                           " N=", g.n, " K=", g.k, " product"));
    }
  }
  count_unfused();
  apply_epilogue(t, static_cast<const DT*>(c_pointer), beta, reinterpret_cast<DT*>(d.data()),
                 operands.bias != nullptr ? reinterpret_cast<const DT*>(operands.bias->data()) : nullptr,
                 operands.aux != nullptr ? reinterpret_cast<DT*>(operands.aux->data()) : nullptr,
                 operands.relu_mask != nullptr ? operands.relu_mask->data() : nullptr,
                 writes_bias_grad(epilogue) ? operands.bias_grad->data() : nullptr, epilogue, g.m, g.n,
                 stream);
  return GemmRun::unfused;
}

}  // namespace detail

/// @brief D = epilogue(alpha * op(A) * op(B) + beta * C) on the GPU, with the semantics of
/// `mpx::cpu::gemm` (gemm_spec.hpp), queued on `context`'s stream (asynchronous).
///
/// @tparam Compute the compute precision: A and B hold `storage_t<Compute>` (fp32 storage for TF32,
///                 which the Tensor Cores round); D holds `storage_t<Compute>` or the accumulate type.
/// @throws mpx::shape_error / mpx::invalid_argument as `cpu::gemm`; mpx::cuda_error when cuBLASLt fails.
/// @code
/// mpx::cuda::gemm<mpx::BFloat16>(x, w, y, {.transpose_b = mpx::Transpose::Yes,
///                                          .epilogue = mpx::Epilogue::ReluBias}, {.bias = &b});
/// @endcode
template <NumericTag Compute, Element TD>
void gemm(const Tensor<storage_t<Compute>, Cuda>& a, const Tensor<storage_t<Compute>, Cuda>& b,
          Tensor<TD, Cuda>& d, const GemmConfig& config,
          const GemmOperands<TD, accumulate_t<Compute>>& operands = {},
          CudaContext& context = cuda_context()) {
  using Acc = accumulate_t<Compute>;
  static_assert(std::is_same_v<TD, storage_t<Compute>> || std::is_same_v<TD, Acc>,
                "mpx::cuda::gemm<Compute>: D must hold the compute type or the accumulate type "
                "(float; double for mpx::Double)");
  constexpr const char* where = "mpx::cuda::gemm";
  const GemmShape g = validate_gemm(where, a.shape(), b.shape(), d.shape(), config, operands);
  if (g.m == 0 || g.n == 0) return;
  constexpr cudaDataType_t type = cuda_traits<Compute>::data_type;
  const detail::MatmulCall call = detail::operand_call(g, config, a.data(), a.shape(), type, b.data(),
                                                       b.shape(), type, cuda_traits<Compute>::compute_type);
  constexpr auto bytes = static_cast<std::int64_t>(sizeof(storage_t<Compute>));
  (void)detail::run_gemm<Acc, TD, detail::UnfusedOperandReductionFor<Compute>>(
      where, g, config, operands, d, call, bytes, bytes, /*product_fallback=*/false, context);
}

}  // namespace mpx::cuda
