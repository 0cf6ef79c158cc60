// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::Fp8Scales`: the scales of one layer's FP8 GEMM operands (its input, its weight and the
/// gradient of its output) under an FP8 precision's recipe, and the casts that use them.
///
/// The state lives in the memory of the layer's device and is updated there, by the casts and by
/// `update()` at the end of each step, with no host wait. It is the layer's buffers: saved and loaded
/// with the weights, so that a resumed run casts with the scales the interrupted one had.

#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/fp8_statistics_spec.hpp"
#include "mpx/config.hpp"
#include "mpx/numeric/encoded.hpp"
#include "mpx/policy/fp8_precision.hpp"
#include "mpx/policy/fp8_scaling.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

/// @brief A layer's FP8 tensors, in the order of their scales (Transformer Engine's: forward input,
/// weight, then the output's gradient).
enum class Fp8Tensor : int {
  Input = 0,           ///< the layer's input, in the forward format
  Weight = 1,          ///< its weight, in the forward format
  OutputGradient = 2,  ///< the gradient of its output, in the backward format
};

namespace detail {
// scale = scale_inverse = 1 for each of `count` tensors (the state before any amax is known).
struct ResetScales {
  int count;
  MPX_HOST_DEVICE void operator()(float* scale, float* scale_inverse) const {
    for (int i = 0; i < count; ++i) scale[i] = scale_inverse[i] = 1.0f;
  }
};

struct ClearStatistics {
  int count;
  MPX_HOST_DEVICE void operator()(double* statistics) const {
    for (int i = 0; i < count; ++i) statistics[i] = 0.0;
  }
};

struct ClearAmax {
  MPX_HOST_DEVICE void operator()(float* amax) const { *amax = 0.0f; }
};

// Current scaling: one tensor's scale from the amax just measured (mpx::current_scale).
struct CurrentScaleFromAmax {
  float fp8_max;
  bool power_of_two;
  float epsilon;
  MPX_HOST_DEVICE void operator()(const float* amax, float* scale, float* scale_inverse) const {
    *scale = current_scale(*amax, fp8_max, power_of_two, epsilon);
    *scale_inverse = 1.0f / *scale;
  }
};

// Delayed scaling: one tensor's history rolled and its next scale (mpx::update_delayed_scale).
struct DelayedScaleUpdate {
  std::size_t length, stride;
  AmaxAlgorithm algorithm;
  float scaled_max;
  MPX_HOST_DEVICE void operator()(float* history, float* scale, float* scale_inverse) const {
    update_delayed_scale(history, length, stride, algorithm, scaled_max, *scale, *scale_inverse);
  }
};
}  // namespace detail

/// @brief The scales of one layer's three FP8 tensors under precision `P`'s recipe.
///
/// - `DelayedScaling<History, Algorithm, Margin>`: each cast multiplies by the tensor's current scale
///   and records the tensor's amax in row 0 of its amax history (the largest over the step's
///   micro-batches); `update()`, after the step's backward, rolls each history and computes the next
///   scale from it (mpx::update_delayed_scale). Buffers: "fp8_scale" [3], "fp8_scale_inverse" [3],
///   "fp8_amax_history" [History, 3] (TE's layout: a row per step, newest first).
/// - `CurrentScaling<...>`: each cast first measures the tensor's amax ("fp8_amax" [3] keeps the last
///   one) and computes its scale from it (mpx::current_scale); `update()` does nothing.
/// Scales start at 1.
template <Fp8PrecisionPolicy P, class Device = Host>
class Fp8Scales {
  using Recipe = typename P::recipe;

 public:
  /// @brief Whether the recipe is delayed scaling (else current scaling).
  static constexpr bool delayed = mpx::detail::is_delayed_scaling<Recipe>::value;
  /// @brief Tensors with a scale: input, weight, output gradient.
  static constexpr int tensors = 3;

  /// @brief Scales of 1 and amaxes of 0 (tensors start zero-filled).
  Fp8Scales() : scale_(Shape{tensors}), scale_inverse_(Shape{tensors}), amax_(amax_shape()) {
    Backend<Device>::single_thread(detail::ResetScales{tensors}, scale_.data(), scale_inverse_.data());
  }

  /// @brief out = `Format`(x * scale of `which`), saturating, with the amax recorded as the recipe says
  /// (under delayed scaling only when `record`: an evaluation forward leaves the history alone).
  template <NumericTag Format, FloatingElement S>
  void cast(Fp8Tensor which, const Tensor<S, Device>& x, Tensor<Encoded<Format>, Device>& out,
            bool record = true) {
    cast_by<Format>(which, x, record, [&](const float* scale, float* amax) {
      Backend<Device>::template cast_scaled<Format>(x, scale, out, amax);
    });
  }

  /// @brief `cast`, with the codes' transpose written in the same pass: x viewed as a [rows, cols]
  /// matrix (cols its last dimension), out_transposed [cols, rows]. For a backend whose FP8 GEMMs
  /// read both operands along K (`Backend<Device>::fp8_gemm_needs_k_major_operands`: cuBLASLt's), where
  /// an operand one GEMM reads along its rows another reads along its columns.
  template <NumericTag Format, FloatingElement S>
  void cast(Fp8Tensor which, const Tensor<S, Device>& x, Tensor<Encoded<Format>, Device>& out,
            Tensor<Encoded<Format>, Device>& out_transposed, bool record = true) {
    cast_by<Format>(which, x, record, [&](const float* scale, float* amax) {
      Backend<Device>::template cast_transpose_scaled<Format>(x, scale, out, out_transposed, amax);
    });
  }

  /// @brief Whether training casts also count what they do to their tensors (`statistics()`); off by
  /// default, as the count is a second pass over each tensor. Turning it on or off clears the counts.
  void collect_statistics(bool on) {
    statistics_ =
        on ? Tensor<double, Device>(Shape{tensors, fp8_statistics_fields}) : Tensor<double, Device>();
  }
  /// @brief Whether `collect_statistics(true)` is in effect.
  [[nodiscard]] bool collects_statistics() const noexcept { return !statistics_.empty(); }
  /// @brief [3, `fp8_statistics_fields`] in the device's memory: per tensor (input, weight, output
  /// gradient), what the training casts since the last `clear_statistics()` did to it, in
  /// `Fp8StatisticsField` order (backend/fp8_statistics_spec.hpp). Empty unless collecting.
  [[nodiscard]] const Tensor<double, Device>& statistics() const noexcept { return statistics_; }
  /// @brief Sets the counts to zero (on the device, queued like the casts).
  void clear_statistics() {
    if (!statistics_.empty())
      Backend<Device>::single_thread(detail::ClearStatistics{tensors * fp8_statistics_fields},
                                     statistics_.data());
  }

  /// @brief The inverse scale of `which`, in the device's memory: what its GEMMs multiply by.
  [[nodiscard]] const float* scale_inverse(Fp8Tensor which) const noexcept {
    return scale_inverse_.data() + static_cast<int>(which);
  }

  /// @brief After a step's backward (whether or not the optimizer applies the step, as Transformer
  /// Engine updates its scales after every backward): under delayed scaling, each tensor's history
  /// rolls and its next scale is computed; nothing under current scaling.
  void update() {
    if constexpr (delayed) {
      for (int i = 0; i < tensors; ++i) {
        const float largest = i == static_cast<int>(Fp8Tensor::OutputGradient)
                                  ? scaled_max<typename P::backward_format>(Recipe::margin)
                                  : scaled_max<typename P::forward_format>(Recipe::margin);
        Backend<Device>::single_thread(
            detail::DelayedScaleUpdate{Recipe::history_length, tensors, Recipe::amax_algorithm, largest},
            amax_.data() + i, scale_.data() + i, scale_inverse_.data() + i);
      }
    }
  }

  /// @brief Calls `f(name, tensor)` on the state: "fp8_scale", "fp8_scale_inverse", and
  /// "fp8_amax_history" (delayed) or "fp8_amax" (current).
  template <class F>
  void for_each_buffer(F&& f) {
    f(std::string_view("fp8_scale"), scale_);
    f(std::string_view("fp8_scale_inverse"), scale_inverse_);
    f(std::string_view(delayed ? "fp8_amax_history" : "fp8_amax"), amax_);
  }

  /// @brief Under delayed scaling, this step's amaxes (row 0 of the history: input, weight, output
  /// gradient), in the device's memory: what data parallelism replaces with their maximum over
  /// processes before `update()`. Empty under current scaling, whose scales come from each
  /// process's own tensors at the cast.
  [[nodiscard]] std::span<float> step_amaxes() noexcept {
    if constexpr (delayed) {
      return {amax_.data(), static_cast<std::size_t>(tensors)};
    } else {
      return {};
    }
  }

  /// @brief The scales [3], in the device's memory.
  [[nodiscard]] const Tensor<float, Device>& scales() const noexcept { return scale_; }
  /// @brief The amax history [History, 3] (delayed) or the last amaxes [3] (current).
  [[nodiscard]] const Tensor<float, Device>& amaxes() const noexcept { return amax_; }

 private:
  // The recipe around one cast: `write_codes(scale, amax)` casts x with the scale in device memory
  // and accumulates x's amax into `amax` unless it is null. Delayed scaling casts with the current
  // scale, recording the amax into history row 0 when `record`; current scaling first measures the
  // amax and computes the scale from it. With statistics on, a training cast also counts.
  template <NumericTag Format, FloatingElement S, class WriteCodes>
  void cast_by(Fp8Tensor which, const Tensor<S, Device>& x, bool record, const WriteCodes& write_codes) {
    const int i = static_cast<int>(which);
    float* amax = amax_.data() + i;  // row 0 of the history under delayed scaling
    if constexpr (delayed) {
      write_codes(scale_.data() + i, record ? amax : nullptr);
    } else {
      Backend<Device>::single_thread(detail::ClearAmax{}, amax);
      Backend<Device>::accumulate_amax(x, amax);
      Backend<Device>::single_thread(
          detail::CurrentScaleFromAmax{numeric_traits<Format>::max_finite, Recipe::power_of_two_scales,
                                       Recipe::amax_epsilon},
          static_cast<const float*>(amax), scale_.data() + i, scale_inverse_.data() + i);
      write_codes(scale_.data() + i, nullptr);
    }
    if (record && !statistics_.empty()) {
      Backend<Device>::template accumulate_fp8_statistics<Format>(
          x, scale_.data() + i, statistics_.data() + i * fp8_statistics_fields);
    }
  }

  static Shape amax_shape() {
    if constexpr (delayed) {
      return Shape{static_cast<std::int64_t>(Recipe::history_length), tensors};
    } else {
      return Shape{tensors};
    }
  }

  Tensor<float, Device> scale_;
  Tensor<float, Device> scale_inverse_;
  Tensor<float, Device> amax_;         // the history under delayed scaling
  Tensor<double, Device> statistics_;  // empty unless collecting statistics
};

}  // namespace mpx::nn
