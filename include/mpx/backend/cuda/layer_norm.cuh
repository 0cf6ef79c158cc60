// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief LayerNorm over the last dimension on the GPU, with mpx::cpu::layer_norm_*'s contracts and
/// formulas: two-pass statistics and all math in the accumulate type, input and output in the
/// compute type, parameters read in their own (master) type, dgamma and dbeta accumulated (+=).
///
/// Forward and dx use one block per row. dgamma and dbeta are column sums over rows, reduced
/// deterministically: each block sums a fixed range of rows per column into a partial, and one more
/// pass adds the partials, in order, into dgamma and dbeta.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/layer_norm.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/cuda/reduce.cuh"
#include "mpx/backend/layer_norm_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

template <class T, class Weight, class Acc>
__global__ void layer_norm_forward_kernel(const T* x, const Weight* gamma, const Weight* beta, float epsilon,
                                          std::int64_t features, T* y, Acc* mean, Acc* rstd) {
  const std::int64_t row = blockIdx.x;
  const T* in = x + row * features;
  Acc local = 0;
  for (std::int64_t f = threadIdx.x; f < features; f += blockDim.x) local += static_cast<Acc>(in[f]);
  const Acc mu = block_reduce(local, Plus{}) / static_cast<Acc>(features);
  local = 0;  // two-pass variance: no cancellation for rows with a large mean
  for (std::int64_t f = threadIdx.x; f < features; f += blockDim.x) {
    const Acc d = static_cast<Acc>(in[f]) - mu;
    local += d * d;
  }
  const Acc squares = block_reduce(local, Plus{});
  const Acc inv_std =
      static_cast<Acc>(1) / std::sqrt(squares / static_cast<Acc>(features) + static_cast<Acc>(epsilon));
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = inv_std;
  }
  T* out = y + row * features;
  for (std::int64_t f = threadIdx.x; f < features; f += blockDim.x) {
    const Acc normalized = (static_cast<Acc>(in[f]) - mu) * inv_std;
    out[f] = round_to<tag_of_t<T>>(normalized * static_cast<Acc>(gamma[f]) + static_cast<Acc>(beta[f]));
  }
}

// dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dy * gamma; one block per row.
template <class T, class Weight, class Acc>
__global__ void layer_norm_backward_dx_kernel(const T* x, const Weight* gamma, const Acc* mean,
                                              const Acc* rstd, const T* dy, std::int64_t features, T* dx) {
  const std::int64_t row = blockIdx.x;
  const T* in = x + row * features;
  const T* g = dy + row * features;
  const Acc mu = mean[row];
  const Acc inv_std = rstd[row];
  Acc local_dxhat = 0;
  Acc local_dxhat_xhat = 0;
  for (std::int64_t f = threadIdx.x; f < features; f += blockDim.x) {
    const Acc xhat = (static_cast<Acc>(in[f]) - mu) * inv_std;
    const Acc dxhat = static_cast<Acc>(g[f]) * static_cast<Acc>(gamma[f]);
    local_dxhat += dxhat;
    local_dxhat_xhat += dxhat * xhat;
  }
  const Acc mean_dxhat = block_reduce(local_dxhat, Plus{}) / static_cast<Acc>(features);
  const Acc mean_dxhat_xhat = block_reduce(local_dxhat_xhat, Plus{}) / static_cast<Acc>(features);
  T* out = dx + row * features;
  for (std::int64_t f = threadIdx.x; f < features; f += blockDim.x) {
    const Acc xhat = (static_cast<Acc>(in[f]) - mu) * inv_std;
    const Acc dxhat = static_cast<Acc>(g[f]) * static_cast<Acc>(gamma[f]);
    out[f] = round_to<tag_of_t<T>>(inv_std * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat));
  }
}

// Column sums of dy * xhat and dy over rows [chunk * rows_per_chunk, ...) in row order, one thread
// per feature (blockIdx.y is the chunk). With one chunk they go straight into dgamma and dbeta (+=);
// otherwise into partial_gamma / partial_beta[chunk * features + f].
template <class T, class Acc>
__global__ void layer_norm_backward_params_kernel(const T* x, const Acc* mean, const Acc* rstd, const T* dy,
                                                  std::int64_t rows, std::int64_t features,
                                                  std::int64_t rows_per_chunk, Acc* partial_gamma,
                                                  Acc* partial_beta, Acc* dgamma, Acc* dbeta) {
  const std::int64_t f = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (f >= features) return;
  const std::int64_t chunk = blockIdx.y;
  const std::int64_t begin = chunk * rows_per_chunk;
  const std::int64_t end = std::min(begin + rows_per_chunk, rows);
  Acc sum_gamma = 0;
  Acc sum_beta = 0;
  for (std::int64_t r = begin; r < end; ++r) {
    const std::int64_t index = r * features + f;
    const Acc xhat = (static_cast<Acc>(x[index]) - mean[r]) * rstd[r];
    sum_gamma += static_cast<Acc>(dy[index]) * xhat;
    sum_beta += static_cast<Acc>(dy[index]);
  }
  if (gridDim.y == 1) {
    dgamma[f] += sum_gamma;
    dbeta[f] += sum_beta;
  } else {
    partial_gamma[chunk * features + f] = sum_gamma;
    partial_beta[chunk * features + f] = sum_beta;
  }
}

// dgamma[f] += sum over chunks of partial_gamma[chunk, f], in chunk order; likewise dbeta.
template <class Acc>
__global__ void layer_norm_backward_sum_partials_kernel(const Acc* partial_gamma, const Acc* partial_beta,
                                                        std::int64_t chunks, std::int64_t features,
                                                        Acc* dgamma, Acc* dbeta) {
  const std::int64_t f = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (f >= features) return;
  Acc sum_gamma = 0;
  Acc sum_beta = 0;
  for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
    sum_gamma += partial_gamma[chunk * features + f];
    sum_beta += partial_beta[chunk * features + f];
  }
  dgamma[f] += sum_gamma;
  dbeta[f] += sum_beta;
}

/// How layer_norm_backward splits rows for the parameter gradients: at least 32 rows per chunk and at
/// most 64 chunks. It depends on the shape only, so the sums' order (and bits) never change.
struct RowChunks {
  std::int64_t count;           ///< number of chunks
  std::int64_t rows_per_chunk;  ///< rows in each chunk but the last
};

/// The chunks for `rows` rows.
inline RowChunks layer_norm_row_chunks(std::int64_t rows) {
  constexpr std::int64_t min_rows = 32;
  constexpr std::int64_t max_chunks = 64;
  const std::int64_t chunks = std::clamp<std::int64_t>((rows + min_rows - 1) / min_rows, 1, max_chunks);
  const std::int64_t per_chunk = (rows + chunks - 1) / chunks;
  return {(rows + per_chunk - 1) / per_chunk, per_chunk};
}

}  // namespace detail

/// @brief y = (x - mean) * rstd * gamma + beta per row; saves mean and rstd for backward.
/// @param x     [rows, features] in the compute type (leading dimensions fold into rows).
/// @param gamma, beta [features], any element type (the master weights).
/// @param epsilon added to the variance.
/// @param y     [rows, features] in the compute type, written.
/// @param mean, rstd  [rows] in the accumulate type (float or double), written.
template <Element T, Element Weight, Element Acc>
void layer_norm_forward(const Tensor<T, Cuda>& x, const Tensor<Weight, Cuda>& gamma,
                        const Tensor<Weight, Cuda>& beta, float epsilon, Tensor<T, Cuda>& y,
                        Tensor<Acc, Cuda>& mean, Tensor<Acc, Cuda>& rstd) {
  static_assert(std::is_floating_point_v<Acc>,
                "mpx::cuda::layer_norm_forward: accumulate in float or double");
  constexpr const char* where = "mpx::cuda::layer_norm_forward";
  const std::int64_t rows = x.shape().rows();
  const std::int64_t features = x.shape().cols();
  validate_layer_norm_forward(where, x, gamma, beta, y, mean, rstd);
  if (rows == 0) return;
  detail::layer_norm_forward_kernel<<<static_cast<unsigned>(rows), detail::row_threads(features), 0,
                                      detail::stream()>>>(x.data(), gamma.data(), beta.data(), epsilon,
                                                          features, y.data(), mean.data(), rstd.data());
  MPX_CUDA_CHECK_LAUNCH("layer_norm_forward_kernel");
}

/// @brief dx from dy, and dgamma, dbeta accumulated (+=) so that micro-batches add up.
///
/// With more than 32 rows the parameter gradients go through partial sums in a device scratch buffer
/// that is kept per thread and per layer (keyed by dgamma) and grown on demand (detail::scratch), so repeated
/// calls of the same size allocate nothing and may be captured in a CUDA graph.
template <Element T, Element Weight, Element Acc>
void layer_norm_backward(const Tensor<T, Cuda>& x, const Tensor<Weight, Cuda>& gamma,
                         const Tensor<Acc, Cuda>& mean, const Tensor<Acc, Cuda>& rstd,
                         const Tensor<T, Cuda>& dy, Tensor<T, Cuda>& dx, Tensor<Acc, Cuda>& dgamma,
                         Tensor<Acc, Cuda>& dbeta) {
  static_assert(std::is_floating_point_v<Acc>,
                "mpx::cuda::layer_norm_backward: accumulate in float or double");
  constexpr const char* where = "mpx::cuda::layer_norm_backward";
  const std::int64_t rows = x.shape().rows();
  const std::int64_t features = x.shape().cols();
  validate_layer_norm_backward(where, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
  if (rows == 0 || features == 0) return;

  detail::layer_norm_backward_dx_kernel<<<static_cast<unsigned>(rows), detail::row_threads(features), 0,
                                          detail::stream()>>>(x.data(), gamma.data(), mean.data(),
                                                              rstd.data(), dy.data(), features, dx.data());
  MPX_CUDA_CHECK_LAUNCH("layer_norm_backward_dx_kernel");

  const detail::RowChunks chunks = detail::layer_norm_row_chunks(rows);
  constexpr int threads = 256;
  const auto feature_blocks = static_cast<unsigned>((features + threads - 1) / threads);
  Acc* partial_gamma = nullptr;
  Acc* partial_beta = nullptr;
  if (chunks.count > 1) {
    partial_gamma = detail::scratch<Acc>(dgamma.data(), 2 * chunks.count * features);
    partial_beta = partial_gamma + chunks.count * features;
  }
  detail::layer_norm_backward_params_kernel<<<dim3(feature_blocks, static_cast<unsigned>(chunks.count)),
                                              threads, 0, detail::stream()>>>(
      x.data(), mean.data(), rstd.data(), dy.data(), rows, features, chunks.rows_per_chunk, partial_gamma,
      partial_beta, dgamma.data(), dbeta.data());
  MPX_CUDA_CHECK_LAUNCH("layer_norm_backward_params_kernel");
  if (chunks.count > 1) {
    detail::layer_norm_backward_sum_partials_kernel<<<feature_blocks, threads, 0, detail::stream()>>>(
        partial_gamma, partial_beta, chunks.count, features, dgamma.data(), dbeta.data());
    MPX_CUDA_CHECK_LAUNCH("layer_norm_backward_sum_partials_kernel");
  }
}

}  // namespace mpx::cuda
