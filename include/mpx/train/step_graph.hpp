// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `StepGraph<Device, OptimizerOptions>`: a training step recorded for replay, and what keeps
/// a replay honest. On a GPU the recording is a CUDA graph (`Backend<Cuda>::Graph`, captured under an
/// RAII `cuda::StreamCapture`); on the CPU it is the step itself (`cpu::Graph`), so code that
/// captures and replays is written once.
///
/// A recording holds the buffers it was recorded with and the optimizer settings of that moment.
/// It is dropped when a step with another input shape reallocated those buffers, and a replay is
/// refused when settings other than the learning rate (which the step reads from its scalars at
/// every replay) changed since, or when layer buffers were reallocated since the capture by anything
/// else (`nn::buffer_generation`: an evaluation at another batch size), which would leave a CUDA
/// graph writing into freed memory. The last check counts reallocations of every model on the
/// device, so another model's reallocation also asks for a new capture: a false alarm costs a
/// capture, a missed one corrupts memory.

#include <cstdint>
#include <optional>
#include <utility>

#include "mpx/backend/backend.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/tensor/shape.hpp"

namespace mpx {

/// @brief A recorded training step; see the file comment. `OptimizerOptions` needs `lr` and `==`.
template <class Device, class OptimizerOptions>
class StepGraph {
 public:
  /// @brief Records the step `queue` queues (nothing runs), for inputs of `input_shape`, under the
  /// optimizer settings `options`. If `queue` throws, nothing is recorded.
  template <class Queue>
  void capture(const Shape& input_shape, const OptimizerOptions& options, Queue&& queue) {
    drop();
    graph_.capture(std::forward<Queue>(queue));
    options_ = options;
    input_shape_ = input_shape;
    generation_ = nn::buffer_generation<Device>().load(std::memory_order_relaxed);
  }

  /// @brief Drops the recording when a step on inputs of `input_shape` reallocated its buffers.
  void drop_unless_recorded_for(const Shape& input_shape) {
    if (options_ && !(input_shape_ == input_shape)) drop();
  }

  /// @brief Throws `mpx::invalid_argument` unless a replay under `current` settings is the recorded
  /// step: something is recorded, and no setting but the learning rate changed since.
  void require_replayable(OptimizerOptions current) const {
    if (!options_) {
      throw invalid_argument(
          "mpx::Trainer::replay_step: no step captured (or a later step had another input shape, which "
          "reallocated the buffers the capture uses, or keep_weight_average changed the step since); call "
          "capture_step first");
    }
    current.lr = options_->lr;
    if (!(current == *options_)) {
      throw invalid_argument(
          "mpx::Trainer::replay_step: optimizer settings other than lr (momentum, weight decay, betas, the "
          "rounding seed, ...) changed since capture_step; the capture holds the old ones, capture again");
    }
    const std::uint64_t generation = nn::buffer_generation<Device>().load(std::memory_order_relaxed);
    if (generation != generation_) {
      throw invalid_argument(detail::concat(
          "mpx::Trainer::replay_step: ", generation - generation_,
          " layer buffer(s) were reallocated since capture_step (the model, or another one on this "
          "device, ran on another batch size: an evaluation?), and the captured step would write into "
          "the freed ones; evaluate with the training batch size, or call capture_step again"));
    }
  }

  /// @brief Queues one replay (call `require_replayable` first).
  void launch() const { graph_.launch(); }

  /// @brief Drops the recording (when the step it recorded changed: a weight average started).
  void drop() noexcept {
    options_.reset();
    graph_.reset();
  }

  /// @brief The recording (`Backend<Device>::Graph`; empty when nothing is recorded), for inspection.
  [[nodiscard]] const typename Backend<Device>::Graph& recording() const noexcept { return graph_; }

 private:
  typename Backend<Device>::Graph graph_;
  std::optional<OptimizerOptions> options_;  // the settings the recording holds; empty: none
  Shape input_shape_;
  std::uint64_t generation_ = 0;  // nn::buffer_generation<Device>() at the capture
};

}  // namespace mpx
