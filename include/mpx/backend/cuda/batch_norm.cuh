// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Batch normalisation over the channels of a channels-last tensor on the GPU, with
/// mpx::cpu::batch_norm_*'s contracts and formulas (backend/batch_norm_spec.hpp): two-pass statistics
/// and all math in the accumulate type, input and output in the compute type, each result rounded once.
///
/// The per-channel sums over the rows of x [rows, C] are deterministic column sums in two passes,
/// their order fixed by the shape alone: the rows are cut into at most 256 tiles
/// (`channel_row_tiles`); a block of 32 channels x 8 row lanes sums one tile, each lane every 8th
/// row of it in order and the lanes then in lane order, into a partial per tile and channel (device
/// scratch, see reduce.cuh's `scratch`); a second kernel adds the partials in tile order the same way
/// and finishes the channel (the mean, the variance and rstd, or the gradients). No atomics; the same
/// bits on every run and every device. The elementwise passes (normalisation, dx) use one thread per
/// element.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/batch_norm.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "mpx/backend/batch_norm_spec.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/cuda/reduce.cuh"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

/// Channels per block of the per-channel sums: a warp reads 32 neighbouring channels of one row.
inline constexpr int channel_lanes = 32;
/// Row lanes per block of the per-channel sums: lane l sums rows l, l + 8, ... of its tile.
inline constexpr int row_lanes = 8;

/// How the per-channel sums cut the rows into tiles: at least 64 rows per tile and at most 256
/// tiles (always one at least, empty when there are no rows). It depends on the row count only, so
/// the sums' order (and bits) never change.
struct RowTiles {
  std::int64_t count;          ///< number of tiles
  std::int64_t rows_per_tile;  ///< rows in each tile but the last
};

/// The tiles for `rows` rows.
inline RowTiles channel_row_tiles(std::int64_t rows) {
  constexpr std::int64_t min_rows = 64;
  constexpr std::int64_t max_tiles = 256;
  const std::int64_t tiles = std::clamp<std::int64_t>((rows + min_rows - 1) / min_rows, 1, max_tiles);
  const std::int64_t per_tile = std::max<std::int64_t>(1, (rows + tiles - 1) / tiles);
  return {std::max<std::int64_t>(1, (rows + per_tile - 1) / per_tile), per_tile};
}

/// total[j] = the sum of term(r, c)[j] over rows r in [begin, end) for the calling thread's channel
/// c (threadIdx.x of a channel_lanes x row_lanes block), valid in the threads with threadIdx.y == 0:
/// row lane l sums rows begin + l, begin + l + row_lanes, ... in order, then the lanes are added in
/// lane order. `term(r, c, sums)` adds its K values into sums[0 .. K). Every thread of the block
/// must call it (it synchronises); threads whose c is past the channels add nothing.
template <int K, class Acc, class Term>
__device__ void block_channel_sums(std::int64_t begin, std::int64_t end, std::int64_t c,
                                   std::int64_t channels, const Term& term, Acc (&total)[K]) {
  __shared__ Acc lanes[K][row_lanes][channel_lanes];
  Acc sums[K];
  for (int j = 0; j < K; ++j) sums[j] = 0;
  if (c < channels) {
    for (std::int64_t r = begin + threadIdx.y; r < end; r += row_lanes) term(r, c, sums);
  }
  for (int j = 0; j < K; ++j) lanes[j][threadIdx.y][threadIdx.x] = sums[j];
  __syncthreads();
  if (threadIdx.y == 0) {
    for (int j = 0; j < K; ++j) {
      Acc t = lanes[j][0][threadIdx.x];
      for (int l = 1; l < row_lanes; ++l) t += lanes[j][l][threadIdx.x];
      total[j] = t;
    }
  }
}

// partial[(tile * K + j) * channels + c] = the sum of term(r, c)[j] over the rows of tile blockIdx.y;
// blockIdx.x picks 32 channels.
template <int K, class Acc, class Term>
__global__ void channel_partial_sums_kernel(std::int64_t rows, std::int64_t channels,
                                            std::int64_t rows_per_tile, Term term, Acc* partial) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * channel_lanes + threadIdx.x;
  const std::int64_t tile = blockIdx.y;
  const std::int64_t begin = tile * rows_per_tile;
  const std::int64_t end = std::min(begin + rows_per_tile, rows);
  Acc total[K];
  block_channel_sums<K>(begin, end, c, channels, term, total);
  if (threadIdx.y == 0 && c < channels) {
    for (int j = 0; j < K; ++j) partial[(tile * K + j) * channels + c] = total[j];
  }
}

/// The term that reads the partials back: adds partial[(tile * K + j) * channels + c] for "row" tile.
template <int K, class Acc>
struct PartialTerm {
  const Acc* partial;
  std::int64_t channels;
  /// Adds tile `tile`'s K partials of channel c.
  MPX_HOST_DEVICE void operator()(std::int64_t tile, std::int64_t c, Acc* sums) const {
    for (int j = 0; j < K; ++j) sums[j] += partial[(tile * K + j) * channels + c];
  }
};

// finish(c, totals) with totals[j] = the sum over the `tiles` tiles of the partials of channel c, in
// tile order (tile lanes as block_channel_sums); blockIdx.x picks 32 channels.
template <int K, class Acc, class Finish>
__global__ void channel_totals_kernel(const Acc* partial, std::int64_t tiles, std::int64_t channels,
                                      Finish finish) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * channel_lanes + threadIdx.x;
  Acc total[K];
  block_channel_sums<K>(0, tiles, c, channels, PartialTerm<K, Acc>{partial, channels}, total);
  if (threadIdx.y == 0 && c < channels) finish(c, total);
}

/// The two passes of a per-channel sum over `rows` rows of `channels` channels: `term`'s K sums per
/// channel, handed to `finish(c, totals)`. `partial` holds K tiles x channels values
/// (channel_row_tiles(rows).count tiles).
template <int K, class Acc, class Term, class Finish>
void channel_sums(std::int64_t rows, std::int64_t channels, const Term& term, const Finish& finish,
                  Acc* partial) {
  const RowTiles tiles = channel_row_tiles(rows);
  const dim3 threads(channel_lanes, row_lanes);
  const auto channel_blocks = static_cast<unsigned>((channels + channel_lanes - 1) / channel_lanes);
  channel_partial_sums_kernel<K, Acc>
      <<<dim3(channel_blocks, static_cast<unsigned>(tiles.count)), threads, 0, stream()>>>(
          rows, channels, tiles.rows_per_tile, term, partial);
  MPX_CUDA_CHECK_LAUNCH("channel_partial_sums_kernel");
  channel_totals_kernel<K, Acc>
      <<<channel_blocks, threads, 0, stream()>>>(partial, tiles.count, channels, finish);
  MPX_CUDA_CHECK_LAUNCH("channel_totals_kernel");
}

/// How many values the partials of `channel_sums` with K sums take for `rows` rows of `channels`.
inline std::int64_t channel_sums_scratch(int k, std::int64_t rows, std::int64_t channels) {
  return k * channel_row_tiles(rows).count * channels;
}

// ---- the terms and the finishing steps of batch normalisation ----

/// x[r, c] widened.
template <class T, class Acc>
struct ValueTerm {
  const T* x;
  std::int64_t channels;
  MPX_HOST_DEVICE void operator()(std::int64_t r, std::int64_t c, Acc* sums) const {
    sums[0] += static_cast<Acc>(x[r * channels + c]);
  }
};

/// (x[r, c] - mean[c])^2.
template <class T, class Acc>
struct SquaredDeviationTerm {
  const T* x;
  const Acc* mean;
  std::int64_t channels;
  MPX_HOST_DEVICE void operator()(std::int64_t r, std::int64_t c, Acc* sums) const {
    const Acc d = static_cast<Acc>(x[r * channels + c]) - mean[c];
    sums[0] += d * d;
  }
};

/// mean[c] = sum / count.
template <class Acc>
struct MeanFinish {
  Acc* mean;
  Acc count;
  MPX_HOST_DEVICE void operator()(std::int64_t c, const Acc* totals) const { mean[c] = totals[0] / count; }
};

/// var[c] = squares / count (biased), rstd[c] = 1 / sqrt(var + epsilon).
template <class Acc>
struct VarianceFinish {
  Acc* var;
  Acc* rstd;
  Acc count;
  Acc epsilon;
  MPX_HOST_DEVICE void operator()(std::int64_t c, const Acc* totals) const {
    const Acc v = totals[0] / count;
    var[c] = v;
    rstd[c] = Acc(1) / std::sqrt(v + epsilon);
  }
};

/// [dy, dy xhat] with xhat = (x - mean) rstd.
template <class T, class Acc>
struct GradientTerm {
  const T* x;
  const T* dy;
  const Acc* mean;
  const Acc* rstd;
  std::int64_t channels;
  MPX_HOST_DEVICE void operator()(std::int64_t r, std::int64_t c, Acc* sums) const {
    const std::int64_t i = r * channels + c;
    const Acc g = static_cast<Acc>(dy[i]);
    sums[0] += g;
    sums[1] += g * ((static_cast<Acc>(x[i]) - mean[c]) * rstd[c]);
  }
};

/// dx's per-channel coefficients [gamma rstd, mean(dy), mean(dy xhat)] into coefficients[3 C], from
/// the totals [sum dy, sum dy xhat] over `count` rows.
template <class Weight, class Acc>
struct DxCoefficientsFinish {
  const Weight* gamma;
  const Acc* rstd;
  Acc count;
  Acc* coefficients;
  std::int64_t channels;
  MPX_HOST_DEVICE void operator()(std::int64_t c, const Acc* totals) const {
    coefficients[c] = static_cast<Acc>(gamma[c]) * rstd[c];
    coefficients[channels + c] = totals[0] / count;
    coefficients[2 * channels + c] = totals[1] / count;
  }
};

/// dbeta = sum dy, dgamma = sum dy xhat (written or added); and dx's coefficients
/// (DxCoefficientsFinish) when `dx.coefficients` is not null.
template <class Weight, class Acc>
struct GradientFinish {
  Acc* dgamma;
  bool overwrite_dgamma;
  Acc* dbeta;
  bool overwrite_dbeta;
  DxCoefficientsFinish<Weight, Acc> dx;
  MPX_HOST_DEVICE void operator()(std::int64_t c, const Acc* totals) const {
    const Acc db = totals[0], dg = totals[1];
    dbeta[c] = overwrite_dbeta ? db : dbeta[c] + db;
    dgamma[c] = overwrite_dgamma ? dg : dgamma[c] + dg;
    if (dx.coefficients != nullptr) dx(c, totals);
  }
};

/// Stores the K totals of channel c at out[j C + c], then hands them to `then` (synchronised
/// statistics keep the sums, to add them over the ranks).
template <int K, class Acc, class Then>
struct StoreFinish {
  Acc* out;
  std::int64_t channels;
  Then then;
  MPX_HOST_DEVICE void operator()(std::int64_t c, const Acc* totals) const {
    for (int j = 0; j < K; ++j) out[j * channels + c] = totals[j];
    then(c, totals);
  }
};

/// A finishing step that does nothing more.
struct NoFinish {
  template <class Acc>
  MPX_HOST_DEVICE void operator()(std::int64_t, const Acc*) const {}
};

// finish(c, [values[j C + c] for j < K]) for every channel: a finishing step run on totals that
// came from elsewhere (summed over the ranks).
template <int K, class Acc, class Finish>
__global__ void finish_channels_kernel(const Acc* values, std::int64_t channels, Finish finish) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < channels;
       c += stride) {
    Acc totals[K];
    for (int j = 0; j < K; ++j) totals[j] = values[j * channels + c];
    finish(c, totals);
  }
}

/// Launches finish_channels_kernel.
template <int K, class Acc, class Finish>
void finish_channels(const Acc* values, std::int64_t channels, const Finish& finish) {
  finish_channels_kernel<K, Acc>
      <<<elementwise_blocks(channels), elementwise_threads, 0, stream()>>>(values, channels, finish);
  MPX_CUDA_CHECK_LAUNCH("finish_channels_kernel");
}

// y = (x - mean) (rstd gamma) + beta per element, rounded once; `count` = rows * channels.
template <class T, class Weight, class Acc>
__global__ void batch_norm_normalize_kernel(const T* x, const Weight* gamma, const Weight* beta,
                                            const Acc* mean, const Acc* rstd, std::int64_t count,
                                            std::int64_t channels, T* y) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t c = i % channels;
    const Acc scale = rstd[c] * static_cast<Acc>(gamma[c]);
    y[i] = round_to<tag_of_t<T>>((static_cast<Acc>(x[i]) - mean[c]) * scale + static_cast<Acc>(beta[c]));
  }
}

// y = (x - running_mean) / sqrt(running_var + epsilon) gamma + beta per element, rounded once.
template <class T, class Weight, class Acc>
__global__ void batch_norm_inference_kernel(const T* x, const Weight* gamma, const Weight* beta,
                                            const Acc* running_mean, const Acc* running_var, Acc epsilon,
                                            std::int64_t count, std::int64_t channels, T* y) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t c = i % channels;
    const Acc scale = Acc(1) / std::sqrt(running_var[c] + epsilon) * static_cast<Acc>(gamma[c]);
    y[i] =
        round_to<tag_of_t<T>>((static_cast<Acc>(x[i]) - running_mean[c]) * scale + static_cast<Acc>(beta[c]));
  }
}

// running = (1 - momentum) running + momentum batch, the variance's batch value times `correction`.
template <class Acc>
__global__ void batch_norm_running_stats_kernel(const Acc* mean, const Acc* var, std::int64_t channels,
                                                Acc momentum, Acc correction, Acc* running_mean,
                                                Acc* running_var) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < channels;
       c += stride) {
    running_mean[c] = (Acc(1) - momentum) * running_mean[c] + momentum * mean[c];
    running_var[c] = (Acc(1) - momentum) * running_var[c] + momentum * (var[c] * correction);
  }
}

// dx = k (dy - mean(dy) - xhat mean(dy xhat)) per element with the coefficients [k, mean(dy),
// mean(dy xhat)] of GradientFinish, rounded once.
template <class T, class Acc>
__global__ void batch_norm_backward_dx_kernel(const T* x, const T* dy, const Acc* mean, const Acc* rstd,
                                              const Acc* coefficients, std::int64_t count,
                                              std::int64_t channels, T* dx) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t c = i % channels;
    const Acc xhat = (static_cast<Acc>(x[i]) - mean[c]) * rstd[c];
    dx[i] = round_to<tag_of_t<T>>(coefficients[c] * (static_cast<Acc>(dy[i]) - coefficients[channels + c] -
                                                     xhat * coefficients[2 * channels + c]));
  }
}

// Launches batch_norm_normalize_kernel over x [rows, channels] (nothing for an empty x).
template <class T, class Weight, class Acc>
void normalize(const Tensor<T, Cuda>& x, const Weight* gamma, const Weight* beta, const Acc* mean,
               const Acc* rstd, T* y) {
  const std::int64_t elements = x.numel();
  if (elements == 0) return;
  batch_norm_normalize_kernel<<<elementwise_blocks(elements), elementwise_threads, 0, stream()>>>(
      x.data(), gamma, beta, mean, rstd, elements, x.shape().cols(), y);
  MPX_CUDA_CHECK_LAUNCH("batch_norm_normalize_kernel");
}

// Launches batch_norm_backward_dx_kernel with DxCoefficientsFinish's coefficients (nothing for an
// empty x).
template <class T, class Acc>
void backward_dx(const Tensor<T, Cuda>& x, const T* dy, const Acc* mean, const Acc* rstd,
                 const Acc* coefficients, T* dx) {
  const std::int64_t elements = x.numel();
  if (elements == 0) return;
  batch_norm_backward_dx_kernel<<<elementwise_blocks(elements), elementwise_threads, 0, stream()>>>(
      x.data(), dy, mean, rstd, coefficients, elements, x.shape().cols(), dx);
  MPX_CUDA_CHECK_LAUNCH("batch_norm_backward_dx_kernel");
}

}  // namespace detail

/// @brief sums[c] = the sum of x[..., c] over every other dimension: the first step of the
/// training-mode statistics, which BatchNorm2d takes one at a time when it sums them over the ranks
/// (synchronised statistics). The steps compute what `batch_norm_forward_training` does.
template <FloatingElement T, FloatingElement Acc>
void batch_norm_channel_sums(const Tensor<T, Cuda>& x, Tensor<Acc, Cuda>& sums) {
  const std::int64_t rows = x.shape().rows(), channels = x.shape().cols();
  validate_batch_norm_channel_sums("mpx::cuda::batch_norm_channel_sums", x, sums);
  if (channels == 0) return;
  Acc* partial = detail::scratch<Acc>(sums.data(), detail::channel_sums_scratch(1, rows, channels));
  detail::channel_sums<1, Acc>(rows, channels, detail::ValueTerm<T, Acc>{x.data(), channels},
                               detail::StoreFinish<1, Acc, detail::NoFinish>{sums.data(), channels, {}},
                               partial);
}

/// @brief The second step: mean[c] = sums[c] / count, then squares[c] = the sum of
/// (x[..., c] - mean[c])^2; `count` is the number of rows `sums` covers (every rank's).
template <FloatingElement T, FloatingElement Acc>
void batch_norm_squared_deviations(const Tensor<T, Cuda>& x, const Tensor<Acc, Cuda>& sums,
                                   std::int64_t count, Tensor<Acc, Cuda>& mean, Tensor<Acc, Cuda>& squares) {
  const std::int64_t rows = x.shape().rows(), channels = x.shape().cols();
  validate_batch_norm_squared_deviations("mpx::cuda::batch_norm_squared_deviations", x, sums, mean, squares);
  if (channels == 0) return;
  detail::finish_channels<1>(sums.data(), channels,
                             detail::MeanFinish<Acc>{mean.data(), static_cast<Acc>(count)});
  Acc* partial = detail::scratch<Acc>(squares.data(), detail::channel_sums_scratch(1, rows, channels));
  detail::channel_sums<1, Acc>(
      rows, channels, detail::SquaredDeviationTerm<T, Acc>{x.data(), mean.data(), channels},
      detail::StoreFinish<1, Acc, detail::NoFinish>{squares.data(), channels, {}}, partial);
}

/// @brief The last step: var = squares / count (biased), rstd = 1 / sqrt(var + epsilon) and
/// y = (x - mean) rstd gamma + beta, rounded once.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void batch_norm_normalize(const Tensor<T, Cuda>& x, const Tensor<Weight, Cuda>& gamma,
                          const Tensor<Weight, Cuda>& beta, const Tensor<Acc, Cuda>& mean,
                          const Tensor<Acc, Cuda>& squares, std::int64_t count, float epsilon,
                          Tensor<T, Cuda>& y, Tensor<Acc, Cuda>& var, Tensor<Acc, Cuda>& rstd) {
  const std::int64_t channels = x.shape().cols();
  validate_batch_norm_normalize("mpx::cuda::batch_norm_normalize", x, gamma, beta, mean, squares, y, var,
                                rstd);
  if (channels == 0) return;
  detail::finish_channels<1>(squares.data(), channels,
                             detail::VarianceFinish<Acc>{var.data(), rstd.data(), static_cast<Acc>(count),
                                                         static_cast<Acc>(epsilon)});
  detail::normalize(x, gamma.data(), beta.data(), mean.data(), rstd.data(), y.data());
}

/// @brief Training-mode forward: per channel c, the mean and biased variance of x[..., c] over
/// every other dimension (two passes: no cancellation for a large mean), then
/// y = (x - mean) rstd gamma + beta with rstd = 1 / sqrt(var + epsilon), rounded once.
/// @param x [..., C] in the compute type; @param gamma, beta [C] (the master weights);
/// @param epsilon added to the variance;
/// @param y like x, written; @param mean, var, rstd [C] in the accumulate type, written (var is the
///        biased variance, which normalises; the running variance takes the unbiased one).
/// The partial sums live in device scratch kept per thread and keyed by `mean` (reduce.cuh's
/// `scratch`): a repeated call of the same shape allocates nothing and may be captured in a graph.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void batch_norm_forward_training(const Tensor<T, Cuda>& x, const Tensor<Weight, Cuda>& gamma,
                                 const Tensor<Weight, Cuda>& beta, float epsilon, Tensor<T, Cuda>& y,
                                 Tensor<Acc, Cuda>& mean, Tensor<Acc, Cuda>& var, Tensor<Acc, Cuda>& rstd) {
  constexpr const char* where = "mpx::cuda::batch_norm_forward_training";
  const std::int64_t rows = x.shape().rows(), channels = x.shape().cols();
  validate_batch_norm_forward_training(where, x, gamma, beta, y, mean, var, rstd);
  if (rows == 0) throw shape_error(mpx::detail::concat(where, ": the input ", x.shape(), " is empty"));
  if (channels == 0) return;
  const Acc count = static_cast<Acc>(rows);
  Acc* partial = detail::scratch<Acc>(mean.data(), detail::channel_sums_scratch(1, rows, channels));
  detail::channel_sums<1, Acc>(rows, channels, detail::ValueTerm<T, Acc>{x.data(), channels},
                               detail::MeanFinish<Acc>{mean.data(), count}, partial);
  detail::channel_sums<1, Acc>(
      rows, channels, detail::SquaredDeviationTerm<T, Acc>{x.data(), mean.data(), channels},
      detail::VarianceFinish<Acc>{var.data(), rstd.data(), count, static_cast<Acc>(epsilon)}, partial);
  detail::normalize(x, gamma.data(), beta.data(), mean.data(), rstd.data(), y.data());
}

/// @brief Evaluation-mode forward: y = (x - running_mean) / sqrt(running_var + epsilon) gamma + beta.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void batch_norm_forward_inference(const Tensor<T, Cuda>& x, const Tensor<Weight, Cuda>& gamma,
                                  const Tensor<Weight, Cuda>& beta, const Tensor<Acc, Cuda>& running_mean,
                                  const Tensor<Acc, Cuda>& running_var, float epsilon, Tensor<T, Cuda>& y) {
  constexpr const char* where = "mpx::cuda::batch_norm_forward_inference";
  validate_batch_norm_forward_inference(where, x, gamma, beta, running_mean, running_var, y);
  const std::int64_t elements = x.numel();
  if (elements == 0) return;
  detail::batch_norm_inference_kernel<<<detail::elementwise_blocks(elements), detail::elementwise_threads, 0,
                                        detail::stream()>>>(
      x.data(), gamma.data(), beta.data(), running_mean.data(), running_var.data(), static_cast<Acc>(epsilon),
      elements, x.shape().cols(), y.data());
  MPX_CUDA_CHECK_LAUNCH("batch_norm_inference_kernel");
}

/// @brief running = (1 - momentum) running + momentum batch for the mean, and for the variance with
/// the batch's unbiased variance var count / (count - 1) (the biased one when count is 1), in the
/// accumulate type: PyTorch's update.
template <FloatingElement Acc>
void batch_norm_update_running_stats(const Tensor<Acc, Cuda>& mean, const Tensor<Acc, Cuda>& var,
                                     std::int64_t count, double momentum, Tensor<Acc, Cuda>& running_mean,
                                     Tensor<Acc, Cuda>& running_var) {
  constexpr const char* where = "mpx::cuda::batch_norm_update_running_stats";
  validate_batch_norm_running_stats(where, mean, var, running_mean, running_var);
  const std::int64_t channels = mean.numel();
  if (channels == 0) return;
  // The same host arithmetic as the CPU's: the factors reach the device already rounded.
  const Acc m = static_cast<Acc>(momentum);
  const Acc correction = count > 1 ? static_cast<Acc>(count) / static_cast<Acc>(count - 1) : Acc(1);
  detail::batch_norm_running_stats_kernel<<<detail::elementwise_blocks(channels), detail::elementwise_threads,
                                            0, detail::stream()>>>(
      mean.data(), var.data(), channels, m, correction, running_mean.data(), running_var.data());
  MPX_CUDA_CHECK_LAUNCH("batch_norm_running_stats_kernel");
}

/// @brief Training-mode backward: with xhat = (x - mean) rstd and g = dy,
/// dbeta += sum g, dgamma += sum g xhat (per channel, over every other dimension), and
/// dx = gamma rstd (g - mean(g) - xhat mean(g xhat)), rounded once. The gradients are written
/// instead of added when their `overwrite` is set (the first micro-batch after zero_grad).
/// The partial sums and dx's coefficients live in device scratch keyed by `dgamma`.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void batch_norm_backward(const Tensor<T, Cuda>& x, const Tensor<Weight, Cuda>& gamma,
                         const Tensor<Acc, Cuda>& mean, const Tensor<Acc, Cuda>& rstd,
                         const Tensor<T, Cuda>& dy, Tensor<T, Cuda>* dx, Tensor<Acc, Cuda>& dgamma,
                         bool overwrite_dgamma, Tensor<Acc, Cuda>& dbeta, bool overwrite_dbeta) {
  constexpr const char* where = "mpx::cuda::batch_norm_backward";
  const std::int64_t rows = x.shape().rows(), channels = x.shape().cols();
  validate_batch_norm_backward(where, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
  if (channels == 0) return;
  const std::int64_t partials = detail::channel_sums_scratch(2, rows, channels);
  Acc* partial = detail::scratch<Acc>(dgamma.data(), partials + 3 * channels);
  Acc* coefficients = dx != nullptr ? partial + partials : nullptr;
  detail::channel_sums<2, Acc>(
      rows, channels, detail::GradientTerm<T, Acc>{x.data(), dy.data(), mean.data(), rstd.data(), channels},
      detail::GradientFinish<Weight, Acc>{
          dgamma.data(), overwrite_dgamma, dbeta.data(), overwrite_dbeta,
          detail::DxCoefficientsFinish<Weight, Acc>{gamma.data(), rstd.data(), static_cast<Acc>(rows),
                                                    coefficients, channels}},
      partial);
  if (dx != nullptr) detail::backward_dx(x, dy.data(), mean.data(), rstd.data(), coefficients, dx->data());
}

/// @brief The first step of the training-mode backward, taken alone for synchronised statistics:
/// sums = [sum dy, sum dy xhat] per channel ([2 C]) over this tensor's rows, and from them
/// dbeta += sum dy, dgamma += sum dy xhat (written when their `overwrite` is set). The parameter
/// gradients stay this rank's, for the gradient sync to average.
template <FloatingElement T, FloatingElement Acc>
void batch_norm_backward_sums(const Tensor<T, Cuda>& x, const Tensor<Acc, Cuda>& mean,
                              const Tensor<Acc, Cuda>& rstd, const Tensor<T, Cuda>& dy,
                              Tensor<Acc, Cuda>& sums, Tensor<Acc, Cuda>& dgamma, bool overwrite_dgamma,
                              Tensor<Acc, Cuda>& dbeta, bool overwrite_dbeta) {
  constexpr const char* where = "mpx::cuda::batch_norm_backward_sums";
  const std::int64_t rows = x.shape().rows(), channels = x.shape().cols();
  validate_batch_norm_backward_sums(where, x, mean, rstd, dy, sums, dgamma, dbeta);
  if (channels == 0) return;
  using Finish = detail::GradientFinish<float, Acc>;  // no dx coefficients: gamma's type is unused
  Acc* partial = detail::scratch<Acc>(sums.data(), detail::channel_sums_scratch(2, rows, channels));
  detail::channel_sums<2, Acc>(
      rows, channels, detail::GradientTerm<T, Acc>{x.data(), dy.data(), mean.data(), rstd.data(), channels},
      detail::StoreFinish<2, Acc, Finish>{sums.data(), channels,
                                          Finish{dgamma.data(),
                                                 overwrite_dgamma,
                                                 dbeta.data(),
                                                 overwrite_dbeta,
                                                 {nullptr, nullptr, Acc(1), nullptr, channels}}},
      partial);
}

/// @brief The second step: dx = gamma rstd (dy - sum dy / count - xhat sum dy xhat / count), rounded
/// once, from the first step's `sums` over `count` rows (every rank's).
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void batch_norm_backward_input(const Tensor<T, Cuda>& x, const Tensor<Weight, Cuda>& gamma,
                               const Tensor<Acc, Cuda>& mean, const Tensor<Acc, Cuda>& rstd,
                               const Tensor<T, Cuda>& dy, const Tensor<Acc, Cuda>& sums, std::int64_t count,
                               Tensor<T, Cuda>& dx) {
  constexpr const char* where = "mpx::cuda::batch_norm_backward_input";
  const std::int64_t channels = x.shape().cols();
  validate_batch_norm_backward_input(where, x, gamma, mean, rstd, dy, sums, dx);
  if (channels == 0) return;
  Acc* coefficients = detail::scratch<Acc>(dx.data(), 3 * channels);
  detail::finish_channels<2>(sums.data(), channels,
                             detail::DxCoefficientsFinish<Weight, Acc>{
                                 gamma.data(), rstd.data(), static_cast<Acc>(count), coefficients, channels});
  detail::backward_dx(x, dy.data(), mean.data(), rstd.data(), coefficients, dx.data());
}

}  // namespace mpx::cuda
