// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::Dropout`: inverted dropout with a counter-based mask, regenerated in backward rather
/// than stored.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/dropout_spec.hpp"
#include "mpx/config.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/step_key.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/device_value.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

namespace detail {
// Advances a layer's own forward count where it lives (a one-thread kernel on a GPU), so that a
// replayed CUDA graph advances it too.
struct AdvanceCount {
  MPX_HOST_DEVICE void operator()(std::int64_t* count) const { ++*count; }
};
}  // namespace detail

/// @brief Inverted dropout, as `torch.nn.Dropout(p)`: in training, y = x * keep / (1 - p) with each
/// element kept with probability 1 - p; in evaluation (and for p = 0), y = x.
///
/// **The mask** is a pure function of (seed, layer stream, step, micro-batch, element) through
/// Philox (the mapping is in backend/dropout_spec.hpp; distinct keys never reach the same Philox
/// input): the same key gives the same bits on the CPU and on a GPU, and a run resumed from a
/// checkpoint draws the masks of the run it continues. Seed and stream come from `initialize(seed,
/// stream)` (a `Sequential` gives each layer its own stream). The step comes from `bind_step`:
/// `mpx::Trainer` binds its step count (kept in the memory of the model's device, where a GPU kernel
/// reads it when it runs, so a replayed CUDA graph draws a new mask every step) and the micro-batch
/// before each forward. Without a bound step (a user's own loop) the layer counts its own training
/// forwards on the device and keys the mask by that count (from 1); that count is not part of a
/// checkpoint, so only a bound step makes masks reproducible across a resume.
///
/// **Memory:** backward regenerates forward's mask from the same key (the step is unchanged between
/// a step's forward and backward, and the own count advances before forward draws): zero bytes per
/// element of saved state, where PyTorch keeps a mask (one byte per element). Forward's output and
/// backward's dx are the layer's buffers, as in every layer.
///
/// **Numerics:** the keep test compares 32 random bits with round(p 2^32) (see `dropout_threshold`);
/// a kept element is x / (1 - p) in fp32 (fp64 under `mpx::fp64`), 1 - p rounded once into fp32
/// from double, the quotient correctly rounded and then rounded once into the compute type; a dropped
/// element is x * 0 (so NaN and inf still reach the step's finite check). Backward applies the same
/// formula to dy.
///
/// In evaluation mode and for p = 0 forward returns its input itself and backward its dy itself:
/// no copy, nothing saved, no random numbers drawn.
/// @code
/// using L = mpx::nn::layers<mpx::bf16_mixed>;
/// mpx::nn::Sequential model{L::linear(256, 1024, mpx::nn::gelu), L::linear(1024, 256), L::dropout(0.1f)};
/// @endcode
/// @tparam P precision policy (input and output are its compute type); @tparam Device `Host` or `Cuda`.
template <PrecisionPolicy P, class Device = Host>
class Dropout : public LayerBase<Dropout<P, Device>, P, Device> {
  using T = compute_t<P>;

 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "Dropout";
  using LayerBase<Dropout<P, Device>, P, Device>::forward;

  /// @brief A layer dropping each element with probability `p`; throws `mpx::invalid_argument`
  /// unless p is in [0, 1).
  explicit Dropout(float p) : p_(p) {
    if (!(p >= 0.0f && p < 1.0f)) {
      throw invalid_argument(mpx::detail::concat("mpx::nn::Dropout: p = ", p, " is not in [0, 1)"));
    }
  }

  /// @brief Keys the masks by (seed, stream) from now on (no parameters to initialise).
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    seed_ = seed;
    stream_ = stream;
  }

  /// @brief In training with p > 0: y = x * keep / (1 - p) into the layer's buffer, the mask keyed by
  /// the bound step (or the layer's own count, advanced first). Otherwise returns `x` itself.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    shape_ = x.shape();
    if (!this->training() || p_ == 0.0f) {
      state_ = State::Identity;
      return x;
    }
    state_ = State::None;  // until the draw has succeeded
    DropoutMask mask{p_, seed_, stream_, bound_.step, bound_.micro_batch};
    if (mask.step == nullptr) {
      Backend<Device>::single_thread(detail::AdvanceCount{}, own_count_.get());
      mask.step = own_count_.get();
    }
    ensure_shape(output_, x.shape());
    Backend<Device>::dropout(x, output_, mask);
    mask_ = mask;
    state_ = State::Masked;
    return output_;
  }

  /// @brief dx = dy * keep / (1 - p) with forward's mask, regenerated (or `&dy` itself when forward
  /// was the identity); null when `input_grad` is false.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(state_ != State::None, dy.shape(), shape_);
    if (!input_grad) return nullptr;
    if (state_ == State::Identity) return &dy;
    ensure_shape(input_grad_, dy.shape());
    Backend<Device>::dropout(dy, input_grad_, mask_);
    return &input_grad_;
  }

  /// @brief No parameters.
  template <class F>
  void for_each_parameter(F&&) {}

  /// @brief Keys the next training forwards by `key` (read through `key.step` at each draw, so the
  /// pointed-to count must outlive them); `StepKey{}` (no step) goes back to the layer's own count.
  /// Throws `mpx::invalid_argument` for a micro-batch outside [0, 2^32).
  void bind_step(const StepKey& key) {
    if (key.micro_batch < 0 || key.micro_batch > std::int64_t{0xffffffff}) {
      throw invalid_argument(
          mpx::detail::concat(this->label(), ": micro-batch ", key.micro_batch, " is outside [0, 2^32)"));
    }
    bound_ = key;
  }

  /// @brief {"p": p}, `torch.nn.Dropout`'s argument.
  [[nodiscard]] LayerDescription describe() const { return {{"p", p_}}; }

  /// @brief The drop probability.
  [[nodiscard]] float p() const noexcept { return p_; }

 private:
  enum class State { None, Identity, Masked };  // what the last forward did

  float p_;
  std::uint64_t seed_ = 0;
  std::uint64_t stream_ = 0;
  StepKey bound_;
  DeviceValue<std::int64_t, Device> own_count_;  // training forwards without a bound step
  State state_ = State::None;
  Shape shape_;
  DropoutMask mask_;  // forward's key, which backward draws again
  Tensor<T, Device> output_;
  Tensor<T, Device> input_grad_;
};

}  // namespace mpx::nn
