// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Batch normalisation over the channels of a channels-last tensor on the CPU
/// (backend/batch_norm_spec.hpp): statistics, normalisation and gradients in the accumulate type,
/// input and output in the compute type, each result rounded once.
///
/// Per-channel sums run over fixed blocks of rows (`batch_norm_block_rows`) whose partial sums are
/// added in block order, so the results depend on the shapes alone, never on the number of threads.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "mpx/backend/batch_norm_spec.hpp"
#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

namespace detail {

// Rows per block of a per-channel sum: about parallel_grain elements, fixed by the channel count.
inline std::int64_t batch_norm_block_rows(std::int64_t channels) {
  return rows_per_chunk(channels);
}

// sums[i] = the sum over rows of each row's contributions, block by block in block order, rows in
// order within a block. `terms(begin, end, out)` adds the contributions of rows [begin, end) (one
// block) into out[per_row], row by row.
template <class Acc, class BlockTerms>
std::vector<Acc> channel_sums(std::int64_t rows, std::int64_t channels, std::int64_t per_row,
                              const BlockTerms& terms) {
  const std::int64_t block = batch_norm_block_rows(channels);
  const std::int64_t blocks = (rows + block - 1) / block;
  std::vector<Acc> partial(static_cast<std::size_t>(blocks * per_row), Acc(0));
  parallel_for_chunks(rows, block, [&](std::int64_t begin, std::int64_t end) {
    terms(begin, end, partial.data() + (begin / block) * per_row);
  });
  std::vector<Acc> total(static_cast<std::size_t>(per_row), Acc(0));
  for (std::int64_t b = 0; b < blocks; ++b) {
    for (std::int64_t i = 0; i < per_row; ++i)
      total[static_cast<std::size_t>(i)] += partial[static_cast<std::size_t>(b * per_row + i)];
  }
  return total;
}

// `elements` consecutive values (a block of rows) in the accumulate type: the values themselves when
// T is Acc, else widened into the calling thread's buffer `Slot` with convert.hpp's vector
// conversions, in one call per block: a call per row of 16 or 32 channels cost more than the
// normalisation's arithmetic, and a scalar fp16 conversion per element more still.
template <int Slot, class Acc, class T>
const Acc* widened_block(const T* first, std::int64_t elements) {
  if constexpr (std::is_same_v<T, Acc>) {
    return first;
  } else {
    thread_local std::vector<Acc> buffer;
    if (buffer.size() < static_cast<std::size_t>(elements)) buffer.resize(static_cast<std::size_t>(elements));
    widen_range<tag_of_t<T>>(first, buffer.data(), 0, elements);
    return buffer.data();
  }
}

// dst[r * channels + c] = value(r, c) rounded once into T, for the `rows` rows of a block: computed
// into the calling thread's buffer and rounded with one vector conversion when T is narrower than
// Acc.
template <class Acc, class T, class Value>
void write_block(T* dst, std::int64_t rows, std::int64_t channels, const Value& value) {
  Acc* values = nullptr;
  if constexpr (std::is_same_v<T, Acc>) {
    values = dst;
  } else {
    thread_local std::vector<Acc> buffer;
    const auto elements = static_cast<std::size_t>(rows * channels);
    if (buffer.size() < elements) buffer.resize(elements);
    values = buffer.data();
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    Acc* row = values + r * channels;
    MPX_DETAIL_OMP_SIMD
    for (std::int64_t c = 0; c < channels; ++c) row[c] = value(r, c);
  }
  if constexpr (!std::is_same_v<T, Acc>) round_range(values, dst, 0, rows * channels);
}

// batch_norm_backward_sums's work, its sums into sums[2 C].
template <class T, class Acc>
void batch_norm_backward_sums(const Tensor<T, Host>& x, const Tensor<Acc, Host>& mean,
                              const Tensor<Acc, Host>& rstd, const Tensor<T, Host>& dy, Acc* sums,
                              Tensor<Acc, Host>& dgamma, bool overwrite_dgamma, Tensor<Acc, Host>& dbeta,
                              bool overwrite_dbeta) {
  const std::int64_t rows = x.shape().rows(), channels = x.shape().cols();
  const Acc* mu = mean.data();
  const Acc* inv = rstd.data();
  const std::vector<Acc> total = detail::channel_sums<Acc>(
      rows, channels, 2 * channels, [&](std::int64_t begin, std::int64_t end, Acc* out) {
        const std::int64_t elements = (end - begin) * channels;
        const Acc* xb = detail::widened_block<0, Acc>(x.data() + begin * channels, elements);
        const Acc* gb = detail::widened_block<1, Acc>(dy.data() + begin * channels, elements);
        for (std::int64_t r = 0; r < end - begin; ++r) {
          const Acc* xr = xb + r * channels;
          const Acc* gr = gb + r * channels;
          MPX_DETAIL_OMP_SIMD
          for (std::int64_t c = 0; c < channels; ++c) {
            const Acc g = gr[c];
            out[c] += g;
            out[channels + c] += g * ((xr[c] - mu[c]) * inv[c]);
          }
        }
      });
  std::copy(total.begin(), total.end(), sums);
  for (std::int64_t c = 0; c < channels; ++c) {
    const Acc db = sums[c], dg = sums[channels + c];
    dbeta[c] = overwrite_dbeta ? db : dbeta[c] + db;
    dgamma[c] = overwrite_dgamma ? dg : dgamma[c] + dg;
  }
}

// batch_norm_backward_input's work, from sums[2 C].
template <class T, class Weight, class Acc>
void batch_norm_backward_input(const Tensor<T, Host>& x, const Tensor<Weight, Host>& gamma,
                               const Tensor<Acc, Host>& mean, const Tensor<Acc, Host>& rstd,
                               const Tensor<T, Host>& dy, const Acc* sums, std::int64_t count,
                               Tensor<T, Host>& dx) {
  const std::int64_t rows = x.shape().rows(), channels = x.shape().cols();
  const Acc n = static_cast<Acc>(count);
  const Acc* mu = mean.data();
  const Acc* inv = rstd.data();
  std::vector<Acc> scale(static_cast<std::size_t>(channels)), mean_g(scale.size()), mean_gx(scale.size());
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto k = static_cast<std::size_t>(c);
    scale[k] = static_cast<Acc>(gamma[c]) * inv[c];
    mean_g[k] = sums[c] / n;
    mean_gx[k] = sums[channels + c] / n;
  }
  T* out = dx.data();
  parallel_for_chunks(rows, detail::batch_norm_block_rows(channels),
                      [&](std::int64_t begin, std::int64_t end) {
                        const Acc* k = scale.data();
                        const Acc* mg = mean_g.data();
                        const Acc* mgx = mean_gx.data();
                        const std::int64_t elements = (end - begin) * channels;
                        const Acc* xb = detail::widened_block<0, Acc>(x.data() + begin * channels, elements);
                        const Acc* gb = detail::widened_block<1, Acc>(dy.data() + begin * channels, elements);
                        detail::write_block<Acc>(out + begin * channels, end - begin, channels,
                                                 [&](std::int64_t r, std::int64_t c) {
                                                   const std::int64_t i = r * channels + c;
                                                   const Acc xhat = (xb[i] - mu[c]) * inv[c];
                                                   return k[c] * (gb[i] - mg[c] - xhat * mgx[c]);
                                                 });
                      });
}

}  // namespace detail

/// @brief sums[c] = the sum of x[..., c] over every other dimension, in the accumulate type: the
/// first step of the training-mode statistics (BatchNorm2d sums them over the ranks between steps
/// when its statistics are synchronised).
template <FloatingElement T, FloatingElement Acc>
void batch_norm_channel_sums(const Tensor<T, Host>& x, Tensor<Acc, Host>& sums) {
  const std::int64_t rows = x.shape().rows(), channels = x.shape().cols();
  validate_batch_norm_channel_sums("mpx::cpu::batch_norm_channel_sums", x, sums);
  const T* in = x.data();
  const std::vector<Acc> total = detail::channel_sums<Acc>(
      rows, channels, channels, [&](std::int64_t begin, std::int64_t end, Acc* out) {
        const Acc* block = detail::widened_block<0, Acc>(in + begin * channels, (end - begin) * channels);
        for (std::int64_t r = 0; r < end - begin; ++r) {
          const Acc* row = block + r * channels;
          MPX_DETAIL_OMP_SIMD
          for (std::int64_t c = 0; c < channels; ++c) out[c] += row[c];
        }
      });
  std::copy(total.begin(), total.end(), sums.data());
}

/// @brief The second step: mean[c] = sums[c] / count, then squares[c] = the sum of
/// (x[..., c] - mean[c])^2 (two passes: no cancellation for a large mean). `count` is the number of
/// rows `sums` covers (this tensor's, or every rank's).
template <FloatingElement T, FloatingElement Acc>
void batch_norm_squared_deviations(const Tensor<T, Host>& x, const Tensor<Acc, Host>& sums,
                                   std::int64_t count, Tensor<Acc, Host>& mean, Tensor<Acc, Host>& squares) {
  const std::int64_t rows = x.shape().rows(), channels = x.shape().cols();
  validate_batch_norm_squared_deviations("mpx::cpu::batch_norm_squared_deviations", x, sums, mean, squares);
  const Acc n = static_cast<Acc>(count);
  for (std::int64_t c = 0; c < channels; ++c) mean[c] = sums[c] / n;
  const Acc* mu = mean.data();
  const T* in = x.data();
  const std::vector<Acc> total = detail::channel_sums<Acc>(
      rows, channels, channels, [&](std::int64_t begin, std::int64_t end, Acc* out) {
        const Acc* block = detail::widened_block<0, Acc>(in + begin * channels, (end - begin) * channels);
        for (std::int64_t r = 0; r < end - begin; ++r) {
          const Acc* row = block + r * channels;
          MPX_DETAIL_OMP_SIMD
          for (std::int64_t c = 0; c < channels; ++c) {
            const Acc d = row[c] - mu[c];
            out[c] += d * d;
          }
        }
      });
  std::copy(total.begin(), total.end(), squares.data());
}

/// @brief The last step: var = squares / count (biased), rstd = 1 / sqrt(var + epsilon) and
/// y = (x - mean) rstd gamma + beta, rounded once.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void batch_norm_normalize(const Tensor<T, Host>& x, const Tensor<Weight, Host>& gamma,
                          const Tensor<Weight, Host>& beta, const Tensor<Acc, Host>& mean,
                          const Tensor<Acc, Host>& squares, std::int64_t count, float epsilon,
                          Tensor<T, Host>& y, Tensor<Acc, Host>& var, Tensor<Acc, Host>& rstd) {
  const std::int64_t rows = x.shape().rows(), channels = x.shape().cols();
  validate_batch_norm_normalize("mpx::cpu::batch_norm_normalize", x, gamma, beta, mean, squares, y, var,
                                rstd);
  const Acc n = static_cast<Acc>(count);
  std::vector<Acc> scale(static_cast<std::size_t>(channels)), shift(static_cast<std::size_t>(channels));
  for (std::int64_t c = 0; c < channels; ++c) {
    var[c] = squares[c] / n;
    rstd[c] = Acc(1) / std::sqrt(var[c] + static_cast<Acc>(epsilon));
    scale[static_cast<std::size_t>(c)] = rstd[c] * static_cast<Acc>(gamma[c]);
    shift[static_cast<std::size_t>(c)] = static_cast<Acc>(beta[c]);
  }
  const Acc* mu = mean.data();
  const T* in = x.data();
  T* out = y.data();
  parallel_for_chunks(
      rows, detail::batch_norm_block_rows(channels), [&](std::int64_t begin, std::int64_t end) {
        const Acc* k = scale.data();
        const Acc* b = shift.data();
        const Acc* block = detail::widened_block<0, Acc>(in + begin * channels, (end - begin) * channels);
        detail::write_block<Acc>(
            out + begin * channels, end - begin, channels,
            [&](std::int64_t r, std::int64_t c) { return (block[r * channels + c] - mu[c]) * k[c] + b[c]; });
      });
}

/// @brief Training-mode forward: per channel c, the mean and biased variance of x[..., c] over
/// every other dimension (two passes: no cancellation for a large mean), then
/// y = (x - mean) rstd gamma + beta with rstd = 1 / sqrt(var + epsilon), rounded once: the three
/// steps above on this tensor's rows alone.
/// @param x [..., C] in the compute type; @param gamma, beta [C] (the master weights);
/// @param epsilon added to the variance;
/// @param y like x, written; @param mean, var, rstd [C] in the accumulate type, written (var is the
///        biased variance, which normalises; the running variance takes the unbiased one).
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void batch_norm_forward_training(const Tensor<T, Host>& x, const Tensor<Weight, Host>& gamma,
                                 const Tensor<Weight, Host>& beta, float epsilon, Tensor<T, Host>& y,
                                 Tensor<Acc, Host>& mean, Tensor<Acc, Host>& var, Tensor<Acc, Host>& rstd) {
  constexpr const char* where = "mpx::cpu::batch_norm_forward_training";
  const std::int64_t rows = x.shape().rows();
  validate_batch_norm_forward_training(where, x, gamma, beta, y, mean, var, rstd);
  if (rows == 0) throw shape_error(mpx::detail::concat(where, ": the input ", x.shape(), " is empty"));
  // var holds the sums, then the squared deviations, until the last step writes the variance.
  batch_norm_channel_sums(x, var);
  batch_norm_squared_deviations(x, var, rows, mean, var);
  batch_norm_normalize(x, gamma, beta, mean, var, rows, epsilon, y, var, rstd);
}

/// @brief Evaluation-mode forward: y = (x - running_mean) / sqrt(running_var + epsilon) gamma + beta.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void batch_norm_forward_inference(const Tensor<T, Host>& x, const Tensor<Weight, Host>& gamma,
                                  const Tensor<Weight, Host>& beta, const Tensor<Acc, Host>& running_mean,
                                  const Tensor<Acc, Host>& running_var, float epsilon, Tensor<T, Host>& y) {
  constexpr const char* where = "mpx::cpu::batch_norm_forward_inference";
  const std::int64_t rows = x.shape().rows(), channels = x.shape().cols();
  validate_batch_norm_forward_inference(where, x, gamma, beta, running_mean, running_var, y);
  std::vector<Acc> scale(static_cast<std::size_t>(channels)), shift(static_cast<std::size_t>(channels));
  for (std::int64_t c = 0; c < channels; ++c) {
    const Acc inv_std = Acc(1) / std::sqrt(running_var[c] + static_cast<Acc>(epsilon));
    scale[static_cast<std::size_t>(c)] = inv_std * static_cast<Acc>(gamma[c]);
    shift[static_cast<std::size_t>(c)] = static_cast<Acc>(beta[c]);
  }
  const Acc* mu = running_mean.data();
  parallel_for_chunks(
      rows, detail::batch_norm_block_rows(channels), [&](std::int64_t begin, std::int64_t end) {
        const Acc* k = scale.data();
        const Acc* b = shift.data();
        const Acc* block =
            detail::widened_block<0, Acc>(x.data() + begin * channels, (end - begin) * channels);
        detail::write_block<Acc>(
            y.data() + begin * channels, end - begin, channels,
            [&](std::int64_t r, std::int64_t c) { return (block[r * channels + c] - mu[c]) * k[c] + b[c]; });
      });
}

/// @brief running = (1 - momentum) running + momentum batch for the mean, and for the variance with
/// the batch's unbiased variance var count / (count - 1) (the biased one when count is 1), in the
/// accumulate type: PyTorch's update.
template <FloatingElement Acc>
void batch_norm_update_running_stats(const Tensor<Acc, Host>& mean, const Tensor<Acc, Host>& var,
                                     std::int64_t count, double momentum, Tensor<Acc, Host>& running_mean,
                                     Tensor<Acc, Host>& running_var) {
  constexpr const char* where = "mpx::cpu::batch_norm_update_running_stats";
  validate_batch_norm_running_stats(where, mean, var, running_mean, running_var);
  const Acc m = static_cast<Acc>(momentum);
  const Acc correction = count > 1 ? static_cast<Acc>(count) / static_cast<Acc>(count - 1) : Acc(1);
  for (std::int64_t c = 0; c < mean.numel(); ++c) {
    running_mean[c] = (Acc(1) - m) * running_mean[c] + m * mean[c];
    running_var[c] = (Acc(1) - m) * running_var[c] + m * (var[c] * correction);
  }
}

/// @brief The first step of the training-mode backward: sums = [sum g, sum g xhat] per channel
/// ([2 C], xhat = (x - mean) rstd, g = dy) over this tensor's rows, and from them dbeta += sum g,
/// dgamma += sum g xhat (written instead of added when their `overwrite` is set: the first
/// micro-batch after zero_grad). Synchronised statistics sum `sums` over the ranks before the second
/// step; the parameter gradients stay this rank's, for the gradient sync to average.
template <FloatingElement T, FloatingElement Acc>
void batch_norm_backward_sums(const Tensor<T, Host>& x, const Tensor<Acc, Host>& mean,
                              const Tensor<Acc, Host>& rstd, const Tensor<T, Host>& dy,
                              Tensor<Acc, Host>& sums, Tensor<Acc, Host>& dgamma, bool overwrite_dgamma,
                              Tensor<Acc, Host>& dbeta, bool overwrite_dbeta) {
  constexpr const char* where = "mpx::cpu::batch_norm_backward_sums";
  validate_batch_norm_backward_sums(where, x, mean, rstd, dy, sums, dgamma, dbeta);
  detail::batch_norm_backward_sums(x, mean, rstd, dy, sums.data(), dgamma, overwrite_dgamma, dbeta,
                                   overwrite_dbeta);
}

/// @brief The second step: dx = gamma rstd (g - sum g / count - xhat sum g xhat / count), rounded
/// once, from the first step's `sums` over `count` rows (this tensor's, or every rank's).
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void batch_norm_backward_input(const Tensor<T, Host>& x, const Tensor<Weight, Host>& gamma,
                               const Tensor<Acc, Host>& mean, const Tensor<Acc, Host>& rstd,
                               const Tensor<T, Host>& dy, const Tensor<Acc, Host>& sums, std::int64_t count,
                               Tensor<T, Host>& dx) {
  constexpr const char* where = "mpx::cpu::batch_norm_backward_input";
  validate_batch_norm_backward_input(where, x, gamma, mean, rstd, dy, sums, dx);
  detail::batch_norm_backward_input(x, gamma, mean, rstd, dy, sums.data(), count, dx);
}

/// @brief Training-mode backward: with xhat = (x - mean) rstd and g = dy,
/// dbeta += sum g, dgamma += sum g xhat (per channel, over every other dimension), and
/// dx = gamma rstd (g - mean(g) - xhat mean(g xhat)), rounded once: the two steps above on this
/// tensor's rows alone. The gradients are written instead of added when their `overwrite` is set
/// (the first micro-batch after zero_grad).
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void batch_norm_backward(const Tensor<T, Host>& x, const Tensor<Weight, Host>& gamma,
                         const Tensor<Acc, Host>& mean, const Tensor<Acc, Host>& rstd,
                         const Tensor<T, Host>& dy, Tensor<T, Host>* dx, Tensor<Acc, Host>& dgamma,
                         bool overwrite_dgamma, Tensor<Acc, Host>& dbeta, bool overwrite_dbeta) {
  constexpr const char* where = "mpx::cpu::batch_norm_backward";
  validate_batch_norm_backward(where, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
  std::vector<Acc> sums(static_cast<std::size_t>(2 * x.shape().cols()));
  detail::batch_norm_backward_sums(x, mean, rstd, dy, sums.data(), dgamma, overwrite_dgamma, dbeta,
                                   overwrite_dbeta);
  if (dx != nullptr)
    detail::batch_norm_backward_input(x, gamma, mean, rstd, dy, sums.data(), x.shape().rows(), *dx);
}

}  // namespace mpx::cpu
