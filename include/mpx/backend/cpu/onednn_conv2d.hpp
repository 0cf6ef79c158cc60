// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief One convolution pass over a few images on oneDNN's direct convolution primitives, on the
/// calling thread: forward (y = conv(x, W) + b), backward data (dx) and backward weights (dW, fp32),
/// with fp32 or bf16 operands, fp32 sums. Only with `MPX_HAS_ONEDNN` (onednn_runtime.hpp); conv2d.hpp
/// cuts a batch into calls, widens operands and decides when bf16 dot products may be used.
///
/// Activations are mpx's channels-last tensors as they are (`nhwc`); weights are mpx's
/// [O, KH, KW, C / groups] (`ohwi`, `gohwi` with groups), reordered on each call into the blocked
/// layout the primitive chose (the plain one makes oneDNN fall back to its reference code, about a
/// thousand times slower), and weight gradients reordered back. A geometry oneDNN has no code for,
/// or only its reference code, is reported unsupported (`Conv2dPrimitive::supported`), and the
/// caller takes mpx's patch gathers instead.

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "mpx/backend/conv2d_spec.hpp"
#include "mpx/backend/cpu/onednn_runtime.hpp"

namespace mpx::cpu::detail::onednn {

/// @brief Which of a convolution's three passes a primitive computes.
enum class Conv2dPass : std::uint8_t { forward, backward_data, backward_weights };

/// @brief What a primitive is made for: the pass, the operand type, a bias (forward), the number of
/// images of one call and the rest of the geometry.
struct Conv2dKey {
  Conv2dPass pass = Conv2dPass::forward;
  bool bf16 = false;  ///< bf16 operands (and bf16 y or dx); fp32 otherwise. Sums are fp32 either way.
  bool bias = false;
  std::int64_t images = 0;
  // H, W, C, O, groups, KH, KW, stride h/w, padding h/w, dilation h/w.
  std::array<std::int64_t, 13> geometry{};

  Conv2dKey(Conv2dPass pass_, bool bf16_, bool bias_, const Conv2dGeometry& g, std::int64_t images_)
      : pass(pass_),
        bf16(bf16_),
        bias(bias_),
        images(images_),
        geometry{g.input.h,          g.input.w,          g.in_channels,      g.out_channels,
                 g.groups,           g.window.kernel.h,  g.window.kernel.w,  g.window.stride.h,
                 g.window.stride.w,  g.window.padding.h, g.window.padding.w, g.window.dilation.h,
                 g.window.dilation.w} {}
  auto operator<=>(const Conv2dKey&) const = default;
};

/// @brief A convolution pass for one key on one thread: the primitive, the weight reorder its
/// layout needs and the memory objects, made once and run on each call.
class Conv2dPrimitive {
 public:
  Conv2dPrimitive(const Conv2dKey& key, const ThreadContext& context) {
    const auto [h, w, c, o, groups, kh, kw, sh, sw, ph, pw, dh, dw] = key.geometry;
    const std::int64_t oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
    const std::int64_t ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
    const dnnl_data_type_t operand = key.bf16 ? dnnl_bf16 : dnnl_f32;
    const dnnl_data_type_t weights_type = key.pass == Conv2dPass::backward_weights ? dnnl_f32 : operand;

    dnnl_memory_desc_t source, destination, weights_any, weights_plain, bias;
    const dnnl_dims_t source_dims = {key.images, c, h, w}, destination_dims = {key.images, o, oh, ow};
    check(dnnl_memory_desc_init_by_tag(&source, 4, source_dims, operand, dnnl_nhwc),
          "dnnl_memory_desc_init_by_tag");
    check(dnnl_memory_desc_init_by_tag(&destination, 4, destination_dims, operand, dnnl_nhwc),
          "dnnl_memory_desc_init_by_tag");
    const dnnl_dims_t plain_dims = {o, c, kh, kw}, grouped_dims = {groups, o / groups, c / groups, kh, kw};
    const int weight_rank = groups == 1 ? 4 : 5;
    const auto* weight_dims = groups == 1 ? plain_dims : grouped_dims;
    check(dnnl_memory_desc_init_by_tag(&weights_any, weight_rank, weight_dims, weights_type,
                                       dnnl_format_tag_any),
          "dnnl_memory_desc_init_by_tag");
    check(dnnl_memory_desc_init_by_tag(&weights_plain, weight_rank, weight_dims, weights_type,
                                       groups == 1 ? dnnl_ohwi : dnnl_gohwi),
          "dnnl_memory_desc_init_by_tag");
    const dnnl_dims_t bias_dims = {o};
    check(dnnl_memory_desc_init_by_tag(&bias, 1, bias_dims, operand, dnnl_a), "dnnl_memory_desc_init_by_tag");

    // oneDNN's dilation counts the skipped taps (mpx's minus one); the right padding equal to the
    // left gives mpx's (PyTorch's) output size, floor((H + 2p - span) / stride) + 1, in its check.
    const dnnl_dims_t strides = {sh, sw}, dilations = {dh - 1, dw - 1}, padding = {ph, pw};

    // The forward descriptor: the primitive of the forward pass, the hint of the backward ones.
    dnnl_memory_desc_t forward_weights = weights_any;
    forward_weights.data_type = operand;
    dnnl_convolution_desc_t forward_op;
    check(dnnl_dilated_convolution_forward_desc_init(
              &forward_op, dnnl_forward_training, dnnl_convolution_direct, &source, &forward_weights,
              key.bias && key.pass == Conv2dPass::forward ? &bias : nullptr, &destination, strides, dilations,
              padding, padding),
          "dnnl_dilated_convolution_forward_desc_init");
    DescriptorHandle forward = primitive_descriptor(&forward_op, context);
    if (forward == nullptr) return;  // no implementation: unsupported, the caller takes the patches
    DescriptorHandle descriptor{nullptr, &dnnl_primitive_desc_destroy};
    dnnl_convolution_desc_t op;
    switch (key.pass) {
      case Conv2dPass::forward: descriptor = std::move(forward); break;
      case Conv2dPass::backward_data:
        check(dnnl_dilated_convolution_backward_data_desc_init(&op, dnnl_convolution_direct, &source,
                                                               &weights_any, &destination, strides, dilations,
                                                               padding, padding),
              "dnnl_dilated_convolution_backward_data_desc_init");
        descriptor = primitive_descriptor(&op, context, forward.get());
        break;
      case Conv2dPass::backward_weights:
        check(dnnl_dilated_convolution_backward_weights_desc_init(&op, dnnl_convolution_direct, &source,
                                                                  &weights_any, nullptr, &destination,
                                                                  strides, dilations, padding, padding),
              "dnnl_dilated_convolution_backward_weights_desc_init");
        descriptor = primitive_descriptor(&op, context, forward.get());
        break;
    }
    if (descriptor == nullptr) return;
    const std::string_view implementation = implementation_name(descriptor.get());
    supported_ = implementation.substr(0, 3) != "ref";
    if (!supported_) return;
    primitive_ = Primitive(descriptor.get(), context);

    const dnnl_memory_desc_t* chosen = dnnl_primitive_desc_query_md(
        descriptor.get(),
        key.pass == Conv2dPass::backward_weights ? dnnl_query_diff_weights_md : dnnl_query_weights_md, 0);
    if (dnnl_memory_desc_equal(chosen, &weights_plain) == 0) {
      // Forward and backward data read the weights in the chosen layout; backward weights writes
      // the gradient in it, reordered to mpx's after.
      const bool to_chosen = key.pass != Conv2dPass::backward_weights;
      const DescriptorHandle reorder = to_chosen ? reorder_descriptor(&weights_plain, chosen, context)
                                                 : reorder_descriptor(chosen, &weights_plain, context);
      reorder_ = Primitive(reorder.get(), context);
      chosen_weights_ = unbound_memory(chosen, context.engine());
      chosen_buffer_.resize(dnnl_memory_desc_get_size(chosen));
    }
    source_ = unbound_memory(&source, context.engine());
    destination_ = unbound_memory(&destination, context.engine());
    weights_ = unbound_memory(&weights_plain, context.engine());
    if (key.bias && key.pass == Conv2dPass::forward) bias_ = unbound_memory(&bias, context.engine());
  }

  /// @brief Whether oneDNN has more than its reference code for this key; when not, nothing else of
  /// this object may be used.
  [[nodiscard]] bool supported() const noexcept { return supported_; }

  /// @brief y = conv(x, weights) (+ bias), for the key's images.
  void forward(ThreadContext& context, const void* x, const void* weights, const void* bias, void* y) {
    attach(source_, x);
    attach(destination_, y);
    const dnnl_memory_t w = weights_for_reading(context, weights);
    if (bias_ != nullptr) {
      attach(bias_, bias);
      primitive_.run(context, {{DNNL_ARG_SRC, source_.get()},
                               {DNNL_ARG_WEIGHTS, w},
                               {DNNL_ARG_BIAS, bias_.get()},
                               {DNNL_ARG_DST, destination_.get()}});
    } else {
      primitive_.run(
          context,
          {{DNNL_ARG_SRC, source_.get()}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, destination_.get()}});
    }
  }

  /// @brief dx = the input gradient of dy through the weights, for the key's images.
  void backward_data(ThreadContext& context, const void* dy, const void* weights, void* dx) {
    attach(destination_, dy);
    attach(source_, dx);
    const dnnl_memory_t w = weights_for_reading(context, weights);
    primitive_.run(
        context,
        {{DNNL_ARG_DIFF_DST, destination_.get()}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, source_.get()}});
  }

  /// @brief dweights (fp32, mpx's layout) = the key's images' weight gradient, overwritten.
  void backward_weights(ThreadContext& context, const void* x, const void* dy, float* dweights) {
    attach(source_, x);
    attach(destination_, dy);
    attach(weights_, dweights);
    const dnnl_memory_t written = reorder_ ? chosen_weights_.get() : weights_.get();
    if (reorder_) attach(chosen_weights_, chosen_buffer_.data());
    primitive_.run(context, {{DNNL_ARG_SRC, source_.get()},
                             {DNNL_ARG_DIFF_DST, destination_.get()},
                             {DNNL_ARG_DIFF_WEIGHTS, written}});
    if (reorder_)
      reorder_.run(context, {{DNNL_ARG_FROM, chosen_weights_.get()}, {DNNL_ARG_TO, weights_.get()}});
  }

 private:
  // The weights in the layout the primitive reads: mpx's own, or reordered into the thread's buffer.
  dnnl_memory_t weights_for_reading(ThreadContext& context, const void* weights) {
    attach(weights_, weights);
    if (!reorder_) return weights_.get();
    attach(chosen_weights_, chosen_buffer_.data());
    reorder_.run(context, {{DNNL_ARG_FROM, weights_.get()}, {DNNL_ARG_TO, chosen_weights_.get()}});
    return chosen_weights_.get();
  }

  bool supported_ = false;
  Primitive primitive_, reorder_;
  MemoryHandle source_{nullptr, &dnnl_memory_destroy}, destination_{nullptr, &dnnl_memory_destroy},
      weights_{nullptr, &dnnl_memory_destroy}, bias_{nullptr, &dnnl_memory_destroy},
      chosen_weights_{nullptr, &dnnl_memory_destroy};
  std::vector<std::uint8_t> chosen_buffer_;
};

/// A thread's convolution primitives: one per key (a training step's few layer shapes, times two
/// for the last call's smaller image count).
using ThreadConvolutions = ThreadPrimitives<Conv2dKey, Conv2dPrimitive>;

/// @brief The calling thread's primitive for `key` (made on first use) and its context.
inline std::pair<Conv2dPrimitive*, ThreadContext*> conv2d_primitive(const Conv2dKey& key) {
  return ThreadConvolutions::of_this_thread(key);
}

/// Frees the calling thread's convolution primitives, engine, stream and scratchpad.
inline void release_conv2d_primitives() noexcept {
  ThreadConvolutions::release();
}

}  // namespace mpx::cpu::detail::onednn
