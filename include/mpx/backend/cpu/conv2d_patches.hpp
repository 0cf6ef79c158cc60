// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief 2-D convolution on the CPU as patch gathers feeding mpx's own GEMM (`cpu::gemm`), so a
/// convolution keeps the GEMM's numerics contract (operands in the compute type, exact products,
/// one accumulate-type sum per output element, rounded once) and runs on the same kernel
/// (oneDNN's or Eigen's, gemm_kernel.hpp). Geometry and layouts: backend/conv2d_spec.hpp. What
/// `cpu::conv2d_*` (conv2d.hpp) run where oneDNN's convolutions are not there (a build without
/// oneDNN, fp64, a geometry oneDNN has only reference code for); callable directly as a reference.
///
/// Each pass is one GEMM per group over a patch matrix, built for a fixed block of rows at a time
/// (`conv2d_block_rows`, a function of the geometry alone, so the results do not depend on the
/// number of threads) to keep the patches about 2^20 elements whatever the batch:
///   forward      y[rows, O/g]     = patches(x)[rows, KH KW C/g] · W_g^T           (+ bias)
///   input grad   dx[pixels, C/g]  = patches(dy)[pixels, KH KW O/g] · W'_g          (W'_g: W_g's taps
///                                   as rows), a gather over the output positions that read each
///                                   input pixel, so every dx element is one sum, rounded once
///   weight grad  dW_g[O/g, KH KW C/g] += dy_g[rows, O/g]^T · patches(x)[rows, KH KW C/g]  (fp32)
///   (the bias gradient, a plain sum over dy, is conv2d.hpp's conv2d_backward_bias)

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "mpx/backend/conv2d_spec.hpp"
#include "mpx/backend/cpu/gemm.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief Rows of a pass's patch matrix built at a time: about 2^20 patch elements, at least one
/// row; fixed by the row count and patch width alone.
[[nodiscard]] inline std::int64_t conv2d_block_rows(std::int64_t rows, std::int64_t patch) {
  constexpr std::int64_t target = std::int64_t{1} << 20;
  return std::clamp<std::int64_t>(target / std::max<std::int64_t>(1, patch), 1,
                                  std::max<std::int64_t>(1, rows));
}

namespace detail {

// patches[r - first, (kh KW + kw) Cg + c] = x[n, oh s - p + kh d, ow s - p + kw d, group Cg + c] for the
// output rows r = (n OH + oh) OW + ow in [first, first + count), 0 where the tap is in the padding.
template <class T>
void gather_input_patches(const T* x, const Conv2dGeometry& g, std::int64_t group, std::int64_t first,
                          std::int64_t count, T* patches) {
  const Size2d out = g.output();
  const std::int64_t cg = g.group_in_channels();
  const std::int64_t width = g.patch_size();
  parallel_for_chunks(count, rows_per_chunk(width), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int64_t r = first + i;
      const std::int64_t ow = r % out.w, oh = (r / out.w) % out.h, n = r / (out.w * out.h);
      T* row = patches + i * width;
      for (std::int64_t kh = 0; kh < g.window.kernel.h; ++kh) {
        const std::int64_t h = g.window.input_row(oh, kh);
        for (std::int64_t kw = 0; kw < g.window.kernel.w; ++kw) {
          const std::int64_t w = g.window.input_column(ow, kw);
          T* tap = row + (kh * g.window.kernel.w + kw) * cg;
          if (h < 0 || h >= g.input.h || w < 0 || w >= g.input.w) {
            std::fill(tap, tap + cg, T(0));
          } else {
            const T* pixel = x + ((n * g.input.h + h) * g.input.w + w) * g.in_channels + group * cg;
            std::memcpy(tap, pixel, static_cast<std::size_t>(cg) * sizeof(T));
          }
        }
      }
    }
  });
}

// patches[p - first, (kh KW + kw) Og + o] = dy[n, oh, ow, group Og + o] for the input pixels
// p = (n H + h) W + w in [first, first + count), where (oh, ow) is the output whose window reads
// (h, w) through tap (kh, kw): oh = (h + pad - kh dil) / stride when that divides and lies in
// [0, OH) (the same for ow); 0 where no output does.
template <class T>
void gather_output_gradient_patches(const T* dy, const Conv2dGeometry& g, std::int64_t group,
                                    std::int64_t first, std::int64_t count, T* patches) {
  const Size2d out = g.output();
  const std::int64_t og = g.group_out_channels();
  const std::int64_t width = g.window.kernel.h * g.window.kernel.w * og;
  parallel_for_chunks(count, rows_per_chunk(width), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int64_t p = first + i;
      const std::int64_t w = p % g.input.w, h = (p / g.input.w) % g.input.h, n = p / (g.input.w * g.input.h);
      T* row = patches + i * width;
      for (std::int64_t kh = 0; kh < g.window.kernel.h; ++kh) {
        const std::int64_t oh = g.window.output_row(h, kh, out.h);
        for (std::int64_t kw = 0; kw < g.window.kernel.w; ++kw) {
          const std::int64_t ow = g.window.output_column(w, kw, out.w);
          T* tap = row + (kh * g.window.kernel.w + kw) * og;
          if (oh < 0 || ow < 0) {
            std::fill(tap, tap + og, T(0));
          } else {
            const T* pixel = dy + ((n * out.h + oh) * out.w + ow) * g.out_channels + group * og;
            std::memcpy(tap, pixel, static_cast<std::size_t>(og) * sizeof(T));
          }
        }
      }
    }
  });
}

// block[r, c] = matrix[first + r, column + c] for `columns` columns of a row-major matrix `stride` wide.
template <class T>
void copy_columns(const T* matrix, std::int64_t stride, std::int64_t first, std::int64_t rows,
                  std::int64_t column, std::int64_t columns, T* block) {
  for (std::int64_t r = 0; r < rows; ++r) {
    std::memcpy(block + r * columns, matrix + (first + r) * stride + column,
                static_cast<std::size_t>(columns) * sizeof(T));
  }
}

// matrix[first + r, column + c] = block[r, c]: the reverse of copy_columns.
template <class T>
void place_columns(const T* block, std::int64_t rows, std::int64_t columns, T* matrix, std::int64_t stride,
                   std::int64_t first, std::int64_t column) {
  for (std::int64_t r = 0; r < rows; ++r) {
    std::memcpy(matrix + (first + r) * stride + column, block + r * columns,
                static_cast<std::size_t>(columns) * sizeof(T));
  }
}

// A working buffer of `count` elements, as a tensor so that memory_stats<Host>() counts it.
template <class T>
Tensor<T, Host> scratch(std::int64_t count) {
  return Tensor<T, Host>::uninitialized(Shape{count});
}

// Whether x [N H W, C] is the patch matrix itself: a 1 x 1 kernel with stride 1, no padding, one group
// reads each pixel as its patch, so no gather is needed.
inline bool input_is_patch_matrix(const Conv2dGeometry& g) {
  return g.window.kernel == Size2d{1} && g.window.stride == Size2d{1} && g.window.padding == Size2d{0} &&
         g.groups == 1;
}

// Rows [first, first + count) of a row-major matrix `columns` wide at `data`, as a 2-D view.
template <class T>
Tensor<T, Host> matrix_rows(const T* data, std::int64_t first, std::int64_t count, std::int64_t columns) {
  return Tensor<T, Host>::view(const_cast<T*>(data) + first * columns, Shape{count, columns});
}

inline void check_conv2d_tensors(const char* where, const Conv2dGeometry& g, const Shape& x, const Shape& w,
                                 const Shape& y) {
  require_shape(where, "input", x, g.input_shape());
  require_shape(where, "weight", w, g.weight_shape());
  require_shape(where, "output", y, g.output_shape());
}

// The patch matrix of x for one group, a block of rows at a time: gathered into scratch sized for
// one block, or x's own rows where x is the patch matrix (input_is_patch_matrix). The forward and the
// weight gradient read the same blocks.
template <class T>
class InputPatches {
 public:
  InputPatches(const Tensor<T, Host>& x, const Conv2dGeometry& g, std::int64_t block_rows)
      : x_(x.data()),
        g_(g),
        width_(g.patch_size()),
        direct_(input_is_patch_matrix(g)),
        scratch_(scratch<T>(direct_ ? 0 : block_rows * width_)) {}

  // Rows [first, first + count) of group `group`'s patch matrix, [count, KH KW C / groups]; valid
  // until the next call.
  Tensor<T, Host> rows(std::int64_t group, std::int64_t first, std::int64_t count) {
    if (direct_) return matrix_rows(x_, first, count, width_);
    gather_input_patches(x_, g_, group, first, count, scratch_.data());
    return matrix_rows(scratch_.data(), 0, count, width_);
  }

 private:
  const T* x_;
  const Conv2dGeometry& g_;
  std::int64_t width_;
  bool direct_;
  Tensor<T, Host> scratch_;
};

}  // namespace detail

/// @brief y = conv2d(x, weight) (+ bias), channels-last, in the `Compute` precision with
/// accumulate-type sums rounded once into y (conv2d_spec.hpp).
/// @param x [N, H, W, C]; @param weight [O, KH, KW, C / groups]; @param bias [O] or null;
/// @param y [N, OH, OW, O], written; @param geometry the sizes, the kernel and how it moves.
/// @throws mpx::shape_error naming the tensor and both shapes when one does not fit `geometry`.
template <NumericTag Compute, class T = storage_t<Compute>>
void conv2d_forward_by_patches(const Tensor<T, Host>& x, const Tensor<T, Host>& weight,
                               const Tensor<T, Host>* bias, Tensor<T, Host>& y,
                               const Conv2dGeometry& geometry) {
  constexpr const char* where = "mpx::cpu::conv2d_forward_by_patches";
  detail::check_conv2d_tensors(where, geometry, x.shape(), weight.shape(), y.shape());
  if (bias != nullptr) require_shape(where, "bias", bias->shape(), Shape{geometry.out_channels});
  const std::int64_t rows = y.shape().rows();
  const std::int64_t og = geometry.group_out_channels();
  const std::int64_t block = conv2d_block_rows(rows, geometry.patch_size());
  detail::InputPatches<T> patches(x, geometry, std::min(block, rows));
  // With several groups each GEMM writes its group's columns into a block of its own first.
  auto out_block = detail::scratch<T>(geometry.groups > 1 ? std::min(block, rows) * og : 0);
  const GemmConfig config{.transpose_b = Transpose::Yes,
                          .epilogue = bias ? Epilogue::Bias : Epilogue::Default};
  for (std::int64_t group = 0; group < geometry.groups; ++group) {
    const auto w_g = detail::matrix_rows(weight.data(), group * og, og, geometry.patch_size());
    std::optional<Tensor<T, Host>> bias_g;
    if (bias) bias_g.emplace(Tensor<T, Host>::view(const_cast<T*>(bias->data()) + group * og, Shape{og}));
    for (std::int64_t first = 0; first < rows; first += block) {
      const std::int64_t count = std::min(block, rows - first);
      auto d = geometry.groups == 1 ? detail::matrix_rows(y.data(), first, count, geometry.out_channels)
                                    : detail::matrix_rows(out_block.data(), 0, count, og);
      gemm<Compute>(patches.rows(group, first, count), w_g, d, config, {.bias = bias_g ? &*bias_g : nullptr});
      if (geometry.groups > 1) {
        detail::place_columns(out_block.data(), count, og, y.data(), geometry.out_channels, first,
                              group * og);
      }
    }
  }
}

/// @brief dx from dy (both channels-last) and the weight: each element one accumulate-type sum over
/// every (tap, output channel) that read it, rounded once into dx.
/// @param dy [N, OH, OW, O]; @param weight [O, KH, KW, C / groups]; @param dx [N, H, W, C], written;
/// @param geometry the sizes, the kernel and how it moves.
template <NumericTag Compute, class T = storage_t<Compute>>
void conv2d_backward_input_by_patches(const Tensor<T, Host>& dy, const Tensor<T, Host>& weight,
                                      Tensor<T, Host>& dx, const Conv2dGeometry& geometry) {
  constexpr const char* where = "mpx::cpu::conv2d_backward_input_by_patches";
  detail::check_conv2d_tensors(where, geometry, dx.shape(), weight.shape(), dy.shape());
  const std::int64_t taps = geometry.window.kernel.h * geometry.window.kernel.w;
  const std::int64_t cg = geometry.group_in_channels(), og = geometry.group_out_channels();
  const std::int64_t width = taps * og;  // the GEMM's K: every (tap, output channel) of the group
  const std::int64_t pixels = dx.shape().rows();
  const std::int64_t block = conv2d_block_rows(pixels, width);
  auto patches = detail::scratch<T>(std::min(block, pixels) * width);
  auto taps_weight = detail::scratch<T>(width * cg);  // W'_g [taps Og, Cg]
  auto out_block = detail::scratch<T>(geometry.groups > 1 ? std::min(block, pixels) * cg : 0);
  for (std::int64_t group = 0; group < geometry.groups; ++group) {
    // W'_g[(tap) Og + o, c] = W[group Og + o, tap, c]: the same values, rows ordered as the patches' columns.
    for (std::int64_t o = 0; o < og; ++o) {
      for (std::int64_t tap = 0; tap < taps; ++tap) {
        std::memcpy(taps_weight.data() + (tap * og + o) * cg,
                    weight.data() + ((group * og + o) * taps + tap) * cg,
                    static_cast<std::size_t>(cg) * sizeof(T));
      }
    }
    const auto b = detail::matrix_rows(taps_weight.data(), 0, width, cg);
    for (std::int64_t first = 0; first < pixels; first += block) {
      const std::int64_t count = std::min(block, pixels - first);
      detail::gather_output_gradient_patches(dy.data(), geometry, group, first, count, patches.data());
      const auto a = detail::matrix_rows(patches.data(), 0, count, width);
      if (geometry.groups == 1) {
        auto d = detail::matrix_rows(dx.data(), first, count, geometry.in_channels);
        gemm<Compute>(a, b, d, GemmConfig{});
      } else {
        auto d = detail::matrix_rows(out_block.data(), 0, count, cg);
        gemm<Compute>(a, b, d, GemmConfig{});
        detail::place_columns(out_block.data(), count, cg, dx.data(), geometry.in_channels, first,
                              group * cg);
      }
    }
  }
}

/// @brief The weight gradient in the accumulate type, dweight = dy^T patches(x) per group, added to
/// its contents (or written, when `overwrite`: the first micro-batch after `zero_grad`).
/// @param x [N, H, W, C]; @param dy [N, OH, OW, O]; @param dweight [O, KH, KW, C / groups];
/// @param overwrite write instead of add; @param geometry the sizes, the kernel and how it moves.
template <NumericTag Compute, class T = storage_t<Compute>, class Acc = accumulate_t<Compute>>
void conv2d_backward_weight_by_patches(const Tensor<T, Host>& x, const Tensor<T, Host>& dy,
                                       Tensor<Acc, Host>& dweight, bool overwrite,
                                       const Conv2dGeometry& geometry) {
  constexpr const char* where = "mpx::cpu::conv2d_backward_weight_by_patches";
  detail::check_conv2d_tensors(where, geometry, x.shape(), dweight.shape(), dy.shape());
  const std::int64_t rows = dy.shape().rows();
  const std::int64_t width = geometry.patch_size();
  const std::int64_t og = geometry.group_out_channels();
  const std::int64_t block = conv2d_block_rows(rows, width);
  detail::InputPatches<T> patches(x, geometry, std::min(block, rows));
  // With several groups the group's columns of dy are copied into a block of their own first.
  auto dy_block = detail::scratch<T>(geometry.groups > 1 ? std::min(block, rows) * og : 0);
  for (std::int64_t group = 0; group < geometry.groups; ++group) {
    auto dw_g = detail::matrix_rows(dweight.data(), group * og, og, width);
    for (std::int64_t first = 0; first < rows; first += block) {
      const std::int64_t count = std::min(block, rows - first);
      const T* g = dy.data() + first * geometry.out_channels;
      if (geometry.groups > 1) {
        detail::copy_columns(dy.data(), geometry.out_channels, first, count, group * og, og, dy_block.data());
        g = dy_block.data();
      }
      const bool first_write = overwrite && first == 0;
      gemm<Compute>(detail::matrix_rows(g, 0, count, og), patches.rows(group, first, count), dw_g,
                    GemmConfig{.transpose_a = Transpose::Yes, .beta = first_write ? 0.0f : 1.0f});
    }
  }
}

}  // namespace mpx::cpu
