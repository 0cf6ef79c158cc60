// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::GroupNorm`: normalisation over groups of channels of each image (diffusion UNets'
/// norm), statistics and parameters in fp32 in every precision.

#include <cstdint>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/group_norm_spec.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/parameter.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

/// @brief PyTorch's `nn.GroupNorm(num_groups, num_channels, eps)` on channels-last x [N, ..., C]:
/// per image and group of C / G channels, (x - mean) / sqrt(var + eps), then gamma and beta per
/// channel (backend/group_norm_spec.hpp). The same in training and evaluation; no running statistics.
/// @code
/// using L = mpx::nn::layers<mpx::bf16_mixed>;
/// auto norm = L::group_norm(32, 256);  // 32 groups of 8 channels
/// @endcode
template <PrecisionPolicy P, class Device = Host>
class GroupNorm : public LayerBase<GroupNorm<P, Device>, P, Device> {
  using T = compute_t<P>;
  using Acc = accumulate_t<P>;
  using Param = MasterParameter<P, Device>;  // read in the master type (fp32 math): no compute copy

 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "GroupNorm";
  using LayerBase<GroupNorm, P, Device>::forward;
  /// @brief The `epsilon` a layer gets when none is given: 1e-5, `torch.nn.GroupNorm`'s `eps`.
  static constexpr float default_epsilon = 1e-5f;

  /// @brief `num_channels` channels in `num_groups` groups.
  /// @throws mpx::invalid_argument naming the values unless both are positive, the groups divide
  ///         the channels and epsilon is in (0, 1).
  GroupNorm(std::int64_t num_groups, std::int64_t num_channels, float epsilon = default_epsilon)
      : groups_(num_groups),
        channels_(num_channels),
        epsilon_(epsilon),
        gamma_("weight", Shape{checked_channels(num_groups, num_channels)}),
        beta_("bias", Shape{num_channels}) {
    if (!(epsilon > 0.0f && epsilon < 1.0f)) {
      throw invalid_argument(mpx::detail::concat("mpx::nn::GroupNorm: epsilon = ", epsilon,
                                                 " is invalid; expected a value in (0, 1)"));
    }
    initialize(0, 0);
  }

  /// @brief gamma = 1, beta = 0 (the seed is unused).
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    nn::initialize(gamma_, Init::Ones, channels_, channels_, seed, stream);
    nn::initialize(beta_, Init::Zeros, channels_, channels_, seed, stream);
  }

  /// @brief Normalises x [N, ..., num_channels]; saves the statistics backward needs.
  /// @throws mpx::shape_error naming the layer and the shapes for another channel count or rank 1.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    input_ = nullptr;  // until this forward has succeeded
    if (x.rank() < 2 || x.shape().cols() != channels_ || x.numel() == 0) {
      throw shape_error(mpx::detail::concat(this->label(),
                                            ": expected a non-empty input of shape [batch, ..., ", channels_,
                                            "] (channels last), received ", x.shape()));
    }
    ensure_shape(output_, x.shape());
    ensure_shape(mean_, Shape{x.shape()[0], groups_});
    ensure_shape(rstd_, Shape{x.shape()[0], groups_});
    Backend<Device>::group_norm_forward(x, gamma_.master(), beta_.master(), groups_, epsilon_, output_, mean_,
                                        rstd_);
    input_ = &x;
    return output_;
  }

  /// @brief Gradients of gamma and beta (fp32, accumulating); returns dx, or null when `input_grad`
  /// is false.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(!input_.empty(), dy.shape(), output_.shape());
    const auto dgamma = gamma_.grad_for_update();
    const auto dbeta = beta_.grad_for_update();
    if (input_grad) ensure_shape(input_grad_, dy.shape());
    Backend<Device>::group_norm_backward(*input_, gamma_.master(), groups_, mean_, rstd_, dy,
                                         input_grad ? &input_grad_ : nullptr, dgamma.tensor, dgamma.overwrite,
                                         dbeta.tensor, dbeta.overwrite);
    return input_grad ? &input_grad_ : nullptr;
  }

  /// @brief Calls `f(name, parameter)` on gamma ("weight"), then beta ("bias").
  template <class F>
  void for_each_parameter(F&& f) {
    f(std::string_view("weight"), gamma_);
    f(std::string_view("bias"), beta_);
  }
  /// @brief Drops the saved input pointer; backward then throws until the next forward.
  void forget_input() noexcept { input_ = nullptr; }

  /// @brief `torch.nn.GroupNorm`'s arguments: num_groups, num_channels, eps (affine always true).
  [[nodiscard]] LayerDescription describe() const {
    return {{"num_groups", groups_}, {"num_channels", channels_}, {"eps", epsilon_}};
  }

  /// @brief Gamma, [num_channels].
  [[nodiscard]] Param& weight() noexcept { return gamma_; }
  /// @brief Beta, [num_channels].
  [[nodiscard]] Param& bias() noexcept { return beta_; }

 private:
  static std::int64_t checked_channels(std::int64_t groups, std::int64_t channels) {
    if (groups <= 0 || channels <= 0 || channels % groups != 0) {
      throw invalid_argument(mpx::detail::concat("mpx::nn::GroupNorm: num_groups = ", groups,
                                                 " must be positive and divide num_channels = ", channels));
    }
    return channels;
  }

  std::int64_t groups_;
  std::int64_t channels_;
  float epsilon_;
  Param gamma_;
  Param beta_;
  Tensor<Acc, Device> mean_, rstd_;  // [N, groups], the last forward's
  SavedPointer<Tensor<T, Device>> input_;
  Tensor<T, Device> output_;
  Tensor<T, Device> input_grad_;
};

}  // namespace mpx::nn
