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
#include "mpx/backend/cpu/gemm_accumulation.hpp"
#include "mpx/backend/cpu/gemm_kernel.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/accumulation.hpp"
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

// Whether gemm<Compute> converts its operands before the kernel (16-bit and 8-bit storage, TF32's
// rounding) rather than handing the kernel the tensors' own elements.
template <NumericTag Compute, class Acc>
inline constexpr bool converts_operands =
    !(std::is_same_v<storage_t<Compute>, Acc> && owns_storage_v<Compute>);

// Which operands of a product of shape g are widened tile by tile (widen_and_multiply) rather than
// whole before it: an operand whose block in a tile (the tile's rows of op(A), or its columns of
// op(B)) takes at most 1 MiB in Acc, so that the kernel finds it in the cache it was just written to,
// and that at most two tiles share (each widens it again). Widened whole, every element is read
// narrow, written wide and read wide again from memory; widened per tile by 16 tiles, a small
// operand (a char-GPT layer's weight, which every row of tiles reads) costs more than it saves.
struct PerTileWidening {
  bool a = false, b = false;
};

template <NumericTag ATag, class Acc, NumericTag BTag = ATag>
PerTileWidening widens_per_tile(const GemmShape& g) {
  constexpr std::int64_t budget_bytes = std::int64_t{1} << 20, most_sharing = 2;
  constexpr auto bytes = static_cast<std::int64_t>(sizeof(Acc));
  const ProductTiles tiles = product_tiles(g.m, g.n, g.k);
  const std::int64_t row_tiles = (g.m + tiles.rows - 1) / tiles.rows;
  const std::int64_t col_tiles = (g.n + tiles.cols - 1) / tiles.cols;
  return {.a = converts_operands<ATag, Acc> && col_tiles <= most_sharing &&
               tiles.rows * g.k * bytes <= budget_bytes,
          .b = converts_operands<BTag, Acc> && row_tiles <= most_sharing &&
               tiles.cols * g.k * bytes <= budget_bytes};
}

// The block of a stored operand that one tile reads, widened into this thread's scratch slot `slot`:
// `rows` x `cols` elements from `stored` (leading dimension `ld`), packed with leading dimension cols.
template <NumericTag Compute, class Acc>
const Acc* widen_block(int slot, std::optional<ScratchBuffer<Acc>>& block, const storage_t<Compute>* stored,
                       std::int64_t ld, std::int64_t rows, std::int64_t cols) {
  block.emplace(slot, rows * cols);
  for (std::int64_t row = 0; row < rows; ++row) {
    widen_range<Compute>(stored + row * ld, block->data() + row * cols, 0, cols);
  }
  return block->data();
}

// One tile of a product of storage_t<Compute> operands, each either already widened whole
// (a_widened, b_widened: laid out as the operands' storage a_storage, b_storage) or, where that is
// null, the tile's block of it widened here into this thread's scratch (slots 0 and 1); then the
// fp32 kernel on them.
template <NumericTag ATag, NumericTag BTag, class Acc>
void widen_and_multiply(const ProductView<storage_t<ATag>, Acc, storage_t<BTag>>& tile,
                        const storage_t<ATag>* a_storage, const Acc* a_widened,
                        const storage_t<BTag>* b_storage, const Acc* b_widened) {
  ProductView<Acc, Acc> wide{.transpose_a = tile.transpose_a,
                             .transpose_b = tile.transpose_b,
                             .m = tile.m,
                             .n = tile.n,
                             .k = tile.k,
                             .a = nullptr,
                             .lda = tile.lda,
                             .b = nullptr,
                             .ldb = tile.ldb,
                             .c = tile.c,
                             .ldc = tile.ldc,
                             .alpha = tile.alpha};
  std::optional<ScratchBuffer<Acc>> a_block, b_block;
  if (a_widened != nullptr) {
    wide.a = a_widened + (tile.a - a_storage);
  } else {  // as stored, op(A) is m x k, or k x m when transposed
    wide.lda = tile.transpose_a ? tile.m : tile.k;
    wide.a = widen_block<ATag>(0, a_block, tile.a, tile.lda, tile.transpose_a ? tile.k : tile.m, wide.lda);
  }
  if (b_widened != nullptr) {
    wide.b = b_widened + (tile.b - b_storage);
  } else {  // as stored, op(B) is k x n, or n x k when transposed
    wide.ldb = tile.transpose_b ? tile.k : tile.n;
    wide.b = widen_block<BTag>(1, b_block, tile.b, tile.ldb, tile.transpose_b ? tile.n : tile.k, wide.ldb);
  }
  product_on_this_thread(wide);
}

// sums[j] = the sum of column j of a rows x cols row-major matrix of storage_t<Compute>, in the
// compute type widened to Acc, added row by row from the first: the threads take blocks of columns,
// each row's stretch of a block is added as one vector.
template <NumericTag Compute, class S, class Acc>
void column_sums(const S* data, std::int64_t rows, std::int64_t cols, Acc* sums) {
  constexpr std::int64_t columns_per_chunk = 64;
  static_assert(columns_per_chunk <= conversion_block);
  parallel_for_chunks(cols, columns_per_chunk, [&](std::int64_t begin, std::int64_t end) {
    const std::int64_t length = end - begin;
    Acc widened[columns_per_chunk];
    std::fill(sums + begin, sums + end, Acc(0));
    for (std::int64_t row = 0; row < rows; ++row) {
      widen_range<Compute>(data + row * cols + begin, widened, 0, length);
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t j = 0; j < length; ++j) sums[begin + j] += widened[j];
    }
  });
}

// sums[i] = the sum of row i of a rows x cols row-major matrix of storage_t<Compute>, in the compute
// type widened to Acc, added column by column from the first; rows on all threads.
template <NumericTag Compute, class S, class Acc>
void row_sums(const S* data, std::int64_t rows, std::int64_t cols, Acc* sums) {
  parallel_for_chunks(rows, rows_per_chunk(cols), [&](std::int64_t begin, std::int64_t end) {
    Acc widened[conversion_block];
    for (std::int64_t row = begin; row < end; ++row) {
      Acc total = 0;
      for (std::int64_t first = 0; first < cols; first += conversion_block) {
        const std::int64_t length = std::min(conversion_block, cols - first);
        widen_range<Compute>(data + row * cols + first, widened, 0, length);
        for (std::int64_t j = 0; j < length; ++j) total += widened[j];
      }
      sums[row] = total;
    }
  });
}

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

namespace detail {

// What `gemm_widened` computes the product with when no `product` is given.
struct KernelProduct {};

// The GEMM of `gemm` and `gemm_scaled`: A holds ATag's storage, B BTag's, each widened to Acc where
// it is not Acc already; `alpha` is what the product is multiplied by (config.alpha, times the
// operands' inverse scales for `gemm_scaled`). Under `Fp32Accumulation` the fp32 kernel sums the
// products (gemm_kernel.hpp); under any other model, gemm_accumulation.hpp does. A `product` other
// than `KernelProduct` computes it instead (the block-scaled GEMM's per-block sums:
// block_scaled_gemm.hpp): `product(values, finish_row)` writes alpha op(A) op(B) into `values` [m, n]
// and calls `finish_row(row)` on each row once it is written.
template <NumericTag ATag, NumericTag BTag, class Accumulation, FloatingElement TD, class Acc,
          class Product = KernelProduct>
void gemm_widened(const char* where, const Tensor<storage_t<ATag>, Host>& a,
                  const Tensor<storage_t<BTag>, Host>& b, Tensor<TD, Host>& d, const GemmConfig& config,
                  const GemmOperands<TD, Acc>& operands, Acc alpha, const Product& product = {}) {
  constexpr bool own_product = !std::is_same_v<Product, KernelProduct>;
  const GemmShape g = validate_gemm(where, a.shape(), b.shape(), d.shape(), config, operands);
  const Epilogue epilogue = config.epilogue;
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
  // (gemm_kernel.hpp). Otherwise the operands are widened (rounded first where needed) to fp32: each
  // whole, into scratch, before the product, or, where its blocks fit a cache, each tile's block of it
  // by the thread that multiplies the tile (widens_per_tile).
  constexpr bool modelled = !std::is_same_v<Accumulation, Fp32Accumulation> || own_product;
  constexpr bool both_bf16 = std::is_same_v<ATag, BFloat16> && std::is_same_v<BTag, BFloat16> && !modelled;
  bool native = modelled;  // a modelled sum decodes its operands itself
  if constexpr (both_bf16) {
    native =
        native_bf16_products<BFloat16>(a.data(), a.numel(), b.data(), b.numel(), static_cast<float>(alpha));
  }
  const PerTileWidening per_tile = native ? PerTileWidening{} : widens_per_tile<ATag, Acc, BTag>(g);
  std::optional<Operand<ATag, Acc>> a_acc;
  std::optional<Operand<BTag, Acc>> b_acc;
  if (!native && !per_tile.b) b_acc.emplace(b, 1);
  if (!native && !per_tile.a) a_acc.emplace(a, 0);

  // t = alpha * op(A) op(B) + beta * C. When D holds Acc and beta = 0, t is D itself. Otherwise the
  // product goes to scratch first and C is added to the finished product, once, as cuBLASLt adds it
  // (a kernel accumulating into C would add it to the first k-block's partial sum). That is also
  // what makes a gradient accumulated over micro-batches equal the sum of the micro-batches' own,
  // bit for bit. The kernel writes every element of its target, so neither is cleared first.
  constexpr bool d_is_acc = std::is_same_v<TD, Acc>;
  std::optional<ScratchBuffer<Acc>> scratch_buffer;
  Eigen::Map<RowMajorMatrix<Acc>> scratch(nullptr, 0, 0);
  Eigen::Map<RowMajorMatrix<Acc>> t(nullptr, d_rows, g.n);
  if constexpr (d_is_acc) new (&t) decltype(t)(d.data(), d_rows, g.n);
  if (!d_is_acc || beta != Acc(0)) {
    scratch_buffer.emplace(2, d_rows * g.n);
    new (&scratch) decltype(scratch)(scratch_buffer->data(), d_rows, g.n);
  }
  // The epilogue over columns [begin, end) of one row of t, in place, then that stretch rounded into
  // D (nothing to round when D holds Acc): one pass over t. The switch sits outside the loops so that
  // each loop vectorises (GELU's tanh is plain arithmetic in float: numeric/tanh.hpp); the bias is
  // widened once and aux a block at a time, with the vector conversions, so that no conversion call
  // sits inside a loop.
  const std::vector<Acc> bias = reads_bias(epilogue) ? widened<Acc>(*operands.bias) : std::vector<Acc>{};
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
        round_range(v, row_aux, begin, end);
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t col = begin; col < end; ++col) v[col] = gelu_tanh(v[col]);
        break;
      case Epilogue::DRelu:
      case Epilogue::DReluBGrad:
        // A word of the mask at a time, its bits shifted out as a vector (relu_mask_bit's layout).
        for (std::int64_t word = begin / 32; word * 32 < end; ++word) {
          const auto bits = static_cast<std::uint32_t>(row_mask[word]);
          const std::int64_t first = std::max(begin, word * 32), last = std::min(end, word * 32 + 32);
          MPX_DETAIL_OMP_SIMD
          for (std::int64_t col = first; col < last; ++col) {
            v[col] = v[col] * (((bits >> (col - word * 32)) & 1u) != 0 ? Acc(1) : Acc(0));
          }
        }
        break;
      case Epilogue::DGelu:
      case Epilogue::DGeluBGrad:
        for (std::int64_t first = begin; first < end; first += conversion_block) {
          const std::int64_t length = std::min(conversion_block, end - first);
          Acc pre_activation[conversion_block];
          widen_range<tag_of_t<TD>>(row_aux + first, pre_activation, 0, length);
          MPX_DETAIL_OMP_SIMD
          for (std::int64_t i = 0; i < length; ++i) {
            v[first + i] = v[first + i] * gelu_tanh_derivative(pre_activation[i]);
          }
        }
        break;
      default: break;
    }
    if constexpr (!d_is_acc) round_range(values, d.data(), row * g.n + begin, row * g.n + end);
  };

  Acc* bias_grad = operands.bias_grad != nullptr ? operands.bias_grad->data() : nullptr;
  const bool column_bias_grad = epilogue == Epilogue::DReluBGrad || epilogue == Epilogue::DGeluBGrad;
  const bool elementwise =
      epilogue != Epilogue::Default && epilogue != Epilogue::BGradA && epilogue != Epilogue::BGradB;
  // target = alpha op(A) op(B) for every matrix of the batch, tile by tile on the library's threads
  // (gemm_kernel.hpp): the same bits on any number of threads, and matrix i of a batch as one call.
  // Where each element's finish needs only its own value (not the bias gradient's column sums, not
  // ReLU's mask words, which span tiles) and no C is added, the thread that multiplied a tile
  // finishes it while it is still in that thread's cache, instead of in a pass of its own.
  const bool finish_in_tiles =
      beta == Acc(0) && !column_bias_grad && epilogue != Epilogue::ReluAuxBias && (elementwise || !d_is_acc);
  auto multiply = [&](auto&& target) {
    Acc* values = target.data();
    const auto and_finish = [&](const auto& run) {
      return [&, run](const auto& tile) {
        run(tile);
        if (!finish_in_tiles) return;
        const std::int64_t offset = tile.c - values;
        const std::int64_t first_row = offset / g.n, first_col = offset % g.n;
        for (std::int64_t row = first_row; row < first_row + tile.m; ++row) {
          finish_columns(values, row, first_col, first_col + tile.n);
        }
      };
    };
    const auto products = [&](const auto* a_data, const auto* b_data, const auto& run_tile) {
      using In = std::remove_cvref_t<decltype(*a_data)>;
      using InB = std::remove_cvref_t<decltype(*b_data)>;
      run_products(
          g.batch,
          [&](std::int64_t matrix) {
            return ProductView<In, Acc, InB>{.transpose_a = config.transpose_a == Transpose::Yes,
                                             .transpose_b = config.transpose_b == Transpose::Yes,
                                             .m = g.m,
                                             .n = g.n,
                                             .k = g.k,
                                             .a = a_data + matrix * (a.numel() / g.batch),
                                             .lda = a.shape().cols(),
                                             .b = b_data + matrix * (b.numel() / g.batch),
                                             .ldb = b.shape().cols(),
                                             .c = values + matrix * g.m * g.n,
                                             .ldc = g.n,
                                             .alpha = alpha};
          },
          and_finish(run_tile));
    };
    if constexpr (own_product) {
      return product(values, [&](std::int64_t row) {
        if (finish_in_tiles) finish_columns(values, row, 0, g.n);
      });
    } else if constexpr (modelled) {
      return modelled_product<Accumulation, ATag, BTag>(
          g, config, a.data(), a.shape().rows(), a.shape().cols(), b.data(), b.shape().rows(),
          b.shape().cols(), values, alpha, [&](std::int64_t row) {
            if (finish_in_tiles) finish_columns(values, row, 0, g.n);
          });
    }
    const auto as_they_are = [](const auto& tile) { product_on_this_thread(tile); };
    if constexpr (both_bf16 && built_with_onednn) {
      if (native) return products(a.data(), b.data(), as_they_are);
    }
    if constexpr (converts_operands<ATag, Acc> || converts_operands<BTag, Acc>) {
      if (per_tile.a || per_tile.b) {
        const Acc* a_widened = per_tile.a ? nullptr : a_acc->matrix().data();
        const Acc* b_widened = per_tile.b ? nullptr : b_acc->matrix().data();
        return products(a.data(), b.data(), [&](const auto& tile) {
          widen_and_multiply<ATag, BTag, Acc>(tile, a.data(), a_widened, b.data(), b_widened);
        });
      }
    }
    products(a_acc->matrix().data(), b_acc->matrix().data(), as_they_are);
  };

  auto finish = [&](Acc* values) {
    if (finish_in_tiles) return;  // done
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
      round_output(values, d.data(), d_rows * g.n);
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
      add_scaled<tag_of_t<TD>>(c, beta, scratch.data(), d_rows * g.n);
    }
    finish(scratch.data());
  }

  // Bias gradients of the operands, from the same compute-type values the product used.
  if (epilogue == Epilogue::BGradA) {  // bias_grad[i] = sum_l op(A)[i][l]
    const std::int64_t rows = a.shape().rows(), cols = a.shape().cols();
    if (config.transpose_a == Transpose::Yes) {
      column_sums<ATag>(a.data(), rows, cols, bias_grad);
    } else {
      row_sums<ATag>(a.data(), rows, cols, bias_grad);
    }
  } else if (epilogue == Epilogue::BGradB) {  // bias_grad[j] = sum_l op(B)[l][j]
    const std::int64_t rows = b.shape().rows(), cols = b.shape().cols();
    if (config.transpose_b == Transpose::Yes) {
      row_sums<BTag>(b.data(), rows, cols, bias_grad);
    } else {
      column_sums<BTag>(b.data(), rows, cols, bias_grad);
    }
  }
}

}  // namespace detail

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
  detail::gemm_widened<Compute, Compute, Fp32Accumulation>("mpx::cpu::gemm", a, b, d, config, operands,
                                                           static_cast<Acc>(config.alpha));
}

/// @brief `gemm` of operands in two formats, each stored scaled (FP8 GEMM inputs: a tensor times its
/// scale, then cast): D = epilogue(alpha * a_scale_inverse * b_scale_inverse * op(A) op(B) + beta *
/// C), the three factors multiplied in that order in fp32, then applied to each fp32 sum. The
/// inverse scales are read from the device's memory when the GEMM runs, as cuBLASLt's
/// `CUBLASLT_MATMUL_DESC_A_SCALE_POINTER` and `B_SCALE_POINTER` are. The operands are
/// decoded exactly to fp32 (a product of two FP8 values is exact in fp32) and their products summed
/// as `Accumulation` says (numeric/accumulation.hpp): under `Fp32Accumulation` (the default) by the
/// fp32 GEMM, in its order; under `HopperFp8FastAccumulation`, `PromotedAccumulation<>` or any other
/// model, from zero along k exactly as `Accumulation::accumulate` sums each output (up to 10 times
/// slower than the fp32 GEMM). D holds fp32 or any 16-bit format.
/// @code
/// // y = (x8 w8^T) / (x_scale * w_scale) + b, in bf16: x8 [tokens, in] in E4M3, w8 [out, in] in E4M3
/// mpx::cpu::gemm_scaled<mpx::Float8E4M3, mpx::Float8E4M3>(x8, w8, y,
///     {.transpose_b = mpx::Transpose::Yes, .epilogue = mpx::Epilogue::Bias}, {.bias = &b},
///     &x_scale_inverse, &w_scale_inverse);
/// @endcode
template <NumericTag AFormat, NumericTag BFormat, AccumulationModel Accumulation = Fp32Accumulation,
          FloatingElement TD>
void gemm_scaled(const Tensor<storage_t<AFormat>, Host>& a, const Tensor<storage_t<BFormat>, Host>& b,
                 Tensor<TD, Host>& d, const GemmConfig& config, const GemmOperands<TD, float>& operands,
                 const float* a_scale_inverse, const float* b_scale_inverse) {
  static_assert(std::is_same_v<accumulate_t<AFormat>, float> && std::is_same_v<accumulate_t<BFormat>, float>,
                "mpx::cpu::gemm_scaled: the operand formats must accumulate in fp32");
  if (config.epilogue == Epilogue::BGradA || config.epilogue == Epilogue::BGradB) {
    // Their sums would be of the scaled codes; a bias gradient comes from the tensor before its cast.
    throw invalid_argument(mpx::detail::concat(
        "mpx::cpu::gemm_scaled: epilogue ", to_string(config.epilogue),
        " sums an operand's scaled codes; sum the tensor the operand was cast from instead"));
  }
  detail::gemm_widened<AFormat, BFormat, Accumulation>("mpx::cpu::gemm_scaled", a, b, d, config, operands,
                                                       config.alpha * *a_scale_inverse * *b_scale_inverse);
}

}  // namespace mpx::cpu
