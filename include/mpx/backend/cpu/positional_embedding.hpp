// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Learned positional embedding on the CPU: y[b, t, :] = x[b, t, :] + weight[t, :] added in
/// the accumulate type (fp32 for 16-bit activations) and rounded once; the weight gradient sums the
/// upstream gradient over the batch in batch order (the reference the CUDA kernels reproduce bit
/// for bit).

#include <cstdint>
#include <vector>

#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/embedding_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief y[b, t, c] = round(x[b, t, c] + weight[t, c]), the sum in x's accumulate type.
/// @param x      [batch, sequence, dim] (or [sequence, dim]; every leading dimension is a batch) in
///               the compute type, sequence <= max_positions.
/// @param weight [max_positions, dim], any element type (the master weights).
/// @param y      x's shape, written.
template <FloatingElement T, FloatingElement Weight>
void positional_embedding_forward(const Tensor<T, Host>& x, const Tensor<Weight, Host>& weight,
                                  Tensor<T, Host>& y) {
  constexpr const char* where = "mpx::cpu::positional_embedding_forward";
  const std::int64_t sequence = validate_positional_embedding(where, x, weight);
  require_shape(where, "output", y.shape(), x.shape());
  using Acc = accumulate_t<T>;
  const std::int64_t block = sequence * weight.shape()[1];  // one sequence's elements = weight's first rows
  const T* in = x.data();
  const Weight* w = weight.data();
  T* out = y.data();
  parallel_for_chunks(x.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i)
      out[i] = round_to<tag_of_t<T>>(static_cast<Acc>(in[i]) + static_cast<Acc>(w[i % block]));
  });
}

/// @brief dweight[t, c] += (dy[0, t, c] + dy[1, t, c]) + ...: the sum over the batch in order, each
/// term widened to the accumulate type, then added to the gradient once (so micro-batches accumulate
/// exactly as the sum of their own gradients); the same bits on every run and on the GPU. Rows of
/// positions beyond the sequence are left as they are. (The input gradient is dy itself.)
/// @param dy      [batch, sequence, dim] (or [sequence, dim]) in the compute type.
/// @param dweight [max_positions, dim] in the accumulate type, accumulated (+=).
template <FloatingElement T, FloatingElement Acc>
void positional_embedding_backward(const Tensor<T, Host>& dy, Tensor<Acc, Host>& dweight) {
  constexpr const char* where = "mpx::cpu::positional_embedding_backward";
  const std::int64_t sequence = validate_positional_embedding(where, dy, dweight);
  const std::int64_t block = sequence * dweight.shape()[1];
  const std::int64_t batch = block == 0 ? 0 : dy.numel() / block;
  const T* g = dy.data();
  Acc* dw = dweight.data();
  // Chunks of the weight's elements in parallel; within an element, the batch in order.
  parallel_for_chunks(block, parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    std::vector<Acc> sum(static_cast<std::size_t>(end - begin), Acc(0));
    for (std::int64_t b = 0; b < batch; ++b) {
      const T* row = g + b * block;
      for (std::int64_t i = begin; i < end; ++i)
        sum[static_cast<std::size_t>(i - begin)] += static_cast<Acc>(row[i]);
    }
    for (std::int64_t i = begin; i < end; ++i) dw[i] += sum[static_cast<std::size_t>(i - begin)];
  });
}

}  // namespace mpx::cpu
