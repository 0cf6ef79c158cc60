// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Group normalisation on the GPU (backend/group_norm_spec.hpp), with mpx::cpu::group_norm_*'s
/// contracts and formulas: two-pass statistics and all math in the accumulate type, input and output
/// in the compute type, each result rounded once.
///
/// x [N, ..., C] is [N, pixels, G, C / G]: a group's statistics are a sum over its pixels x C / G
/// elements, in two deterministic passes whose order depends on the shape alone. Each group is cut
/// into at most 64 chunks (`group_chunks`), one block per group and chunk sums its chunk with
/// reduce.cuh's `block_reduce` into a partial, and one thread per group adds the partials in chunk
/// order. dgamma and dbeta are per-channel sums over N x pixels rows, batch_norm.cuh's `channel_sums`.
/// No atomics; the same bits on every run and every device. Partial sums live in device scratch
/// (reduce.cuh's `scratch`), so a repeated call of the same shape allocates nothing.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/group_norm.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "mpx/backend/cuda/batch_norm.cuh"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/cuda/reduce.cuh"
#include "mpx/backend/group_norm_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

/// How a group's elements are cut into chunks: at least 4096 elements per chunk and at most 64
/// chunks (one at least). It depends on the shape only, so the sums' order (and bits) never change.
struct GroupChunks {
  std::int64_t count;               ///< chunks per group
  std::int64_t elements_per_chunk;  ///< elements in each chunk but the last
};

/// The chunks of a group of `elements` elements.
inline GroupChunks group_chunks(std::int64_t elements) {
  constexpr std::int64_t min_elements = 4096;
  constexpr std::int64_t max_chunks = 64;
  const std::int64_t chunks =
      std::clamp<std::int64_t>((elements + min_elements - 1) / min_elements, 1, max_chunks);
  const std::int64_t per_chunk = std::max<std::int64_t>(1, (elements + chunks - 1) / chunks);
  return {std::max<std::int64_t>(1, (elements + per_chunk - 1) / per_chunk), per_chunk};
}

/// Where the elements of group (n, g) lie in x [N, pixels, C]: element j of the group (in the CPU's
/// order, pixel-major) is pixel j / cg, channel g cg + j % cg.
struct GroupLayout {
  std::int64_t groups;    ///< G
  std::int64_t pixels;    ///< positions per image
  std::int64_t channels;  ///< C
  std::int64_t cg;        ///< channels per group, C / G

  /// The flat index of element j of group `segment` (= n G + g).
  MPX_HOST_DEVICE std::int64_t index(std::int64_t segment, std::int64_t j) const {
    const std::int64_t n = segment / groups, g = segment % groups;
    return (n * pixels + j / cg) * channels + g * cg + j % cg;
  }
  /// The group (n G + g) of flat element i.
  MPX_HOST_DEVICE std::int64_t segment_of(std::int64_t i) const {
    return (i / (pixels * channels)) * groups + (i % channels) / cg;
  }
  /// The group of channel c in row r of [N pixels, C].
  MPX_HOST_DEVICE std::int64_t segment_of_row(std::int64_t r, std::int64_t c) const {
    return (r / pixels) * groups + c / cg;
  }
};

// partial[(segment * chunks + chunk) * K + j] = the sum of term(index, segment)[j] over the elements of
// chunk blockIdx.y of group blockIdx.x, summed by the block in a fixed order (block_reduce).
template <int K, class Acc, class Term>
__global__ void group_partial_sums_kernel(GroupLayout layout, std::int64_t elements, std::int64_t per_chunk,
                                          Term term, Acc* partial) {
  const std::int64_t segment = blockIdx.x;
  const std::int64_t chunk = blockIdx.y;
  const std::int64_t begin = chunk * per_chunk;
  const std::int64_t end = std::min(begin + per_chunk, elements);
  Acc sums[K];
  for (int j = 0; j < K; ++j) sums[j] = 0;
  for (std::int64_t e = begin + threadIdx.x; e < end; e += blockDim.x)
    term(layout.index(segment, e), segment, sums);
  for (int j = 0; j < K; ++j) {
    const Acc total = block_reduce(sums[j], Plus{});
    if (threadIdx.x == 0) partial[(segment * gridDim.y + chunk) * K + j] = total;
  }
}

// finish(segment, totals) with totals[j] = the sum of the group's `chunks` partials in chunk order;
// one thread per group.
template <int K, class Acc, class Finish>
__global__ void group_totals_kernel(const Acc* partial, std::int64_t segments, std::int64_t chunks,
                                    Finish finish) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; s < segments;
       s += stride) {
    Acc totals[K];
    for (int j = 0; j < K; ++j) totals[j] = 0;
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
      for (int j = 0; j < K; ++j) totals[j] += partial[(s * chunks + chunk) * K + j];
    }
    finish(s, totals);
  }
}

/// The two passes of a per-group sum: `term`'s K sums per group handed to `finish(segment,
/// totals)`. `partial` holds K x segments x group_chunks(elements).count values.
template <int K, class Acc, class Term, class Finish>
void group_sums(const GroupLayout& layout, std::int64_t segments, const Term& term, const Finish& finish,
                Acc* partial) {
  const std::int64_t elements = layout.pixels * layout.cg;
  const GroupChunks chunks = group_chunks(elements);
  group_partial_sums_kernel<K, Acc>
      <<<dim3(static_cast<unsigned>(segments), static_cast<unsigned>(chunks.count)),
         row_threads(chunks.elements_per_chunk), 0, stream()>>>(layout, elements, chunks.elements_per_chunk,
                                                                term, partial);
  MPX_CUDA_CHECK_LAUNCH("group_partial_sums_kernel");
  group_totals_kernel<K, Acc><<<elementwise_blocks(segments), elementwise_threads, 0, stream()>>>(
      partial, segments, chunks.count, finish);
  MPX_CUDA_CHECK_LAUNCH("group_totals_kernel");
}

/// Values the partials of `group_sums` with K sums need.
inline std::int64_t group_sums_scratch(int k, std::int64_t segments, std::int64_t elements) {
  return k * segments * group_chunks(elements).count;
}

/// x[i] widened.
template <class T, class Acc>
struct GroupValueTerm {
  const T* x;
  MPX_HOST_DEVICE void operator()(std::int64_t i, std::int64_t, Acc* sums) const {
    sums[0] += static_cast<Acc>(x[i]);
  }
};

/// (x[i] - mean[segment])^2.
template <class T, class Acc>
struct GroupSquaredDeviationTerm {
  const T* x;
  const Acc* mean;
  MPX_HOST_DEVICE void operator()(std::int64_t i, std::int64_t segment, Acc* sums) const {
    const Acc d = static_cast<Acc>(x[i]) - mean[segment];
    sums[0] += d * d;
  }
};

/// rstd[segment] = 1 / sqrt(squares / count + epsilon).
template <class Acc>
struct GroupRstdFinish {
  Acc* rstd;
  Acc count;
  Acc epsilon;
  MPX_HOST_DEVICE void operator()(std::int64_t s, const Acc* totals) const {
    rstd[s] = Acc(1) / std::sqrt(totals[0] / count + epsilon);
  }
};

/// [h, h xhat] with h = dy gamma[c], xhat = (x - mean) rstd.
template <class T, class Weight, class Acc>
struct GroupGradientTerm {
  const T* x;
  const T* dy;
  const Weight* gamma;
  const Acc* mean;
  const Acc* rstd;
  std::int64_t channels;
  MPX_HOST_DEVICE void operator()(std::int64_t i, std::int64_t segment, Acc* sums) const {
    const Acc xhat = (static_cast<Acc>(x[i]) - mean[segment]) * rstd[segment];
    const Acc h = static_cast<Acc>(dy[i]) * static_cast<Acc>(gamma[i % channels]);
    sums[0] += h;
    sums[1] += h * xhat;
  }
};

/// sums[2 segment + j] = totals[j]: the group's sum h and sum h xhat, for dx.
template <class Acc>
struct StoreTotals {
  Acc* sums;
  MPX_HOST_DEVICE void operator()(std::int64_t s, const Acc* totals) const {
    sums[2 * s] = totals[0];
    sums[2 * s + 1] = totals[1];
  }
};

/// Per channel over rows r of [N pixels, C]: [dy xhat, dy] (dgamma's and dbeta's terms).
template <class T, class Acc>
struct GroupParameterTerm {
  const T* x;
  const T* dy;
  const Acc* mean;
  const Acc* rstd;
  GroupLayout layout;
  MPX_HOST_DEVICE void operator()(std::int64_t r, std::int64_t c, Acc* sums) const {
    const std::int64_t i = r * layout.channels + c;
    const std::int64_t s = layout.segment_of_row(r, c);
    const Acc g = static_cast<Acc>(dy[i]);
    sums[0] += g * ((static_cast<Acc>(x[i]) - mean[s]) * rstd[s]);
    sums[1] += g;
  }
};

/// dgamma = sum dy xhat, dbeta = sum dy, written or added.
template <class Acc>
struct GroupParameterFinish {
  Acc* dgamma;
  bool overwrite_dgamma;
  Acc* dbeta;
  bool overwrite_dbeta;
  MPX_HOST_DEVICE void operator()(std::int64_t c, const Acc* totals) const {
    dgamma[c] = overwrite_dgamma ? totals[0] : dgamma[c] + totals[0];
    dbeta[c] = overwrite_dbeta ? totals[1] : dbeta[c] + totals[1];
  }
};

// y = (x - mean) rstd gamma + beta per element, rounded once; `count` elements.
template <class T, class Weight, class Acc>
__global__ void group_norm_normalize_kernel(const T* x, const Weight* gamma, const Weight* beta,
                                            const Acc* mean, const Acc* rstd, GroupLayout layout,
                                            std::int64_t count, T* y) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t c = i % layout.channels, s = layout.segment_of(i);
    const Acc xhat = (static_cast<Acc>(x[i]) - mean[s]) * rstd[s];
    y[i] = round_to<tag_of_t<T>>(xhat * static_cast<Acc>(gamma[c]) + static_cast<Acc>(beta[c]));
  }
}

// dx = rstd (h - sum h / count - xhat sum(h xhat) / count) per element (the CPU's expression), with
// the group sums of StoreTotals; rounded once.
template <class T, class Weight, class Acc>
__global__ void group_norm_backward_dx_kernel(const T* x, const T* dy, const Weight* gamma, const Acc* mean,
                                              const Acc* rstd, const Acc* sums, Acc group_count,
                                              GroupLayout layout, std::int64_t count, T* dx) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::int64_t c = i % layout.channels, s = layout.segment_of(i);
    const Acc xhat = (static_cast<Acc>(x[i]) - mean[s]) * rstd[s];
    const Acc h = static_cast<Acc>(dy[i]) * static_cast<Acc>(gamma[c]);
    dx[i] = round_to<tag_of_t<T>>(rstd[s] *
                                  (h - sums[2 * s] / group_count - xhat * sums[2 * s + 1] / group_count));
  }
}

}  // namespace detail

/// @brief y = (x - mean) rstd gamma + beta per image and group; writes mean and rstd [N, groups]
/// (accumulate type) for backward. Two passes for the variance: no cancellation for a large mean.
/// @param x [N, ..., C] in the compute type; @param gamma, beta [C] (the master weights);
/// @param groups G, dividing C; @param epsilon added to the variance; @param y like x, written;
/// @param mean, rstd [N, groups] in the accumulate type, written.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void group_norm_forward(const Tensor<T, Cuda>& x, const Tensor<Weight, Cuda>& gamma,
                        const Tensor<Weight, Cuda>& beta, std::int64_t groups, float epsilon,
                        Tensor<T, Cuda>& y, Tensor<Acc, Cuda>& mean, Tensor<Acc, Cuda>& rstd) {
  constexpr const char* where = "mpx::cuda::group_norm_forward";
  validate_group_norm_forward(where, x, gamma, beta, groups, y, mean, rstd);
  const std::int64_t n = x.shape()[0], c = x.shape().cols();
  if (n == 0 || c == 0) return;
  const detail::GroupLayout layout{groups, x.numel() / (n * c), c, c / groups};
  const std::int64_t segments = n * groups, elements = layout.pixels * layout.cg;
  const Acc count = static_cast<Acc>(elements);
  Acc* partial = detail::scratch<Acc>(mean.data(), detail::group_sums_scratch(1, segments, elements));
  detail::group_sums<1, Acc>(layout, segments, detail::GroupValueTerm<T, Acc>{x.data()},
                             detail::MeanFinish<Acc>{mean.data(), count}, partial);
  detail::group_sums<1, Acc>(
      layout, segments, detail::GroupSquaredDeviationTerm<T, Acc>{x.data(), mean.data()},
      detail::GroupRstdFinish<Acc>{rstd.data(), count, static_cast<Acc>(epsilon)}, partial);
  const std::int64_t total = x.numel();
  if (total == 0) return;
  detail::group_norm_normalize_kernel<<<detail::elementwise_blocks(total), detail::elementwise_threads, 0,
                                        detail::stream()>>>(x.data(), gamma.data(), beta.data(), mean.data(),
                                                            rstd.data(), layout, total, y.data());
  MPX_CUDA_CHECK_LAUNCH("group_norm_normalize_kernel");
}

/// @brief dgamma, dbeta (written when their `overwrite` is set, else added) and dx (when not null)
/// from dy, with the forward's mean and rstd. The partial sums live in device scratch keyed by `dgamma`.
template <FloatingElement T, FloatingElement Weight, FloatingElement Acc>
void group_norm_backward(const Tensor<T, Cuda>& x, const Tensor<Weight, Cuda>& gamma, std::int64_t groups,
                         const Tensor<Acc, Cuda>& mean, const Tensor<Acc, Cuda>& rstd,
                         const Tensor<T, Cuda>& dy, Tensor<T, Cuda>* dx, Tensor<Acc, Cuda>& dgamma,
                         bool overwrite_dgamma, Tensor<Acc, Cuda>& dbeta, bool overwrite_dbeta) {
  constexpr const char* where = "mpx::cuda::group_norm_backward";
  validate_group_norm_backward(where, x, gamma, groups, mean, rstd, dy, dx, dgamma, dbeta);
  const std::int64_t n = x.shape()[0], c = x.shape().cols();
  if (c == 0) return;
  if (n == 0) {  // no image: the sums are zero
    detail::channel_sums<2, Acc>(
        0, c, detail::GroupParameterTerm<T, Acc>{},
        detail::GroupParameterFinish<Acc>{dgamma.data(), overwrite_dgamma, dbeta.data(), overwrite_dbeta},
        detail::scratch<Acc>(dgamma.data(), detail::channel_sums_scratch(2, 0, c)));
    return;
  }
  const detail::GroupLayout layout{groups, x.numel() / (n * c), c, c / groups};
  const std::int64_t segments = n * groups, elements = layout.pixels * layout.cg, rows = n * layout.pixels;
  const std::int64_t group_partials = detail::group_sums_scratch(2, segments, elements);
  const std::int64_t channel_partials = detail::channel_sums_scratch(2, rows, c);
  Acc* partial =
      detail::scratch<Acc>(dgamma.data(), std::max(group_partials, channel_partials) + 2 * segments);
  Acc* sums = partial + std::max(group_partials, channel_partials);
  const std::int64_t total = x.numel();
  if (dx != nullptr && total != 0) {
    detail::group_sums<2, Acc>(layout, segments,
                               detail::GroupGradientTerm<T, Weight, Acc>{x.data(), dy.data(), gamma.data(),
                                                                         mean.data(), rstd.data(), c},
                               detail::StoreTotals<Acc>{sums}, partial);
    detail::group_norm_backward_dx_kernel<<<detail::elementwise_blocks(total), detail::elementwise_threads, 0,
                                            detail::stream()>>>(
        x.data(), dy.data(), gamma.data(), mean.data(), rstd.data(), sums, static_cast<Acc>(elements), layout,
        total, dx->data());
    MPX_CUDA_CHECK_LAUNCH("group_norm_backward_dx_kernel");
  }
  detail::channel_sums<2, Acc>(
      rows, c, detail::GroupParameterTerm<T, Acc>{x.data(), dy.data(), mean.data(), rstd.data(), layout},
      detail::GroupParameterFinish<Acc>{dgamma.data(), overwrite_dgamma, dbeta.data(), overwrite_dbeta},
      partial);
}

}  // namespace mpx::cuda
