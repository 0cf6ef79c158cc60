// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `optim::SGD`: PyTorch's SGD (momentum, dampening, Nesterov, L2 weight decay) over the
/// master weights, refreshing the compute copy in the same pass.

#include <cmath>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/optimizer_settings.hpp"
#include "mpx/error.hpp"
#include "mpx/optim/optimizer_base.hpp"

namespace mpx::optim {

/// @brief Stochastic gradient descent over every parameter of `Model`.
/// @code
/// mpx::optim::SGD optimizer(model, {.lr = 0.05, .momentum = 0.9, .nesterov = true});
/// @endcode
template <class Model>
class SGD : public detail::OptimizerBase<SGD<Model>, Model, SgdSettings> {
  using Base = detail::OptimizerBase<SGD<Model>, Model, SgdSettings>;
  using Device = typename Model::device_type;
  using Base::model_;
  using Base::options_;

 public:
  using typename Base::Options;

  /// @brief Throws `mpx::invalid_argument` naming a bad hyper-parameter. Allocates the momentum
  /// buffers now, so that a step cannot fail half-way for want of memory.
  explicit SGD(Model& model, const Options& options = {}) : Base(model, options) { allocate_state(); }

  /// @brief Over the parameters of an `nn::ParameterList` only; otherwise as above.
  explicit SGD(Model&& parameters, const Options& options = {}) : Base(std::move(parameters), options) {
    allocate_state();
  }

  /// @brief Throws `mpx::invalid_argument` naming the first bad hyper-parameter and its value.
  static void validate(const Options& o) {
    constexpr const char* self = "mpx::optim::SGD";
    if (!(std::isfinite(o.lr) && o.lr > 0.0)) Base::fail(self, "lr", o.lr, "a finite value > 0");
    if (!(o.momentum >= 0.0 && o.momentum < 1.0))
      Base::fail(self, "momentum", o.momentum, "a value in [0, 1)");
    if (!(o.dampening >= 0.0 && o.dampening <= 1.0)) {
      Base::fail(self, "dampening", o.dampening, "a value in [0, 1]");
    }
    if (!(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0)) {
      Base::fail(self, "weight_decay", o.weight_decay, "a finite value >= 0");
    }
    if (o.nesterov && (o.momentum == 0.0 || o.dampening != 0.0)) {
      Base::fail(self, "nesterov",
                 mpx::detail::concat("true with momentum = ", o.momentum, " and dampening = ", o.dampening),
                 "momentum > 0 and dampening = 0 (as PyTorch requires)");
    }
  }

 private:
  friend Base;  // calls update()

  void allocate_state() {
    if (options_.momentum != 0.0) {
      model_.for_each_parameter([](std::string_view, auto& p) { (void)p.state(0); });
    }
  }

  // One update of every parameter under `control` (device memory: see OptimizerBase::step), queued
  // as few launches on a GPU (Backend::sgd_updates).
  void update(const UpdateControl* control) {
    auto updates = Backend<Device>::sgd_updates(options_, control);
    int index = 0;
    model_.for_each_parameter([&](std::string_view, auto& p) {
      auto* momentum = options_.momentum != 0.0 ? &p.state(0) : nullptr;
      const auto rounding = this->template update_rounding<std::remove_cvref_t<decltype(p)>>(index++);
      updates.add(p.master(), p.compute_copy(), p.grad(), momentum, rounding);
    });
    updates.queue();
  }
};

}  // namespace mpx::optim
