// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::LayerNorm` over the last dimension: statistics in fp32, input and output in the
/// compute type, gamma and beta read from the master weights.

#include <cstdint>
#include <string>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/parameter.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

/// @brief y = (x - mean) / sqrt(var + eps) * gamma + beta per row of x: [batch, features], or
/// [batch, sequence, features] normalised per position.
template <PrecisionPolicy P, class Device = Host>
class LayerNorm : public LayerBase<LayerNorm<P, Device>, P, Device> {
  using T = compute_t<P>;
  using Acc = accumulate_t<P>;
  using Param = MasterParameter<P, Device>;  // read in the master type (fp32 math): no compute copy

 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "LayerNorm";
  using LayerBase<LayerNorm<P, Device>, P, Device>::forward;
  /// @brief The `epsilon` a layer gets when none is given: 1e-5, `torch.nn.LayerNorm`'s `eps`
  /// (docs/training.md's table of defaults reads it from here).
  static constexpr float default_epsilon = 1e-5f;

  /// @brief Normalises over `features` values per row; `epsilon` is added to the variance.
  explicit LayerNorm(std::int64_t features, float epsilon = default_epsilon)
      : features_(features),
        epsilon_(epsilon),
        gamma_("weight", Shape{features}),
        beta_("bias", Shape{features}) {
    if (features <= 0) {
      throw invalid_argument(
          mpx::detail::concat("mpx::nn::LayerNorm: features must be positive, got ", features));
    }
    if (!(epsilon > 0.0f && epsilon < 1.0f)) {
      throw invalid_argument(mpx::detail::concat("mpx::nn::LayerNorm: epsilon = ", epsilon,
                                                 " is invalid; expected a value in (0, 1)"));
    }
    initialize(0, 0);
  }

  /// @brief gamma = 1, beta = 0 (the seed is unused; the signature matches the other layers).
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    nn::initialize(gamma_, Init::Ones, features_, features_, seed, stream);
    nn::initialize(beta_, Init::Zeros, features_, features_, seed, stream);
  }

  /// @brief Normalises each row of `x`; saves the statistics backward needs.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    require_features(this->label(), x, features_);
    ensure_shape(output_, x.shape());
    ensure_shape(mean_, Shape{x.shape().rows()});
    ensure_shape(rstd_, Shape{x.shape().rows()});
    Backend<Device>::layer_norm_forward(x, gamma_.master(), beta_.master(), epsilon_, output_, mean_, rstd_);
    input_ = &x;
    return output_;
  }

  /// @brief Gradients of gamma and beta; returns the input gradient (null when `input_grad` is false).
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(!input_.empty(), dy.shape(), output_.shape());
    // The kernel always produces dx alongside dgamma and dbeta; it is only returned when asked for.
    ensure_shape(input_grad_, dy.shape());
    Backend<Device>::layer_norm_backward(*input_, gamma_.master(), mean_, rstd_, dy, input_grad_,
                                         gamma_.grad(), beta_.grad());
    return input_grad ? &input_grad_ : nullptr;
  }

  /// @brief Calls `f(name, parameter)` on gamma ("weight"), then beta ("bias").
  template <class F>
  void for_each_parameter(F&& f) {
    f(std::string_view("weight"), gamma_);
    f(std::string_view("bias"), beta_);
  }

  /// @brief The settings another tool needs to rebuild the layer, under `torch.nn.LayerNorm`'s
  /// names: normalized_shape (the feature count), eps, and bias (always true: gamma and beta are
  /// learned).
  [[nodiscard]] LayerDescription describe() const {
    return {{"normalized_shape", features_}, {"eps", epsilon_}, {"bias", true}};
  }

  /// @brief Drops the saved input pointer; backward then throws until the next forward.
  void forget_input() noexcept { input_ = nullptr; }

 private:
  std::int64_t features_;
  float epsilon_;
  Param gamma_;
  Param beta_;
  SavedPointer<Tensor<T, Device>> input_;
  Tensor<T, Device> output_;
  Tensor<Acc, Device> mean_;
  Tensor<Acc, Device> rstd_;
  Tensor<T, Device> input_grad_;
};

}  // namespace mpx::nn
