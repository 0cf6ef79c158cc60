// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `mpx::WeightAverage<Model>`: an exponential moving average (EMA) of a model's master
/// weights, in the gradients' type (fp32; fp64 under fp64), in the memory of the model's device,
/// updated inside each training step that the optimizer takes (`Trainer::keep_weight_average`).
///
/// The update is diffusers' `EMAModel.step` (backend/weight_average_spec.hpp):
/// `average <- average - (1 - decay) * (average - w)`, each operation rounded on its own in the
/// average's type, the same bits on every device. It runs on the device after the optimizer's
/// update, reading the step's skip decision: a skipped step leaves the average and its update count
/// unchanged, bit for bit. On a GPU it is queued without a host wait and recorded in the step's CUDA
/// graph. The average starts as a copy of the master weights at construction.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/update_control.hpp"
#include "mpx/backend/weight_average_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/device_value.hpp"
#include "mpx/tensor/host_memory.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief An exponential moving average of the master weights of every parameter of `Model`; see
/// the file comment. A `Trainer` keeps one (`keep_weight_average`) and updates it in its steps; on
/// its own, `update()` applies one update now (after a standalone `optimizer.step()`).
/// @tparam Model a model (anything with `for_each_parameter(f)`, a `device_type` and a `precision`)
/// @code
/// mpx::WeightAverage average(model, {.decay = 0.999});
/// optimizer.step();
/// average.update();
/// average.copy_into(eval_model);  // the averaged weights, for evaluation or sampling
/// @endcode
template <class Model>
class WeightAverage {
 public:
  /// @brief Device the average lives on (the model's).
  using device_type = typename Model::device_type;
  /// @brief Element type of the average: the model's accumulate type (the gradients' type).
  using value_type = accumulate_t<typename Model::precision>;
  /// @brief One parameter's average.
  using tensor_type = Tensor<value_type, device_type>;

  /// @brief Starts the average of `model` (held by reference) as a copy of its master weights (on a
  /// GPU queued after the work queued before). Throws `mpx::invalid_argument` naming a bad option.
  /// @param model the model whose weights are averaged
  /// @param options the decay and its warmup
  explicit WeightAverage(Model& model, const WeightAverageOptions& options = {})
      : model_(model), options_(options) {
    validate(options_);
    model_.for_each_parameter([&](std::string_view name, auto& p) {
      names_.emplace_back(name);
      tensors_.push_back(tensor_type::uninitialized(p.shape()));
      copy_converted(p.master(), tensors_.back());
    });
    control_.write(WeightAverageControl{});
  }
  /// @brief A temporary model would leave the average holding a dangling reference.
  WeightAverage(Model&& model, const WeightAverageOptions& options = {}) = delete;

  /// @brief Throws `mpx::invalid_argument` unless `options.decay` is in [0, 1].
  /// @param options the options to check
  static void validate(const WeightAverageOptions& options) {
    if (!(options.decay >= 0.0 && options.decay <= 1.0)) {
      throw invalid_argument(detail::concat("mpx::WeightAverage: decay = ", options.decay,
                                            " is invalid; expected a value in [0, 1] (0.9999 by default)"));
    }
  }

  /// @brief The decay and its warmup.
  [[nodiscard]] const WeightAverageOptions& options() const noexcept { return options_; }

  /// @brief Updates applied so far (steps taken since the average started; skipped steps do not
  /// count). On a GPU this waits for the queued work.
  [[nodiscard]] std::int64_t updates() const { return control_.read().updates; }
  /// @brief The decay the last update used (0 before the first). On a GPU this waits for the queued
  /// work.
  [[nodiscard]] double last_decay() const { return control_.read().decay; }
  /// @brief Restores the update count (checkpoints: it sets the warmup's position). Throws
  /// `mpx::invalid_argument` when negative.
  /// @param updates the updates applied so far
  void set_updates(std::int64_t updates) {
    if (updates < 0) {
      throw invalid_argument(detail::concat("mpx::WeightAverage::set_updates: ", updates,
                                            " is negative; expected a count >= 0"));
    }
    WeightAverageControl control = control_.read();
    control.updates = updates;
    // The decay the last of those updates used (0 before the first), as if they had run here.
    control.decay = updates == 0 ? 0.0 : weight_average_decay(options_.decay, options_.warmup, updates - 1);
    control_.write(control);
  }

  /// @brief Calls `f(name, tensor)` for each parameter's average, in the model's visit order, under
  /// the parameter's name (`Model::for_each_parameter`'s, e.g. "layers.0.weight").
  /// @tparam F a callable taking `(std::string_view, const tensor_type&)`
  /// @param f what to call
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < tensors_.size(); ++i) f(std::string_view(names_[i]), tensors_[i]);
  }
  /// @brief Calls `f(name, tensor)` with a tensor that may be written (a checkpoint's load).
  /// @tparam F a callable taking `(std::string_view, tensor_type&)`
  /// @param f what to call
  template <class F>
  void for_each(F&& f) {
    for (std::size_t i = 0; i < tensors_.size(); ++i) f(std::string_view(names_[i]), tensors_[i]);
  }

  /// @brief The average of the parameter called `name`. Throws `mpx::invalid_argument` naming it
  /// and the parameters there are when the model has no such parameter.
  /// @param name the parameter's name, as `Model::for_each_parameter` gives it
  [[nodiscard]] const tensor_type& at(std::string_view name) const {
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == name) return tensors_[i];
    }
    std::string known;
    for (const std::string& n : names_) known.append(known.empty() ? "" : ", ").append(n);
    throw invalid_argument(detail::concat("mpx::WeightAverage::at: no parameter \"", name,
                                          "\"; the model's parameters are ", known));
  }

  /// @brief Bytes the average holds (its tensors).
  [[nodiscard]] std::int64_t size_bytes() const noexcept {
    std::int64_t bytes = 0;
    for (const tensor_type& t : tensors_) bytes += static_cast<std::int64_t>(t.size_bytes());
    return bytes;
  }

  /// @brief Writes the average into the master weights of `model` (a model of the same parameter
  /// names and shapes on the same device, in any precision: rounded to nearest into its master type)
  /// and refreshes its compute copies: the averaged model, for evaluation or sampling. Everything is
  /// checked first: a parameter missing, extra, or of another shape throws `mpx::invalid_argument`
  /// naming it, and nothing is written. Buffers (BatchNorm's running statistics) are not averaged
  /// and are left as they are. On a GPU the copies are queued.
  /// @tparam Other the target model's type
  /// @param model the model to write into (it may be the trained model itself)
  template <class Other>
  void copy_into(Other& model) const {
    static_assert(std::is_same_v<typename Other::device_type, device_type>,
                  "mpx::WeightAverage::copy_into: the target model must be on the average's device; "
                  "copy into a model on the same device, then move its weights with mpx::io::save_weights "
                  "/ load_weights");
    std::string problems;
    std::size_t index = 0;
    model.for_each_parameter([&](std::string_view name, auto& p) {
      if (index >= names_.size()) {
        problems.append(detail::concat("\n  - the target has an extra parameter \"", name, "\""));
      } else if (names_[index] != name) {
        problems.append(detail::concat("\n  - parameter ", index, " is \"", name, "\" in the target, \"",
                                       names_[index], "\" in the average"));
      } else if (!(p.shape() == tensors_[index].shape())) {
        problems.append(detail::concat("\n  - parameter \"", name, "\" has shape ", p.shape(),
                                       " in the target, ", tensors_[index].shape(), " in the average"));
      }
      ++index;
    });
    for (; index < names_.size(); ++index)
      problems.append(detail::concat("\n  - the target has no parameter \"", names_[index], "\""));
    if (!problems.empty()) {
      throw invalid_argument(detail::concat(
          "mpx::WeightAverage::copy_into: the target model's parameters do not match the average's; "
          "nothing was copied:",
          problems));
    }
    index = 0;
    model.for_each_parameter([&](std::string_view, auto& p) {
      copy_converted(tensors_[index++], p.master());
      p.refresh_compute_copy();
    });
  }

  /// @brief Applies one update now, as a step the optimizer took (outside a `Trainer`, after a
  /// standalone `optimizer.step()`): the decay is derived and counted on the device, then every
  /// parameter's average is updated. On a GPU it is queued.
  void update() {
    standalone_.write(UpdateControl{});  // skip = 0
    Backend<device_type>::single_thread(preparation(), static_cast<const UpdateControl*>(standalone_.get()));
    queue_update(standalone_.get());
  }

  /// @brief What a training step runs once its skip decision is in its `UpdateControl`, before
  /// `queue_update` (the trainer runs it in `FinishStep`, beside the optimizer's per-update scalars):
  /// derives this update's decay and counts it, unless the step is skipped.
  [[nodiscard]] PrepareWeightAverage preparation() { return {options_, control_.get()}; }

  /// @brief Queues the update of every parameter's average from its master weights under `control`
  /// (device memory: nothing changes when it says `skip`), after `preparation()` ran for it.
  /// @param control the training step's decision
  void queue_update(const UpdateControl* control) {
    auto updates = Backend<device_type>::weight_average_updates(control, control_.get());
    std::size_t index = 0;
    model_.for_each_parameter([&](std::string_view, auto& p) { updates.add(tensors_[index++], p.master()); });
    updates.queue();
  }

 private:
  // destination = source, rounded to nearest into the destination's type (a copy when the types
  // are the same), queued on the device.
  template <Element From, Element To>
  static void copy_converted(const Tensor<From, device_type>& source, Tensor<To, device_type>& destination) {
    if constexpr (std::is_same_v<From, To>) {
      DeviceMemory<device_type>::copy(destination.data(), source.data(), source.size_bytes());
    } else {
      Backend<device_type>::template round_into<tag_of_t<To>>(source, destination);
    }
  }

  Model& model_;
  WeightAverageOptions options_;
  std::vector<std::string> names_;    // the parameters' names, in visit order
  std::vector<tensor_type> tensors_;  // their averages, in the same order
  DeviceValue<WeightAverageControl, device_type> control_;
  DeviceValue<UpdateControl, device_type> standalone_;  // the control of `update()`
};

namespace detail {

/// The per-update preparation of a step that keeps a weight average: the optimizer's (e.g. AdamW's
/// bias corrections), then the average's (`PrepareWeightAverage`), both reading the step's decision.
template <class OptimizerPreparation>
struct PrepareUpdateAndAverage {
  OptimizerPreparation optimizer;
  PrepareWeightAverage average;

  MPX_HOST_DEVICE void operator()(UpdateControl& control) const {
    optimizer(control);
    average(control);
  }
};

}  // namespace detail

}  // namespace mpx
