// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::Concat<Block>`: y = concat(x, block(x)) along the channels, the skip connection of a
/// UNet.

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/channel_concat_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/step_key.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

namespace detail {
// A class template, so that the "in instantiation of" note above a failure names the block.
template <class Block>
struct check_concat_block {
  static_assert(Layer<Block>,
                "mpx::nn::Concat<Block>: Block (see check_concat_block<Block> above) is not a layer: it "
                "needs input_type, output_type, device_type, kind, forward(x) and backward(dy, input_grad)");
  static_assert(std::is_same_v<typename Block::input_type, typename Block::output_type>,
                "mpx::nn::Concat<Block>: the block's output type differs from its input type (see "
                "check_concat_block<Block> above), so x and block(x) cannot be concatenated into one "
                "tensor; end the block with a layer of the input's precision");
  static_assert(FloatingElement<typename Block::input_type>,
                "mpx::nn::Concat<Block>: the block takes no floating-point input (see "
                "check_concat_block<Block> above); the gradient of x sums the skip's and the block's, "
                "so x must be an activation, not token ids");
  /// The block's precision; read through this check so that a block that is no layer fails it first.
  using precision = typename Block::precision;
};
}  // namespace detail

/// @brief y = concat(x, block(x)) along the last dimension (the channels, images being channels
/// last): x [N, H, W, Cx] and block(x) [N, H, W, Cb] give y [N, H, W, Cx + Cb], y[..., :Cx] = x and
/// y[..., Cx:] = block(x). Any rank from 2, as long as the block keeps every dimension but the last.
/// The skip connection of a UNet, whose up path reads the down path's activation beside its own:
/// @code
/// using L = mpx::nn::layers<mpx::bf16_mixed>;
/// mpx::nn::Sequential level{
///     L::conv2d(3, 32, 3, {.padding = 1}), L::silu(),
///     mpx::nn::Concat{mpx::nn::Sequential{L::max_pool2d(2), L::conv2d(32, 64, 3, {.padding = 1}),
///                                         L::silu(), L::upsample(2)}},  // [N, H, W, 32 + 64]
///     L::conv2d(96, 32, 3, {.padding = 1}), L::silu()};
/// @endcode
/// The copy is exact. The gradient reaches x through both paths: dx = dy[..., :Cx] + the block's dx
/// for dy[..., Cx:], the sum in fp32 (the accumulate type) rounded once into the compute type, as
/// `Residual` sums its two paths. Parameters (and buffers) are named "block.<the block's names>".
/// @tparam Block a layer whose output has its input's type (usually a `Sequential`) and, but for the
///         last, its input's dimensions.
template <class Block>
class Concat
    : public LayerBase<Concat<Block>, typename detail::check_concat_block<Block>::precision,
                       typename Block::device_type, typename Block::input_type, typename Block::input_type> {
  using T = typename Block::input_type;
  using Device = typename Block::device_type;
  using Base = LayerBase<Concat, typename Block::precision, Device, T, T>;

 public:
  /// @brief Layer name used in messages and descriptions.
  static constexpr std::string_view kind = "Concat";
  using Base::forward;
  /// @brief Whether the block computes in fp16 anywhere (and so needs loss scaling).
  static constexpr bool has_half_compute = computes_in_half<Block>();

  /// @brief Wraps `block`.
  explicit Concat(Block block) : block_(std::move(block)) { set_label(this->label()); }

  /// @brief Initialises the block from (seed, `nested_stream(stream, 0)`), as `Residual` does.
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    block_.initialize(seed, nested_stream(stream, 0));
  }

  /// @brief y = concat(x, block(x)) along the last dimension. The block keeps a pointer to `x` for
  /// its backward.
  /// @throws mpx::shape_error naming the layer and both shapes when the block's output differs from
  /// x in a dimension other than the last.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    const Tensor<T, Device>& fx = block_.forward(x);
    if (!concatenable_along_channels(x.shape(), fx.shape())) {
      throw shape_error(mpx::detail::concat(
          this->label(), ": the block maps ", x.shape(), " to ", fx.shape(),
          "; concatenating along the channels (the last dimension) needs every other dimension of the "
          "block's output equal to the input's"));
    }
    input_channels_ = x.shape().cols();
    ensure_shape(output_, x.shape().with_last(x.shape().cols() + fx.shape().cols()));
    Backend<Device>::concat_channels(x, fx, output_);
    return output_;
  }

  /// @brief The block's parameter gradients from dy[..., Cx:]; returns dx = dy[..., :Cx] + (the
  /// block's dx) when `input_grad`, else null.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(input_channels_ >= 0, dy.shape(), output_.shape());
    ensure_shape(skip_grad_, dy.shape().with_last(input_channels_));
    ensure_shape(block_grad_, dy.shape().with_last(dy.shape().cols() - input_channels_));
    Backend<Device>::split_channels(dy, skip_grad_, block_grad_);
    const Tensor<T, Device>* block_dx = block_.backward(block_grad_, input_grad);
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, skip_grad_.shape());
    Backend<Device>::add(skip_grad_, *block_dx, input_grad_);
    return &input_grad_;
  }

  /// @brief Calls f("block.<name>", parameter) for each of the block's parameters.
  template <class F>
  void for_each_parameter(F&& f) {
    block_.for_each_parameter(
        [&](std::string_view local, auto& parameter) { f(std::string_view(prefixed(local)), parameter); });
  }

  /// @brief Calls f("block.<name>", tensor) for each of the block's buffers.
  template <class F>
  void for_each_buffer(F&& f) {
    nn::for_each_buffer(
        block_, [&](std::string_view local, auto& tensor) { f(std::string_view(prefixed(local)), tensor); });
  }

  /// @brief Names the layer in messages; the block's layers are named under "<label>.block".
  void set_label(std::string label) {
    Base::set_label(std::move(label));
    block_.set_label(mpx::detail::concat(label_path(this->label()), ".block (", Block::kind, ")"));
  }
  /// @brief Calls `f(block)` (nn::for_each_layer).
  template <class F>
  void for_each_child(F&& f) {
    f(block_);
  }
  /// @brief Passes the mode to the block (see nn/training_mode.hpp).
  void set_training(bool training) {
    Base::set_training(training);
    nn::set_training(block_, training);
  }
  /// @brief Passes the running step to the layers that draw random numbers.
  void bind_step(const StepKey& key) { nn::bind_step(block_, key); }
  /// @brief Drops what the block saved for backward.
  void forget_input() noexcept {
    if constexpr (requires { block_.forget_input(); }) block_.forget_input();
  }

  /// @brief {"block": the block's description}, so that a description nests as the model does.
  [[nodiscard]] LayerDescription describe() const {
    return {{"block", NestedLayers{{describe_layer(block_)}}}};
  }

  /// @brief The wrapped block.
  [[nodiscard]] Block& block() noexcept { return block_; }

 private:
  static std::string prefixed(std::string_view local) {
    std::string name = "block.";
    name.append(local);
    return name;
  }

  Block block_;
  std::int64_t input_channels_ = -1;  // Cx of the last forward; -1 until one ran
  Tensor<T, Device> output_;
  Tensor<T, Device> skip_grad_;   // dy[..., :Cx]
  Tensor<T, Device> block_grad_;  // dy[..., Cx:]
  Tensor<T, Device> input_grad_;
};

/// @brief `Concat{block}`.
template <class Block>
Concat(Block) -> Concat<Block>;

}  // namespace mpx::nn
