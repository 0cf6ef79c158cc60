// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Token embedding on the CPU: forward gathers rows of the weight, backward scatters the
/// upstream gradient into the fp32 weight gradient in position order (the reference the CUDA
/// kernels reproduce bit for bit).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "mpx/backend/embedding_spec.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief What `embedding_backward` needs between calls: nothing on the CPU (the CUDA backend keeps
/// its sort buffers in its own `EmbeddingWorkspace`); it exists so that a layer holds one workspace
/// whatever its device.
struct EmbeddingWorkspace {};

/// @brief out[n, :] = weight[ids[n], :] for every position n of `ids` (a copy: the rows keep their
/// bits).
/// @param ids    token ids, rank 1 to 3 ([batch, sequence] usually).
/// @param weight [num_embeddings, dim] in the compute type.
/// @param out    ids' shape with dim appended, written.
/// @throws mpx::invalid_argument naming the first id outside [0, num_embeddings) and its position.
template <FloatingElement T>
void embedding_forward(const Tensor<std::int32_t, Host>& ids, const Tensor<T, Host>& weight,
                       Tensor<T, Host>& out) {
  constexpr const char* where = "mpx::cpu::embedding_forward";
  validate_embedding_forward(where, ids, weight, out);
  const std::int64_t num_embeddings = weight.shape()[0];
  check_token_ids(where, ids, num_embeddings);
  const std::int64_t dim = weight.shape()[1];
  const std::int64_t count = ids.numel();
  for (std::int64_t n = 0; n < count; ++n) {
    std::memcpy(out.data() + n * dim, weight.data() + static_cast<std::int64_t>(ids[n]) * dim,
                static_cast<std::size_t>(dim) * sizeof(T));
  }
}

/// @brief dweight[id, :] += (((dy[p1, :] + dy[p2, :]) + ...) for every id, where p1 < p2 < ... are
/// the positions where it occurs: the id's sum over this call's positions, in position order, each
/// term widened to the accumulate type, then added to the gradient row once.
///
/// That fixed order is the contract, the same bits on every run and on the GPU. Adding the finished
/// sum, rather than each term, to the gradient makes micro-batches accumulate exactly as the sum of
/// their own gradients (what data-parallel ranks add up). Rows of ids that do not occur are left as
/// they are.
/// @param ids     token ids, as given to forward.
/// @param dy      ids' shape with dim appended, in the compute type.
/// @param dweight [num_embeddings, dim] in the accumulate type, accumulated (+=).
/// @throws mpx::invalid_argument for an id outside [0, num_embeddings), as forward.
template <FloatingElement T, FloatingElement Acc>
void embedding_backward(const Tensor<std::int32_t, Host>& ids, const Tensor<T, Host>& dy,
                        Tensor<Acc, Host>& dweight, EmbeddingWorkspace& /*workspace*/) {
  constexpr const char* where = "mpx::cpu::embedding_backward";
  validate_embedding_backward(where, ids, dy, dweight);
  const std::int64_t num_embeddings = dweight.shape()[0];
  check_token_ids(where, ids, num_embeddings);
  const std::int64_t dim = dweight.shape()[1];
  const std::int64_t count = ids.numel();
  // Positions grouped by id, ascending within each id (the GPU sorts its keys the same way).
  std::vector<std::int64_t> order(static_cast<std::size_t>(count));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t a, std::int64_t b) { return ids[a] < ids[b]; });
  std::vector<Acc> sum(static_cast<std::size_t>(dim));
  for (std::size_t i = 0; i < order.size();) {
    const std::int32_t id = ids[order[i]];
    std::fill(sum.begin(), sum.end(), Acc(0));
    for (; i < order.size() && ids[order[i]] == id; ++i) {
      const T* g = dy.data() + order[i] * dim;
      for (std::int64_t c = 0; c < dim; ++c) sum[static_cast<std::size_t>(c)] += static_cast<Acc>(g[c]);
    }
    Acc* row = dweight.data() + static_cast<std::int64_t>(id) * dim;
    for (std::int64_t c = 0; c < dim; ++c) row[c] += sum[static_cast<std::size_t>(c)];
  }
}

}  // namespace mpx::cpu
