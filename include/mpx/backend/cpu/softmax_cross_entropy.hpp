// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Softmax cross-entropy on the CPU, in fp32 whatever the logits' type, forward and backward
/// in one pass over each row (as llm.c's fused classifier), over the rows of logits of any rank >= 2
/// with an ignore index, and the predicted class (argmax) of each row of [batch, classes] logits.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "mpx/backend/argmax_spec.hpp"
#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/cross_entropy_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/exp.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief Mean cross-entropy of softmax(logits) against integer labels, with PyTorch's label
/// smoothing (target = (1 - s) one_hot + s / classes) and `ignore_index`; optionally writes the
/// gradient. As `torch.nn.functional.cross_entropy(..., reduction="mean")` on the matrix view.
///
/// @param logits       rank >= 2 in any element type, read as its matrix view [rows, classes]
///                     ([batch, sequence, vocabulary]: batch x sequence rows); read as fp32 (fp64 for
///                     double).
/// @param labels       one class index per row ([batch] or [batch, sequence] int32).
/// @param smoothing    label smoothing in [0, 1).
/// @param grad_seed    dL/dloss to seed the backward with (the loss scale, divided by the number of
///                     micro-batches); the gradient is grad_seed * (softmax - target) / counted, counted
///                     being the number of rows whose label is not `ignore_index`.
/// @param dlogits      if not null, receives the gradient (same shape and type as logits).
/// @param ignore_index rows with this label add no loss and get a zero gradient (it may be a class id).
/// @return the mean loss over the counted rows, in the accumulate type. With no counted row (every label
///         ignored, or no rows) the loss is 0 and the gradient zero: PyTorch returns NaN there, but its
///         gradient is zero and its step proceeds, while mpx skips a step whose loss is not finite (and
///         backs off the loss scale), so a NaN would turn a batch of padding into a skipped step; 0
///         keeps PyTorch's trajectory. Non-finite logits give a non-finite loss and gradient, which the
///         training step detects. A label outside [0, classes) that is not `ignore_index` throws
///         `mpx::invalid_argument` naming it and its row.
template <FloatingElement T>
accumulate_t<T> softmax_cross_entropy(const Tensor<T, Host>& logits, std::span<const std::int32_t> labels,
                                      float smoothing, float grad_seed, Tensor<T, Host>* dlogits,
                                      std::int32_t ignore_index = default_ignore_index) {
  using Acc = accumulate_t<T>;
  constexpr const char* where = "mpx::cpu::softmax_cross_entropy";
  validate_softmax_cross_entropy(where, logits, static_cast<std::int64_t>(labels.size()), smoothing, dlogits);
  const std::int64_t rows = logits.shape().rows();
  const std::int64_t classes = logits.shape().cols();
  // The labels checked before any work: no exception may leave the parallel region below.
  std::int64_t counted = 0;
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::int32_t label = labels[static_cast<std::size_t>(row)];
    if (label == ignore_index) continue;
    ++counted;
    if (label < 0 || label >= classes) {
      throw invalid_argument(mpx::detail::concat(where, ": label ", label, " at row ", row,
                                                 " is outside [0, ", classes,
                                                 ") and is not the ignore index ", ignore_index));
    }
  }

  const Acc off_target = static_cast<Acc>(smoothing) / static_cast<Acc>(classes);
  const Acc on_target = static_cast<Acc>(1) - static_cast<Acc>(smoothing) + off_target;
  const Acc grad_scale = counted == 0 ? Acc(0) : static_cast<Acc>(grad_seed) / static_cast<Acc>(counted);
  // Rows on all threads, each row's loss kept and the losses added in row order after: the same bits
  // on any number of threads. A row's maximum and exps are vector loops (row_max, softmax_exp), its
  // sum of exps in 8 lanes (lane_sum).
  std::vector<Acc> row_losses(static_cast<std::size_t>(rows), Acc(0));
  parallel_for_chunks(rows, rows_per_chunk(classes), [&](std::int64_t begin, std::int64_t end) {
    std::vector<Acc> buffer(static_cast<std::size_t>(2 * classes));
    Acc* z = buffer.data();            // the row's logits, widened
    Acc* e = buffer.data() + classes;  // their exps, then the gradient
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int32_t label = labels[static_cast<std::size_t>(row)];
      T* dz = dlogits != nullptr ? dlogits->data() + row * classes : nullptr;
      if (label == ignore_index) {
        if (dz != nullptr) std::fill(dz, dz + classes, round_to<tag_of_t<T>>(Acc(0)));
        continue;
      }
      detail::widen_range<tag_of_t<T>>(logits.data() + row * classes, z, 0, classes);
      const Acc max_logit = detail::row_max(z, classes);
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t c = 0; c < classes; ++c) e[c] = softmax_exp(z[c] - max_logit);
      const Acc sum_exp = detail::lane_sum(classes, [e](std::int64_t c) { return e[c]; });
      const Acc log_sum_exp = max_logit + std::log(sum_exp);
      // loss = -sum_c target_c * log p_c, with log p_c = z_c - log_sum_exp and sum_c target_c = 1.
      Acc row_loss = log_sum_exp - on_target * z[label];
      if (off_target != Acc(0)) {  // without smoothing the terms are 0 (a non-finite z made the loss NaN)
        for (std::int64_t c = 0; c < classes; ++c) {
          if (c != label) row_loss -= off_target * z[c];
        }
      }
      row_losses[static_cast<std::size_t>(row)] = row_loss;
      if (dz == nullptr) continue;
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t c = 0; c < classes; ++c) {
        const Acc target = c == label ? on_target : off_target;
        e[c] = (softmax_exp(z[c] - log_sum_exp) - target) * grad_scale;
      }
      detail::round_range(e, dz, 0, classes);
    }
  });
  Acc total = 0;
  for (const Acc loss : row_losses) total += loss;
  return counted == 0 ? Acc(0) : total / static_cast<Acc>(counted);
}

/// @brief The training step's form: the seed is `seed.value()` (a `LossSeed`: the running step's loss
/// scale over its micro-batches), the mean over the counted rows is *added* to `*loss_sum`, as the
/// CUDA backend does it in device memory. `row_losses` is the CUDA form's scratch; the CPU does not
/// need it.
template <Element T, class Seed>
void softmax_cross_entropy(const Tensor<T, Host>& logits, std::span<const std::int32_t> labels,
                           float smoothing, const Seed& seed, Tensor<T, Host>* dlogits,
                           Tensor<accumulate_t<T>, Host>& /*row_losses*/, double* loss_sum,
                           std::int32_t ignore_index = default_ignore_index) {
  *loss_sum += static_cast<double>(
      softmax_cross_entropy(logits, labels, smoothing, seed.value(), dlogits, ignore_index));
}

/// @brief The training step's form with the labels as a tensor (what `nn::SoftmaxCrossEntropy` passes).
template <Element T, class Seed>
void softmax_cross_entropy(const Tensor<T, Host>& logits, const Tensor<std::int32_t, Host>& labels,
                           float smoothing, const Seed& seed, Tensor<T, Host>* dlogits,
                           Tensor<accumulate_t<T>, Host>& row_losses, double* loss_sum,
                           std::int32_t ignore_index = default_ignore_index) {
  softmax_cross_entropy(
      logits, std::span<const std::int32_t>(labels.data(), static_cast<std::size_t>(labels.numel())),
      smoothing, seed, dlogits, row_losses, loss_sum, ignore_index);
}

namespace detail {

/// The class a row of logits predicts: the index of its largest value in the accumulate type, the first
/// one on ties, and the first NaN if there is one (torch.argmax's rule: NaN compares as the largest).
template <FloatingElement T>
std::int32_t row_argmax(const T* z, std::int64_t classes) noexcept {
  using Acc = accumulate_t<T>;
  std::int64_t best = 0;
  Acc best_value = static_cast<Acc>(z[0]);
  if (std::isnan(best_value)) return 0;
  for (std::int64_t c = 1; c < classes; ++c) {
    const Acc value = static_cast<Acc>(z[c]);
    if (std::isnan(value)) return static_cast<std::int32_t>(c);
    if (value > best_value) {
      best = c;
      best_value = value;
    }
  }
  return static_cast<std::int32_t>(best);
}

}  // namespace detail

/// @brief The predicted class of each row: `indices[row]` = the index of the row's largest logit,
/// compared in the accumulate type (fp32, fp64 for double), the first one on ties and the first NaN if
/// any, as `torch.argmax(logits, dim=1)`.
/// @param logits  [batch, classes], classes >= 1.
/// @param indices [batch] (`mpx::shape_error` otherwise).
template <FloatingElement T>
void argmax(const Tensor<T, Host>& logits, Tensor<std::int32_t, Host>& indices) {
  constexpr const char* where = "mpx::cpu::argmax";
  validate_class_logits(where, logits);
  const std::int64_t batch = logits.shape()[0];
  const std::int64_t classes = logits.shape()[1];
  require_shape(where, "indices", indices.shape(), Shape{batch});
  for (std::int64_t row = 0; row < batch; ++row)
    indices[row] = detail::row_argmax(logits.data() + row * classes, classes);
}

/// @brief Number of rows whose predicted class (as `argmax` picks it) is the label.
template <FloatingElement T>
std::int64_t count_correct(const Tensor<T, Host>& logits, std::span<const std::int32_t> labels) {
  if (logits.rank() != 2 || static_cast<std::int64_t>(labels.size()) != logits.shape()[0]) {
    throw shape_error(mpx::detail::concat("mpx::cpu::count_correct: ", labels.size(),
                                          " labels for logits of shape ", logits.shape(),
                                          "; expected [batch, classes] with one label per row"));
  }
  validate_class_logits("mpx::cpu::count_correct", logits);
  const std::int64_t batch = logits.shape()[0];
  const std::int64_t classes = logits.shape()[1];
  std::int64_t correct = 0;
  for (std::int64_t row = 0; row < batch; ++row) {
    if (detail::row_argmax(logits.data() + row * classes, classes) == labels[static_cast<std::size_t>(row)]) {
      ++correct;
    }
  }
  return correct;
}

}  // namespace mpx::cpu
