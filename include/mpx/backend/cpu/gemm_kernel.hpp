// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The matrix product under `mpx::cpu::gemm`, and how one product is spread over the threads.
///
/// The kernel, `C = alpha op(A) op(B)` on the calling thread (C is written, never read), is, where mpx is
/// built with oneDNN
/// (`MPX_HAS_ONEDNN`, what linking `mpx::onednn` sets; docs/cpu_gemm.md says why oneDNN):
/// oneDNN's `dnnl_sgemm` for fp32 operands, and its bf16 matmul for bf16 operands
/// (onednn_bf16_matmul.hpp); otherwise, and for fp64, Eigen's blocked kernel.
///
/// A product is cut into tiles of D whose size follows from the shape alone, never from the number
/// of threads, and each tile is one kernel call on one thread: the tiles run in parallel and D's
/// bits are the same on 1 thread or 64. Each sum runs in the kernel's own order along k.

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
#include <oneapi/dnnl/dnnl.h>

#include "mpx/backend/cpu/onednn_bf16_matmul.hpp"
#endif

#include "mpx/backend/cpu/bf16_exactness.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/numeric/tags.hpp"

namespace mpx::cpu {

/// @brief The library under `mpx::cpu::gemm`'s fp32 products in this build: "oneDNN" (built with
/// `MPX_HAS_ONEDNN`, i.e. linked with `mpx::onednn`) or "Eigen".
inline constexpr const char* gemm_kernel_library =
#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
    "oneDNN";
#else
    "Eigen";
#endif

}  // namespace mpx::cpu

namespace mpx::cpu::detail {

/// Whether this build multiplies on oneDNN (`MPX_HAS_ONEDNN`).
inline constexpr bool built_with_onednn =
#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
    true;
#else
    false;
#endif

/// One product in row-major storage: C[m, n] = alpha op(A) op(B), op(A) m x k and op(B) k x n read
/// from row-major A (lda) and B (ldb), transposed where asked; A holds `In`, B holds `InB`, C holds
/// `Out`.
template <class In, class Out = In, class InB = In>
struct ProductView {
  bool transpose_a = false, transpose_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  const In* a = nullptr;
  std::int64_t lda = 0;
  const InB* b = nullptr;
  std::int64_t ldb = 0;
  Out* c = nullptr;
  std::int64_t ldc = 0;
  Out alpha = 1;

  /// The tile of rows [row, row + rows) and columns [col, col + cols) of C.
  [[nodiscard]] ProductView tile(std::int64_t row, std::int64_t rows, std::int64_t col,
                                 std::int64_t cols) const noexcept {
    ProductView t = *this;
    t.m = rows;
    t.n = cols;
    // Row i of op(A) starts at a + i lda in row-major A, at a + i in transposed A; column j of op(B)
    // at b + j in row-major B, at b + j ldb in transposed B.
    t.a = a + (transpose_a ? row : row * lda);
    t.b = b + (transpose_b ? col * ldb : col);
    t.c = c + row * ldc + col;
    return t;
  }
};

/// C = alpha op(A) op(B) with Eigen's blocked kernel on the calling thread, as Eigen's product runs
/// when it does not start threads of its own (Eigen::internal's entry point, as Eigen 3.4, which
/// CMakeLists.txt requires, declares it; the GEMM tests compare every path with an fp64 reference).
/// The kernel accumulates into C, so C is cleared first.
template <class Scalar>
void eigen_product_on_this_thread(const ProductView<Scalar>& p) {
  using Eigen::Index;
  for (Index row = 0; row < p.m; ++row) std::fill_n(p.c + row * p.ldc, p.n, Scalar(0));
  Eigen::internal::gemm_blocking_space<Eigen::RowMajor, Scalar, Scalar, Eigen::Dynamic, Eigen::Dynamic,
                                       Eigen::Dynamic>
      blocking(p.m, p.n, p.k, 1, true);
  const auto run = [&]<int LhsOrder, int RhsOrder>() {
    Eigen::internal::general_matrix_matrix_product<Index, Scalar, LhsOrder, false, Scalar, RhsOrder, false,
                                                   Eigen::RowMajor, 1>::run(p.m, p.n, p.k, p.a, p.lda, p.b,
                                                                            p.ldb, p.c, 1, p.ldc, p.alpha,
                                                                            blocking, nullptr);
  };
  constexpr int row = Eigen::RowMajor;
  constexpr int col = Eigen::ColMajor;
  if (!p.transpose_a && !p.transpose_b) run.template operator()<row, row>();
  if (!p.transpose_a && p.transpose_b) run.template operator()<row, col>();
  if (p.transpose_a && !p.transpose_b) run.template operator()<col, row>();
  if (p.transpose_a && p.transpose_b) run.template operator()<col, col>();
}

/// C = alpha op(A) op(B) on the calling thread (inside a parallel region oneDNN runs on the
/// calling thread alone, as OpenMP does not nest). 16-bit `In` only where `native_bf16_products`
/// said yes.
template <class In, class Out>
void product_on_this_thread(const ProductView<In, Out>& p) {
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0) {  // an empty sum
    for (std::int64_t row = 0; row < p.m; ++row) std::fill_n(p.c + row * p.ldc, p.n, Out(0));
    return;
  }
#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
  if constexpr (std::is_same_v<In, Eigen::bfloat16>) {
    // Key's members in order (nvcc's host pass rejects designators in an argument here).
    const onednn::Bf16Matmul::Key key{p.m,   p.n,           p.k,           p.lda,  p.ldb,
                                      p.ldc, p.transpose_a, p.transpose_b, p.alpha};
    onednn::bf16_matmul(key, p.a, p.b, p.c);
  } else if constexpr (std::is_same_v<In, float>) {
    // dnnl_sgemm is row-major, as mpx's tensors; with beta = 0 it does not read C.
    onednn::check(dnnl_sgemm(p.transpose_a ? 'T' : 'N', p.transpose_b ? 'T' : 'N', p.m, p.n, p.k, p.alpha,
                             p.a, p.lda, p.b, p.ldb, 0.0f, p.c, p.ldc),
                  "dnnl_sgemm");
  } else {
    eigen_product_on_this_thread(p);
  }
#else
  static_assert(std::is_same_v<In, Out>, "16-bit operands need oneDNN's bf16 matmul");
  eigen_product_on_this_thread(p);
#endif
}

/// Whether `gemm<Compute>` multiplies these operands as they are, in bf16 on oneDNN (a build with
/// oneDNN, bf16 operands, a CPU with bf16 dot products, and values for which those are exact:
/// onednn_bf16_matmul.hpp), instead of widening them to fp32 first.
template <class Compute, class S>
bool native_bf16_products([[maybe_unused]] const S* a, [[maybe_unused]] std::int64_t a_count,
                          [[maybe_unused]] const S* b, [[maybe_unused]] std::int64_t b_count,
                          [[maybe_unused]] float alpha) {
#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
  if constexpr (std::is_same_v<Compute, BFloat16>) {
    return onednn::has_native_bf16() && bf16_products_stay_normal(a, a_count, b, b_count, alpha);
  }
#endif
  return false;
}

/// Frees what the kernels keep per calling thread between calls (oneDNN's bf16 primitives).
inline void release_kernel_caches() noexcept {
#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
  onednn::release_bf16_matmuls();
#endif
}

/// How one product is cut into tiles of D: `rows` x `cols` (the last row and column of tiles may be
/// smaller). A function of the shape alone, so that the bits do not depend on the thread count.
struct ProductTiles {
  std::int64_t rows = 0, cols = 0;

  [[nodiscard]] std::int64_t count(std::int64_t m, std::int64_t n) const noexcept {
    return ((m + rows - 1) / rows) * ((n + cols - 1) / cols);
  }
};

/// Tiles of at most 256 x 1024, halved (the longer side first, to multiples of 16) until there are
/// 16 of them, while a tile keeps at least 64 rows and columns and 2^20 multiply-adds: enough tiles
/// to keep a few threads busy, each large enough that packing its operands costs little beside its
/// arithmetic.
inline ProductTiles product_tiles(std::int64_t m, std::int64_t n, std::int64_t k) {
  constexpr std::int64_t wanted_tiles = 16, smallest_side = 64, least_work = std::int64_t{1} << 20;
  ProductTiles tiles{std::max<std::int64_t>(1, std::min<std::int64_t>(m, 256)),
                     std::max<std::int64_t>(1, std::min<std::int64_t>(n, 1024))};
  const auto halved = [](std::int64_t side) { return (side / 2 + 15) / 16 * 16; };
  while (tiles.count(m, n) < wanted_tiles) {
    ProductTiles rows_halved{halved(tiles.rows), tiles.cols};
    ProductTiles cols_halved{tiles.rows, halved(tiles.cols)};
    const auto fits = [&](const ProductTiles& t) {
      return t.rows >= smallest_side && t.cols >= smallest_side && t.rows * t.cols * k >= least_work &&
             t.count(m, n) > tiles.count(m, n);
    };
    const bool rows_first = tiles.rows >= tiles.cols;
    const ProductTiles& first = rows_first ? rows_halved : cols_halved;
    const ProductTiles& second = rows_first ? cols_halved : rows_halved;
    if (fits(first)) {
      tiles = first;
    } else if (fits(second)) {
      tiles = second;
    } else {
      break;
    }
  }
  return tiles;
}

/// C = alpha op(A) op(B) for `batch` products at once (`product(i)` is the i-th), every tile of every
/// product on one thread by `run_tile(tile)`, the tiles in parallel.
template <class ProductOf, class RunTile>
void run_products(std::int64_t batch, const ProductOf& product, const RunTile& run_tile) {
  if (batch == 0) return;
  const auto first = product(0);
  const ProductTiles tiles = product_tiles(first.m, first.n, first.k);
  const std::int64_t row_tiles = (first.m + tiles.rows - 1) / tiles.rows;
  const std::int64_t col_tiles = (first.n + tiles.cols - 1) / tiles.cols;
  const std::int64_t per_product = row_tiles * col_tiles;
  run_tasks(batch * per_product, [&](std::int64_t index) {
    const std::int64_t tile = index % per_product;
    const std::int64_t row = tile / col_tiles * tiles.rows;
    const std::int64_t col = tile % col_tiles * tiles.cols;
    run_tile(product(index / per_product)
                 .tile(row, std::min(tiles.rows, first.m - row), col, std::min(tiles.cols, first.n - col)));
  });
}

}  // namespace mpx::cpu::detail
