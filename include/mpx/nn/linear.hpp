// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::Linear`: y = act(x W^T + b) as one GEMM with a fused epilogue; backward produces fp32
/// weight and bias gradients directly from compute-type operands.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/block_quantize_spec.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/fp8_scales.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/parameter.hpp"
#include "mpx/nn/step_key.hpp"
#include "mpx/policy/block_scaled_precision.hpp"
#include "mpx/policy/fp8_precision.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

namespace detail {
// The transposed FP8 codes a backend whose FP8 GEMMs read both operands along K needs
// (`Backend<Device>::fp8_gemm_needs_k_major_operands`): x^T [in, rows] and dZ^T [out, rows] for the
// weight gradient, W^T [in, out] for the input gradient.
template <class P, class Device>
struct LinearFp8Transposes {
  Tensor<Encoded<typename P::forward_format>, Device> input;
  Tensor<Encoded<typename P::forward_format>, Device> weight;
  Tensor<Encoded<typename P::backward_format>, Device> output_grad;
};
struct NoFp8Transposes {};

// What a Linear under an FP8 precision keeps for its GEMMs: its tensors' scales and the FP8 codes
// of its input, weight and output gradient (the input's and weight's are read again by backward),
// and, on a backend that needs them, their transposes (an empty member elsewhere).
template <class P, class Device>
struct LinearFp8State {
  Fp8Scales<P, Device> scales;
  Tensor<Encoded<typename P::forward_format>, Device> input;
  Tensor<Encoded<typename P::forward_format>, Device> weight;
  Tensor<Encoded<typename P::backward_format>, Device> output_grad;
  [[no_unique_address]] std::conditional_t<Backend<Device>::fp8_gemm_needs_k_major_operands,
                                           LinearFp8Transposes<P, Device>, NoFp8Transposes>
      transposed;
};
struct NoFp8State {};

// What a Linear under a block-scaled precision keeps for its GEMMs: each operand quantized along
// the K of each GEMM that reads it (x and W rowwise for y = x W^T, W^T and dZ for dx = dZ W, dZ^T
// and x^T for dW = dZ^T x), and the key of its stochastic rounding.
template <class P, class Device>
struct LinearBlockState {
  BlockQuantized<typename P::forward_recipe, Device> input, input_columns, weight, weight_columns;
  BlockQuantized<typename P::backward_recipe, Device> output_grad, output_grad_columns;
  StepKey step;               // the step a training forward belongs to (bind_step)
  std::int64_t own_step = 0;  // backward passes counted where no step is bound
};
struct NoBlockState {};
// Whether Device's backend runs block-scaled GEMMs, asked only of a block-scaled layer (a host
// translation unit may name a Linear on mpx::Cuda without the CUDA backend's header).
template <bool BlockScaled, class Device>
consteval bool block_scaled_gemm_available() {
  if constexpr (BlockScaled) {
    return Backend<Device>::has_block_scaled_gemm;
  } else {
    return true;
  }
}
}  // namespace detail

/// @brief Fully connected layer: weight [out_features, in_features] (PyTorch's layout), optional
/// bias [out_features], optional activation fused into the matmul's epilogue.
///
/// Forward runs `x W^T` in the compute type with fp32 accumulation and the bias (and ReLU or GELU)
/// in the epilogue. Backward computes dW = dZ^T x into the fp32 gradient (accumulating across
/// micro-batches), the bias gradient from the same GEMM's BGRAD epilogue, and dx = dZ W, where dZ is
/// dy times the activation's derivative.
///
/// Inside a `Sequential`, a ReLU layer's derivative is applied by the next Linear instead: its dx
/// GEMM reads the ReLU bit mask this layer's forward wrote (epilogue ReluAuxBias) and produces this
/// layer's dZ in its DRelu epilogue (cuBLASLt's DRELU), so a ReLU costs no kernel of its own in
/// backward (see `ActivationGradientFusion`).
///
/// In evaluation mode (nn/training_mode.hpp) forward keeps neither its input pointer nor GELU's
/// pre-activation, and backward throws until a training-mode forward has run.
///
/// Under an FP8 precision (`mpx::Fp8Precision`, policy/fp8_precision.hpp) the three GEMMs take FP8
/// operands: forward casts x and the fp32 master weight into the forward format, backward casts dZ
/// into the backward format, each with its scale (`nn::Fp8Scales`, the layer's buffers), and the
/// GEMMs apply the inverse scales to their fp32 sums; the bias gradient is summed from the 16-bit dZ,
/// as Transformer Engine's cast kernels do. The weight then has no 16-bit copy (`weight()` is fp32
/// only). An evaluation-mode forward casts with the current scales and records no amax, so that
/// evaluating between steps leaves delayed scaling's histories as training left them. On the GPU
/// (cuBLASLt's FP8 GEMMs read both operands along K: `Backend<Device>::fp8_gemm_needs_k_major_operands`)
/// a training forward casts x and W with their transposes and backward dZ with its own, each in one
/// pass, and every GEMM reads K-major codes: y = x W^T from x [M, K] and W [N, K], dx = dZ W from dZ
/// [M, N] and W^T [K, N], dW = dZ^T x from dZ^T [N, M] and x^T [K, M] (docs/fp8.md).
///
/// Under a block-scaled precision (`mpx::BlockScaledPrecision`: MXFP8, NVFP4, FP8 128-blocks; CPU
/// only so far) the three GEMMs take block-quantized operands, each quantized along the K of the GEMM
/// that reads it from the 16-bit (or fp32 master) source at every cast: forward x and W (and, in
/// training, x^T and W^T for backward), backward dZ and dZ^T. Activations use 1 x block blocks,
/// weights the recipe's weight blocks (16 x 16 under NVFP4's 2D weights, 128 x 128 for FP8 blocks);
/// under NVFP4's tricks dZ is rounded stochastically (Philox keyed by the layer's seed and stream
/// and the bound step: `bind_step`) and x^T and dZ^T take the random Hadamard transform along their
/// K. The bias gradient is summed from the 16-bit dZ; `weight()` is fp32 only (docs/block_scaling.md).
///
/// @tparam P precision policy; @tparam A fused activation; @tparam Device `Host` or `Cuda`.
template <PrecisionPolicy P, Activation A = Activation::None, class Device = Host>
class Linear : public LayerBase<Linear<P, A, Device>, P, Device> {
  using Compute = typename P::compute_type;
  using Param = Parameter<P, Device>;
  static constexpr bool fp8 = Fp8PrecisionPolicy<P>;
  static constexpr bool block_scaled = BlockScaledPrecisionPolicy<P>;
  static_assert(detail::block_scaled_gemm_available<block_scaled, Device>(),
                "mpx::nn::Linear: block-scaled precisions (MXFP8, NVFP4, FP8 128-blocks) run on mpx::Host "
                "only so far; the CUDA backend's block-scaled GEMMs are not written yet "
                "(docs/block_scaling.md)");
  // An FP8 or block-scaled GEMM reads the weight cast from its master copy: no 16-bit copy to keep.
  using WeightParam = std::conditional_t<fp8 || block_scaled, MasterParameter<P, Device>, Param>;
  using T = compute_t<P>;
  using Grad = accumulate_t<P>;

 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "Linear";
  using LayerBase<Linear<P, A, Device>, P, Device>::forward;
  /// @brief The activation fused into the matmul.
  static constexpr Activation activation = A;

  /// @brief Construction options.
  struct Options {
    /// @brief Whether the layer has a bias.
    bool bias = true;
    /// Weight initialisation; Kaiming for ReLU/GELU, Xavier otherwise (biases start at zero).
    Init init = A == Activation::None ? Init::XavierUniform : Init::KaimingUniform;
  };

  /// @brief A layer mapping `in_features` to `out_features`.
  Linear(std::int64_t in_features, std::int64_t out_features, Options options = {})
      : in_features_(in_features),
        out_features_(out_features),
        options_(options),
        weight_("weight", Shape{out_features, in_features}) {
    if (in_features <= 0 || out_features <= 0) {
      throw invalid_argument(
          mpx::detail::concat("mpx::nn::Linear: features must be positive, got in_features = ", in_features,
                              ", out_features = ", out_features));
    }
    if (options.bias) bias_.emplace("bias", Shape{out_features});
    initialize(0, 0);
  }

  /// @brief Re-initialises the parameters from (seed, stream): the same pair gives the same weights
  /// on every machine and device.
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    seed_ = seed;
    stream_ = stream;
    nn::initialize(weight_, options_.init, in_features_, out_features_, seed, 2 * stream);
    if (bias_) nn::initialize(*bias_, Init::Zeros, in_features_, out_features_, seed, 2 * stream + 1);
  }

  /// @brief y = act(x W^T + b) in the compute type, fp32 accumulation; in training mode, saves what backward
  /// needs.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    require_features(this->label(), x, in_features_);
    const Shape out_shape = x.shape().with_last(out_features_);
    ensure_shape(output_, out_shape);
    GemmOperands<T, Grad, Device> operands;
    operands.bias = bias_ ? &bias_->compute() : &zero_bias();
    Epilogue epilogue = bias_ ? Epilogue::Bias : Epilogue::Default;
    if constexpr (A == Activation::ReLU) {
      // Training keeps the bit mask of the positive pre-activations, for the next layer's fused
      // ReLU backward; evaluation needs only D, whose bits are the same either way.
      epilogue = Epilogue::ReluBias;
      if (this->training()) {
        epilogue = Epilogue::ReluAuxBias;
        ensure_shape(relu_mask_, relu_mask_shape(out_shape));
        operands.relu_mask = &relu_mask_;
      }
    }
    if constexpr (A == Activation::GELU) {
      // Backward evaluates gelu' at the pre-activation, so training keeps it (the epilogue's aux
      // output); evaluation needs only D, whose bits are the same either way.
      epilogue = Epilogue::GeluBias;
      if (this->training()) {
        epilogue = Epilogue::GeluAuxBias;
        ensure_shape(pre_activation_, out_shape);
        operands.aux = &pre_activation_;
      }
    }
    if (epilogue == Epilogue::Default) operands.bias = nullptr;
    const GemmConfig config{.transpose_b = Transpose::Yes, .epilogue = epilogue};
    if constexpr (block_scaled) {
      run_block_scaled_forward(x, config, operands);
    } else if constexpr (fp8) {
      using Forward = typename P::forward_format;
      auto& state = fp8_;
      ensure_shape(state.input, x.shape());
      ensure_shape(state.weight, weight_.shape());
      const bool record = this->training();
      bool transposes_cast = false;
      if constexpr (Backend<Device>::fp8_gemm_needs_k_major_operands) {
        if (record) {  // backward reads x^T and W^T; an evaluation forward needs neither
          auto& transposed = state.transposed;
          ensure_shape(transposed.input, Shape{in_features_, x.shape().rows()});
          ensure_shape(transposed.weight, Shape{in_features_, out_features_});
          state.scales.template cast<Forward>(Fp8Tensor::Input, x, state.input, transposed.input);
          state.scales.template cast<Forward>(Fp8Tensor::Weight, weight_.master(), state.weight,
                                              transposed.weight);
          transposes_cast = true;
        }
      }
      if (!transposes_cast) {
        state.scales.template cast<Forward>(Fp8Tensor::Input, x, state.input, record);
        state.scales.template cast<Forward>(Fp8Tensor::Weight, weight_.master(), state.weight, record);
      }
      Backend<Device>::template gemm_scaled<Forward, Forward, typename P::accumulation::fprop>(
          state.input, state.weight, output_, config, operands, state.scales.scale_inverse(Fp8Tensor::Input),
          state.scales.scale_inverse(Fp8Tensor::Weight));
    } else {
      Backend<Device>::template gemm<Compute>(x, weight_.compute(), output_, config, operands);
    }
    input_ = this->training() ? &x : nullptr;
    return output_;
  }

  /// @brief Accumulates dW and db from dy and, if asked, returns dx (valid until the next backward).
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    return run_backward(dy, /*activation_applied=*/false, input_grad, nullptr);
  }

  /// @brief `backward`, with the previous layer's ReLU gradient applied in the dx GEMM's epilogue:
  /// returns the previous layer's dZ, for its `backward_activation_applied`. `Sequential` calls it.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy,
                                    const ActivationGradientFusion<Device>& previous) {
    return run_backward(dy, /*activation_applied=*/false, true, &previous);
  }

  /// @brief What the next Linear's dx GEMM needs to apply this layer's ReLU gradient: the bit mask
  /// of the last training forward. Throws as `backward` does when no training forward ran.
  ActivationGradientFusion<Device> activation_gradient_fusion() requires(A == Activation::ReLU) {
    if (input_.empty()) throw_backward_without_saved_state(this->label(), this->training());
    return {.relu_mask = &relu_mask_};
  }

  /// @brief `backward` given dZ = dy * relu'(x), which the next layer computed after
  /// `activation_gradient_fusion()`.
  const Tensor<T, Device>* backward_activation_applied(const Tensor<T, Device>& dz,
                                                       bool input_grad) requires(A == Activation::ReLU) {
    return run_backward(dz, /*activation_applied=*/true, input_grad, nullptr);
  }

  /// @brief Both: this layer's ReLU gradient was applied by the next layer, and this layer applies
  /// the previous one's.
  const Tensor<T, Device>* backward_activation_applied(
      const Tensor<T, Device>& dz,
      const ActivationGradientFusion<Device>& previous) requires(A == Activation::ReLU) {
    return run_backward(dz, /*activation_applied=*/true, true, &previous);
  }

  /// @brief Under an FP8 precision, after each step's backward: the recipe's update of the layer's
  /// scales (`Fp8Scales::update`). `Trainer` calls it.
  void update_fp8_scales() requires fp8 { fp8_.scales.update(); }

  /// @brief Under an FP8 precision with delayed scaling: this step's amaxes of its three FP8 tensors
  /// (`Fp8Scales::step_amaxes`), which `Trainer` has reduced across processes under data parallelism
  /// before it calls `update_fp8_scales`. Empty under current scaling.
  [[nodiscard]] std::span<float> fp8_step_amaxes() noexcept requires fp8 { return fp8_.scales.step_amaxes(); }

  /// @brief Under an FP8 precision: calls `f(name, tensor)` on the scaling state (`Fp8Scales`'s
  /// buffers), which checkpoints save and load with the weights.
  template <class F>
  void for_each_buffer(F&& f) requires fp8 {
    fp8_.scales.for_each_buffer(f);
  }

  /// @brief Under an FP8 precision: bytes of the weight's FP8 codes the layer keeps between steps (and
  /// of their transpose on a backend that needs it); under a block-scaled one, of the weight's two
  /// quantized copies (codes and scales). `Trainer`'s memory report counts them with the weights, as
  /// it counts a 16-bit model's compute copy. 0 before the first forward.
  [[nodiscard]] std::int64_t weight_copy_bytes() const noexcept requires(fp8 || block_scaled) {
    if constexpr (block_scaled) {
      const auto& state = block_;
      return static_cast<std::int64_t>(state.weight.codes.size_bytes() + state.weight.scales.size_bytes() +
                                       state.weight_columns.codes.size_bytes() +
                                       state.weight_columns.scales.size_bytes());
    } else {
      std::int64_t bytes = static_cast<std::int64_t>(fp8_.weight.size_bytes());
      if constexpr (Backend<Device>::fp8_gemm_needs_k_major_operands)
        bytes += static_cast<std::int64_t>(fp8_.transposed.weight.size_bytes());
      return bytes;
    }
  }

  /// @brief Under a block-scaled precision: keys the stochastic rounding of the next backward passes
  /// by `key` (read through `key.step`, so the count must outlive them); `Trainer` binds its step.
  /// Without a bound step the layer counts its own backward passes.
  void bind_step(const StepKey& key) noexcept requires block_scaled { block_.step = key; }

  /// @brief Under an FP8 precision: the scales of the layer's input, weight and output gradient.
  [[nodiscard]] auto& fp8_scales() noexcept requires fp8 { return fp8_.scales; }

  /// @brief Calls f(name, parameter) for the weight, then the bias.
  template <class F>
  void for_each_parameter(F&& f) {
    f(std::string_view("weight"), weight_);
    if (bias_) f(std::string_view("bias"), *bias_);
  }

  /// @brief Drops the saved input pointer; backward then throws until the next forward.
  void forget_input() noexcept { input_ = nullptr; }

  /// @brief The settings another tool needs to rebuild the layer, under `torch.nn.Linear`'s names:
  /// in_features, out_features, bias, and the fused activation ("None", "ReLU" or "GELU").
  [[nodiscard]] LayerDescription describe() const {
    return {{"in_features", in_features_},
            {"out_features", out_features_},
            {"bias", bias_.has_value()},
            {"activation", std::string(activation_name(A))}};
  }

  /// @brief Input width.
  [[nodiscard]] std::int64_t in_features() const noexcept { return in_features_; }
  /// @brief Output width.
  [[nodiscard]] std::int64_t out_features() const noexcept { return out_features_; }
  /// @brief The weight parameter, [out_features, in_features].
  [[nodiscard]] WeightParam& weight() noexcept { return weight_; }
  /// @brief The bias parameter, or null without one.
  [[nodiscard]] Param* bias() noexcept { return bias_ ? &*bias_ : nullptr; }

 private:
  // dy is the upstream gradient, or dZ when `activation_applied` (the next layer applied this
  // layer's ReLU gradient). With `previous`, dx is the previous layer's dZ: the dx GEMM applies that
  // layer's ReLU gradient.
  const Tensor<T, Device>* run_backward(const Tensor<T, Device>& dy, bool activation_applied, bool input_grad,
                                        const ActivationGradientFusion<Device>* previous) {
    if (input_.empty()) throw_backward_without_saved_state(this->label(), this->training());
    require_shape(this->label().c_str(), "upstream gradient", dy.shape(), output_.shape());
    const Tensor<T, Device>* dz = &dy;
    if constexpr (A == Activation::ReLU) {
      if (!activation_applied) {
        ensure_shape(dz_, dy.shape());
        Backend<Device>::relu_backward(output_, dy, dz_);
        dz = &dz_;
      }
    } else if constexpr (A == Activation::GELU) {
      ensure_shape(dz_, dy.shape());
      Backend<Device>::gelu_backward(pre_activation_, dy, dz_);
      dz = &dz_;
    }
    if constexpr (block_scaled) {
      return run_block_scaled_backward(*dz, input_grad, previous);
    } else if constexpr (fp8) {
      return run_fp8_backward(*dz, input_grad, previous);
    } else {
      return run_gemm_backward(*dz, input_grad, previous);
    }
  }

  // backward's GEMMs in the compute type, from dZ (previous: as in run_backward).
  const Tensor<T, Device>* run_gemm_backward(const Tensor<T, Device>& dz, bool input_grad,
                                             const ActivationGradientFusion<Device>* previous) {
    // dW += dZ^T x (fp32 output, beta = 1 accumulates micro-batches; beta = 0 on the first one after
    // zero_grad); the bias gradient of this batch comes from the same GEMM's BGRAD epilogue.
    const auto weight_grad = weight_.grad_for_update();
    GemmOperands<Grad, Grad, Device> grad_operands;
    GemmConfig config{.transpose_a = Transpose::Yes, .beta = weight_grad.overwrite ? 0.0f : 1.0f};
    bool add_bias_grad = false;
    if (bias_) {
      // The epilogue overwrites its target: straight into the gradient on the first micro-batch,
      // into a scratch vector to be added on later ones.
      const auto bias_grad = bias_->grad_for_update();
      add_bias_grad = !bias_grad.overwrite;
      if (add_bias_grad) ensure_shape(bias_grad_, Shape{out_features_});
      config.epilogue = Epilogue::BGradA;
      grad_operands.bias_grad = add_bias_grad ? &bias_grad_ : &bias_grad.tensor;
    }
    Backend<Device>::template gemm<Compute>(dz, *input_, weight_grad.tensor, config, grad_operands);
    if (add_bias_grad) Backend<Device>::add_into(bias_->grad(), bias_grad_);
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, input_->shape());
    GemmConfig input_config;
    GemmOperands<T, accumulate_t<Compute>, Device> input_operands;
    if (previous != nullptr) {
      // The previous layer's dZ = (dZ W) * relu'(its pre-activation), in this GEMM's epilogue. Its
      // bias gradient stays with its own dW GEMM (BGradA): an epilogue bias gradient would come in
      // D's type, the compute type, on cuBLASLt.
      input_config.epilogue = Epilogue::DRelu;
      input_operands.relu_mask = previous->relu_mask;
    }
    Backend<Device>::template gemm<Compute>(dz, weight_.compute(), input_grad_, input_config, input_operands);
    return &input_grad_;
  }

  // backward's GEMMs under an FP8 precision: dZ cast into the backward format, dW += dZ^T x and dx =
  // dZ W from the codes forward cast (previous: as in run_backward), the bias gradient from dZ.
  const Tensor<T, Device>* run_fp8_backward(const Tensor<T, Device>& dz, bool input_grad,
                                            const ActivationGradientFusion<Device>* previous) {
    using Forward = typename P::forward_format;
    using Backward = typename P::backward_format;
    constexpr bool k_major = Backend<Device>::fp8_gemm_needs_k_major_operands;
    auto& state = fp8_;
    ensure_shape(state.output_grad, dz.shape());
    const auto weight_grad = weight_.grad_for_update();
    const float weight_beta = weight_grad.overwrite ? 0.0f : 1.0f;
    if constexpr (k_major) {
      // dW = dZ^T x from dZ^T [out, rows] and x^T [in, rows], both read along the rows (K).
      auto& transposed = state.transposed;
      ensure_shape(transposed.output_grad, Shape{out_features_, dz.shape().rows()});
      state.scales.template cast<Backward>(Fp8Tensor::OutputGradient, dz, state.output_grad,
                                           transposed.output_grad);
      Backend<Device>::template gemm_scaled<Backward, Forward, typename P::accumulation::wgrad>(
          transposed.output_grad, transposed.input, weight_grad.tensor,
          GemmConfig{.transpose_b = Transpose::Yes, .beta = weight_beta}, GemmOperands<Grad, Grad, Device>{},
          state.scales.scale_inverse(Fp8Tensor::OutputGradient),
          state.scales.scale_inverse(Fp8Tensor::Input));
    } else {
      state.scales.template cast<Backward>(Fp8Tensor::OutputGradient, dz, state.output_grad);
      Backend<Device>::template gemm_scaled<Backward, Forward, typename P::accumulation::wgrad>(
          state.output_grad, state.input, weight_grad.tensor,
          GemmConfig{.transpose_a = Transpose::Yes, .beta = weight_beta}, GemmOperands<Grad, Grad, Device>{},
          state.scales.scale_inverse(Fp8Tensor::OutputGradient),
          state.scales.scale_inverse(Fp8Tensor::Input));
    }
    sum_bias_grad(dz);
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, input_->shape());
    auto [input_config, input_operands] = input_gradient_gemm(previous);
    // dx = dZ W: from W itself [out, in], or, read along K, from W^T [in, out] transposed.
    const auto* weight_codes = &state.weight;
    if constexpr (k_major) {
      input_config.transpose_b = Transpose::Yes;
      weight_codes = &state.transposed.weight;
    }
    Backend<Device>::template gemm_scaled<Backward, Forward, typename P::accumulation::dgrad>(
        state.output_grad, *weight_codes, input_grad_, input_config, input_operands,
        state.scales.scale_inverse(Fp8Tensor::OutputGradient), state.scales.scale_inverse(Fp8Tensor::Weight));
    return &input_grad_;
  }

  // dx's GEMM under an FP8 or block-scaled precision: its config and operands, with the previous
  // layer's ReLU gradient in the epilogue (DRelu) where `previous` says so.
  struct InputGradientGemm {
    GemmConfig config;
    GemmOperands<T, Grad, Device> operands;
  };
  static InputGradientGemm input_gradient_gemm(const ActivationGradientFusion<Device>* previous) {
    InputGradientGemm gemm;
    if (previous != nullptr) {
      gemm.config.epilogue = Epilogue::DRelu;
      gemm.operands.relu_mask = previous->relu_mask;
    }
    return gemm;
  }

  // Under an FP8 or block-scaled precision: the bias gradient, the sum of the 16-bit dZ's rows in
  // fp32 (the GEMMs' operands are quantized; their sums would be of the codes).
  void sum_bias_grad(const Tensor<T, Device>& dz) {
    if (!bias_) return;
    const auto bias_grad = bias_->grad_for_update();
    if constexpr (std::is_same_v<Device, Host>) {
      Backend<Device>::conv2d_backward_bias(dz, bias_grad.tensor, bias_grad.overwrite);
    } else {
      // The GPU's convolution kernels come with cuDNN's header (conv2d.cuh), which a Linear's
      // translation unit need not include; batch norm's channel sums are the same reduction.
      if (bias_grad.overwrite) {
        Backend<Device>::batch_norm_channel_sums(dz, bias_grad.tensor);
      } else {
        ensure_shape(bias_grad_, Shape{out_features_});
        Backend<Device>::batch_norm_channel_sums(dz, bias_grad_);
        Backend<Device>::add_into(bias_->grad(), bias_grad_);
      }
    }
  }

  // forward's GEMM under a block-scaled precision: x and W quantized along K (and, in training, x^T
  // and W^T for backward), then y = x W^T with the epilogue `config` names.
  void run_block_scaled_forward(const Tensor<T, Device>& x, const GemmConfig& config,
                                const GemmOperands<T, Grad, Device>& operands) {
    using Recipe = typename P::forward_recipe;
    auto& state = block_;
    const BlockShape activation_blocks{1, Recipe::block_size};
    const BlockShape weight_blocks{Recipe::weight_block_rows, Recipe::block_size};
    Backend<Device>::template quantize_blocks<Recipe>(x, activation_blocks, state.input);
    Backend<Device>::template quantize_blocks<Recipe>(weight_.master(), weight_blocks, state.weight);
    if (this->training()) {  // backward reads x^T (wgrad, along the rows) and W^T (dgrad, along out)
      Backend<Device>::template quantize_blocks<Recipe>(
          x, activation_blocks, state.input_columns,
          BlockQuantizeOptions{.transpose = true, .hadamard = hadamard_wgrad_of<Recipe>()});
      Backend<Device>::template quantize_blocks<Recipe>(weight_.master(), weight_blocks, state.weight_columns,
                                                        BlockQuantizeOptions{.transpose = true});
    }
    GemmConfig product = config;
    product.transpose_b = Transpose::No;  // W is read along K as quantized
    Backend<Device>::template gemm_block_scaled<typename P::accumulation::fprop>(state.input, state.weight,
                                                                                 output_, product, operands);
  }

  // backward's GEMMs under a block-scaled precision: dZ quantized along out (dgrad) and, transposed,
  // along the rows (wgrad); dW += dZ^T x and dx = dZ W from forward's x^T and W^T (previous: as in
  // run_backward), the bias gradient from dZ.
  const Tensor<T, Device>* run_block_scaled_backward(const Tensor<T, Device>& dz, bool input_grad,
                                                     const ActivationGradientFusion<Device>* previous) {
    using Recipe = typename P::backward_recipe;
    constexpr bool stochastic = stochastic_gradients_of<Recipe>();
    auto& state = block_;
    const BlockShape blocks{1, Recipe::block_size};
    // Stochastic rounding's bits: the layer's seed, a stream per layer and copy, the step and
    // micro-batch folded into the key, so that every step rounds afresh and a rerun alike.
    const std::int64_t step = state.step.step != nullptr ? *state.step.step : state.own_step++;
    const std::uint64_t key = seed_ ^ (static_cast<std::uint64_t>(step) * 0x9E3779B97F4A7C15ull +
                                       static_cast<std::uint64_t>(state.step.micro_batch));
    Backend<Device>::template quantize_blocks<Recipe>(
        dz, blocks, state.output_grad,
        BlockQuantizeOptions{.stochastic = stochastic, .seed = key, .stream = 2 * stream_});
    Backend<Device>::template quantize_blocks<Recipe>(
        dz, blocks, state.output_grad_columns,
        BlockQuantizeOptions{.transpose = true,
                             .hadamard = hadamard_wgrad_of<Recipe>(),
                             .stochastic = stochastic,
                             .seed = key,
                             .stream = 2 * stream_ + 1});
    const auto weight_grad = weight_.grad_for_update();
    Backend<Device>::template gemm_block_scaled<typename P::accumulation::wgrad>(
        state.output_grad_columns, state.input_columns, weight_grad.tensor,
        GemmConfig{.beta = weight_grad.overwrite ? 0.0f : 1.0f}, GemmOperands<Grad, Grad, Device>{});
    sum_bias_grad(dz);
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, input_->shape());
    auto [input_config, input_operands] = input_gradient_gemm(previous);
    Backend<Device>::template gemm_block_scaled<typename P::accumulation::dgrad>(
        state.output_grad, state.weight_columns, input_grad_, input_config, input_operands);
    return &input_grad_;
  }

  // The ReLU/GELU epilogues add a bias; a bias-free layer adds zeros.
  const Tensor<T, Device>& zero_bias() {
    if (zero_bias_.empty()) zero_bias_ = Tensor<T, Device>(Shape{out_features_});
    return zero_bias_;
  }

  std::int64_t in_features_;
  std::int64_t out_features_;
  Options options_;
  WeightParam weight_;
  std::optional<Param> bias_;
  [[no_unique_address]] std::conditional_t<fp8, detail::LinearFp8State<P, Device>, detail::NoFp8State> fp8_;
  [[no_unique_address]] std::conditional_t<block_scaled, detail::LinearBlockState<P, Device>,
                                           detail::NoBlockState>
      block_;
  std::uint64_t seed_ = 0, stream_ = 0;    // initialize's: the key of stochastic rounding
  SavedPointer<Tensor<T, Device>> input_;  // the previous layer's output buffer, kept alive by it
  Tensor<T, Device> output_;
  Tensor<T, Device> pre_activation_;        // GELU's aux: backward evaluates gelu' here
  Tensor<std::int32_t, Device> relu_mask_;  // ReLU's bit mask (x > 0), for the next layer's backward
  Tensor<T, Device> dz_;
  Tensor<T, Device> input_grad_;
  Tensor<Grad, Device> bias_grad_;
  Tensor<T, Device> zero_bias_;
};

}  // namespace mpx::nn
