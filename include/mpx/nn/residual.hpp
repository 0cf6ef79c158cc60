// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::Residual<Block>`: y = x + block(x), the skip connection of a transformer block.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "mpx/backend/backend.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/step_key.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

/// @brief The shortcut of a `Residual` that adds its input unchanged (the default).
struct IdentityShortcut {};

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
  /// The block's precision; read through this check so that a block that is no layer fails it first.
  using precision = typename Block::precision;
};

template <class Block, class Shortcut>
struct check_residual_shortcut {
  static_assert(
      Layer<Shortcut>,
      "mpx::nn::Residual<Block, Shortcut>: Shortcut (see check_residual_shortcut above) is not a layer");
  static_assert(
      std::is_same_v<typename Shortcut::input_type, typename Block::input_type> &&
          std::is_same_v<typename Shortcut::output_type, typename Block::output_type> &&
          std::is_same_v<typename Shortcut::device_type, typename Block::device_type>,
      "mpx::nn::Residual<Block, Shortcut>: the shortcut must read and write the block's element types "
      "on the block's device, so that block(x) + shortcut(x) has one type");
  static constexpr bool value = true;
};

// Whether Shortcut may be Block's shortcut: the identity always; a layer when it passes the check
// above (instantiated only then, so that the identity needs no layer members).
template <class Block, class Shortcut>
constexpr bool valid_shortcut() {
  if constexpr (std::is_same_v<Shortcut, IdentityShortcut>) {
    return true;
  } else {
    return check_residual_shortcut<Block, Shortcut>::value;
  }
}
}  // namespace detail

/// @brief y = block(x) + shortcut(x), the shortcut being x itself (the default) or a layer of its
/// own (a projection: ResNet's 1 x 1 convolution and BatchNorm where a block changes the shape).
/// The gradient reaches x through both paths: dx = block'(x)^T dy + shortcut'(x)^T dy.
///
/// The sum is taken in fp32 and rounded once into the compute type (16-bit activations as autocast
/// leaves them). A pre-LN transformer block is two of them:
/// @code
/// using L = mpx::nn::layers<mpx::bf16_mixed>;
/// mpx::nn::Residual attention{mpx::nn::Sequential{L::layer_norm(256), L::causal_self_attention(256, 4)}};
/// mpx::nn::Residual mlp{mpx::nn::Sequential{L::layer_norm(256), L::linear(256, 1024, mpx::nn::gelu),
///                                           L::linear(1024, 256)}};
/// // A ResNet basic block that halves the image and doubles the channels:
/// mpx::nn::Residual down{mpx::nn::Sequential{L::conv2d(64, 128, 3, {.stride = 2, .padding = 1, .bias =
/// false}),
///                                            L::batch_norm2d(128), L::relu(),
///                                            L::conv2d(128, 128, 3, {.padding = 1, .bias = false}),
///                                            L::batch_norm2d(128)},
///                        mpx::nn::Sequential{L::conv2d(64, 128, 1, {.stride = 2, .bias = false}),
///                                            L::batch_norm2d(128)}};
/// @endcode
/// Parameters (and buffers) are named "block.<the block's names>" and "shortcut.<the shortcut's>".
/// @tparam Block a layer whose output has its input's type (usually a `Sequential`); with the
///         identity shortcut also its input's shape.
/// @tparam Shortcut `IdentityShortcut`, or a layer with the block's element types and output shape.
template <class Block, class Shortcut = IdentityShortcut>
class Residual
    : public LayerBase<Residual<Block, Shortcut>, typename detail::check_residual_block<Block>::precision,
                       typename Block::device_type, typename Block::input_type, typename Block::input_type> {
  using T = typename Block::input_type;
  using Device = typename Block::device_type;
  using Base = LayerBase<Residual, typename Block::precision, Device, T, T>;
  static constexpr bool projected = !std::is_same_v<Shortcut, IdentityShortcut>;
  static_assert(detail::valid_shortcut<Block, Shortcut>());

 public:
  /// @brief Layer name used in messages and descriptions.
  static constexpr std::string_view kind = "Residual";
  using Base::forward;
  /// @brief Whether the block or the shortcut computes in fp16 anywhere (and so needs loss scaling).
  static constexpr bool has_half_compute = computes_in_half<Block>() || computes_in_half<Shortcut>();

  /// @brief Wraps `block`, with the identity shortcut.
  explicit Residual(Block block) : block_(std::move(block)) { set_label(this->label()); }
  /// @brief Wraps `block`, with `shortcut` on the other path.
  Residual(Block block, Shortcut shortcut) : block_(std::move(block)), shortcut_(std::move(shortcut)) {
    set_label(this->label());
  }

  /// @brief Initialises the block from (seed, `nested_stream(stream, 0)`), the shortcut from
  /// (seed, `nested_stream(stream, 1)`).
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    block_.initialize(seed, nested_stream(stream, 0));
    if constexpr (projected) shortcut_.initialize(seed, nested_stream(stream, 1));
  }

  /// @brief y = block(x) + shortcut(x).
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    const Tensor<T, Device>& fx = block_.forward(x);
    const Tensor<T, Device>* sx = &x;
    if constexpr (projected) sx = &shortcut_.forward(x);
    if (!(fx.shape() == sx->shape())) {
      throw shape_error(mpx::detail::concat(
          this->label(), ": the block maps ", x.shape(), " to ", fx.shape(),
          projected
              ? mpx::detail::concat(", the shortcut to ", sx->shape(), "; both paths must give one shape")
              : std::string("; a residual block without a shortcut layer must keep its input's shape")));
    }
    ensure_shape(output_, fx.shape());
    Backend<Device>::add(*sx, fx, output_);
    return output_;
  }

  /// @brief The block's (and shortcut's) parameter gradients; returns dx = (the block's dx) + (the
  /// shortcut's dx, or dy itself) when `input_grad`.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    require_shape(this->label().c_str(), "upstream gradient", dy.shape(), output_.shape());
    const Tensor<T, Device>* block_dx = block_.backward(dy, input_grad);
    const Tensor<T, Device>* shortcut_dx = &dy;
    if constexpr (projected) shortcut_dx = shortcut_.backward(dy, input_grad);
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, block_dx->shape());
    Backend<Device>::add(*shortcut_dx, *block_dx, input_grad_);
    return &input_grad_;
  }

  /// @brief Calls f("block.<name>", parameter) for each of the block's parameters, then
  /// f("shortcut.<name>", parameter) for the shortcut's.
  template <class F>
  void for_each_parameter(F&& f) {
    for_each_path([&](const char* prefix, auto& path) {
      path.for_each_parameter([&](std::string_view local, auto& parameter) {
        f(std::string_view(prefixed(prefix, local)), parameter);
      });
    });
  }

  /// @brief Calls f("block.<name>", tensor) for each of the block's buffers, then the shortcut's.
  template <class F>
  void for_each_buffer(F&& f) {
    for_each_path([&](const char* prefix, auto& path) {
      nn::for_each_buffer(path, [&](std::string_view local, auto& tensor) {
        f(std::string_view(prefixed(prefix, local)), tensor);
      });
    });
  }

  /// @brief Names the layer in messages; the block's layers are named under "<label>.block", the
  /// shortcut's under "<label>.shortcut".
  void set_label(std::string label) {
    Base::set_label(std::move(label));
    block_.set_label(mpx::detail::concat(label_path(this->label()), ".block (", Block::kind, ")"));
    if constexpr (projected) {
      shortcut_.set_label(mpx::detail::concat(label_path(this->label()), ".shortcut (", Shortcut::kind, ")"));
    }
  }
  /// @brief Calls `f(block)`, then `f(shortcut)` when it projects (nn::for_each_layer).
  template <class F>
  void for_each_child(F&& f) {
    for_each_path([&](const char*, auto& path) { f(path); });
  }
  /// @brief Passes the mode to the block and the shortcut (see nn/training_mode.hpp).
  void set_training(bool training) {
    Base::set_training(training);
    for_each_path([&](const char*, auto& path) { nn::set_training(path, training); });
  }
  /// @brief Passes the running step to the layers that draw random numbers.
  void bind_step(const StepKey& key) {
    for_each_path([&](const char*, auto& path) { nn::bind_step(path, key); });
  }
  /// @brief Drops what the block and the shortcut saved for backward.
  void forget_input() noexcept {
    for_each_path([](const char*, auto& path) {
      if constexpr (requires { path.forget_input(); }) path.forget_input();
    });
  }

  /// @brief {"block": the block's description} (and "shortcut": the shortcut's), so that a
  /// description nests as the model does.
  [[nodiscard]] LayerDescription describe() const {
    LayerDescription d{{"block", NestedLayers{{describe_layer(block_)}}}};
    if constexpr (projected) d.push_back({"shortcut", NestedLayers{{describe_layer(shortcut_)}}});
    return d;
  }

  /// @brief The wrapped block.
  [[nodiscard]] Block& block() noexcept { return block_; }
  /// @brief The shortcut layer (a projected residual only).
  [[nodiscard]] Shortcut& shortcut() noexcept requires(projected) { return shortcut_; }

 private:
  // visit("block", block), then visit("shortcut", shortcut) when there is a shortcut layer.
  template <class Visit>
  void for_each_path(Visit&& visit) {
    visit("block.", block_);
    if constexpr (projected) visit("shortcut.", shortcut_);
  }
  static std::string prefixed(const char* prefix, std::string_view local) {
    std::string name = prefix;
    name.append(local);
    return name;
  }

  Block block_;
  [[no_unique_address]] Shortcut shortcut_;
  Tensor<T, Device> output_;
  Tensor<T, Device> input_grad_;
};

/// @brief `Residual{block}`: the identity shortcut.
template <class Block>
Residual(Block) -> Residual<Block>;
/// @brief `Residual{block, shortcut}`: a shortcut layer.
template <class Block, class Shortcut>
Residual(Block, Shortcut) -> Residual<Block, Shortcut>;

}  // namespace mpx::nn
