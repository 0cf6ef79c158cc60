// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::BatchNorm2d`: batch normalisation over the channels of channels-last images, its
/// statistics, parameters and running statistics in fp32 in every precision (autocast's rule).

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/batch_norm_spec.hpp"
#include "mpx/nn/batch_statistics.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/parameter.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

/// @brief Construction options of a `BatchNorm2d`: PyTorch's `eps` and `momentum` and their defaults.
struct BatchNormOptions {
  float epsilon = 1e-5f;  ///< added to the variance
  double momentum = 0.1;  ///< weight of the batch in the running statistics' update
};

/// @brief y = (x - mean) / sqrt(var + eps) gamma + beta per channel of x [N, H, W, C] (any rank
/// from 2: the last dimension is the channel), PyTorch's `nn.BatchNorm2d` (backend/batch_norm_spec.hpp).
///
/// Training mode normalises with the batch's own statistics and updates the running mean and the
/// running (unbiased) variance; evaluation mode normalises with the running statistics. Gamma
/// ("weight", 1) and beta ("bias", 0) are fp32 parameters, the running statistics fp32 buffers
/// ("running_mean", 0, and "running_var", 1) that `for_each_buffer` shows to checkpoints. Under data
/// parallel each rank normalises with its own batch's statistics, as DDP does by default; with a
/// `StatisticsReducer` (`dist::SyncOptions::sync_batch_norm`) every rank normalises with the whole
/// job's batch, as PyTorch's SyncBatchNorm: the sums of x and of squared deviations, and in backward
/// those of dy and dy xhat, are added over the ranks.
/// @code
/// using L = mpx::nn::layers<mpx::bf16_mixed>;
/// mpx::nn::Sequential block{L::conv2d(64, 64, 3, {.padding = 1, .bias = false}), L::batch_norm2d(64),
/// L::relu()};
/// @endcode
template <PrecisionPolicy P, class Device = Host>
class BatchNorm2d : public LayerBase<BatchNorm2d<P, Device>, P, Device> {
  using T = compute_t<P>;
  using Acc = accumulate_t<P>;
  using Param = MasterParameter<P, Device>;  // read in the master type (fp32 math): no compute copy

 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "BatchNorm2d";
  using LayerBase<BatchNorm2d, P, Device>::forward;
  /// @brief Construction options (see `BatchNormOptions`).
  using Options = BatchNormOptions;
  /// @brief What sums the statistics over the ranks of a data-parallel job.
  using Reducer = StatisticsReducer<Acc, Device>;

  /// @brief Normalises `num_features` channels.
  /// @throws mpx::invalid_argument naming the values unless num_features is positive, epsilon in
  ///         (0, 1) and momentum in [0, 1].
  explicit BatchNorm2d(std::int64_t num_features, Options options = {})
      : features_(num_features),
        options_(options),
        gamma_("weight", Shape{checked_features(num_features)}),
        beta_("bias", Shape{num_features}),
        running_mean_(Shape{num_features}),
        running_var_(Shape{num_features}) {
    if (!(options.epsilon > 0.0f && options.epsilon < 1.0f)) {
      throw invalid_argument(mpx::detail::concat("mpx::nn::BatchNorm2d: epsilon = ", options.epsilon,
                                                 " is invalid; expected a value in (0, 1)"));
    }
    if (!(options.momentum >= 0.0 && options.momentum <= 1.0)) {
      throw invalid_argument(mpx::detail::concat("mpx::nn::BatchNorm2d: momentum = ", options.momentum,
                                                 " is invalid; expected a value in [0, 1]"));
    }
    initialize(0, 0);
  }

  /// @brief gamma = 1, beta = 0, running mean 0, running variance 1 (the seed is unused).
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    nn::initialize(gamma_, Init::Ones, features_, features_, seed, stream);
    nn::initialize(beta_, Init::Zeros, features_, features_, seed, stream);
    running_mean_.set_zero();
    Backend<Device>::fill_uniform(running_var_, 1.0, 1.0, seed, stream);
  }

  /// @brief Normalises each channel of x [..., num_features]; in training mode, with the batch's
  /// statistics, which it saves for backward, and updates the running ones.
  /// @throws mpx::shape_error naming the layer and the shapes for another channel count, rank 1, or
  ///         a training batch of one value per channel (no variance).
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    input_ = nullptr;  // until this forward has succeeded
    if (x.rank() < 2 || x.shape().cols() != features_) {
      throw shape_error(mpx::detail::concat(this->label(),
                                            ": expected input of shape [batch, height, width, ", features_,
                                            "] (channels last), received ", x.shape()));
    }
    ensure_shape(output_, x.shape());
    if (!this->training()) {
      Backend<Device>::batch_norm_forward_inference(x, gamma_.master(), beta_.master(), running_mean_,
                                                    running_var_, options_.epsilon, output_);
      return output_;
    }
    for (auto* statistic : {&mean_, &var_, &rstd_}) ensure_shape(*statistic, Shape{features_});
    const std::int64_t count = reducer_ ? synchronised_forward(x) : x.shape().rows();
    if (!reducer_) {
      require_variance(count, x.shape());
      Backend<Device>::batch_norm_forward_training(x, gamma_.master(), beta_.master(), options_.epsilon,
                                                   output_, mean_, var_, rstd_);
    }
    Backend<Device>::batch_norm_update_running_stats(mean_, var_, count, options_.momentum, running_mean_,
                                                     running_var_);
    count_ = count;
    input_ = &x;
    return output_;
  }

  /// @brief Gradients of gamma and beta (fp32, accumulating); returns dx, or null when `input_grad`
  /// is false. Needs a training-mode forward (evaluation saves nothing for backward).
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    if (input_.empty()) throw_backward_without_saved_state(this->label(), this->training());
    require_shape(this->label().c_str(), "upstream gradient", dy.shape(), output_.shape());
    const auto dgamma = gamma_.grad_for_update();
    const auto dbeta = beta_.grad_for_update();
    if (input_grad) ensure_shape(input_grad_, dy.shape());
    if (!reducer_) {
      Backend<Device>::batch_norm_backward(*input_, gamma_.master(), mean_, rstd_, dy,
                                           input_grad ? &input_grad_ : nullptr, dgamma.tensor,
                                           dgamma.overwrite, dbeta.tensor, dbeta.overwrite);
      return input_grad ? &input_grad_ : nullptr;
    }
    // dgamma and dbeta from this rank's sums (the gradient sync averages them); dx from everyone's.
    ensure_shape(gradient_sums_, Shape{2 * features_});
    Backend<Device>::batch_norm_backward_sums(*input_, mean_, rstd_, dy, gradient_sums_, dgamma.tensor,
                                              dgamma.overwrite, dbeta.tensor, dbeta.overwrite);
    if (!input_grad) return nullptr;  // the same on every rank: the same model
    (void)reducer_->sum_over_ranks(gradient_sums_, dy.shape().rows());
    Backend<Device>::batch_norm_backward_input(*input_, gamma_.master(), mean_, rstd_, dy, gradient_sums_,
                                               count_, input_grad_);
    return &input_grad_;
  }

  /// @brief Calls `f(name, parameter)` on gamma ("weight"), then beta ("bias").
  template <class F>
  void for_each_parameter(F&& f) {
    f(std::string_view("weight"), gamma_);
    f(std::string_view("bias"), beta_);
  }
  /// @brief Calls `f(name, tensor)` on the running statistics ("running_mean", "running_var"):
  /// state that is not trained but saved and loaded with the weights (PyTorch's buffers).
  template <class F>
  void for_each_buffer(F&& f) {
    f(std::string_view("running_mean"), running_mean_);
    f(std::string_view("running_var"), running_var_);
  }

  /// @brief Synchronised statistics: from the next training step on, the statistics of every rank's
  /// batch together, summed by `reducer` (collective: every rank's layer must get one); null: this
  /// rank's batch alone (the default). `dist::SyncOptions::sync_batch_norm` hands every
  /// BatchNorm2d of a model the gradient sync's reducer (nn::synchronise_batch_statistics).
  void set_statistics_reducer(std::shared_ptr<Reducer> reducer) noexcept { reducer_ = std::move(reducer); }
  /// @brief Whether training normalises with the statistics of every rank's batch.
  [[nodiscard]] bool synchronised() const noexcept { return reducer_ != nullptr; }

  /// @brief Drops the saved input pointer; backward then throws until the next forward.
  void forget_input() noexcept { input_ = nullptr; }

  /// @brief `torch.nn.BatchNorm2d`'s arguments: num_features, eps, momentum (affine and
  /// track_running_stats are always true).
  [[nodiscard]] LayerDescription describe() const {
    return {{"num_features", features_}, {"eps", options_.epsilon}, {"momentum", options_.momentum}};
  }

  /// @brief The running mean [num_features] (fp32).
  [[nodiscard]] Tensor<Acc, Device>& running_mean() noexcept { return running_mean_; }
  /// @brief The running variance [num_features] (fp32, unbiased).
  [[nodiscard]] Tensor<Acc, Device>& running_var() noexcept { return running_var_; }
  /// @brief Gamma, [num_features].
  [[nodiscard]] Param& weight() noexcept { return gamma_; }
  /// @brief Beta, [num_features].
  [[nodiscard]] Param& bias() noexcept { return beta_; }

 private:
  // Throws unless the batch has a variance to normalise with.
  void require_variance(std::int64_t count, const Shape& x) const {
    if (count < 2) {
      throw shape_error(
          mpx::detail::concat(this->label(), ": training needs more than one value per channel, received ", x,
                              reducer_ ? " (over every rank's batch)" : "", " (PyTorch raises the same)"));
    }
  }

  // The training statistics of every rank's batch, in the steps of batch_norm_forward_training with
  // the sums added over the ranks between them; writes output_, mean_, var_, rstd_ and returns the
  // number of rows over every rank.
  std::int64_t synchronised_forward(const Tensor<T, Device>& x) {
    ensure_shape(sums_, Shape{features_});
    Backend<Device>::batch_norm_channel_sums(x, sums_);
    const std::int64_t count = reducer_->sum_over_ranks(sums_, x.shape().rows());
    require_variance(count, x.shape());  // the same total on every rank: all throw or none does
    Backend<Device>::batch_norm_squared_deviations(x, sums_, count, mean_, var_);  // var_: the squares
    (void)reducer_->sum_over_ranks(var_, x.shape().rows());
    Backend<Device>::batch_norm_normalize(x, gamma_.master(), beta_.master(), mean_, var_, count,
                                          options_.epsilon, output_, var_, rstd_);
    return count;
  }

  static std::int64_t checked_features(std::int64_t features) {
    if (features <= 0) {
      throw invalid_argument(
          mpx::detail::concat("mpx::nn::BatchNorm2d: num_features must be positive, got ", features));
    }
    return features;
  }

  std::int64_t features_;
  Options options_;
  Param gamma_;
  Param beta_;
  Tensor<Acc, Device> running_mean_;
  Tensor<Acc, Device> running_var_;
  Tensor<Acc, Device> mean_, var_, rstd_;  // the last training batch's, for backward
  std::int64_t count_ = 0;                 // the rows those statistics cover (every rank's)
  std::shared_ptr<Reducer> reducer_;       // synchronised statistics; null: this rank's batch
  Tensor<Acc, Device> sums_;               // synchronised: the sums of x [C]
  Tensor<Acc, Device> gradient_sums_;      // synchronised: the sums of dy and dy xhat [2 C]
  SavedPointer<Tensor<T, Device>> input_;
  Tensor<T, Device> output_;
  Tensor<T, Device> input_grad_;
};

}  // namespace mpx::nn
