// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief 2-D convolution on the CPU, channels-last (backend/conv2d_spec.hpp): on oneDNN's direct
/// convolutions where mpx is built with oneDNN (`MPX_HAS_ONEDNN`), else as patch gathers feeding
/// mpx's GEMM (conv2d_patches.hpp). Either way one numerics contract: operands in the compute type,
/// exact products, one fp32 sum per output element, rounded once into the storage type.
///
/// On oneDNN (onednn_conv2d.hpp), a pass is cut into calls of a fixed number of images
/// (`conv2d_images_per_call`, from the geometry alone), each call one single-threaded primitive, the
/// calls spread over the threads: the bits do not depend on the thread count. Operands go to oneDNN
/// as fp32 (fp32 compute as they are; TF32 rounded, fp16, FP8 and bf16 widened, all exactly) or, for
/// bf16 on a CPU with bf16 dot products and values those keep exact (bf16_exactness.hpp), as bf16.
/// The weight gradient is one fp32 partial per call (at most 16 calls), summed in call order. fp64,
/// and a geometry oneDNN has only reference code for, take the patch gathers.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "mpx/backend/conv2d_spec.hpp"
#include "mpx/backend/cpu/conv2d_patches.hpp"
#include "mpx/backend/cpu/gemm.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
#include "mpx/backend/cpu/onednn_conv2d.hpp"
#endif

namespace mpx::cpu {

/// @brief Images per oneDNN convolution call: about 2^17 activation elements in and out, at least
/// one. A function of the geometry alone, so the bits do not depend on the number of threads, and
/// small enough that a batch makes enough calls to keep the threads busy.
[[nodiscard]] inline std::int64_t conv2d_images_per_call(const Conv2dGeometry& g) {
  const Size2d out = g.output();
  const std::int64_t per_image = g.input.h * g.input.w * g.in_channels + out.h * out.w * g.out_channels;
  return std::clamp<std::int64_t>((std::int64_t{1} << 17) / std::max<std::int64_t>(1, per_image), 1,
                                  std::max<std::int64_t>(1, g.batch));
}

#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
namespace detail {

// Scratch slots (gemm.hpp's `ScratchBuffer`: per thread, kept between calls, as fresh large blocks
// are page-faulted in on every call): the calling thread's whole-tensor buffer (the widened weights,
// or the weight gradient's partials), and each call's two activation blocks on the thread running it
// (converted there, so they are still in its cache when oneDNN reads them).
inline constexpr int whole_tensor_slot = 0, first_block_slot = 1, second_block_slot = 2;

// Whether oneDNN reads an operand as it is: fp32 compute on fp32 storage, or bf16 taken natively;
// the rest is widened to fp32 in the compute type first (TF32 rounded, fp16 and FP8 exactly).
template <NumericTag Compute, class T>
constexpr bool read_as_is(bool native_bf16) {
  return native_bf16 || (std::is_same_v<T, float> && owns_storage_v<Compute>);
}

// A whole operand (the weights, a bias) as oneDNN reads it: the tensor's own values, or widened into
// `widened` (the calling thread's whole-tensor slot; a bias, small, into a tensor of its own).
template <NumericTag Compute, class T>
const void* whole_operand(const Tensor<T, Host>& tensor, bool native_bf16,
                          std::optional<ScratchBuffer<float>>* slot, Tensor<float, Host>* small) {
  if (read_as_is<Compute, T>(native_bf16)) return tensor.data();
  float* widened = slot != nullptr ? slot->emplace(whole_tensor_slot, tensor.numel()).data()
                                   : (*small = scratch<float>(tensor.numel())).data();
  widen_operand<Compute>(tensor.data(), widened, tensor.numel());
  return widened;
}

// Elements [first, first + count) of an activation (some images) as oneDNN reads them: in place, or
// widened into the running thread's scratch block `slot`, valid while `block` lives.
template <NumericTag Compute, class T>
const void* input_block(const T* data, std::int64_t first, std::int64_t count, bool native_bf16,
                        std::optional<ScratchBuffer<float>>& block, int slot) {
  if (read_as_is<Compute, T>(native_bf16)) return data + first;
  float* widened = block.emplace(slot, count).data();
  widen_range<Compute>(data + first, widened, 0, count);
  return widened;
}

// Where oneDNN writes elements [first, first + count) of an output: in place when it computes in the
// output's type (fp32, or bf16 taken natively), else the running thread's scratch block `slot`,
// rounded into place by `finish_output_block`.
template <class T>
void* output_block(T* data, std::int64_t first, std::int64_t count, bool native_bf16,
                   std::optional<ScratchBuffer<float>>& block, int slot) {
  if (native_bf16 || std::is_same_v<T, float>) return data + first;
  return block.emplace(slot, count).data();
}

template <class T>
void finish_output_block(const std::optional<ScratchBuffer<float>>& block, T* data, std::int64_t first,
                         std::int64_t count) {
  if (block) round_range(block->data(), data + first, 0, count);
}

// Runs `call(primitive, context, first image, images)` for each call of `per_call` images of the
// batch, the calls in parallel, each on one thread; false (and nothing run) when oneDNN has only
// reference code for the pass, which the calling thread finds out first.
template <class Call>
bool run_conv2d_calls(onednn::Conv2dPass pass, bool native_bf16, bool bias, const Conv2dGeometry& g,
                      std::int64_t per_call, const Call& call) {
  const std::int64_t calls = (g.batch + per_call - 1) / per_call;
  const std::int64_t last = g.batch - (calls - 1) * per_call;
  bool supported = true;
  on_one_thread([&] {
    for (const std::int64_t images : {per_call, last}) {
      supported =
          supported && onednn::conv2d_primitive({pass, native_bf16, bias, g, images}).first->supported();
    }
  });
  if (!supported) return false;
  run_tasks(calls, [&](std::int64_t index) {
    const std::int64_t first = index * per_call;
    const std::int64_t images = std::min(per_call, g.batch - first);
    auto [primitive, context] = onednn::conv2d_primitive({pass, native_bf16, bias, g, images});
    call(*primitive, *context, first, images);
  });
  return true;
}

template <NumericTag Compute, class T>
bool conv2d_forward_onednn(const Tensor<T, Host>& x, const Tensor<T, Host>& weight,
                           const Tensor<T, Host>* bias, Tensor<T, Host>& y, const Conv2dGeometry& g) {
  if constexpr (!std::is_same_v<accumulate_t<Compute>, float>) {
    return false;
  } else {
    const bool native =
        native_bf16_products<Compute>(x.data(), x.numel(), weight.data(), weight.numel(), 1.0f);
    std::optional<ScratchBuffer<float>> weight_slot;
    Tensor<float, Host> small;
    const void* w = whole_operand<Compute>(weight, native, &weight_slot, nullptr);
    // The bias is added in the accumulate type, not rounded into the compute type (TF32).
    const void* b = bias != nullptr ? whole_operand<tag_of_t<T>>(*bias, native, nullptr, &small) : nullptr;
    const std::int64_t in_image = g.input.h * g.input.w * g.in_channels;
    const std::int64_t out_image = y.numel() / g.batch;
    return run_conv2d_calls(
        onednn::Conv2dPass::forward, native, bias != nullptr, g, conv2d_images_per_call(g),
        [&](onednn::Conv2dPrimitive& primitive, onednn::ThreadContext& context, std::int64_t first,
            std::int64_t images) {
          std::optional<ScratchBuffer<float>> in, out;
          const void* xb = input_block<Compute>(x.data(), first * in_image, images * in_image, native, in,
                                                first_block_slot);
          void* yb =
              output_block(y.data(), first * out_image, images * out_image, native, out, second_block_slot);
          primitive.forward(context, xb, w, b, yb);
          finish_output_block(out, y.data(), first * out_image, images * out_image);
        });
  }
}

template <NumericTag Compute, class T>
bool conv2d_backward_input_onednn(const Tensor<T, Host>& dy, const Tensor<T, Host>& weight,
                                  Tensor<T, Host>& dx, const Conv2dGeometry& g) {
  if constexpr (!std::is_same_v<accumulate_t<Compute>, float>) {
    return false;
  } else {
    const bool native =
        native_bf16_products<Compute>(dy.data(), dy.numel(), weight.data(), weight.numel(), 1.0f);
    std::optional<ScratchBuffer<float>> weight_slot;
    const void* w = whole_operand<Compute>(weight, native, &weight_slot, nullptr);
    const std::int64_t in_image = g.input.h * g.input.w * g.in_channels;
    const std::int64_t out_image = dy.numel() / g.batch;
    return run_conv2d_calls(onednn::Conv2dPass::backward_data, native, false, g, conv2d_images_per_call(g),
                            [&](onednn::Conv2dPrimitive& primitive, onednn::ThreadContext& context,
                                std::int64_t first, std::int64_t images) {
                              std::optional<ScratchBuffer<float>> in, out;
                              const void* dyb =
                                  input_block<Compute>(dy.data(), first * out_image, images * out_image,
                                                       native, in, first_block_slot);
                              void* dxb = output_block(dx.data(), first * in_image, images * in_image, native,
                                                       out, second_block_slot);
                              primitive.backward_data(context, dyb, w, dxb);
                              finish_output_block(out, dx.data(), first * in_image, images * in_image);
                            });
  }
}

template <NumericTag Compute, class T>
bool conv2d_backward_weight_onednn(const Tensor<T, Host>& x, const Tensor<T, Host>& dy,
                                   Tensor<float, Host>& dweight, bool overwrite, const Conv2dGeometry& g) {
  if constexpr (!std::is_same_v<accumulate_t<Compute>, float>) {
    return false;
  } else {
    const bool native = native_bf16_products<Compute>(x.data(), x.numel(), dy.data(), dy.numel(), 1.0f);
    // At most 16 calls, so at most 16 partial gradients to keep.
    constexpr std::int64_t most_partials = 16;
    const std::int64_t per_call =
        std::max(conv2d_images_per_call(g), (g.batch + most_partials - 1) / most_partials);
    const std::int64_t calls = (g.batch + per_call - 1) / per_call;
    const std::int64_t weights = dweight.numel();
    const ScratchBuffer<float> partials(whole_tensor_slot, calls * weights);
    const std::int64_t in_image = g.input.h * g.input.w * g.in_channels;
    const std::int64_t out_image = dy.numel() / g.batch;
    const bool ran = run_conv2d_calls(
        onednn::Conv2dPass::backward_weights, native, false, g, per_call,
        [&](onednn::Conv2dPrimitive& primitive, onednn::ThreadContext& context, std::int64_t first,
            std::int64_t images) {
          std::optional<ScratchBuffer<float>> x_block, dy_block;
          const void* xb = input_block<Compute>(x.data(), first * in_image, images * in_image, native,
                                                x_block, first_block_slot);
          const void* dyb = input_block<Compute>(dy.data(), first * out_image, images * out_image, native,
                                                 dy_block, second_block_slot);
          primitive.backward_weights(context, xb, dyb, partials.data() + first / per_call * weights);
        });
    if (!ran) return false;
    // dweight (+)= the partials' sum, in call order (the accumulated gradient is then the
    // micro-batches' own sums added, as with the GEMM's C).
    float* out = dweight.data();
    const float* p = partials.data();
    parallel_for_chunks(weights, parallel_grain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        float sum = p[i];
        for (std::int64_t call = 1; call < calls; ++call) sum += p[call * weights + i];
        out[i] = overwrite ? sum : out[i] + sum;
      }
    });
    return true;
  }
}

}  // namespace detail
#endif

/// @brief Frees the oneDNN convolution primitives (and their scratchpad) the calling thread keeps
/// between calls, one per pass and layer shape; nothing in a build without oneDNN. OpenMP's worker
/// threads keep theirs until they exit.
inline void release_conv2d_primitives() noexcept {
#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
  detail::onednn::release_conv2d_primitives();
#endif
}

/// @brief y = conv2d(x, weight) (+ bias), channels-last, in the `Compute` precision with one fp32
/// (accumulate-type) sum per output, rounded once into y; bit for bit the same on any thread count.
/// @param x [N, H, W, C]; @param weight [O, KH, KW, C / groups]; @param bias [O] or null;
/// @param y [N, OH, OW, O], written; @param geometry the sizes, the kernel and how it moves.
/// @throws mpx::shape_error naming the tensor and both shapes when one does not fit `geometry`.
template <NumericTag Compute, class T = storage_t<Compute>>
void conv2d_forward(const Tensor<T, Host>& x, const Tensor<T, Host>& weight, const Tensor<T, Host>* bias,
                    Tensor<T, Host>& y, const Conv2dGeometry& geometry) {
  constexpr const char* where = "mpx::cpu::conv2d_forward";
  detail::check_conv2d_tensors(where, geometry, x.shape(), weight.shape(), y.shape());
  if (bias != nullptr) require_shape(where, "bias", bias->shape(), Shape{geometry.out_channels});
  if (y.numel() == 0) return;
#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
  if (detail::conv2d_forward_onednn<Compute>(x, weight, bias, y, geometry)) return;
#endif
  conv2d_forward_by_patches<Compute>(x, weight, bias, y, geometry);
}

/// @brief dx from dy (both channels-last) and the weight: each element one accumulate-type sum over
/// every (tap, output channel) that read it, rounded once into dx.
/// @param dy [N, OH, OW, O]; @param weight [O, KH, KW, C / groups]; @param dx [N, H, W, C], written;
/// @param geometry the sizes, the kernel and how it moves.
template <NumericTag Compute, class T = storage_t<Compute>>
void conv2d_backward_input(const Tensor<T, Host>& dy, const Tensor<T, Host>& weight, Tensor<T, Host>& dx,
                           const Conv2dGeometry& geometry) {
  detail::check_conv2d_tensors("mpx::cpu::conv2d_backward_input", geometry, dx.shape(), weight.shape(),
                               dy.shape());
  if (dx.numel() == 0) return;
#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
  if (detail::conv2d_backward_input_onednn<Compute>(dy, weight, dx, geometry)) return;
#endif
  conv2d_backward_input_by_patches<Compute>(dy, weight, dx, geometry);
}

/// @brief The weight gradient in the accumulate type, dweight = dy^T patches(x) per group, added to
/// its contents (or written, when `overwrite`: the first micro-batch after `zero_grad`).
/// @param x [N, H, W, C]; @param dy [N, OH, OW, O]; @param dweight [O, KH, KW, C / groups];
/// @param overwrite write instead of add; @param geometry the sizes, the kernel and how it moves.
template <NumericTag Compute, class T = storage_t<Compute>, class Acc = accumulate_t<Compute>>
void conv2d_backward_weight(const Tensor<T, Host>& x, const Tensor<T, Host>& dy, Tensor<Acc, Host>& dweight,
                            bool overwrite, const Conv2dGeometry& geometry) {
  detail::check_conv2d_tensors("mpx::cpu::conv2d_backward_weight", geometry, x.shape(), dweight.shape(),
                               dy.shape());
#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
  if constexpr (std::is_same_v<Acc, float>) {
    if (geometry.batch > 0 &&
        detail::conv2d_backward_weight_onednn<Compute>(x, dy, dweight, overwrite, geometry))
      return;
  }
#endif
  conv2d_backward_weight_by_patches<Compute>(x, dy, dweight, overwrite, geometry);
}

/// @brief The bias gradient in the accumulate type: dbias[o] = the sum of dy[..., o] over every
/// position of every image, added to its contents (or written, when `overwrite`).
/// @param dy [N, OH, OW, O] (any rank: the last dimension is the channel); @param dbias [O];
/// @param overwrite write instead of add.
template <FloatingElement T, class Acc = accumulate_t<T>>
void conv2d_backward_bias(const Tensor<T, Host>& dy, Tensor<Acc, Host>& dbias, bool overwrite) {
  const std::int64_t channels = dy.shape().cols();
  require_shape("mpx::cpu::conv2d_backward_bias", "bias gradient", dbias.shape(), Shape{channels});
  // Row by row, vector code over the channels: the order of the sums does not depend on threads.
  std::vector<Acc> sums(static_cast<std::size_t>(channels), Acc(0));
  for (std::int64_t r = 0; r < dy.shape().rows(); ++r) {
    const T* row = dy.data() + r * channels;
    MPX_DETAIL_OMP_SIMD
    for (std::int64_t o = 0; o < channels; ++o) sums[static_cast<std::size_t>(o)] += static_cast<Acc>(row[o]);
  }
  Acc* out = dbias.data();
  for (std::int64_t o = 0; o < channels; ++o) {
    out[o] = (overwrite ? Acc(0) : out[o]) + sums[static_cast<std::size_t>(o)];
  }
}

}  // namespace mpx::cpu
