// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The optimizers' per-element arithmetic, shared by the CPU loops (cpu/optimizer.hpp) and the
/// CUDA kernels (cuda/optimizer.cuh), so that both backends run the same code on every element.
///
/// Each update comes in two parts: coefficients derived once per update from the hyper-parameters
/// (in double, rounded once into the update's type, as PyTorch derives them from Python floats), and
/// a per-element step that uses them. Every operation rounds on its own: nvcc would otherwise fuse
/// a * b + c into an FMA in device code (GCC does not here: mpx builds with -ffp-contract=off), and
/// the two backends would disagree in the last bit.

#include <cmath>
#include <concepts>
#include <cstdint>
#include <type_traits>

#include "mpx/backend/optimizer_settings.hpp"
#include "mpx/backend/update_control.hpp"
#include "mpx/config.hpp"
#include "mpx/numeric/random.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx {

namespace detail {

// a + b, a - b, a * b, a / b and sqrt(a), each correctly rounded and never contracted with a
// neighbour. nvcc's device pass provides the _rn intrinsics without an include (they come with the
// CUDA runtime header it includes in every translation unit).
template <std::floating_point T>
MPX_HOST_DEVICE inline T add_rn(T a, T b) {
#if MPX_DEVICE_PASS
  if constexpr (std::is_same_v<T, float>) {
    return __fadd_rn(a, b);
  } else {
    return __dadd_rn(a, b);
  }
#else
  return a + b;
#endif  // MPX_DEVICE_PASS
}

template <std::floating_point T>
MPX_HOST_DEVICE inline T sub_rn(T a, T b) {
#if MPX_DEVICE_PASS
  if constexpr (std::is_same_v<T, float>) {
    return __fsub_rn(a, b);
  } else {
    return __dsub_rn(a, b);
  }
#else
  return a - b;
#endif  // MPX_DEVICE_PASS
}

template <std::floating_point T>
MPX_HOST_DEVICE inline T mul_rn(T a, T b) {
#if MPX_DEVICE_PASS
  if constexpr (std::is_same_v<T, float>) {
    return __fmul_rn(a, b);
  } else {
    return __dmul_rn(a, b);
  }
#else
  return a * b;
#endif  // MPX_DEVICE_PASS
}

template <std::floating_point T>
MPX_HOST_DEVICE inline T div_rn(T a, T b) {
#if MPX_DEVICE_PASS
  if constexpr (std::is_same_v<T, float>) {
    return __fdiv_rn(a, b);
  } else {
    return __ddiv_rn(a, b);
  }
#else
  return a / b;
#endif  // MPX_DEVICE_PASS
}

template <std::floating_point T>
MPX_HOST_DEVICE inline T sqrt_rn(T a) {
#if MPX_DEVICE_PASS
  if constexpr (std::is_same_v<T, float>) {
    return __fsqrt_rn(a);
  } else {
    return __dsqrt_rn(a);
  }
#else
  return std::sqrt(a);
#endif  // MPX_DEVICE_PASS
}

// An unevaluated sum hi + lo with |lo| <= ulp(hi) / 2: about 106 significant bits.
struct DoubleDouble {
  double hi = 0.0;
  double lo = 0.0;
};

// Dekker's split: a == hi + lo, each half with at most 26 significant bits, so their products are
// exact (|a| <= 1 here, far from overflow).
MPX_HOST_DEVICE inline DoubleDouble dekker_split(double a) {
  const double t = mul_rn(134217729.0, a);  // 2^27 + 1
  const double hi = sub_rn(t, sub_rn(t, a));
  return {hi, sub_rn(a, hi)};
}

// The exact product of a and b as hi + lo (Dekker's TwoProduct, without an FMA).
MPX_HOST_DEVICE inline DoubleDouble two_product(double a, double b) {
  const double p = mul_rn(a, b);
  const DoubleDouble x = dekker_split(a);
  const DoubleDouble y = dekker_split(b);
  const double error =
      add_rn(add_rn(add_rn(sub_rn(mul_rn(x.hi, y.hi), p), mul_rn(x.hi, y.lo)), mul_rn(x.lo, y.hi)),
             mul_rn(x.lo, y.lo));
  return {p, error};
}

MPX_HOST_DEVICE inline DoubleDouble dd_multiply(DoubleDouble a, DoubleDouble b) {
  const DoubleDouble p = two_product(a.hi, b.hi);
  const double lo = add_rn(p.lo, add_rn(mul_rn(a.hi, b.lo), mul_rn(a.lo, b.hi)));
  const double hi = add_rn(p.hi, lo);
  return {hi, sub_rn(lo, sub_rn(hi, p.hi))};
}

}  // namespace detail

/// @brief `base` to the power `exponent` (>= 0) for `0 <= base <= 1`, rounded to the nearest double,
/// and computed the same way on the host and on a GPU. Neither `pow` is that: glibc's misrounds about
/// one in a thousand of Adam's (beta, t) pairs by an ulp, CUDA's is only within 2 ulp.
///
/// Binary exponentiation in double-double arithmetic: after at most 2 * 63 products of ~2^-104
/// relative error each, the result rounds correctly unless the exact power lies within ~2^-96 of a
/// rounding midpoint. Meant for the bias corrections 1 - beta^t of Adam; results below 2^-968 lose
/// the low word's precision, which no bias correction can see (1 - 2^-968 == 1).
MPX_HOST_DEVICE inline double integer_power(double base, std::int64_t exponent) {
  detail::DoubleDouble result{1.0, 0.0};
  detail::DoubleDouble square{base, 0.0};
  while (exponent > 0) {
    if ((exponent & 1) != 0) result = detail::dd_multiply(result, square);
    exponent >>= 1;
    if (exponent > 0) square = detail::dd_multiply(square, square);
  }
  return result.hi;
}

/// @brief PyTorch's `clip_grad_norm_` coefficient, max_norm / (norm + 1e-6): gradients are multiplied
/// by it when it is below 1.
MPX_HOST_DEVICE inline double clip_coefficient(double max_norm, double norm) {
  return detail::div_rn(max_norm, detail::add_rn(norm, 1e-6));
}

/// @brief The stream of the stochastic rounding of update number `update` (from 1) of the parameter
/// visited `parameter_index`-th: the top bit set (a domain the data loader and the initialisers never
/// draw from), then the update number, then 24 bits of the parameter index, so that no two
/// (update, parameter) pairs share random bits.
MPX_HOST_DEVICE constexpr std::uint64_t optimizer_rounding_stream(std::int64_t update, int parameter_index) {
  constexpr std::uint64_t optimizer_domain = std::uint64_t{1} << 63;
  return optimizer_domain | (static_cast<std::uint64_t>(update) << 24) |
         (static_cast<std::uint64_t>(parameter_index) & 0xFFFFFFu);
}

/// @brief Stochastic rounding of optimizer updates whose stream follows the update number, for an
/// update whose number is known only on the device (a CUDA training step replayed as a graph): update
/// `u` draws as `RoundStochastic{seed, optimizer_rounding_stream(u, parameter_index)}`.
struct RoundStochasticPerUpdate {
  /// @brief Seed of the Philox random bits (the optimizer's `rounding_seed`).
  std::uint64_t seed = 0;
  /// @brief The parameter's place in the optimizer's visit order.
  int parameter_index = 0;

  /// @brief The rounding of update number `update` (from 1).
  [[nodiscard]] MPX_HOST_DEVICE RoundStochastic at_update(std::int64_t update) const {
    return {seed, optimizer_rounding_stream(update, parameter_index)};
  }
};

/// @brief The rounding of update number `update` (from 1): a fixed rounding is used as it is.
template <class Rounding>
[[nodiscard]] MPX_HOST_DEVICE Rounding rounding_at(const Rounding& rounding, std::int64_t /*update*/) {
  return rounding;
}
/// @brief The rounding of update number `update` (from 1) of a per-update stochastic rounding.
[[nodiscard]] MPX_HOST_DEVICE inline RoundStochastic rounding_at(const RoundStochasticPerUpdate& rounding,
                                                                 std::int64_t update) {
  return rounding.at_update(update);
}

/// @brief The roundings an optimizer update accepts.
template <class Rounding>
inline constexpr bool is_optimizer_rounding =
    std::is_same_v<Rounding, RoundNearest> || std::is_same_v<Rounding, RoundStochastic> ||
    std::is_same_v<Rounding, RoundStochasticPerUpdate>;

/// @brief What an update multiplies each gradient by: `G(clip_coefficient)` when the step clipped
/// (as `g *= G(coefficient)` rounds), else 1.
template <std::floating_point G>
[[nodiscard]] MPX_HOST_DEVICE G clip_factor(const UpdateControl& control) {
  return control.clipped != 0 ? static_cast<G>(control.clip_coefficient) : G(1);
}

/// @brief A gradient value as the update uses it: multiplied by the clipping factor when clipped.
template <std::floating_point G>
[[nodiscard]] MPX_HOST_DEVICE G clipped_gradient(G g, const UpdateControl& control, G clip) {
  return control.clipped != 0 ? detail::mul_rn(g, clip) : g;
}

/// @brief SGD's scalars for one update, in the update's type `Acc` (trivial, so that a kernel can
/// keep one in shared memory; `sgd_coefficients` fills every field).
template <std::floating_point Acc>
struct SgdCoefficients {
  Acc weight_decay;   ///< the L2 factor
  Acc momentum;       ///< the momentum factor
  Acc keep;           ///< 1 - dampening
  Acc minus_lr;       ///< -lr
  bool decays;        ///< weight_decay != 0 (tested in double, as set)
  bool has_momentum;  ///< momentum != 0 (tested in double, as set)
  bool nesterov;      ///< Nesterov momentum
  bool first_step;    ///< the momentum buffer starts as this update's direction
};

/// @brief SGD's scalars for an update at learning rate `lr` (settings.lr is not read, so that a
/// learning rate held on the device can be used).
template <std::floating_point Acc>
MPX_HOST_DEVICE inline SgdCoefficients<Acc> sgd_coefficients(const SgdSettings& s, double lr,
                                                             bool first_step) {
  SgdCoefficients<Acc> c{};
  c.weight_decay = static_cast<Acc>(s.weight_decay);
  c.momentum = static_cast<Acc>(s.momentum);
  c.keep = static_cast<Acc>(detail::sub_rn(1.0, s.dampening));
  c.minus_lr = static_cast<Acc>(-lr);
  c.decays = s.weight_decay != 0.0;
  c.has_momentum = s.momentum != 0.0;
  c.nesterov = s.nesterov;
  c.first_step = first_step;
  return c;
}

/// @brief One element of PyTorch's single-tensor SGD: d = g + wd * w; with momentum the buffer is d
/// on the first step and momentum * buf + (1 - dampening) * d after; Nesterov uses d + momentum * buf;
/// returns w - lr * d (before rounding into the master type). `momentum_buffer` is the element's
/// buffer, or null without momentum.
template <std::floating_point Acc>
MPX_HOST_DEVICE inline Acc sgd_step(Acc weight, Acc grad, Acc* momentum_buffer,
                                    const SgdCoefficients<Acc>& c) {
  using detail::add_rn;
  using detail::mul_rn;
  Acc d = c.decays ? add_rn(grad, mul_rn(c.weight_decay, weight)) : grad;
  if (c.has_momentum) {
    const Acc buffer = c.first_step ? d : add_rn(mul_rn(*momentum_buffer, c.momentum), mul_rn(c.keep, d));
    *momentum_buffer = buffer;
    d = c.nesterov ? add_rn(d, mul_rn(c.momentum, buffer)) : buffer;
  }
  return add_rn(weight, mul_rn(c.minus_lr, d));
}

/// @brief AdamW's scalars for one update, in the update's type `Acc` (trivial, so that a kernel can
/// keep one in shared memory; `adamw_coefficients` fills every field).
template <std::floating_point Acc>
struct AdamWCoefficients {
  Acc decay;                  ///< 1 - lr * weight_decay
  Acc lerp_weight;            ///< 1 - beta1
  Acc beta2;                  ///< beta2
  Acc one_minus_beta2;        ///< 1 - beta2
  Acc bias_correction2_sqrt;  ///< sqrt(1 - beta2^t)
  Acc epsilon;                ///< eps
  Acc minus_step_size;        ///< -lr / (1 - beta1^t)
};

/// @brief AdamW's bias corrections 1 - beta1^t and 1 - beta2^t for update number `step` (from 1),
/// in double (two `integer_power`s: tens of dependent operations, so derived once per update, never
/// per element or per block).
MPX_HOST_DEVICE inline void adamw_bias_corrections(const AdamWSettings& s, std::int64_t step, double& first,
                                                   double& second) {
  first = detail::sub_rn(1.0, integer_power(s.beta1, step));
  second = detail::sub_rn(1.0, integer_power(s.beta2, step));
}

/// @brief Derives AdamW's bias corrections of the update `control` describes (t = `optimizer_step` +
/// 1) into its `bias_correction1` and `bias_correction2`. A trainer runs it once per step where the
/// step's decisions are taken (train/step_scalars.hpp), after the update count is known; the update
/// kernels then read the two doubles instead of deriving them.
struct AdamWBiasCorrections {
  double beta1 = 0.9;    ///< the optimizer's beta1
  double beta2 = 0.999;  ///< the optimizer's beta2

  /// @brief Writes the corrections of the update `control` describes.
  MPX_HOST_DEVICE void operator()(UpdateControl& control) const {
    AdamWSettings s{};
    s.beta1 = beta1;
    s.beta2 = beta2;
    adamw_bias_corrections(s, control.optimizer_step + 1, control.bias_correction1, control.bias_correction2);
  }
};

/// @brief What an optimizer without per-update scalars to derive (SGD) asks of a step: nothing.
struct NoUpdatePreparation {
  /// @brief Does nothing.
  MPX_HOST_DEVICE void operator()(UpdateControl& /*control*/) const {}
};

/// @brief AdamW's scalars at learning rate `lr` (settings.lr is not read, so that a learning rate
/// held on the device can be used) from the bias corrections 1 - beta1^t and 1 - beta2^t: computed in
/// double from the settings and rounded once each.
template <std::floating_point Acc>
MPX_HOST_DEVICE inline AdamWCoefficients<Acc> adamw_coefficients(const AdamWSettings& s, double lr,
                                                                 double bias_correction1,
                                                                 double bias_correction2) {
  using detail::sub_rn;
  AdamWCoefficients<Acc> c{};
  c.decay = static_cast<Acc>(sub_rn(1.0, detail::mul_rn(lr, s.weight_decay)));
  c.lerp_weight = static_cast<Acc>(sub_rn(1.0, s.beta1));
  c.beta2 = static_cast<Acc>(s.beta2);
  c.one_minus_beta2 = static_cast<Acc>(sub_rn(1.0, s.beta2));
  c.bias_correction2_sqrt = static_cast<Acc>(detail::sqrt_rn(bias_correction2));
  c.epsilon = static_cast<Acc>(s.epsilon);
  c.minus_step_size = static_cast<Acc>(-detail::div_rn(lr, bias_correction1));
  return c;
}

/// @brief AdamW's scalars for update number `step` (from 1) at learning rate `lr`.
template <std::floating_point Acc>
MPX_HOST_DEVICE inline AdamWCoefficients<Acc> adamw_coefficients(const AdamWSettings& s, double lr,
                                                                 std::int64_t step) {
  double first = 0.0;
  double second = 0.0;
  adamw_bias_corrections(s, step, first, second);
  return adamw_coefficients<Acc>(s, lr, first, second);
}

/// @brief AdamW's scalars for the update `control` describes: its lr, and its bias corrections when
/// derived (`AdamWBiasCorrections`), else derived here from its update count. 1 - beta^t is never 0
/// for beta < 1 (it is at least 2^-53), so 0 safely means "not derived".
template <std::floating_point Acc>
MPX_HOST_DEVICE inline AdamWCoefficients<Acc> adamw_coefficients(const AdamWSettings& s,
                                                                 const UpdateControl& control) {
  if (control.bias_correction1 != 0.0 && control.bias_correction2 != 0.0) {
    return adamw_coefficients<Acc>(s, control.lr, control.bias_correction1, control.bias_correction2);
  }
  return adamw_coefficients<Acc>(s, control.lr, control.optimizer_step + 1);
}

/// @brief The moments of one element of PyTorch's single-tensor AdamW, updated in place: m =
/// lerp(m, g, 1 - beta1) (PyTorch's lerp: m + w (g - m) for w < 0.5, else g - (g - m)(1 - w)); v =
/// v * beta2 + (1 - beta2) g^2. The first half of `adamw_step`.
template <std::floating_point Acc>
MPX_HOST_DEVICE MPX_ALWAYS_INLINE void adamw_moments(Acc grad, Acc& exp_avg, Acc& exp_avg_sq,
                                                     const AdamWCoefficients<Acc>& c) {
  using detail::add_rn;
  using detail::mul_rn;
  using detail::sub_rn;
  const Acc m = c.lerp_weight < Acc(0.5)
                    ? add_rn(exp_avg, mul_rn(c.lerp_weight, sub_rn(grad, exp_avg)))
                    : sub_rn(grad, mul_rn(sub_rn(grad, exp_avg), sub_rn(Acc(1), c.lerp_weight)));
  const Acc v = add_rn(mul_rn(exp_avg_sq, c.beta2), mul_rn(mul_rn(c.one_minus_beta2, grad), grad));
  exp_avg = m;
  exp_avg_sq = v;
}

/// @brief The second half of `adamw_step`: w (1 - lr * wd) + (-lr / bc1) * m / (sqrt(v) / sqrt(bc2) +
/// eps) from the updated moments, `root_exp_avg_sq` = sqrt(v) correctly rounded (passed in, so that a
/// CPU loop can take a row of square roots as one vector instruction).
template <std::floating_point Acc>
MPX_HOST_DEVICE MPX_ALWAYS_INLINE Acc adamw_weight(Acc weight, Acc exp_avg, Acc root_exp_avg_sq,
                                                   const AdamWCoefficients<Acc>& c) {
  using detail::add_rn;
  using detail::div_rn;
  using detail::mul_rn;
  const Acc decayed = mul_rn(weight, c.decay);
  const Acc denominator = add_rn(div_rn(root_exp_avg_sq, c.bias_correction2_sqrt), c.epsilon);
  return add_rn(decayed, div_rn(mul_rn(c.minus_step_size, exp_avg), denominator));
}

/// @brief One element of PyTorch's single-tensor AdamW: w *= 1 - lr * wd; the moments as
/// `adamw_moments`; returns w + (-lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps) before rounding into
/// the master type, and updates `exp_avg` (m) and `exp_avg_sq` (v) in place.
template <std::floating_point Acc>
MPX_HOST_DEVICE inline Acc adamw_step(Acc weight, Acc grad, Acc& exp_avg, Acc& exp_avg_sq,
                                      const AdamWCoefficients<Acc>& c) {
  adamw_moments(grad, exp_avg, exp_avg_sq, c);
  return adamw_weight(weight, exp_avg, detail::sqrt_rn(exp_avg_sq), c);
}

namespace detail {

/// Writes an updated master value, rounded into the master type as `rounding` says (stochastic
/// rounding draws random_bits(seed, stream, index)), and the compute copy (when not null) from the
/// stored master.
template <Element M, Element C, class Rounding, std::floating_point Value>
MPX_HOST_DEVICE inline void store_weight(M* master, C* compute, std::int64_t index, Value value,
                                         const Rounding& rounding) {
  if constexpr (std::is_same_v<Rounding, RoundStochastic>) {
    static_assert(SixteenBitElement<M>, "mpx: stochastic rounding needs fp16 or bf16 master weights");
    master[index] = round_stochastic<tag_of_t<M>>(
        static_cast<float>(value),
        random_bits(rounding.seed, rounding.stream, static_cast<std::uint64_t>(index)));
  } else {
    static_assert(std::is_same_v<Rounding, RoundNearest>,
                  "mpx: Rounding must be RoundNearest or RoundStochastic");
    master[index] = round_to<tag_of_t<M>>(value);
  }
  if (compute != nullptr) compute[index] = round_to<tag_of_t<C>>(static_cast<accumulate_t<M>>(master[index]));
}

}  // namespace detail

}  // namespace mpx
