// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `optim::AdamW`: PyTorch's AdamW (bias-corrected moments, decoupled weight decay) with its
/// state in fp32, over the master weights, refreshing the compute copy in the same pass.

#include <cmath>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/optimizer_settings.hpp"
#include "mpx/error.hpp"
#include "mpx/optim/optimizer_base.hpp"

namespace mpx::optim {

/// @brief AdamW over every parameter of `Model`.
/// @code
/// mpx::optim::AdamW optimizer(model, {.lr = 1e-3, .weight_decay = 1e-4});
/// @endcode
template <class Model>
class AdamW : public detail::OptimizerBase<AdamW<Model>, Model, AdamWSettings> {
  using Base = detail::OptimizerBase<AdamW<Model>, Model, AdamWSettings>;
  using Device = typename Model::device_type;
  using Base::model_;
  using Base::options_;

 public:
  using typename Base::Options;

  /// @brief Throws `mpx::invalid_argument` naming a bad hyper-parameter. Allocates both moment
  /// buffers now, so that a step cannot fail half-way for want of memory.
  explicit AdamW(Model& model, const Options& options = {}) : Base(model, options) { allocate_state(); }

  /// @brief Over the parameters of an `nn::ParameterList` only; otherwise as above.
  explicit AdamW(Model&& parameters, const Options& options = {}) : Base(std::move(parameters), options) {
    allocate_state();
  }

  /// @brief The bias corrections 1 - beta^t, derived once per training step on the step's device
  /// (two double-double powers) instead of in every update kernel.
  [[nodiscard]] AdamWBiasCorrections update_preparation() const noexcept {
    return {options_.beta1, options_.beta2};
  }

  /// @brief Throws `mpx::invalid_argument` naming the first bad hyper-parameter and its value.
  static void validate(const Options& o) {
    constexpr const char* self = "mpx::optim::AdamW";
    if (!(std::isfinite(o.lr) && o.lr > 0.0)) Base::fail(self, "lr", o.lr, "a finite value > 0");
    if (!(o.beta1 >= 0.0 && o.beta1 < 1.0)) Base::fail(self, "beta1", o.beta1, "a value in [0, 1)");
    if (!(o.beta2 >= 0.0 && o.beta2 < 1.0)) Base::fail(self, "beta2", o.beta2, "a value in [0, 1)");
    if (!(std::isfinite(o.epsilon) && o.epsilon > 0.0))
      Base::fail(self, "epsilon", o.epsilon, "a finite value > 0");
    if (!(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0)) {
      Base::fail(self, "weight_decay", o.weight_decay, "a finite value >= 0");
    }
  }

 private:
  friend Base;  // calls update()

  void allocate_state() {
    model_.for_each_parameter([](std::string_view, auto& p) {
      (void)p.state(0);
      (void)p.state(1);
    });
  }

  // One update of every parameter under `control` (device memory: see OptimizerBase::step), queued
  // as few launches on a GPU (Backend::adamw_updates).
  void update(const UpdateControl* control) {
    auto updates = Backend<Device>::adamw_updates(options_, control);
    int index = 0;
    model_.for_each_parameter([&](std::string_view, auto& p) {
      const auto rounding = this->template update_rounding<std::remove_cvref_t<decltype(p)>>(index++);
      updates.add(p.master(), p.compute_copy(), p.grad(), p.state(0), p.state(1), rounding);
    });
    updates.queue();
  }
};

}  // namespace mpx::optim
