// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The CPU GEMM's products summed as an accumulator model says (numeric/accumulation.hpp):
/// `TruncatedAccumulation` (Hopper's FP8 fast accumulation) and `PromotedAccumulation` of it (TE's
/// split accumulator) vectorised, any other model through its scalar reference.
///
/// The operands are decoded once per GEMM into fp32 values and alignment exponents, op(A) row by row
/// and op(B) in blocks of 16 columns, so that one output row's 16 columns are summed as one vector
/// per group: the group's largest exponent, then each term over the quantum 2^(E - FractionalBits)
/// truncated to an integer (`cvttps2dq`), the integers added, the sum scaled back and cut to
/// `ResultBits`. Every step is exact in fp32 while E stays inside fp32's normal range around the
/// quantum, which 8-bit operands guarantee (FP8 products' exponents are at least -32; operands of
/// more bits take the scalar model throughout); an output
/// whose group leaves it (a tiny accumulator meeting only zero products), and every GEMM with a NaN
/// or infinite operand, is summed by the model's scalar function instead. The result equals
/// `Model::accumulate` element by element, bit for bit (tests/unit/gemm_cpu_test.cpp, [accumulation]).

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/numeric/accumulation.hpp"
#include "mpx/numeric/traits.hpp"

// The vectorised kernel is written with GCC's and Clang's vector extensions. nvcc's front end, which
// compiles the host code of .cu files, has none: there the models' scalar functions sum every output.
#if defined(__GNUC__) && !defined(__CUDACC__)
#define MPX_DETAIL_LANE_VECTORS 1
#else
#define MPX_DETAIL_LANE_VECTORS 0
#endif

namespace mpx::cpu::detail {

// The vector width of the modelled kernel: 16 fp32 lanes, one AVX-512 register (two AVX2 ones).
inline constexpr std::int64_t model_lanes = 16;

// What the vectorised kernel needs to know of a model: a TruncatedAccumulation (interval 0) or a
// PromotedAccumulation of one; `vectorised` is false for every other model.
template <class Model>
struct TruncatedKernel {
  static constexpr bool vectorised = false;
};
template <int FractionalBits, std::size_t Group, int ResultBits>
struct TruncatedKernel<TruncatedAccumulation<FractionalBits, Group, ResultBits>> {
  // Every integer sum must stay exact in fp32: Group + 1 terms below 2^(FractionalBits + 2) each.
  static constexpr bool vectorised =
      MPX_DETAIL_LANE_VECTORS != 0 && FractionalBits + 2 + std::bit_width(Group + 1) <= 24;
  static constexpr int fractional_bits = FractionalBits, result_bits = ResultBits;
  static constexpr std::int64_t group = static_cast<std::int64_t>(Group), interval = 0;
};
template <std::size_t Interval, class Inner>
struct TruncatedKernel<PromotedAccumulation<Interval, Inner>> : TruncatedKernel<Inner> {
  static constexpr std::int64_t interval = static_cast<std::int64_t>(Interval);
  static constexpr bool vectorised =
      TruncatedKernel<Inner>::vectorised && TruncatedKernel<Inner>::interval == 0;
};

// An operand decoded for the modelled kernel: op(X)'s fp32 values and their alignment exponents,
// row-major (op(A): a row's k values contiguous) or in panels of 16 columns (op(B): panel p holds
// columns 16p .. 16p + 15, each of its rows' 16 values contiguous, so that the kernel reads a panel
// front to back); `finite` is false when any value is NaN or infinite.
struct AlignedOperand {
  std::vector<float> values;
  std::vector<std::int32_t> exponents;
  std::int64_t rows = 0, cols = 0;
  bool panels = false;
  bool finite = true;
  // Where op(X)[r][c] is.
  [[nodiscard]] std::int64_t at(std::int64_t r, std::int64_t c) const noexcept {
    return panels ? (c / model_lanes) * rows * model_lanes + r * model_lanes + c % model_lanes : r * cols + c;
  }
};

// op(X) of a stored rows x cols matrix of Format (op = transpose when `transposed`), decoded into an
// AlignedOperand; the padding columns of the last panel are zeros. Stored rows are decoded in
// parallel, then the exponents read off the values in a vectorised pass.
template <NumericTag Format>
AlignedOperand align_operand(const storage_t<Format>* stored, std::int64_t rows, std::int64_t cols,
                             bool transposed, bool panels) {
  AlignedOperand out;
  out.rows = transposed ? cols : rows;
  out.cols = transposed ? rows : cols;
  out.panels = panels;
  const std::int64_t padded_cols =
      panels ? (out.cols + model_lanes - 1) / model_lanes * model_lanes : out.cols;
  const std::int64_t size = out.rows * padded_cols;
  out.values.assign(static_cast<std::size_t>(size), 0.0f);
  out.exponents.resize(static_cast<std::size_t>(size));
  float* values = out.values.data();
  const bool contiguous = !transposed && !panels;
  parallel_for_chunks(rows, rows_per_chunk(cols), [&](std::int64_t first, std::int64_t end) {
    std::vector<float> row(contiguous ? 0 : static_cast<std::size_t>(cols));
    for (std::int64_t r = first; r < end; ++r) {
      if (contiguous) {
        widen_range<Format>(stored + r * cols, values + r * cols, 0, cols);
        continue;
      }
      widen_range<Format>(stored + r * cols, row.data(), 0, cols);
      for (std::int64_t c = 0; c < cols; ++c) values[transposed ? out.at(c, r) : out.at(r, c)] = row[c];
    }
  });
  std::int32_t* exponents = out.exponents.data();
  const std::int64_t chunks = (size + parallel_grain - 1) / parallel_grain;
  std::vector<char> finite(static_cast<std::size_t>(std::max<std::int64_t>(chunks, 1)), 1);
  parallel_for_chunks(size, parallel_grain, [&](std::int64_t first, std::int64_t end) {
    // Any exponent field of 255 is a NaN or an infinity.
    std::int32_t non_finite = 0;
    MPX_DETAIL_OMP_SIMD
    for (std::int64_t i = first; i < end; ++i) {
      exponents[i] = mpx::detail::alignment_exponent<Format>(values[i]);
      non_finite |= static_cast<std::int32_t>((std::bit_cast<std::uint32_t>(values[i]) >> 23) & 0xffu) == 255;
    }
    finite[static_cast<std::size_t>(first / parallel_grain)] = non_finite == 0;
  });
  out.finite = std::all_of(finite.begin(), finite.end(), [](char f) { return f != 0; });
  return out;
}

#if MPX_DETAIL_LANE_VECTORS
// 16 fp32 or int32 lanes as one value (GCC's and Clang's vector extensions: one AVX-512 register,
// two AVX2 ones), so that a block's accumulators stay in registers across its k loop.
using FloatLanes = float __attribute__((vector_size(4 * model_lanes)));
using IntLanes = std::int32_t __attribute__((vector_size(4 * model_lanes)));

// Loads the lanes from p (any alignment). Into a reference rather than returned: built without
// AVX-512, GCC warns that returning a 64-byte vector changes the ABI (-Wpsabi).
template <class Lanes, class Element>
inline void load_lanes(Lanes& lanes, const Element* p) noexcept {
  static_assert(sizeof(Lanes) == model_lanes * sizeof(Element));
  std::memcpy(&lanes, p, sizeof lanes);
}

// For each of `Rows` rows r of op(A) (a + r * lda, their exponents likewise), acc[r] plus the
// products of a[r][k] and the 16 columns b[k][0 .. 16) for k in [0, count), a group of
// Kernel::group at a time from k = 0, as TruncatedAccumulation does lane by lane. The rows share each
// load of b. Returns false when a lane's group fell outside the range where fp32 holds every step
// exactly (the caller then sums those outputs with the scalar model).
template <class Kernel, int Rows>
bool add_truncated_groups(const float* a, const std::int32_t* a_exponents, std::int64_t lda, const float* b,
                          const std::int32_t* b_exponents, std::int64_t ldb, std::int64_t count,
                          FloatLanes (&acc)[Rows]) {
  constexpr std::int32_t fraction = Kernel::fractional_bits;
  constexpr std::int32_t lowest = fraction - 126;  // below it, 2^(fraction - E) overflows fp32's exponent
  constexpr std::int32_t result_mask = ~((std::int32_t{1} << (23 - Kernel::result_bits)) - 1);
  constexpr std::int32_t none = mpx::detail::no_alignment_exponent;
  IntLanes out_of_range = {};
  for (std::int64_t first = 0; first < count; first += Kernel::group) {
    const std::int64_t last = std::min(count, first + Kernel::group);
    // Each lane's largest exponent: the accumulator's (none for zero), then each product's.
    IntLanes largest[Rows];
#pragma GCC unroll 8
    for (int r = 0; r < Rows; ++r) {
      const auto bits = reinterpret_cast<IntLanes>(acc[r]);
      IntLanes exponent = ((bits >> 23) & 0xff) - 127;
      exponent = exponent > -126 ? exponent : -126;
      largest[r] = (bits & 0x7fffffff) == 0 ? none : exponent;
    }
    for (std::int64_t k = first; k < last; ++k) {
      IntLanes eb;
      load_lanes(eb, b_exponents + k * ldb);
#pragma GCC unroll 8
      for (int r = 0; r < Rows; ++r) {
        const IntLanes e = eb + a_exponents[r * lda + k];
        largest[r] = e > largest[r] ? e : largest[r];
      }
    }
    // Each term over the quantum 2^(E - fraction), truncated to an integer; the integers added.
    FloatLanes scale[Rows], unscale[Rows];
    IntLanes sum[Rows];
#pragma GCC unroll 8
    for (int r = 0; r < Rows; ++r) {
      // A lane whose terms are all zero has a largest exponent near `none`: its sum is 0.
      out_of_range |= (largest[r] < lowest) & (largest[r] > none / 2);
      const IntLanes e = largest[r] > lowest ? largest[r] : lowest;
      scale[r] = reinterpret_cast<FloatLanes>((127 + fraction - e) << 23);
      unscale[r] = reinterpret_cast<FloatLanes>((127 - fraction + e) << 23);
      sum[r] = __builtin_convertvector(acc[r] * scale[r], IntLanes);  // toward zero
    }
    for (std::int64_t k = first; k < last; ++k) {
      FloatLanes bv;
      load_lanes(bv, b + k * ldb);
#pragma GCC unroll 8
      for (int r = 0; r < Rows; ++r) {
        // a * b is exact (FP8 products), and so is its scaling by a power of two unless it falls
        // below 1, where the truncation gives 0 whatever the rounding.
        sum[r] += __builtin_convertvector(a[r * lda + k] * bv * scale[r], IntLanes);
      }
    }
    // The sum (below 2^24: exact) scaled back, exact or infinite, cut to ResultBits fraction bits.
#pragma GCC unroll 8
    for (int r = 0; r < Rows; ++r) {
      const FloatLanes value = __builtin_convertvector(sum[r], FloatLanes) * unscale[r];
      acc[r] = reinterpret_cast<FloatLanes>(reinterpret_cast<IntLanes>(value) & result_mask);
    }
  }
  for (std::int64_t l = 0; l < model_lanes; ++l) {
    if (out_of_range[l] != 0) return false;
  }
  return true;
}

// The outputs of `Rows` rows of op(A) from `row` and 16 columns of op(B) from `column` under the
// vectorised Kernel: sums[r] (from zero; promoted into fp32 every Kernel::interval products).
template <class Kernel, int Rows>
bool modelled_block(const AlignedOperand& op_a, const AlignedOperand& op_b, std::int64_t k, std::int64_t row,
                    std::int64_t column, FloatLanes (&sums)[Rows]) {
  bool exact = true;
  const std::int64_t run = Kernel::interval > 0 ? Kernel::interval : std::max<std::int64_t>(k, 1);
  for (std::int64_t first = 0; first < k; first += run) {
    FloatLanes acc[Rows] = {};
    exact &= add_truncated_groups<Kernel, Rows>(
        op_a.values.data() + op_a.at(row, first), op_a.exponents.data() + op_a.at(row, first), op_a.cols,
        op_b.values.data() + op_b.at(first, column), op_b.exponents.data() + op_b.at(first, column),
        model_lanes, std::min(run, k - first), acc);
    for (int r = 0; r < Rows; ++r) sums[r] = first == 0 ? acc[r] : sums[r] + acc[r];
  }
  return exact;
}

// The outputs of `rows` (at most Rows) rows of op(A) from `row` and 16 columns of op(B) from
// `column`, into sums[r][l]: Rows rows at once, or row by row for a last, shorter block.
template <class Kernel, int Rows>
bool vectorised_block(const AlignedOperand& op_a, const AlignedOperand& op_b, std::int64_t k,
                      std::int64_t row, std::int64_t rows, std::int64_t column,
                      float (&sums)[Rows][model_lanes]) {
  bool exact = true;
  if (rows == Rows) {
    FloatLanes block[Rows];
    exact = modelled_block<Kernel, Rows>(op_a, op_b, k, row, column, block);
    std::memcpy(sums, block, sizeof block);
  } else {
    for (std::int64_t r = 0; r < rows; ++r) {
      FloatLanes one_row[1];
      exact &= modelled_block<Kernel, 1>(op_a, op_b, k, row + r, column, one_row);
      std::memcpy(sums[r], one_row, sizeof one_row);
    }
  }
  return exact;
}
#else
template <class Kernel, int Rows>
bool vectorised_block(const AlignedOperand& op_a, const AlignedOperand& op_b, std::int64_t k,
                      std::int64_t row, std::int64_t rows, std::int64_t column,
                      float (&sums)[Rows][model_lanes]);
#endif  // MPX_DETAIL_LANE_VECTORS

// values[i][j] = alpha * (the dot product of op(A) row i and op(B) column j under Model), for every
// matrix of the batch; `finish_row(row)` is called once a row is complete.
template <class Model, NumericTag ATag, NumericTag BTag, class FinishRow>
void modelled_product(const GemmShape& g, const GemmConfig& config, const storage_t<ATag>* a,
                      std::int64_t a_rows, std::int64_t a_cols, const storage_t<BTag>* b, std::int64_t b_rows,
                      std::int64_t b_cols, float* values, float alpha, const FinishRow& finish_row) {
  using Kernel = TruncatedKernel<Model>;
  const std::int64_t a_matrix = a_rows * a_cols / g.batch, b_matrix = b_rows * b_cols / g.batch;
  for (std::int64_t matrix = 0; matrix < g.batch; ++matrix) {
    const bool ta = config.transpose_a == Transpose::Yes, tb = config.transpose_b == Transpose::Yes;
    const AlignedOperand op_a =
        align_operand<ATag>(a + matrix * a_matrix, ta ? g.k : g.m, ta ? g.m : g.k, ta, false);
    const AlignedOperand op_b =
        align_operand<BTag>(b + matrix * b_matrix, tb ? g.n : g.k, tb ? g.k : g.n, tb, true);
    // The kernel's exactness needs products exact in fp32 and exponents far from its limits: 8-bit
    // operands (FP8, FP6, FP4 stored in a byte) have both; wider ones take the scalar model.
    constexpr bool eight_bit_operands = sizeof(storage_t<ATag>) == 1 && sizeof(storage_t<BTag>) == 1;
    const bool vectorised = Kernel::vectorised && eight_bit_operands && op_a.finite && op_b.finite;
    float* out = values + matrix * g.m * g.n;
    // The scalar model on one output: op(A)'s row is contiguous, op(B)'s column is gathered.
    const auto scalar_output = [&](std::int64_t i, std::int64_t j, std::vector<float>& column) {
      for (std::int64_t k = 0; k < g.k; ++k) column[static_cast<std::size_t>(k)] = op_b.values[op_b.at(k, j)];
      const std::span<const float> row(op_a.values.data() + op_a.at(i, 0), static_cast<std::size_t>(g.k));
      return Model::template accumulate<ATag, BTag>(0.0f, row, column);
    };
    // Blocks of `block_rows` rows (the last block row by row), 16 columns at a time.
    constexpr std::int64_t block_rows = 8;
    const std::int64_t row_blocks = (g.m + block_rows - 1) / block_rows;
    parallel_for_chunks(row_blocks, 1, [&](std::int64_t first_block, std::int64_t end_block) {
      std::vector<float> column(static_cast<std::size_t>(g.k));
      for (std::int64_t block = first_block; block < end_block; ++block) {
        const std::int64_t first_row = block * block_rows, rows = std::min(block_rows, g.m - first_row);
        for (std::int64_t j = 0; j < g.n; j += model_lanes) {
          float sums[block_rows][model_lanes] = {};
          bool exact = false;
          if constexpr (Kernel::vectorised) {
            if (vectorised)
              exact = vectorised_block<Kernel, block_rows>(op_a, op_b, g.k, first_row, rows, j, sums);
          }
          for (std::int64_t r = 0; r < rows; ++r) {
            for (std::int64_t l = 0; l < std::min(model_lanes, g.n - j); ++l) {
              const std::int64_t i = first_row + r;
              const float sum = exact ? sums[r][l] : scalar_output(i, j + l, column);
              out[i * g.n + j + l] = alpha * sum;
            }
          }
        }
        for (std::int64_t r = 0; r < rows; ++r) finish_row(matrix * g.m + first_row + r);
      }
    });
  }
}

}  // namespace mpx::cpu::detail
