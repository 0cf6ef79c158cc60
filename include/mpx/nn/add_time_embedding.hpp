// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::AddTimeEmbedding<P, Device>`: y = x + W e + b at every position of a sample, e being
/// the sample's time embedding; the conditioning inside a diffusion UNet's residual blocks.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/sample_shift_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/linear.hpp"
#include "mpx/nn/time_embedding.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

/// @brief y[n, ..., c] = x[n, ..., c] + s[n, c] with s = e W^T + b, e [N, E] being the time
/// embedding of the `nn::TimeConditioned` model the layer sits in: diffusers' `ResnetBlock2D` adding
/// `time_emb_proj(silu(temb))[:, :, None, None]` to its first convolution's output (the SiLU belongs
/// to the time network, computed once for all blocks).
///
/// x is channels last, [N, C] or [N, ..., C] (an image [N, H, W, C]); the projection is a `Linear`
/// (E -> C, Xavier-uniform weight, zero bias) in the compute type with fp32 accumulation, named
/// "proj.weight" and "proj.bias"; the shift is added in fp32 and rounded once into the compute type.
/// Backward: dx = dy (a view of it); ds[n, c] = the sum of dy[n, ..., c] over the positions in
/// fp32, rounded once; the projection's gradients from ds; and ds W added to the embedding's
/// gradient in the slot. Outside a `TimeConditioned` model the layer has no embedding to read, and
/// its forward says so.
/// @code
/// using L = mpx::nn::layers<mpx::bf16_mixed>;
/// mpx::nn::Residual block{mpx::nn::Sequential{L::group_norm(8, 64), L::silu(), L::conv2d(64, 64, 3,
/// {.padding = 1}),
///                                             L::add_time_embedding(256, 64),  // + W e + b per pixel
///                                             L::group_norm(8, 64), L::silu(), L::conv2d(64, 64, 3,
///                                             {.padding = 1})}};
/// @endcode
/// @tparam P precision policy; @tparam Device `Host` or `Cuda`.
template <PrecisionPolicy P, class Device = Host>
class AddTimeEmbedding : public LayerBase<AddTimeEmbedding<P, Device>, P, Device> {
  using T = compute_t<P>;
  using Base = LayerBase<AddTimeEmbedding, P, Device>;

 public:
  /// @brief Layer name used in messages and descriptions.
  static constexpr std::string_view kind = "AddTimeEmbedding";
  using Base::forward;
  /// @brief The slot type a `TimeConditioned` model binds (`bind_time_embedding`).
  using slot_type = TimeEmbeddingSlot<T, Device>;

  /// @brief Projects embeddings of `embedding_dim` features onto `channels` channels.
  AddTimeEmbedding(std::int64_t embedding_dim, std::int64_t channels)
      : projection_(embedding_dim, channels, {.bias = true, .init = Init::XavierUniform}) {
    set_label(this->label());
  }

  /// @brief Re-initialises the projection from (seed, stream).
  void initialize(std::uint64_t seed, std::uint64_t stream) { projection_.initialize(seed, stream); }

  /// @brief Reads the embedding through `slot` from now on (`TimeConditioned` calls it).
  void bind_time_embedding(slot_type* slot) noexcept { slot_ = slot; }

  /// @brief y = x + (e W^T + b) at every position of each sample.
  /// @throws mpx::error outside a `TimeConditioned` model's forward; mpx::shape_error naming the
  ///         layer for an x whose channels or batch differ from the projection's and the embedding's.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    if (slot_ == nullptr || slot_->embedding == nullptr) {
      throw error(mpx::detail::concat(
          this->label(), ": no time embedding to add; the layer belongs inside an mpx::nn::TimeConditioned ",
          "model, whose set_timesteps(...) comes before its forward"));
    }
    const Tensor<T, Device>& embedding = *slot_->embedding;
    if (x.rank() < 2 || x.shape()[0] != embedding.shape()[0] ||
        x.shape().cols() != projection_.out_features()) {
      throw shape_error(mpx::detail::concat(this->label(), ": expected x [", embedding.shape()[0], ", ..., ",
                                            projection_.out_features(), "] (the embedding's batch, the ",
                                            "projection's channels), received ", x.shape()));
    }
    const Tensor<T, Device>& shift = projection_.forward(embedding);
    ensure_shape(output_, x.shape());
    Backend<Device>::add_sample_shift(x, shift, output_);
    forward_ran_ = this->training();
    return output_;
  }

  /// @brief The projection's gradients from the shift's, the embedding's share added into the slot;
  /// returns dy itself as dx (a view of it) when `input_grad`.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    if (!forward_ran_ || slot_ == nullptr)
      throw_backward_without_saved_state(this->label(), this->training());
    require_shape(this->label().c_str(), "upstream gradient", dy.shape(), output_.shape());
    ensure_shape(shift_grad_, Shape{dy.shape()[0], dy.shape().cols()});
    Backend<Device>::sample_shift_backward(dy, shift_grad_);
    ensure_shape(shift_grad_rounded_, shift_grad_.shape());
    Backend<Device>::template round_into<tag_of_t<T>>(shift_grad_, shift_grad_rounded_);
    const Tensor<T, Device>* embedding_grad = projection_.backward(shift_grad_rounded_, true);
    if (!slot_->gradient_started) {
      ensure_shape(slot_->gradient, embedding_grad->shape());
      slot_->gradient.set_zero();
      slot_->gradient_started = true;
    }
    Backend<Device>::add(slot_->gradient, *embedding_grad, slot_->gradient);
    if (!input_grad) return nullptr;
    input_grad_ = Tensor<T, Device>::view(const_cast<T*>(dy.data()), dy.shape());
    return &input_grad_;
  }

  /// @brief Calls f("proj.weight", weight) and f("proj.bias", bias).
  template <class F>
  void for_each_parameter(F&& f) {
    projection_.for_each_parameter([&](std::string_view local, auto& parameter) {
      std::string name = "proj.";
      name.append(local);
      f(std::string_view(name), parameter);
    });
  }

  /// @brief Names the layer in messages; its projection is "<label>.proj".
  void set_label(std::string label) {
    Base::set_label(std::move(label));
    projection_.set_label(mpx::detail::concat(label_path(this->label()), ".proj (Linear)"));
  }
  /// @brief Calls `f(projection)` (nn::for_each_layer: what reaches layers by kind, FP8 scales and
  /// memory accounting, sees the projection).
  template <class F>
  void for_each_child(F&& f) {
    f(projection_);
  }
  /// @brief Passes the mode to the projection.
  void set_training(bool training) {
    Base::set_training(training);
    projection_.set_training(training);
  }
  /// @brief Drops what backward would read.
  void forget_input() noexcept {
    forward_ran_ = false;
    if constexpr (requires { projection_.forget_input(); }) projection_.forget_input();
  }

  /// @brief {"embedding_dim": E, "channels": C}.
  [[nodiscard]] LayerDescription describe() const {
    return {{"embedding_dim", projection_.in_features()}, {"channels", projection_.out_features()}};
  }

  /// @brief The projection E -> C.
  [[nodiscard]] Linear<P, Activation::None, Device>& projection() noexcept { return projection_; }

 private:
  Linear<P, Activation::None, Device> projection_;
  slot_type* slot_ = nullptr;
  bool forward_ran_ = false;
  Tensor<T, Device> output_;
  Tensor<accumulate_t<T>, Device> shift_grad_;  // fp32 sums over the positions
  Tensor<T, Device> shift_grad_rounded_;
  Tensor<T, Device> input_grad_;  // a view of dy
};

}  // namespace mpx::nn
