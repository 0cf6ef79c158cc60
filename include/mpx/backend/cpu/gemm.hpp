// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief cuBLASLt's GEMM semantics on the CPU: operands in the compute type, products and sums in
/// fp32 (fp64 for `Double`), epilogue in fp32, one rounding into D.
///
/// Tensor Core products of fp16, bf16 or TF32 operands are exact in fp32 (at most 22 significant
/// bits), so widening the rounded operands to fp32 and multiplying with an fp32 GEMM kernel
/// (gemm_kernel.hpp: oneDNN or Eigen) gives the GPU's numerics up to the order of the fp32 sums;
/// bf16 operands go to oneDNN's bf16 dot products unwidened where those are exact too.
///
/// A batched call (`GemmConfig::batch_count` > 1) converts A and B once, multiplies every matrix
/// of the batch tile by tile as a single call would, and rounds D once: the numerics of a loop of
/// single calls, one per matrix.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/gemm_kernel.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/host_memory.hpp"
#include "mpx/tensor/memory_stats.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief `mpx::GemmOperands` for host tensors.
template <FloatingElement TD, class Acc = accumulate_t<TD>>
using GemmOperands = mpx::GemmOperands<TD, Acc, Host>;

namespace detail {

template <NumericTag Compute, class S, class Acc>
void widen_operand(const S* in, Acc* out, std::int64_t count) {
  parallel_for_chunks(count, parallel_grain, [in, out](std::int64_t begin, std::int64_t end) {
    widen_range<Compute>(in, out, begin, end);
  });
}

// t[i] += beta * C[i], C widened from its storage a block at a time.
template <NumericTag Tag, class S, class Acc>
void add_scaled(const S* c, Acc beta, Acc* t, std::int64_t count) {
  parallel_for_chunks(count, parallel_grain, [c, beta, t](std::int64_t begin, std::int64_t end) {
    Acc widened[conversion_block];
    for (std::int64_t first = begin; first < end; first += conversion_block) {
      const std::int64_t length = std::min(conversion_block, end - first);
      widen_range<Tag>(c + first, widened, 0, length);
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t i = 0; i < length; ++i) t[first + i] = t[first + i] + beta * widened[i];
    }
  });
}

template <class Acc, class TD>
void round_output(const Acc* in, TD* out, std::int64_t count) {
  parallel_for_chunks(count, parallel_grain,
                      [in, out](std::int64_t begin, std::int64_t end) { round_range(in, out, begin, end); });
}

// Scratch memory of one call (converted operands; t when D is narrower than Acc), kept per thread
// for the next call. Fresh multi-megabyte blocks come from mmap and are page-faulted in on every call
// (glibc unmaps them on free): at 1024^3 that alone cost fp16/bf16 a third of the fp32 GEMM's time.
// memory_stats<Host>() counts a buffer only while a call uses it, as if each call allocated it: like
// the allocator's own free lists, memory kept for reuse is not reported between calls. Each slot
// grows to the largest request made of it and is freed when the thread exits.
template <class T>
class ScratchBuffer {
 public:
  static constexpr int slots = 3;  // op(A), op(B), t

  ScratchBuffer(int slot, std::int64_t count) : bytes_(static_cast<std::size_t>(count) * sizeof(T)) {
    Cache& cache = caches()[slot];
    if (cache.capacity < bytes_) cache.grow(bytes_);
    data_ = static_cast<T*>(cache.data);
    memory_stats<Host>().on_allocate(static_cast<std::int64_t>(bytes_));
  }
  ~ScratchBuffer() { memory_stats<Host>().on_free(static_cast<std::int64_t>(bytes_)); }

  /// Frees this thread's cached scratch (none may be in use).
  static void release_all() noexcept {
    for (int slot = 0; slot < slots; ++slot) caches()[slot].release();
  }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  [[nodiscard]] T* data() const noexcept { return data_; }

 private:
  struct Cache {
    void* data = nullptr;
    std::size_t capacity = 0;

    void grow(std::size_t bytes) {
      release();
      data = ::operator new (bytes, std::align_val_t{DeviceMemory<Host>::alignment}, std::nothrow);
      if (data == nullptr) {
        throw out_of_memory(mpx::detail::concat("mpx::cpu::gemm: scratch allocation of ", bytes,
                                                " bytes failed (", DeviceMemory<Host>::available_bytes(),
                                                " bytes of physical memory available, ",
                                                memory_stats<Host>().live_bytes(), " held by mpx tensors)"));
      }
      capacity = bytes;
    }
    void release() noexcept {
      if (data != nullptr) ::operator delete (data, std::align_val_t{DeviceMemory<Host>::alignment});
      data = nullptr;
      capacity = 0;
    }
    ~Cache() { release(); }
  };

  static Cache* caches() {
    thread_local Cache per_thread[slots];
    return per_thread;
  }

  T* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// An operand as an accumulate-type matrix: a view of the tensor when no conversion is needed,
/// otherwise a converted copy in scratch slot `slot` (rounded to the compute type first: a format kept
/// in a wider float's storage, TF32, rounds here; a format kept as bit patterns is decoded once here).
template <NumericTag Compute, class Acc>
class Operand {
 public:
  using Map = Eigen::Map<const RowMajorMatrix<Acc>>;  // operands may be row views, at any element

  Operand(const Tensor<storage_t<Compute>, Host>& tensor, int slot) : map_(nullptr, 0, 0) {
    using S = storage_t<Compute>;
    const Acc* data = nullptr;
    if constexpr (std::is_same_v<S, Acc> && owns_storage_v<Compute>) {
      data = tensor.data();
    } else {
      scratch_.emplace(slot, tensor.numel());
      widen_operand<Compute>(tensor.data(), scratch_->data(), tensor.numel());
      data = scratch_->data();
    }
    new (&map_) Map(data, tensor.shape().rows(), tensor.shape().cols());
  }

  [[nodiscard]] const Map& matrix() const noexcept { return map_; }

 private:
  std::optional<ScratchBuffer<Acc>> scratch_;
  Map map_;
};

}  // namespace detail

/// @brief Frees the scratch memory `gemm` keeps per calling thread between calls (up to the largest
/// GEMM's widened operands and fp32 intermediate, and, built with oneDNN, the thread's bf16 matmul
/// primitives and their scratchpad). `memory_stats<Host>()` counts the widened operands and the
/// intermediate only while a call uses them (oneDNN's own memory not at all); call this to give
/// them back, e.g. before measuring a process's footprint. OpenMP's worker threads keep theirs until
/// they exit.
inline void release_gemm_scratch() noexcept {
  detail::ScratchBuffer<float>::release_all();
  detail::ScratchBuffer<double>::release_all();
  detail::release_kernel_caches();
}

/// @brief D = epilogue(alpha * op(A) * op(B) + beta * C), with cuBLASLt's semantics (gemm_spec.hpp).
///
/// @tparam Compute the compute precision: A and B hold `storage_t<Compute>` (fp32 storage for TF32,
///                 rounded to TF32 here); D holds `storage_t<Compute>` or the accumulate type.
/// @throws mpx::shape_error when shapes do not fit (naming both), mpx::invalid_argument when the
///         epilogue's operands are missing.
/// With `config.batch_count` = n > 1, A, B (and C) and D hold n matrices each and matrix i of D is
/// computed from matrix i of A and B, tile by tile as a single call on that pair would, so the result
/// equals n single calls bit for bit (for bf16, where those take the same kernel: the choice of
/// oneDNN's bf16 dot products looks at the whole of A and B). Results do not depend on the number
/// of threads.
/// @code
/// mpx::cpu::gemm<mpx::BFloat16>(x, w, y, {.transpose_b = mpx::Transpose::Yes,
///                                         .epilogue = mpx::Epilogue::ReluBias}, {.bias = &b});
/// // scores[i] = q[i] k[i]^T / 8 for the 12 matrices q, k: [12 * T, 64], scores: [12 * T, T] (fp32)
/// mpx::cpu::gemm<mpx::BFloat16>(q, k, scores, {.transpose_b = mpx::Transpose::Yes, .alpha = 0.125f,
///                                              .batch_count = 12});
/// @endcode
template <NumericTag Compute, FloatingElement TD>
void gemm(const Tensor<storage_t<Compute>, Host>& a, const Tensor<storage_t<Compute>, Host>& b,
          Tensor<TD, Host>& d, const GemmConfig& config,
          const GemmOperands<TD, accumulate_t<Compute>>& operands = {}) {
  using Acc = accumulate_t<Compute>;  // what cuBLASLt accumulates in: COMPUTE_64F or COMPUTE_32F*
  static_assert(std::is_same_v<TD, storage_t<Compute>> || std::is_same_v<TD, Acc>,
                "mpx::cpu::gemm<Compute>: D must hold the compute type or the accumulate type "
                "(float; double for mpx::Double)");
  constexpr const char* where = "mpx::cpu::gemm";
  const GemmShape g = validate_gemm(where, a.shape(), b.shape(), d.shape(), config, operands);
  const Epilogue epilogue = config.epilogue;
  const Acc alpha = static_cast<Acc>(config.alpha);
  const Acc beta = static_cast<Acc>(config.beta);
  const std::int64_t d_rows = g.batch * g.m;  // all matrices of a batch

  // D is written while A and B are read (and aux, bias_grad are written): they must not share memory.
  // C may be D itself (cuBLASLt's in-place accumulation).
  const auto overlap = [&](const char* name, const void* data, std::size_t bytes) {
    const auto* first = static_cast<const char*>(data);
    const auto* d_first = reinterpret_cast<const char*>(d.data());
    if (bytes != 0 && d.size_bytes() != 0 && first < d_first + d.size_bytes() && d_first < first + bytes) {
      throw invalid_argument(
          mpx::detail::concat(where, ": D (", d.shape(), ") overlaps ", name,
                              "; D must not share memory with the operands it is computed from"));
    }
  };
  overlap("A", a.data(), a.size_bytes());
  overlap("B", b.data(), b.size_bytes());
  if (operands.bias != nullptr) overlap("bias", operands.bias->data(), operands.bias->size_bytes());
  if (operands.aux != nullptr) overlap("aux", operands.aux->data(), operands.aux->size_bytes());
  if (operands.relu_mask != nullptr) {
    overlap("relu_mask", operands.relu_mask->data(), operands.relu_mask->size_bytes());
  }
  if (operands.bias_grad != nullptr) {
    overlap("bias_grad", operands.bias_grad->data(), operands.bias_grad->size_bytes());
  }
  if (operands.c != nullptr && operands.c->data() != d.data()) {
    overlap("C", operands.c->data(), operands.c->size_bytes());
  }

  // bf16 operands go to oneDNN's bf16 matmul as they are where its products are exact
  // (gemm_kernel.hpp); otherwise both are widened (rounded first where needed) into fp32 scratch.
  // BGradA / BGradB sum a widened operand either way.
  const bool native = detail::native_bf16_products<Compute>(a.data(), a.numel(), b.data(), b.numel(),
                                                            static_cast<float>(alpha));
  std::optional<detail::Operand<Compute, Acc>> a_acc, b_acc;
  if (!native || epilogue == Epilogue::BGradA) a_acc.emplace(a, 0);
  if (!native || epilogue == Epilogue::BGradB) b_acc.emplace(b, 1);

  // t = alpha * op(A) op(B) + beta * C. When D holds Acc and beta = 0, t is D itself. Otherwise the
  // product goes to scratch first and C is added to the finished product, once, as cuBLASLt adds it
  // (a kernel accumulating into C would add it to the first k-block's partial sum). That is also
  // what makes a gradient accumulated over micro-batches equal the sum of the micro-batches' own,
  // bit for bit. The kernel writes every element of its target, so neither is cleared first.
  constexpr bool d_is_acc = std::is_same_v<TD, Acc>;
  std::optional<detail::ScratchBuffer<Acc>> scratch_buffer;
  Eigen::Map<RowMajorMatrix<Acc>> scratch(nullptr, 0, 0);
  Eigen::Map<RowMajorMatrix<Acc>> t(nullptr, d_rows, g.n);
  if constexpr (d_is_acc) new (&t) decltype(t)(d.data(), d_rows, g.n);
  if (!d_is_acc || beta != Acc(0)) {
    scratch_buffer.emplace(2, d_rows * g.n);
    new (&scratch) decltype(scratch)(scratch_buffer->data(), d_rows, g.n);
  }
  // target = alpha op(A) op(B) for every matrix of the batch, tile by tile on the library's threads
  // (gemm_kernel.hpp): the same bits on any number of threads, and matrix i of a batch as one call.
  auto multiply = [&](auto&& target) {
    const auto products = [&](const auto* a_data, const auto* b_data) {
      using In = std::remove_cvref_t<decltype(*a_data)>;
      detail::run_products(g.batch, [&](std::int64_t matrix) {
        return detail::ProductView<In, Acc>{.transpose_a = config.transpose_a == Transpose::Yes,
                                            .transpose_b = config.transpose_b == Transpose::Yes,
                                            .m = g.m,
                                            .n = g.n,
                                            .k = g.k,
                                            .a = a_data + matrix * (a.numel() / g.batch),
                                            .lda = a.shape().cols(),
                                            .b = b_data + matrix * (b.numel() / g.batch),
                                            .ldb = b.shape().cols(),
                                            .c = target.data() + matrix * g.m * g.n,
                                            .ldc = g.n,
                                            .alpha = alpha};
      });
    };
    if constexpr (std::is_same_v<Compute, BFloat16> && detail::built_with_onednn) {
      if (native) return products(a.data(), b.data());
    }
    products(a_acc->matrix().data(), b_acc->matrix().data());
  };

  // The epilogue over columns [begin, end) of one row of t, in place, then that stretch rounded into
  // D (nothing to round when D holds Acc): one pass over t. The switch sits outside the loops so that
  // each loop vectorises (GELU's tanh is plain arithmetic in float: numeric/tanh.hpp); the bias is
  // widened once and aux a block at a time, with the vector conversions, so that no conversion call
  // sits inside a loop.
  const std::vector<Acc> bias =
      reads_bias(epilogue) ? detail::widened<Acc>(*operands.bias) : std::vector<Acc>{};
  TD* aux = operands.aux != nullptr ? operands.aux->data() : nullptr;
  std::int32_t* relu_mask = operands.relu_mask != nullptr ? operands.relu_mask->data() : nullptr;
  const std::int64_t mask_words = relu_mask_words(g.n);
  auto finish_columns = [&](Acc* values, std::int64_t row, std::int64_t begin, std::int64_t end) {
    Acc* v = values + row * g.n;
    TD* row_aux = aux != nullptr ? aux + row * g.n : nullptr;
    std::int32_t* row_mask = relu_mask != nullptr ? relu_mask + row * mask_words : nullptr;
    switch (epilogue) {
      case Epilogue::Bias:
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t col = begin; col < end; ++col) v[col] = v[col] + bias[col];
        break;
      case Epilogue::ReluBias:
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t col = begin; col < end; ++col) v[col] = relu(v[col] + bias[col]);
        break;
      case Epilogue::ReluAuxBias:  // rows are finished whole here (begin = 0, end = n)
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t col = begin; col < end; ++col) v[col] = v[col] + bias[col];
        for (std::int64_t word = 0; word < mask_words; ++word) {  // padding bits written as 0
          std::uint32_t bits = 0;
          for (std::int64_t col = word * 32; col < std::min(end, word * 32 + 32); ++col) {
            bits |= static_cast<std::uint32_t>(v[col] > Acc(0)) << (col % 32);
          }
          row_mask[word] = static_cast<std::int32_t>(bits);
        }
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t col = begin; col < end; ++col) v[col] = relu(v[col]);
        break;
      case Epilogue::GeluBias:
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t col = begin; col < end; ++col) v[col] = gelu_tanh(v[col] + bias[col]);
        break;
      case Epilogue::GeluAuxBias:
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t col = begin; col < end; ++col) v[col] = v[col] + bias[col];
        detail::round_range(v, row_aux, begin, end);
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t col = begin; col < end; ++col) v[col] = gelu_tanh(v[col]);
        break;
      case Epilogue::DRelu:
      case Epilogue::DReluBGrad:
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t col = begin; col < end; ++col) {
          v[col] = v[col] * (relu_mask_bit(row_mask, col) ? Acc(1) : Acc(0));
        }
        break;
      case Epilogue::DGelu:
      case Epilogue::DGeluBGrad:
        for (std::int64_t first = begin; first < end; first += detail::conversion_block) {
          const std::int64_t length = std::min(detail::conversion_block, end - first);
          Acc pre_activation[detail::conversion_block];
          detail::widen_range<tag_of_t<TD>>(row_aux + first, pre_activation, 0, length);
          MPX_DETAIL_OMP_SIMD
          for (std::int64_t i = 0; i < length; ++i) {
            v[first + i] = v[first + i] * gelu_tanh_derivative(pre_activation[i]);
          }
        }
        break;
      default: break;
    }
    if constexpr (!d_is_acc) detail::round_range(values, d.data(), row * g.n + begin, row * g.n + end);
  };

  Acc* bias_grad = operands.bias_grad != nullptr ? operands.bias_grad->data() : nullptr;
  const bool column_bias_grad = epilogue == Epilogue::DReluBGrad || epilogue == Epilogue::DGeluBGrad;
  const bool elementwise =
      epilogue != Epilogue::Default && epilogue != Epilogue::BGradA && epilogue != Epilogue::BGradB;
  auto finish = [&](Acc* values) {
    if (column_bias_grad) {
      // Each column's bias gradient sums its rows in order, row by row, whatever the thread count:
      // the threads take blocks of columns.
      constexpr std::int64_t columns_per_chunk = 64;
      parallel_for_chunks(g.n, columns_per_chunk, [&](std::int64_t begin, std::int64_t end) {
        std::fill(bias_grad + begin, bias_grad + end, Acc(0));
        for (std::int64_t row = 0; row < g.m; ++row) {
          finish_columns(values, row, begin, end);
          const Acc* v = values + row * g.n;
          MPX_DETAIL_OMP_SIMD
          for (std::int64_t col = begin; col < end; ++col) bias_grad[col] += v[col];
        }
      });
    } else if (elementwise) {
      parallel_for_chunks(d_rows, rows_per_chunk(g.n), [&](std::int64_t first_row, std::int64_t end_row) {
        for (std::int64_t row = first_row; row < end_row; ++row) finish_columns(values, row, 0, g.n);
      });
    } else if constexpr (!d_is_acc) {
      detail::round_output(values, d.data(), d_rows * g.n);
    }
  };
  if constexpr (d_is_acc) {
    if (beta == Acc(0)) {
      multiply(t);
    } else {
      multiply(scratch);
      if (operands.c != nullptr) {  // C may be D itself: elementwise, so the alias is harmless
        t = beta * operands.c->matrix() + scratch;
      } else if (beta == Acc(1)) {
        t += scratch;
      } else {
        t = beta * t + scratch;
      }
    }
    finish(d.data());
  } else {
    multiply(scratch);
    if (beta != Acc(0)) {
      const TD* c = operands.c != nullptr ? operands.c->data() : d.data();
      detail::add_scaled<tag_of_t<TD>>(c, beta, scratch.data(), d_rows * g.n);
    }
    finish(scratch.data());
  }

  // Bias gradients of the operands, from the same compute-type values the product used.
  if (epilogue == Epilogue::BGradA) {
    const bool ta = config.transpose_a == Transpose::Yes;
    const auto& am = a_acc->matrix();
    for (std::int64_t row = 0; row < g.m; ++row) {
      bias_grad[row] = ta ? am.col(row).sum() : am.row(row).sum();
    }
  } else if (epilogue == Epilogue::BGradB) {
    const bool tb = config.transpose_b == Transpose::Yes;
    const auto& bm = b_acc->matrix();
    for (std::int64_t col = 0; col < g.n; ++col) {
      bias_grad[col] = tb ? bm.row(col).sum() : bm.col(col).sum();
    }
  }
}

}  // namespace mpx::cpu
