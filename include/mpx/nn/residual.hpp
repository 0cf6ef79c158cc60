// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::Residual<Block>`: y = x + block(x), the skip connection of a transformer block.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "mpx/backend/cpu/backend.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/step_key.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

namespace detail {
// A class template, so that the "in instantiation of" note above a failure names the block.
template <class Block>
struct check_residual_block {
  static_assert(Layer<Block>,
                "mpx::nn::Residual<Block>: Block (see check_residual_block<Block> above) is not a layer: it "
                "needs input_type, output_type, device_type, kind, forward(x) and backward(dy, input_grad)");
  static_assert(std::is_same_v<typename Block::input_type, typename Block::output_type>,
                "mpx::nn::Residual<Block>: the block's output type differs from its input type (see "
                "check_residual_block<Block> above), so x + block(x) has no type; end the block with a "
                "layer of the input's precision");
  static constexpr bool value = true;
};
}  // namespace detail

/// @brief y = x + block(x); the gradient reaches x through both paths: dx = dy + block'(x)^T dy.
///
/// The sum is taken in fp32 and rounded once into the compute type (16-bit activations as autocast
/// leaves them). A pre-LN transformer block is two of them:
/// @code
/// using L = mpx::nn::layers<mpx::bf16_mixed>;
/// mpx::nn::Residual attention{mpx::nn::Sequential{L::layer_norm(256), L::causal_self_attention(256, 4)}};
/// mpx::nn::Residual mlp{mpx::nn::Sequential{L::layer_norm(256), L::linear(256, 1024, mpx::nn::gelu),
///                                           L::linear(1024, 256)}};
/// @endcode
/// Parameters are named "block.<the block's names>".
/// @tparam Block a layer whose output has its input's shape and type (usually a `Sequential`).
template <class Block>
class Residual {
  static_assert(detail::check_residual_block<Block>::value);
  using T = typename Block::input_type;
  using Device = typename Block::device_type;

 public:
  /// @brief The block's precision policy.
  using precision = typename Block::precision;
  /// @brief Device the block runs on.
  using device_type = Device;
  /// @brief Element type of the input (the block's).
  using input_type = T;
  /// @brief Element type of the output (the same).
  using output_type = T;
  /// @brief Layer name used in messages and descriptions.
  static constexpr std::string_view kind = "Residual";
  /// @brief Whether the block computes in fp16 anywhere (and so needs loss scaling).
  static constexpr bool has_half_compute = computes_in_half<Block>();

  /// @brief Wraps `block`.
  explicit Residual(Block block) : block_(std::move(block)) { set_label(label_); }

  /// @brief Initialises the block from (seed, `nested_stream(stream, 0)`).
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    block_.initialize(seed, nested_stream(stream, 0));
  }

  /// @brief Does not compile: the block keeps a pointer to its input for backward, so a temporary
  /// cannot be an input (see `reject_temporary_input`).
  const Tensor<T, Device>& forward(Tensor<T, Device>&&) {
    reject_temporary_input<Residual>();
    return output_;
  }

  /// @brief y = x + block(x).
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    const Tensor<T, Device>& fx = block_.forward(x);
    if (!(fx.shape() == x.shape())) {
      throw shape_error(mpx::detail::concat(label_, ": the block maps ", x.shape(), " to ", fx.shape(),
                                            "; a residual block must keep its input's shape"));
    }
    ensure_shape(output_, x.shape());
    Backend<Device>::add(x, fx, output_);
    return output_;
  }

  /// @brief The block's parameter gradients; returns dx = dy + (the block's dx) when `input_grad`.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    require_shape(label_.c_str(), "upstream gradient", dy.shape(), output_.shape());
    const Tensor<T, Device>* block_dx = block_.backward(dy, input_grad);
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, dy.shape());
    Backend<Device>::add(dy, *block_dx, input_grad_);
    return &input_grad_;
  }

  /// @brief Calls f("block.<name>", parameter) for each of the block's parameters.
  template <class F>
  void for_each_parameter(F&& f) {
    block_.for_each_parameter([&](std::string_view local, auto& parameter) {
      std::string name = "block.";
      name.append(local);
      f(std::string_view(name), parameter);
    });
  }

  /// @brief Names the layer in messages; the block's layers are named under "<label>.block".
  void set_label(std::string label) {
    label_ = std::move(label);
    block_.set_label(mpx::detail::concat(label_path(label_), ".block (", Block::kind, ")"));
  }
  /// @brief Passes the mode to the block (see nn/training_mode.hpp).
  void set_training(bool training) {
    training_ = training;
    nn::set_training(block_, training);
  }
  /// @brief Whether the layer is in training mode.
  [[nodiscard]] bool training() const noexcept { return training_; }
  /// @brief Passes the running step to the block's layers that draw random numbers.
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
  Block block_;
  std::string label_ = "mpx::nn::Residual";
  Tensor<T, Device> output_;
  Tensor<T, Device> input_grad_;
  bool training_ = true;
};

}  // namespace mpx::nn
