// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Epoch-level helpers for classifiers: train one epoch through a `Trainer` and evaluate on a
/// dataset, reporting what a precision experiment compares. Written once for every device: batches
/// are gathered on the host and moved with `mpx::to<Device>`.

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "mpx/data/batcher.hpp"
#include "mpx/data/dataset.hpp"
#include "mpx/nn/predict.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/tensor/tensor.hpp"
#include "mpx/tensor/transfer.hpp"

namespace mpx::experiment {

/// @brief Loss and accuracy of a model on a dataset.
struct Evaluation {
  double loss = 0.0;      ///< mean over samples (NaN when evaluated without a loss)
  double accuracy = 0.0;  ///< fraction of samples whose predicted class (`nn::predict`) is the label
  /// @brief Number of samples evaluated.
  std::int64_t samples = 0;
};

/// @brief What one training epoch did.
struct EpochSummary {
  double loss = 0.0;      ///< mean training loss over the steps taken
  double accuracy = 0.0;  ///< training accuracy, measured on the batches as they were trained on
  /// @brief Training steps taken in the epoch.
  std::int64_t steps = 0;
  std::int64_t skipped_steps = 0;  ///< steps whose gradients overflowed (not applied)
  /// @brief Wall-clock time of the epoch.
  double seconds = 0.0;
  /// @brief Training throughput.
  double samples_per_second = 0.0;
  float loss_scale = 1.0f;  ///< after the epoch's last step
  /// The trainer's step number (from 1) whose loss was inf or NaN, which ended the epoch early;
  /// 0 when every loss was finite. A run that diverged this way should stop: its weights are
  /// unchanged since the last finite step (the non-finite gradients were skipped), but the model
  /// no longer produces finite outputs.
  std::int64_t diverged_at_step = 0;
};

namespace detail {

/// Runs `model` over `dataset` in order, in batches gathered on the host and moved to the model's
/// device into one buffer pair for the whole call; calls `on_batch(logits, labels)` with both on the
/// model's device. Returns the number of samples.
template <class Model, class OnBatch>
std::int64_t for_each_batch(Model& model, const data::Dataset& dataset, std::int64_t batch_size,
                            OnBatch&& on_batch) {
  using Device = typename Model::device_type;
  using Input = typename Model::input_type;
  data::Batcher batcher(dataset, {.batch_size = batch_size, .shuffle = false});
  Tensor<Input, Host> inputs;
  Tensor<std::int32_t, Host> labels;
  Tensor<Input, Device> device_inputs;  // unused on the host, where `to` returns the batch itself
  Tensor<std::int32_t, Device> device_labels;
  std::int64_t samples = 0;
  const nn::EvaluationMode evaluating(model);  // dropout off
  while (batcher.next(inputs, labels)) {
    const auto& x = to<Device>(inputs, device_inputs);
    const auto& y = to<Device>(labels, device_labels);
    on_batch(model.forward(x), y);
    samples += labels.numel();
  }
  model.forget_inputs();  // the layers saved pointers into this function's batch buffers
  return samples;
}

}  // namespace detail

/// @brief Loss and accuracy of `model` on `dataset`, on the model's device: batches of `batch_size`
/// are gathered on the host in the model's input type and moved to the device (no gradients, no
/// parameter changes).
template <class Model, class Loss>
Evaluation evaluate(Model& model, Loss& loss, const data::Dataset& dataset, std::int64_t batch_size = 1000) {
  Evaluation result;
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  result.samples =
      detail::for_each_batch(model, dataset, batch_size, [&](const auto& logits, const auto& labels) {
        loss_sum += static_cast<double>(loss.forward(logits, labels)) * static_cast<double>(labels.numel());
        correct += nn::count_correct(logits, labels);
      });
  if (result.samples > 0) {
    result.loss = loss_sum / static_cast<double>(result.samples);
    result.accuracy = static_cast<double>(correct) / static_cast<double>(result.samples);
  }
  return result;
}

/// @brief Accuracy of `model` on `dataset`, without a loss (`loss` is NaN in the result): what a
/// trained or loaded model is judged by; no optimizer or trainer needed.
template <class Model>
Evaluation evaluate(Model& model, const data::Dataset& dataset, std::int64_t batch_size = 1000) {
  Evaluation result;
  result.loss = std::numeric_limits<double>::quiet_NaN();
  std::int64_t correct = 0;
  result.samples = detail::for_each_batch(
      model, dataset, batch_size,
      [&](const auto& logits, const auto& labels) { correct += nn::count_correct(logits, labels); });
  if (result.samples > 0)
    result.accuracy = static_cast<double>(correct) / static_cast<double>(result.samples);
  return result;
}

/// @brief Trains one epoch: every batch of `batcher`'s epoch `epoch` is one step of `trainer`, on the
/// model's device. Batches are gathered on the host in the model's input type and moved to the
/// device into one buffer pair for the epoch (on CUDA the copies are queued). `on_step(step_index,
/// steps_in_epoch, result)` is called after each step (for progress display and learning-rate
/// schedules). The training accuracy is counted on the device from the logits each step computed.
/// A step whose loss is not finite ends the epoch and is reported in `diverged_at_step`.
template <class Trainer, class OnStep>
EpochSummary train_epoch(Trainer& trainer, data::Batcher& batcher, std::uint64_t epoch, OnStep&& on_step) {
  auto& model = trainer.model();
  using Model = std::remove_cvref_t<decltype(model)>;
  using Device = typename Model::device_type;
  using Input = typename Model::input_type;
  batcher.start_epoch(epoch);
  // Batches are gathered straight into the model's input type: no fp32 copy of a bf16 model's input.
  Tensor<Input, Host> images;
  Tensor<std::int32_t, Host> labels;
  Tensor<Input, Device> device_images;  // unused on the host, where `to` returns the batch itself
  Tensor<std::int32_t, Device> device_labels;
  EpochSummary summary;
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  std::int64_t samples = 0;
  const std::int64_t steps_in_epoch = batcher.batches_per_epoch();
  const auto start = std::chrono::steady_clock::now();
  while (batcher.next(images, labels)) {
    const auto& x = to<Device>(images, device_images);
    const auto& y = to<Device>(labels, device_labels);
    const auto result = trainer.step(x, y);
    // The logits the step computed for this batch (before its update).
    correct += nn::count_correct(model.last_output(), y);
    samples += labels.numel();
    ++summary.steps;
    if (result.stepped) {
      loss_sum += result.loss;
    } else {
      ++summary.skipped_steps;
    }
    summary.loss_scale = trainer.scaler().scale();
    on_step(summary.steps - 1, steps_in_epoch, result);
    if (!std::isfinite(result.loss)) {
      summary.diverged_at_step = result.step;
      break;
    }
  }
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::int64_t taken = summary.steps - summary.skipped_steps;
  summary.loss = taken > 0 ? loss_sum / static_cast<double>(taken) : 0.0;
  summary.accuracy = samples > 0 ? static_cast<double>(correct) / static_cast<double>(samples) : 0.0;
  summary.samples_per_second = summary.seconds > 0.0 ? static_cast<double>(samples) / summary.seconds : 0.0;
  return summary;
}

}  // namespace mpx::experiment
