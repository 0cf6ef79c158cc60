// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `mpx::Trainer`: the mixed-precision training step.
///
/// forward -> loss (fp32) -> backward of the scaled loss -> unscale, fused with the finite check and
/// the gradient norm -> optional global-norm clipping -> optimizer step, or skip when any gradient is
/// inf or NaN -> scaler update. Gradients accumulate over the micro-batches of one step.
///
/// Nothing goes wrong silently: a step whose inputs, loss or gradients are not finite is skipped
/// (no weight or optimizer state changes), flagged in its `StepResult` and reported through
/// `mpx::log` (see log.hpp), as is a loss scale that backs off below 1.
///
/// The step is written once for every device: its scalars (the loss, the finite checks, the gradient
/// norm, the clipping coefficient, the skip and the scaler state) live in the memory of the device
/// the model runs on (`TrainingState`, train/training_state.hpp), and every decision is taken there.
/// `queue_step` queues a whole step (on a GPU without waiting for it; on the CPU it runs), and
/// `read_result()` tells what it did (on a GPU the one, optional, synchronisation).
///
/// `keep_weight_average` adds an exponential moving average of the weights to the step
/// (train/weight_average.hpp), updated on the device after the optimizer's update and skipped with it.

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpx/backend/backend.hpp"
#include "mpx/error.hpp"
#include "mpx/log.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/step_key.hpp"
#include "mpx/policy/fp8_precision.hpp"
#include "mpx/policy/loss_scaling.hpp"
#include "mpx/tensor/host_memory.hpp"
#include "mpx/tensor/memory_stats.hpp"
#include "mpx/train/gradient_sync.hpp"
#include "mpx/train/loss_scaler.hpp"
#include "mpx/train/loss_seed.hpp"
#include "mpx/train/step_graph.hpp"
#include "mpx/train/step_scalars.hpp"
#include "mpx/train/training_state.hpp"
#include "mpx/train/weight_average.hpp"

namespace mpx {

/// @brief What one training step did.
struct StepResult {
  double loss = 0.0;             ///< mean loss over the step's micro-batches (unscaled)
  bool stepped = false;          ///< false when a gradient was inf or NaN and the update was skipped
  float loss_scale = 1.0f;       ///< the scale this step's backward used
  double grad_norm = 0.0;        ///< global L2 norm of the unscaled gradients, before clipping
  bool clipped = false;          ///< whether clipping scaled the gradients down
  std::int64_t step = 0;         ///< steps attempted so far, this one included
  bool inputs_finite = true;     ///< false when an input batch held inf or NaN (the step was skipped)
  bool loss_finite = true;       ///< false when the loss was inf or NaN: diverging (the step was skipped)
  bool scale_below_one = false;  ///< the scale after this step is below 1: gradients overflow even
                                 ///< unscaled, the run is diverging
};

/// @brief Memory of the first training step, from the device allocator's own counters.
struct StepMemory {
  std::int64_t parameter_count = 0;  ///< trainable scalars
  std::int64_t weights = 0;          ///< master weights and their compute copies (an FP8 layer's
                                     ///< weight codes included)
  std::int64_t gradients = 0;        ///< the parameters' gradients
  std::int64_t optimizer_state = 0;  ///< momentum / moment buffers (allocated when the optimizer is built)
  std::int64_t activations = 0;      ///< buffers the step left allocated: saved activations, activation
                                     ///< gradients, the input cast, the loss gradient
  std::int64_t peak = 0;             ///< most bytes live at once during the step, everything included
  std::int64_t weight_average = 0;   ///< the weight average's tensors (`Trainer::keep_weight_average`
                                     ///< before the first step), not in `bytes_per_parameter()`

  /// @brief Bytes of weights, gradient and optimizer state per trainable scalar.
  [[nodiscard]] double bytes_per_parameter() const noexcept {
    return parameter_count > 0 ? static_cast<double>(weights + gradients + optimizer_state) /
                                     static_cast<double>(parameter_count)
                               : 0.0;
  }
};

/// @brief How many equal parts `Trainer::step(inputs, targets, MicroBatches{n})` splits a batch into
/// (gradient accumulation over row views of the batch).
struct MicroBatches {
  std::int64_t count = 1;  ///< parts; must divide the batch's rows
};

/// @brief The scaler a model needs unless told otherwise: dynamic if any of its layers computes in
/// fp16, none otherwise.
template <class Model>
using model_default_scaler_t = default_scaler_for_t<Model::has_half_compute>;

/// @brief Runs training steps of `Model` under `Loss` with `Optimizer` and loss-scaling policy
/// `Scaling`, on the model's device.
///
/// A model with fp16 layers and `NoLossScaling` does not compile (fp16 gradients underflow) unless
/// written `AllowFp16Underflow<NoLossScaling>`. With `NoLossScaling` the scaling multiplies compile
/// away; the finite check stays, because a non-finite gradient must never reach the weights.
template <class Model, class Loss, class Optimizer, class Scaling = model_default_scaler_t<Model>>
class Trainer {
  using Device = typename Model::device_type;
  using Grad = accumulate_t<typename Model::precision>;
  static_assert(std::is_same_v<typename Loss::input_type, typename Model::output_type>,
                "mpx::Trainer: the loss must take the model's output type; declare the loss with the "
                "precision of the model's last layer, e.g. SoftmaxCrossEntropy<mpx::fp32> after a "
                "Linear<mpx::fp32> classifier");
  static_assert(LossScalingPolicy<Scaling>,
                "mpx::Trainer: Scaling must be mpx::DynamicLossScaling, mpx::StaticLossScaling or "
                "mpx::NoLossScaling");
  static_assert(!Fp8PrecisionPolicy<typename Model::precision> || !Scaling::scales_loss,
                "mpx::Trainer: this model's FP8 precision scales every GEMM operand, output gradients "
                "included, by its own amax, and its activations are bf16: a loss scale would only shift "
                "what those scales undo. Use mpx::NoLossScaling (the default for this model)");
  static_assert(detail::scaler_suits_half<Model::has_half_compute, Scaling>,
                "mpx::Trainer: this model has fp16 layers but no loss scaling: fp16 rounds gradients "
                "below 2^-25 to zero (its smallest subnormal is 2^-24), and many gradients are that "
                "small. Use "
                "mpx::DynamicLossScaling (the default), or write "
                "mpx::AllowFp16Underflow<mpx::NoLossScaling> to opt in knowingly");

 public:
  /// @brief What the loss takes as targets.
  using target_type = typename Loss::target_type;
  /// @brief Element type of the model's input.
  using input_element = typename Model::input_type;
  /// @brief The targets' own type (`target_type` without reference and const).
  using target_value = std::remove_cvref_t<target_type>;

  /// @brief One micro-batch: inputs `[batch, features]` and the loss's targets. The inputs are in the
  /// model's input type, or in fp32 for a model whose input is another floating type (they are then
  /// rounded to nearest even into a buffer the trainer keeps, as `step(Tensor<float>)` does). The
  /// batch refers to both tensors, which must outlive the step: name them (e.g. row views,
  /// `const auto x0 = x.rows(0, 32);`) rather than passing temporaries, which do not compile.
  class Batch {
   public:
    /// @brief A micro-batch in the model's input type.
    Batch(const Tensor<input_element, Device>& inputs, target_type targets)
        : inputs_(&inputs), targets_(targets) {}
    /// @brief A micro-batch in fp32, for a model whose input is another floating type.
    Batch(const Tensor<float, Device>& inputs,
          target_type targets) requires(FloatingElement<input_element> &&
                                        !std::is_same_v<input_element, float>)
        : fp32_inputs_(&inputs), targets_(targets) {}
    // A temporary would be destroyed before the step reads it.
    Batch(Tensor<input_element, Device>&&, target_type) = delete;
    Batch(Tensor<float, Device>&&, target_type) requires(!std::is_same_v<input_element, float>) = delete;
    Batch(const Tensor<input_element, Device>&,
          target_value&&) requires(std::is_reference_v<target_type>) = delete;

    /// @brief The inputs' shape.
    [[nodiscard]] const Shape& shape() const noexcept {
      return inputs_ != nullptr ? inputs_->shape() : fp32_inputs_->shape();
    }
    /// @brief The targets.
    [[nodiscard]] target_type targets() const noexcept { return targets_; }

   private:
    friend class Trainer;
    const Tensor<input_element, Device>* inputs_ = nullptr;  // in the model's input type, or
    const Tensor<float, Device>* fp32_inputs_ = nullptr;     // in fp32, rounded by the trainer
    target_type targets_;
  };

  /// @brief Options of the training step.
  struct Options {
    /// Clip the global gradient norm to this value (PyTorch's clip_grad_norm_); off when empty.
    std::optional<double> max_grad_norm;
    /// @brief Knobs of the loss-scaling policy.
    typename Scaling::Options scaler{};
    /// On the CPU, let a step run on fewer threads than OpenMP's count where steps measured faster
    /// so (beside a busy process); the results are the same bits on any count
    /// (`cpu::StepThreads`). No effect on a GPU.
    bool adapt_threads = true;
  };

  /// @brief Trains `model` (held by reference, as are `loss` and `optimizer`).
  Trainer(Model& model, Loss& loss, Optimizer& optimizer, Options options = {})
      : model_(model), loss_(loss), optimizer_(optimizer), options_(options), scaler_(options.scaler) {
    if (options_.max_grad_norm &&
        !(std::isfinite(*options_.max_grad_norm) && *options_.max_grad_norm > 0.0)) {
      throw invalid_argument(detail::concat("mpx::Trainer: max_grad_norm = ", *options_.max_grad_norm,
                                            " is invalid; expected a finite value > 0"));
    }
  }

  /// @brief Trains `model` as one of several data-parallel processes: `gradient_sync` (mpx::dist)
  /// averages the gradients and the step's flags across them before the gradients are inspected, so
  /// every process takes the same step. Held by reference: it must outlive the trainer.
  Trainer(Model& model, Loss& loss, Optimizer& optimizer, GradientSync<Device, Grad>& gradient_sync,
          Options options = {})
      : Trainer(model, loss, optimizer, options) {
    gradient_sync_ = &gradient_sync;
  }

  /// @brief One step on one batch in the model's input type: `queue_step` then `read_result`.
  StepResult step(const Tensor<input_element, Device>& inputs, target_type targets) {
    queue_step(inputs, targets);
    return read_result();
  }

  /// @brief One step on an fp32 batch for a model whose input is another type (see `queue_step`).
  StepResult step(const Tensor<float, Device>& inputs,
                  target_type targets) requires(FloatingElement<input_element> &&
                                                !std::is_same_v<input_element, float>) {
    queue_step(inputs, targets);
    return read_result();
  }

  /// @brief Targets of another type than the loss takes: a compile error that says what to pass,
  /// in place of every overload's mismatch.
  template <class Inputs, class Targets>
  StepResult step(const Inputs&,
                  const Targets&) requires(!std::is_convertible_v<const Targets&, target_type>) {
    static_assert(detail::always_false<Targets>,
                  "mpx::Trainer::step(inputs, targets): targets must be the loss's target type, "
                  "Loss::target_type: for SoftmaxCrossEntropy a mpx::Tensor<std::int32_t, Device> of class "
                  "indices, one per row (as data::Batcher::next fills it); for MSELoss a tensor of the "
                  "accumulate type shaped like the output. See docs/training.md");
    return {};
  }

  /// @brief One step whose gradient is the mean over several micro-batches (gradient accumulation).
  StepResult step(std::span<const Batch> micro_batches) {
    queue_step(micro_batches);
    return read_result();
  }

  /// @brief One step on `inputs` and `targets` split along their first dimension into
  /// `micro_batches.count` equal parts (row views, no copy), whose gradients are accumulated: the
  /// step `step(span<const Batch>)` takes on those parts. Throws `mpx::invalid_argument` unless the
  /// count divides the batch and the targets have the inputs' rows.
  template <Element E>
  StepResult step(const Tensor<E, Device>& inputs, target_type targets, MicroBatches micro_batches) requires(
      std::is_same_v<E, input_element> || (std::is_same_v<E, float> && FloatingElement<input_element>)) {
    const std::int64_t count = micro_batches.count;
    const std::int64_t rows = inputs.rank() > 0 ? inputs.shape()[0] : 0;
    const std::int64_t target_rows = targets.rank() > 0 ? targets.shape()[0] : 0;
    if (count < 1 || rows % count != 0 || target_rows != rows) {
      throw invalid_argument(detail::concat("mpx::Trainer::step: cannot split inputs of shape ",
                                            inputs.shape(), " and targets of shape ", targets.shape(),
                                            " into ", count,
                                            " micro-batches; the count must divide the rows, and the "
                                            "targets must have the inputs' rows"));
    }
    const std::int64_t size = rows / count;
    std::vector<Tensor<E, Device>> input_parts;
    std::vector<target_value> target_parts;
    input_parts.reserve(static_cast<std::size_t>(count));  // the batches point into both vectors
    target_parts.reserve(static_cast<std::size_t>(count));
    std::vector<Batch> batches;
    // The parts are read only; the vectors need movable views, which `rows() const` (a const view)
    // does not give.
    auto& whole_inputs = const_cast<Tensor<E, Device>&>(inputs);
    auto& whole_targets = const_cast<target_value&>(targets);
    for (std::int64_t m = 0; m < count; ++m) {
      input_parts.push_back(whole_inputs.rows(m * size, size));
      target_parts.push_back(whole_targets.rows(m * size, size));
      batches.emplace_back(input_parts.back(), target_parts.back());
    }
    return step(std::span<const Batch>(batches));
  }

  /// @brief Queues one step on one batch: on the CPU it runs now; on a GPU it is queued on the
  /// context's stream and this returns without waiting. `read_result()` tells what it did.
  void queue_step(const Tensor<input_element, Device>& inputs, target_type targets) {
    const Batch batch{inputs, targets};
    queue_step(std::span<const Batch>(&batch, 1));
  }

  /// @brief Queues one step on an fp32 batch for a model whose input is another type: the batch is
  /// rounded (to nearest even) into a buffer the trainer keeps, which counts as activation memory.
  void queue_step(const Tensor<float, Device>& inputs,
                  target_type targets) requires(FloatingElement<input_element> &&
                                                !std::is_same_v<input_element, float>) {
    const Batch batch{inputs, targets};
    queue_step(std::span<const Batch>(&batch, 1));
  }

  /// @brief Queues one step over several micro-batches (see the single-batch overload).
  void queue_step(std::span<const Batch> micro_batches) {
    if (micro_batches.empty()) throw invalid_argument("mpx::Trainer::step: no micro-batches");
    (void)state_.scalars();  // allocated before the first step's memory is measured
    if (steps_ == 0) {
      measure_first_step([&] { queue_and_count(micro_batches); });
    } else {
      queue_and_count(micro_batches);
    }
  }

  /// @brief What the last step did. On a GPU this waits for the queued work and copies the step's
  /// scalars back (the only synchronisation of a training loop, and an optional one); on the CPU
  /// there is nothing to wait for. Either way it brings `scaler()` and the optimizer's update count
  /// up to date and logs the steps skipped since the last call.
  StepResult read_result() {
    if (!state_.has_scalars()) return last_;  // nothing queued yet (also after set_steps)
    const std::int64_t skipped_before = scaler_.state().steps_skipped;
    HostOwnedScalars host = host_owned();
    const StepScalars scalars = state_.pull(host);
    scaler_.load_state(host.scaler);
    optimizer_.set_steps(host.optimizer_steps);
    StepResult result;
    result.step = scalars.step;
    result.loss_scale = scalars.loss_scale;
    result.loss = scalars.loss_sum / static_cast<double>(micro_batches_in_last_step_);
    result.loss_finite = std::isfinite(result.loss);
    result.inputs_finite = scalars.inputs_nonfinite == 0;
    result.grad_norm = std::sqrt(scalars.sum_of_squares);
    result.clipped = scalars.update.clipped != 0;
    result.stepped = scalars.update.skip == 0;
    result.scale_below_one = scaler_.scale() < 1.0f;
    const bool already_reported = result.step == last_.step;
    last_ = result;
    if (already_reported) return result;
    // Skips before the last step happened while nobody looked: say how many, once.
    const std::int64_t unseen = scaler_.state().steps_skipped - skipped_before - (result.stepped ? 0 : 1);
    if (unseen > 0) {
      mpx::log(LogLevel::Info, detail::concat("mpx::Trainer: ", unseen, " step(s) before step ", result.step,
                                              " were skipped for inf/NaN gradients (steps skipped so far: ",
                                              scaler_.state().steps_skipped, ")"));
    }
    // A scale below 1 is reported when it gets there; the skipped steps that follow report themselves.
    if (!result.stepped || (result.scale_below_one && result.loss_scale >= 1.0f)) {
      report(result, scalars.gradients_nonfinite == 0);
    }
    return result;
  }

  /// @brief Records one training step on `inputs` and `targets` for `replay_step()`: on a GPU as a
  /// CUDA graph, on the CPU as the step itself, so the same loop runs on both. Each replay reads the
  /// inputs and targets from the same buffers (refill them in place; on a GPU on the context's
  /// stream), so they must outlive the recording. Runs an eager step on them first unless the last
  /// step had the same input shape, so that every buffer exists before capture (a GPU allocation
  /// during capture throws). The recorded step is not run.
  ///
  /// The recording uses the buffers the model holds now: a step with another input shape drops it
  /// (`replay_step` then throws until the next capture), and the caller's own use of the model with
  /// other shapes (an evaluation with another batch size replaces the layers' outputs) makes
  /// `replay_step` throw too (see `nn::buffer_generation`): evaluate with the training batch size, or
  /// capture again afterwards (which then runs its eager step first).
  void capture_step(const Tensor<input_element, Device>& inputs, target_type targets) {
    if (eager_input_shape_ != inputs.shape() || buffers_replaced_since_eager_step())
      queue_step(inputs, targets);
    capture(inputs.shape(),
            [this, batch = Batch{inputs, targets}] { queue_device_step(std::span(&batch, 1)); });
  }

  /// @brief Records a step on an fp32 batch for a model whose input is another type: the rounding
  /// into the model's input type is part of the recording.
  void capture_step(const Tensor<float, Device>& inputs,
                    target_type targets) requires(FloatingElement<input_element> &&
                                                  !std::is_same_v<input_element, float>) {
    // The recording rounds into `input_`, which only an eager step on fp32 input of this shape
    // allocated: a last step on input already in the model's type leaves it missing.
    if (eager_input_shape_ != inputs.shape() || input_.shape() != inputs.shape() ||
        buffers_replaced_since_eager_step())
      queue_step(inputs, targets);
    capture(inputs.shape(),
            [this, batch = Batch{inputs, targets}] { queue_device_step(std::span(&batch, 1)); });
  }

  /// @brief Replays the step recorded by `capture_step()` (on a GPU one graph launch; the learning
  /// rate and any scaler state or update count loaded on the host since are pushed first). Throws if
  /// nothing is recorded, or if optimizer settings other than the learning rate changed since the
  /// capture (the recording holds them; capture again).
  void replay_step() {
    graph_.require_replayable(optimizer_.options());
    push_host_changes();
    [[maybe_unused]] const auto threads =
        step_threads_.step(eager_input_shape_.numel(), options_.adapt_threads);
    graph_.launch();
    micro_batches_in_last_step_ = 1;
    ++steps_;
    state_.step_queued();
  }

  /// @brief Starts keeping an exponential moving average of the master weights (EMA,
  /// `mpx::WeightAverage`), from a copy of the weights as they are now: each step the optimizer takes
  /// then updates it on the device, after the optimizer's update (a skipped step leaves it unchanged,
  /// bit for bit), and checkpoints save and restore it (`ema.<parameter>`). A trainer keeps one
  /// average: a second call throws `mpx::error` (so the reference the first returned stays valid). A
  /// recorded step (`capture_step`) is dropped: capture again. Throws `mpx::invalid_argument` for a
  /// decay outside [0, 1].
  /// @param options the decay (0.9999 by default) and its warmup (off by default)
  /// @return the average, which lives as long as the trainer
  WeightAverage<Model>& keep_weight_average(const WeightAverageOptions& options = {}) {
    if (average_ != nullptr) {
      throw error(
          "mpx::Trainer::keep_weight_average: this trainer already keeps a weight average (one per trainer; "
          "weight_average() returns it)");
    }
    auto average = std::make_unique<WeightAverage<Model>>(model_, options);
    average_ = std::move(average);
    graph_.drop();
    return *average_;
  }
  /// @brief The weight average `keep_weight_average` started, or null when it was not called.
  [[nodiscard]] WeightAverage<Model>* weight_average() noexcept { return average_.get(); }
  /// @brief The weight average, read-only, or null.
  [[nodiscard]] const WeightAverage<Model>* weight_average() const noexcept { return average_.get(); }

  /// @brief What `capture_step()` recorded (`Backend<Device>::Graph`: on a GPU a `cuda::Graph`
  /// whose `graph()` lists the kernels a replay runs; empty when nothing is recorded).
  [[nodiscard]] const typename Backend<Device>::Graph& recorded_step() const noexcept {
    return graph_.recording();
  }

  /// @brief The loss scaler (its state is part of a checkpoint), as of the last `read_result()`; a
  /// state loaded into it is sent to the step's device before the next step.
  [[nodiscard]] LossScaler<Scaling>& scaler() noexcept { return scaler_; }
  /// @brief The loss scaler and its state.
  [[nodiscard]] const LossScaler<Scaling>& scaler() const noexcept { return scaler_; }
  /// @brief The model this trainer trains.
  [[nodiscard]] Model& model() noexcept { return model_; }
  /// @brief The optimizer this trainer steps (its settings and step count are part of a checkpoint).
  [[nodiscard]] Optimizer& optimizer() noexcept { return optimizer_; }
  /// @brief Steps queued, taken or skipped.
  [[nodiscard]] std::int64_t steps() const noexcept { return steps_; }
  /// @brief Restores the step count (checkpoints); a trainer restored past step 0 does not measure
  /// `first_step_memory()`.
  void set_steps(std::int64_t steps) noexcept { steps_ = steps; }
  /// @brief What the first step allocated (all zero before it).
  [[nodiscard]] const StepMemory& first_step_memory() const noexcept { return first_step_memory_; }

 private:
  // The first step allocates every buffer later steps reuse, so its memory is the model's.
  template <class RunStep>
  void measure_first_step(RunStep&& run) {
    const std::int64_t state_before = parameter_memory().optimizer_state;
    {
      PeakWindow window(memory_stats<Device>());
      run();
      first_step_memory_.peak = window.peak();
      const auto held = parameter_memory();
      first_step_memory_.weights = held.weights;
      first_step_memory_.gradients = held.gradient;
      first_step_memory_.optimizer_state = held.optimizer_state;
      first_step_memory_.weight_average = average_ != nullptr ? average_->size_bytes() : 0;
      // What the step left allocated (the rounded input of an fp32 batch included), less any
      // optimizer state it allocated itself.
      first_step_memory_.activations = memory_stats<Device>().live_bytes() - window.live_at_start() -
                                       (first_step_memory_.optimizer_state - state_before);
      // Weight copies a layer makes in its first forward and keeps (an FP8 Linear's weight codes)
      // are weights, as a 16-bit model's compute copy is, not activations.
      nn::for_each_layer(model_, [&](auto& layer) {
        if constexpr (requires { layer.weight_copy_bytes(); }) {
          first_step_memory_.weights += layer.weight_copy_bytes();
          first_step_memory_.activations -= layer.weight_copy_bytes();
        }
      });
    }
    model_.for_each_parameter(
        [&](std::string_view, auto& p) { first_step_memory_.parameter_count += p.shape().numel(); });
  }

  // Queues one step and counts it, once it is queued: a step that threw is not counted.
  void queue_and_count(std::span<const Batch> micro_batches) {
    [[maybe_unused]] const auto threads = step_threads_.step(
        static_cast<std::int64_t>(micro_batches.size()) * micro_batches.front().shape().numel(),
        options_.adapt_threads);
    try {
      push_host_changes();
      queue_device_step(micro_batches);
    } catch (...) {
      state_.forget();  // the device may have counted part of the step: resend everything next time
      throw;
    }
    micro_batches_in_last_step_ = static_cast<std::int64_t>(micro_batches.size());
    ++steps_;
    state_.step_queued();
    // Buffers follow the first micro-batch's shape; another shape than the recorded one reallocated
    // what the recording writes into.
    eager_input_shape_ = micro_batches.front().shape();
    eager_generation_ = nn::buffer_generation<Device>().load(std::memory_order_relaxed);
    graph_.drop_unless_recorded_for(eager_input_shape_);
  }

  // Whether layer buffers were replaced since the last eager step (an evaluation at another batch
  // size): a capture must then run an eager step first, or it would allocate while capturing.
  [[nodiscard]] bool buffers_replaced_since_eager_step() const {
    return nn::buffer_generation<Device>().load(std::memory_order_relaxed) != eager_generation_;
  }

  // What the model's parameters hold, summed over them.
  struct ParameterMemory {
    std::int64_t weights = 0, gradient = 0, optimizer_state = 0;
  };
  ParameterMemory parameter_memory() {
    ParameterMemory total;
    model_.for_each_parameter([&](std::string_view, auto& p) {
      const auto bytes = p.memory();
      total.weights += bytes.weights;
      total.gradient += bytes.gradient;
      total.optimizer_state += bytes.optimizer_state;
    });
    return total;
  }

  // Records the step `queue` queues. What depends on host values at each replay (the learning rate,
  // a loaded state) is pushed before, never recorded.
  template <class Queue>
  void capture(const Shape& input_shape, Queue&& queue) {
    push_host_changes();
    graph_.capture(input_shape, optimizer_.options(), std::forward<Queue>(queue));
  }

  // The step, for every device: begin + input check -> forward -> loss -> backward of the scaled
  // loss -> unscale + finite check + norm, then the skip, clip and scaler decisions -> optimizer
  // update or skip, every decision taken where the step's scalars live, so nothing here waits for a
  // GPU, and on a GPU the bookkeeping runs inside the passes' kernels (training_state.hpp). Only
  // what is the same at every step may be queued here: CUDA graphs record this function.
  void queue_device_step(std::span<const Batch> micro_batches) {
    model_.zero_grad();
    // Every micro-batch's backward is seeded with the whole loss scale, and the fp32 sum of their
    // gradients is divided by their count once, in the gradient pass: the operations data-parallel
    // ranks apply to one micro-batch each (their sum over ranks, then one division), so R ranks of one
    // micro-batch and one process of R micro-batches compute the same bits in every precision.
    const LossSeed seed = state_.loss_seed();
    GradientSync<Device, Grad>* const sync = gradient_sync_;
    const auto count = static_cast<std::int64_t>(micro_batches.size());
    // Micro-batches are numbered across ranks, rank-major (rank r's m-th is r * count + m), so that
    // they draw the dropout masks the same micro-batches draw in one process.
    const std::int64_t first_micro_batch = sync != nullptr ? std::int64_t{sync->rank()} * count : 0;
    for (std::int64_t m = 0; m < count; ++m) {
      const Batch& batch = micro_batches[static_cast<std::size_t>(m)];
      const Tensor<input_element, Device>& inputs = model_input(batch);
      if (m == 0) {
        state_.begin_step(inputs);  // clears the step's flags, then checks these inputs
      } else {
        state_.flag_nonfinite_inputs(inputs);
      }
      nn::bind_step(model_, nn::StepKey{state_.step_count(), first_micro_batch + m});
      const auto& outputs = model_.forward(inputs);
      loss_.accumulate_forward_backward(outputs, batch.targets(), seed, state_.loss_sum());
      if (sync != nullptr && m + 1 == count) {
        sync->begin_backward();
        backward_reporting_layers(*sync);
      } else {
        model_.backward(loss_.gradient());
      }
    }
    gradients_.clear();
    model_.for_each_parameter([&](std::string_view, auto& p) { gradients_.push_back(&p.grad()); });
    if (sync != nullptr) {
      // FP8 layers under delayed scaling: this step's amaxes go with the gradients, and come back as
      // their maximum over processes, so that every process computes the same scales (TE reduces
      // them across the data-parallel group). They are gathered into one buffer in the device's
      // memory and copied back after the sync, queued like the rest of the step (on a GPU, no host
      // wait, and a CUDA graph records the copies).
      sync->finish(std::span(gradients_), state_.scalars(), gather_fp8_amaxes(/*back=*/false));
      (void)gather_fp8_amaxes(/*back=*/true);
    }
    // FP8 layers' scales follow every backward, whether or not the optimizer then applies the step
    // (as Transformer Engine updates them): a skipped step's amaxes are what the next casts meet.
    nn::for_each_layer(model_, [](auto& layer) {
      if constexpr (requires { layer.update_fp8_scales(); }) layer.update_fp8_scales();
    });
    // The weight average's decay is decided with the optimizer's per-update scalars, and its update
    // follows the optimizer's, reading the same skip decision.
    using Preparation = decltype(optimizer_.update_preparation());
    const detail::PrepareUpdateAndAverage<Preparation> prepare{
        optimizer_.update_preparation(),
        average_ != nullptr ? average_->preparation() : PrepareWeightAverage{}};
    state_.template finish_step<Scaling::scales_loss, Scaling>(
        std::span(gradients_), count, options_.max_grad_norm.value_or(0.0), scaler_.options(), prepare);
    optimizer_.step(state_.update_control());
    if (average_ != nullptr) average_->queue_update(state_.update_control());
  }

  // Copies each FP8 layer's step amaxes (device memory) into `fp8_amax_buffer_`, one after another,
  // and returns the buffer's span (empty without any); with `back`, copies the buffer's values back
  // into the layers instead.
  std::span<float> gather_fp8_amaxes(bool back) {
    std::int64_t count = 0;
    nn::for_each_layer(model_, [&](auto& layer) {
      if constexpr (requires { layer.fp8_step_amaxes(); })
        count += static_cast<std::int64_t>(layer.fp8_step_amaxes().size());
    });
    if (count == 0) return {};
    if (fp8_amax_buffer_.numel() != count) fp8_amax_buffer_ = Tensor<float, Device>(Shape{count});
    float* next = fp8_amax_buffer_.data();
    nn::for_each_layer(model_, [&](auto& layer) {
      if constexpr (requires { layer.fp8_step_amaxes(); }) {
        const std::span<float> amaxes = layer.fp8_step_amaxes();
        const std::size_t bytes = amaxes.size() * sizeof(float);
        if (back) {
          DeviceMemory<Device>::copy(amaxes.data(), next, bytes);
        } else {
          DeviceMemory<Device>::copy(next, amaxes.data(), bytes);
        }
        next += amaxes.size();
      }
    });
    return {fp8_amax_buffer_.data(), static_cast<std::size_t>(count)};
  }

  // A micro-batch's inputs in the model's input type: the batch's own, or its fp32 inputs rounded
  // (to nearest even) into `input_`. One buffer serves every micro-batch: each one's backward, the
  // last reader of its input, runs before the next one is rounded.
  const Tensor<input_element, Device>& model_input(const Batch& batch) {
    if (batch.inputs_ != nullptr) return *batch.inputs_;
    if constexpr (FloatingElement<input_element> && !std::is_same_v<input_element, float>) {
      if (!(input_.shape() == batch.fp32_inputs_->shape()))
        input_ = Tensor<input_element, Device>::uninitialized(batch.fp32_inputs_->shape());
      Backend<Device>::template round_into<tag_of_t<input_element>>(*batch.fp32_inputs_, input_);
    }
    return input_;
  }

  // Tells `sync` each layer's gradients as soon as that layer's backward has run (a model that
  // reports its layers, as nn::Sequential does), so their reduction overlaps the rest of backward;
  // other models run backward as usual and `sync->finish` reduces everything afterwards.
  struct ReportLayerGradients {
    GradientSync<Device, Grad>* sync;
    std::vector<Tensor<Grad, Device>*>* list;
    template <class Layer>
    void operator()(Layer& layer) const {
      list->clear();
      layer.for_each_parameter([this](std::string_view, auto& p) { list->push_back(&p.grad()); });
      if (!list->empty()) sync->gradients_final(std::span(*list));
    }
  };
  void backward_reporting_layers(GradientSync<Device, Grad>& sync) {
    const ReportLayerGradients report{&sync, &layer_gradients_};
    if constexpr (requires { model_.backward(loss_.gradient(), false, report); }) {
      model_.backward(loss_.gradient(), false, report);
    } else {
      model_.backward(loss_.gradient());
    }
  }

  // The fields of the step's scalars the host owns, as the host has them now.
  HostOwnedScalars host_owned() const {
    return {scaler_.state(), optimizer_.steps(), optimizer_.options().lr, steps_};
  }

  // Sends what the host changed since the step's device last saw it (the learning rate of a
  // schedule, a scaler state or update count loaded from a checkpoint), ordered before the next step.
  void push_host_changes() { state_.push_if_changed(host_owned()); }

  // Skipped steps and a scale below 1 go to mpx::log: a warning when the run has a problem, info for
  // the overflows dynamic loss scaling expects while it searches for its scale.
  void report(const StepResult& result, bool gradients_finite) {
    std::string message = "mpx::Trainer: step ";
    message.append(std::to_string(result.step));
    LogLevel level = LogLevel::Warning;
    if (!result.inputs_finite) {
      message.append(" skipped: the input batch holds inf or NaN");
    } else if (!result.loss_finite) {
      message.append(" skipped: the loss is ").append(detail::concat(result.loss)).append(" (diverging)");
    } else if (!gradients_finite) {
      message.append(" skipped: a gradient is inf or NaN");
      if constexpr (Scaling::scales_loss)
        message.append(" at loss scale ").append(detail::concat(result.loss_scale));
      if (Scaling::is_dynamic && !result.scale_below_one) level = LogLevel::Info;
    } else {
      message.append(" taken");
    }
    if (!result.stepped && Scaling::is_dynamic)
      message.append("; loss scale now ").append(detail::concat(scaler_.scale()));
    if (result.scale_below_one) {
      message.append(
          "; the loss scale is below 1, so gradients overflow even unscaled: the run is diverging");
    }
    message.append(" (steps skipped so far: ")
        .append(std::to_string(scaler_.state().steps_skipped))
        .append(")");
    mpx::log(level, message);
  }

  Model& model_;
  Loss& loss_;
  Optimizer& optimizer_;
  Options options_;
  LossScaler<Scaling> scaler_;
  Tensor<input_element, Device> input_;
  std::int64_t steps_ = 0;
  StepMemory first_step_memory_;
  StepResult last_;
  TrainingState<Device, Grad> state_;
  std::vector<Tensor<Grad, Device>*> gradients_;         // the list handed to the gradient pass
  Tensor<float, Device> fp8_amax_buffer_;                // the step's FP8 amaxes, for the sync
  GradientSync<Device, Grad>* gradient_sync_ = nullptr;  // data parallelism; null: this process alone
  std::vector<Tensor<Grad, Device>*> layer_gradients_;   // one layer's, for gradient_sync_
  std::int64_t micro_batches_in_last_step_ = 1;
  Shape eager_input_shape_;             // of the last step queued eagerly (rank 0: none yet)
  std::uint64_t eager_generation_ = 0;  // nn::buffer_generation<Device>() after that step
  StepGraph<Device, typename Optimizer::Options> graph_;
  std::unique_ptr<WeightAverage<Model>> average_;       // keep_weight_average's; null: none
  typename Backend<Device>::StepThreads step_threads_;  // each CPU step's thread count
};

}  // namespace mpx
