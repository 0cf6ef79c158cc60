// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Loss-scaling policies (what protects fp16 gradients from underflow), the concept they
/// satisfy, `default_scaler_t<P>`, and the compile-time check that a policy suits a precision.

#include <cmath>
#include <concepts>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "mpx/error.hpp"
#include "mpx/numeric/tags.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx {

/// @brief PyTorch `torch.amp.GradScaler`'s algorithm: scale the loss, skip steps whose gradients
/// overflow and back the scale off, grow it after `growth_interval` clean steps.
struct DynamicLossScaling {
  /// @brief Policy name used in records and messages.
  static constexpr std::string_view name = "dynamic";
  /// @brief The loss is multiplied by a scale before backward.
  static constexpr bool scales_loss = true;
  /// @brief The scale changes during training.
  static constexpr bool is_dynamic = true;

  /// Runtime knobs. The first four and their defaults are GradScaler's; the rest are opt-in
  /// extensions that are inactive at their defaults. As in GradScaler, the scale is fp32 and the two
  /// factors are doubles: each update is `scale = float(double(scale) * factor)`, so a factor fp32
  /// cannot hold (0.3, 1.1, 0.9) gives torch's trajectory, not that of its nearest float.
  struct Options {
    float init_scale = 65536.0f;  ///< 2^16 (fp32, as GradScaler's `_scale` tensor)
    /// @brief Scale multiplier after `growth_interval` steps without overflow.
    double growth_factor = 2.0;
    /// @brief Scale multiplier after an overflow.
    double backoff_factor = 0.5;
    /// @brief Overflow-free steps before the scale grows.
    int growth_interval = 2000;
    float min_scale = 0.0f;                                    ///< floor after backoff (off: 0)
    float max_scale = std::numeric_limits<float>::infinity();  ///< ceiling after growth (off: inf)
    int hysteresis = 1;  ///< back off only after this many consecutive overflows (Apex; off: 1)

    /// @brief Throws `mpx::invalid_argument` naming the field and its exact value if a knob is
    /// unusable. Stricter than GradScaler (which asserts only growth_factor > 1 and backoff_factor
    /// < 1): a non-finite growth factor or a backoff factor <= 0 would destroy the scale.
    void validate() const {
      const auto fail = [](const char* field, auto value, const std::string& expected) {
        throw invalid_argument(detail::concat("mpx::DynamicLossScaling::Options: ", field, " = ",
                                              detail::exact_text(value), " is invalid; expected ", expected));
      };
      if (!(std::isfinite(init_scale) && init_scale > 0.0f))
        fail("init_scale", init_scale, "a finite value > 0");
      if (!(std::isfinite(growth_factor) && growth_factor > 1.0))
        fail("growth_factor", growth_factor, "a finite value > 1");
      if (!(backoff_factor > 0.0 && backoff_factor < 1.0))
        fail("backoff_factor", backoff_factor, "a value in (0, 1)");
      if (growth_interval < 1) fail("growth_interval", growth_interval, "an integer >= 1");
      if (!(min_scale >= 0.0f && min_scale <= init_scale))
        fail("min_scale", min_scale,
             detail::concat("0 <= min_scale <= init_scale (", detail::exact_text(init_scale), ")"));
      if (!(max_scale >= init_scale)) {
        fail("max_scale", max_scale,
             detail::concat("max_scale >= init_scale (", detail::exact_text(init_scale), ")"));
      }
      if (hysteresis < 1) fail("hysteresis", hysteresis, "an integer >= 1");
    }
  };
};

/// @brief A fixed loss scale: gradients are scaled and unscaled, overflowing steps are still
/// skipped, but the scale never changes.
struct StaticLossScaling {
  /// @brief Policy name used in records and messages.
  static constexpr std::string_view name = "static";
  /// @brief The loss is multiplied by a scale before backward.
  static constexpr bool scales_loss = true;
  /// @brief The scale never changes.
  static constexpr bool is_dynamic = false;

  /// @brief Knobs of the static policy.
  struct Options {
    /// @brief The fixed scale.
    float scale = 65536.0f;

    /// @brief Throws `mpx::invalid_argument` if the scale is not a finite positive number.
    void validate() const {
      if (!(std::isfinite(scale) && scale > 0.0f)) {
        throw invalid_argument(
            detail::concat("mpx::StaticLossScaling::Options: scale = ", detail::exact_text(scale),
                           " is invalid; expected a finite value > 0"));
      }
    }
  };
};

namespace detail {
// A knob of NoLossScaling::Options that does not exist: default-constructible, and a compile error,
// naming the fix, when given a value. The converting constructor is unconstrained on purpose: a
// constraint would make the whole braced initializer fail overload resolution (a page of
// candidates) instead of reaching this message.
struct NoScalerOption {
  NoScalerOption() = default;
  template <class Value>
  constexpr NoScalerOption(const Value&) {  // implicit, so that `.init_scale = 1024` reaches it
    static_assert(always_false<Value>,
                  "mpx: the scaler is mpx::NoLossScaling, which has no options (it is the default "
                  "scaler of bf16, tf32 and fp32 models, which need no loss scaling); to scale a bf16 "
                  "loss anyway write mpx::Trainer<Model, Loss, Optimizer, mpx::DynamicLossScaling> and "
                  "pass its options (or mpx::StaticLossScaling, whose one option is .scale)");
  }
};
}  // namespace detail

/// @brief No loss scaling: the scaler compiles away. Right for bf16, fp32 and tf32; for fp16 it must
/// be requested as `AllowFp16Underflow<NoLossScaling>`.
struct NoLossScaling {
  /// @brief Policy name used in records and messages.
  static constexpr std::string_view name = "none";
  /// @brief The loss is not scaled.
  static constexpr bool scales_loss = false;
  /// @brief The scale never changes.
  static constexpr bool is_dynamic = false;

  /// @brief No knobs. The members are placeholders named after the other policies' knobs, in their
  /// order, so that `{.scaler = {.init_scale = 1024}}` given to a trainer whose scaler is this one
  /// (the default for bf16, tf32 and fp32 models) fails with a message that names the fix, rather
  /// than as a failed overload resolution; they hold nothing and cannot be set. (They are not
  /// `[[no_unique_address]]`: nvcc rejects a kernel parameter with empty members, and these options
  /// are one.)
  struct Options {
    detail::NoScalerOption init_scale;       ///< not an option here
    detail::NoScalerOption growth_factor;    ///< not an option here
    detail::NoScalerOption backoff_factor;   ///< not an option here
    detail::NoScalerOption growth_interval;  ///< not an option here
    detail::NoScalerOption min_scale;        ///< not an option here
    detail::NoScalerOption max_scale;        ///< not an option here
    detail::NoScalerOption hysteresis;       ///< not an option here
    detail::NoScalerOption scale;            ///< not an option here

    /// @brief Nothing to check.
    void validate() const {}
  };
};

/// @brief Explicit opt-in to fp16 training without loss scaling, knowing that gradients below half of
/// fp16's smallest subnormal (2^-24) round to zero. Used to demonstrate why scaling exists.
template <class Policy>
struct AllowFp16Underflow : Policy {
  static_assert(std::is_same_v<Policy, NoLossScaling>,
                "mpx::AllowFp16Underflow<Policy>: only mpx::NoLossScaling needs this opt-in; "
                "dynamic and static loss scaling already protect fp16 gradients");
  /// @brief Policy name used in records and messages.
  static constexpr std::string_view name = "none_fp16_opt_in";
  /// @brief Marks the deliberate opt-in to fp16 without loss scaling.
  static constexpr bool allows_fp16_underflow = true;
};

/// @brief Satisfied by loss-scaling policies: they say whether they scale, whether the scale moves,
/// and carry validated runtime `Options`.
template <class S>
concept LossScalingPolicy = requires(const typename S::Options& options) {
  { S::name } -> std::convertible_to<std::string_view>;
  { S::scales_loss } -> std::convertible_to<bool>;
  { S::is_dynamic } -> std::convertible_to<bool>;
  options.validate();
};

namespace detail {
template <class S>
inline constexpr bool allows_fp16_underflow = false;
template <class S>
inline constexpr bool allows_fp16_underflow<AllowFp16Underflow<S>> = true;
}  // namespace detail

/// @brief The scaler something gets unless told otherwise: dynamic when it computes in fp16, or in any
/// format with fewer exponent bits than fp32 (`narrower_range_than_fp32_v`; as PyTorch AMP always
/// pairs fp16 with GradScaler), none when every format has fp32's exponent range.
/// Precisions, models and sweep plans all choose through it.
template <bool ComputesInHalf>
using default_scaler_for_t = std::conditional_t<ComputesInHalf, DynamicLossScaling, NoLossScaling>;

/// @brief The scaler precision `P` gets unless told otherwise (see `default_scaler_for_t`).
template <PrecisionPolicy P>
using default_scaler_t = default_scaler_for_t<narrower_range_than_fp32_v<typename P::compute_type>>;

namespace detail {
// The one soundness rule: scaler S suits what computes in fp16 (or another format with fewer
// exponent bits than fp32) only if it scales or opts in to underflow. Precisions, models (Trainer) and sweep
// plans all check through it.
template <bool ComputesInHalf, class S>
inline constexpr bool scaler_suits_half = !ComputesInHalf || S::scales_loss || allows_fp16_underflow<S>;

// `if constexpr`, not `&&`: a non-scaler `S` must give false rather than a hard error on `S::scales_loss`.
template <class P, class S>
consteval bool scaler_suits() {
  if constexpr (LossScalingPolicy<S>) {
    return scaler_suits_half<narrower_range_than_fp32_v<typename P::compute_type>, S>;
  } else {
    return false;
  }
}
}  // namespace detail

/// @brief True when scaler `S` is a sound choice for precision `P` (false when `S` is not a scaler).
template <PrecisionPolicy P, class S>
inline constexpr bool scaler_suits_v = detail::scaler_suits<P, S>();

namespace detail {
template <PrecisionPolicy P, class S>
struct checked_scaler {
  static_assert(LossScalingPolicy<S>,
                "mpx: the scaler must be a loss-scaling policy: mpx::DynamicLossScaling, "
                "mpx::StaticLossScaling or mpx::NoLossScaling");
  static_assert(!LossScalingPolicy<S> || scaler_suits_v<P, S>,
                "mpx: fp16 without loss scaling loses small gradients: fp16 rounds values below 2^-25 "
                "to zero (its smallest subnormal is 2^-24), and many gradients are that small (so does "
                "every format with fewer exponent bits than fp32, sooner). Use "
                "mpx::DynamicLossScaling (mpx::default_scaler_t<P> for fp16), or write "
                "mpx::AllowFp16Underflow<mpx::NoLossScaling> to opt in knowingly");
  using type = S;
};
}  // namespace detail

/// @brief `S`, after checking at compile time that it suits `P` (the check every training step
/// applies); a mismatch is a compile error that explains fp16 underflow and names the fix.
template <PrecisionPolicy P, class S = default_scaler_t<P>>
using checked_scaler_t = typename detail::checked_scaler<P, S>::type;

}  // namespace mpx
