// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Epoch-level helpers for classifiers: train one epoch through a `Trainer` and evaluate on a
/// dataset, reporting what a precision experiment compares.

#include <chrono>
#include <cmath>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "mpx/backend/cpu/backend.hpp"
#include "mpx/data/batcher.hpp"
#include "mpx/data/dataset.hpp"
#include "mpx/tensor/convert.hpp"

namespace mpx::experiment {

/// @brief Loss and accuracy of a model on a dataset.
struct Evaluation {
  double loss = 0.0;      ///< mean over samples
  double accuracy = 0.0;  ///< fraction of samples whose largest logit is the label
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

/// @brief Evaluates `model` on `dataset` in batches (no gradients, no parameter changes).
template <class Model, class Loss>
Evaluation evaluate(Model& model, Loss& loss, const data::Dataset& dataset, std::int64_t batch_size = 1000) {
  using Input = typename Model::input_type;
  data::Batcher batcher(dataset, {.batch_size = batch_size, .shuffle = false});
  Tensor<Input, Host> inputs;
  std::vector<std::int32_t> labels;
  Evaluation result;
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  while (batcher.next(inputs, labels)) {
    const std::span<const std::int32_t> targets(labels);
    const auto& logits = model.forward(inputs);
    const auto batch = static_cast<std::int64_t>(labels.size());
    loss_sum += static_cast<double>(loss.forward(logits, targets)) * static_cast<double>(batch);
    correct += Backend<Host>::count_correct(logits, targets);
    result.samples += batch;
  }
  model.forget_inputs();  // the layers saved pointers into this function's batch buffer
  if (result.samples > 0) {
    result.loss = loss_sum / static_cast<double>(result.samples);
    result.accuracy = static_cast<double>(correct) / static_cast<double>(result.samples);
  }
  return result;
}

/// @brief Trains one epoch: every batch of `batcher`'s epoch `epoch` is one step of `trainer`.
/// `on_step(step_index, steps_in_epoch, result)` is called after each step (for progress display
/// and learning-rate schedules). The training accuracy is read from the logits each step computed.
/// A step whose loss is not finite ends the epoch and is reported in `diverged_at_step`.
template <class Trainer, class OnStep>
EpochSummary train_epoch(Trainer& trainer, data::Batcher& batcher, std::uint64_t epoch, OnStep&& on_step) {
  auto& model = trainer.model();
  using Model = std::remove_cvref_t<decltype(model)>;
  batcher.start_epoch(epoch);
  // Batches are gathered straight into the model's input type: no fp32 copy of a bf16 model's input.
  Tensor<typename Model::input_type, Host> images;
  std::vector<std::int32_t> labels;
  EpochSummary summary;
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  std::int64_t samples = 0;
  const std::int64_t steps_in_epoch = batcher.batches_per_epoch();
  const auto start = std::chrono::steady_clock::now();
  while (batcher.next(images, labels)) {
    const std::span<const std::int32_t> targets(labels);
    const auto result = trainer.step(images, targets);
    // The logits the step computed for this batch (before its update).
    correct += Backend<Host>::count_correct(model.last_output(), targets);
    samples += static_cast<std::int64_t>(labels.size());
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
