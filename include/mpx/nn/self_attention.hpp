// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Multi-head self-attention, bidirectional (`nn::SelfAttention`: attention over an image's
/// pixels in a diffusion UNet), bidirectional over padded sequences (`nn::PaddedSelfAttention`: an
/// encoder's key-padding mask, the lengths set through `nn::PaddedSequences`) or causal
/// (`nn::CausalSelfAttention`, nn/causal_self_attention.hpp): one implementation,
/// `nn::BasicSelfAttention`, with the mask and the padding as template parameters. Batched GEMMs in
/// the compute type (fp32 accumulation), the scores, mask and softmax in fp32.

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "mpx/backend/attention_spec.hpp"
#include "mpx/backend/backend.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/linear.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

/// @brief Whether an attention layer also masks the padding at the end of each sequence.
enum class KeyPadding {
  None,     ///< every key the mask allows
  ByLength  ///< only the first `length` keys of each sequence (its real tokens): PyTorch's
            ///< `key_padding_mask`, the lengths from `nn::PaddedSequences::set_lengths`
};

/// @brief y = proj(concat_h softmax(Q_h K_h^T / sqrt(d) + mask) V_h) over x [batch, sequence,
/// embed_dim], with [Q | K | V] = qkv(x): `torch.nn.MultiheadAttention(embed_dim, num_heads,
/// batch_first=True)` applied as self-attention (query = key = value = x), with the mask `Mask`:
/// `AttentionMask::Bidirectional` (every position attends to every position: `nn::SelfAttention`) or
/// `AttentionMask::Causal` (position t attends to positions 0 .. t: GPT-2's, `nn::CausalSelfAttention`).
/// With `Padding = KeyPadding::ByLength` (`nn::PaddedSelfAttention`), the keys at positions >= the
/// sequence's length are masked too, in every head and for every query (PyTorch's `key_padding_mask`
/// with True at those positions): a padded position gets no attention, so its key and value get no
/// gradient, and a sequence of length 0 gives proj's bias at every position (zeros before it), never
/// NaN. The queries at padded positions still attend to the real keys; their outputs are what the
/// loss must ignore (an ignore index, or pooling that reads real positions only).
/// Name one of the aliases; this template is what they share.
///
/// Inputs of rank above 3, [batch, d1, ..., dk, embed_dim], are the sequence of their d1 * ... * dk
/// positions in row-major order (no copy: the head permutes read them so), and the output has the
/// input's shape: a channels-last image [N, H, W, C] attends over its H * W pixels, as a diffusion
/// UNet's attention block does after `x.flatten(2).transpose(1, 2)` in PyTorch.
///
/// Parameters, under the names a PyTorch peer loads them by: "qkv.weight" [3C, C], "qkv.bias" [3C],
/// "proj.weight" [C, C], "proj.bias" [C] (C = embed_dim; `nn.Linear`'s layout; no biases with
/// `{.bias = false}`); `nn.MultiheadAttention`'s `in_proj_weight`, `in_proj_bias` and `out_proj`.
/// Q, K, V are the three C-wide column groups of the qkv output and head h reads columns
/// h d .. (h + 1) d of each (d = C / num_heads), as GPT-2's split + view(B, T, H, d).
///
/// Precision (autocast's rules): the projections and the two batched products S = Q K^T / sqrt(d)
/// and O = P V run in the compute type with fp32 accumulation, 1 / sqrt(d) folded into the GEMM's
/// alpha; S is produced in fp32, so q.k beyond fp16's range does not overflow; the mask and the
/// softmax are fp32 math, P rounded once into the compute type (it is the P V operand). A row with
/// no allowed key would give zeros, never NaN (with these masks every row has at least one key).
/// Backward: dP = dO V^T in fp32; dV = P^T dO; dS = P (dP - rowsum(dP P)) in fp32 with masked
/// entries 0, rounded into the compute type; dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d) (alpha
/// again); dQ, dK, dV merged into the qkv gradient, then the projections' own backward (fp32 weight
/// gradients).
///
/// Memory, per token (one position of one sequence), with C = embed_dim, H heads, T = sequence,
/// s = bytes of the compute type (4 fp32, 2 bf16/fp16), fp32 scores 4 bytes:
/// - saved for backward: Q, K, V head-major (3 C s), P in the compute type (H T s), the merged heads'
///   output, which is proj's input (C s); qkv keeps only a pointer to x. That is (4 C + H T) s
///   bytes: 6144 B in fp32, 3072 B in bf16/fp16 at C = 256, H = 4, T = 128.
/// - buffers the layer keeps between calls but backward does not read: the qkv output (3 C s), the
///   fp32 scores (4 H T; reused for dP in backward), the heads' output before merging (C s; reused
///   for dO), the output (C s).
/// - backward's buffers: dS (H T s), dQ, dK, dV (3 C s), the qkv gradient (3 C s), the projections'
///   input gradients (C s each).
/// Nothing is recomputed; the causal mask saves no memory (P is stored whole). In evaluation mode
/// (nn/training_mode.hpp) forward saves nothing: Q, K, V, the scores, P and the heads' output are
/// freed when forward returns, so what an evaluation keeps per token is the qkv output (3 C s), the
/// merged heads (C s) and the output (C s), and the transient peak is one layer's
/// (4 C s + 4 H T + H T s), whatever the depth of the model.
///
/// The fused path (bidirectional layers on a device whose backend has one: mpx::Cuda, in a program
/// that includes <mpx/backend/cuda/fused_attention.cuh>, with bf16 or fp16 compute and a head width
/// cuDNN takes; docs/cuda.md): forward runs cuDNN's scaled-dot-product attention on Q, K, V read in
/// place from the qkv output, writing the merged heads directly, and backward its backward into the
/// qkv gradient. The math is the same contract (fp32 scores and softmax, P rounded into the compute
/// type for P V, fp32 accumulation) in cuDNN's order, an online softmax, so results differ from the
/// batched-GEMM path's in the last bits. It saves, per token, the qkv output (3 C s, the qkv
/// projection's own buffer), the merged heads (C s, proj's input) and the softmax's fp32 log-sum-exp
/// (4 H bytes), and keeps neither P nor the scores: (4 C s + 4 H) bytes, 2064 B in bf16 at C = 256,
/// H = 4, whatever T. Each forward chooses (`Backend<Device>::attention_fused_applies`, then cuDNN
/// accepting the shape, in training its backward's too), `attention_kernel()` says what it chose, and
/// backward follows its forward's choice.
///
/// @tparam P precision policy; @tparam Device `Host` or `Cuda`; @tparam Mask the softmax's mask;
/// @tparam Padding whether the sequences' padding keys are masked too.
template <PrecisionPolicy P, class Device, AttentionMask Mask, KeyPadding Padding = KeyPadding::None>
class BasicSelfAttention : public LayerBase<BasicSelfAttention<P, Device, Mask, Padding>, P, Device> {
  static_assert(Padding == KeyPadding::None || Mask == AttentionMask::Bidirectional,
                "mpx::nn::BasicSelfAttention: key padding is for bidirectional attention (an encoder)");
  using Compute = typename P::compute_type;
  using T = compute_t<P>;
  using Acc = accumulate_t<P>;
  using Projection = Linear<P, Activation::None, Device>;
  using Base = LayerBase<BasicSelfAttention, P, Device>;
  // Whether forward may take the fused path: bidirectional attention on a backend that has one.
  static constexpr bool fused_attention_possible =
      Mask == AttentionMask::Bidirectional && Backend<Device>::has_fused_attention;

 public:
  /// @brief Layer name used in messages and model descriptions: "CausalSelfAttention",
  /// "SelfAttention" or "PaddedSelfAttention".
  static constexpr std::string_view kind = Mask == AttentionMask::Causal     ? "CausalSelfAttention"
                                           : Padding == KeyPadding::ByLength ? "PaddedSelfAttention"
                                                                             : "SelfAttention";
  /// @brief The mask of the attention's softmax.
  static constexpr AttentionMask mask = Mask;
  /// @brief Whether the sequences' padding keys are masked.
  static constexpr KeyPadding padding = Padding;
  using Base::forward;

  /// @brief Construction options.
  struct Options {
    /// @brief Whether the qkv and output projections have biases.
    bool bias = true;
  };

  /// @brief Attention over `embed_dim` features split into `num_heads` heads of embed_dim / num_heads.
  /// @param embed_dim the width C of the input and output.
  /// @param num_heads the number of heads H; it divides C.
  /// @param options   whether the projections have biases.
  /// @throws mpx::invalid_argument unless both are positive and num_heads divides embed_dim.
  BasicSelfAttention(std::int64_t embed_dim, std::int64_t num_heads, Options options = {})
      : embed_dim_(checked_embed_dim(embed_dim, num_heads)),
        num_heads_(num_heads),
        head_dim_(embed_dim / num_heads),
        bias_(options.bias),
        qkv_(embed_dim, 3 * embed_dim, {.bias = options.bias}),
        proj_(embed_dim, embed_dim, {.bias = options.bias}) {
    set_label(this->label());
    initialize(0, 0);
  }

  /// @brief Re-initialises both projections from (seed, stream) (Xavier-uniform weights, zero biases).
  /// @param seed   the model's seed.
  /// @param stream the layer's stream (its projections take streams 0 and 1 below it).
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    qkv_.initialize(seed, nested_stream(stream, 0));
    proj_.initialize(seed, nested_stream(stream, 1));
  }

  /// @brief Attention over x [batch, sequence, embed_dim], or, bidirectional only,
  /// [batch, d1, ..., dk, embed_dim] as the sequence of its d1 * ... * dk positions in row-major order
  /// (a channels-last image's pixels); returns a tensor of x's shape (valid until the next forward).
  /// @param x the input, in the compute type; kept by pointer for backward in training.
  /// @throws mpx::shape_error naming the layer and x's shape unless x has rank 3 (or more, for the
  /// bidirectional layer), embed_dim features, and at least one sample and one position; with key
  /// padding, mpx::error outside a `PaddedSequences` model and mpx::shape_error unless it set one
  /// length per sample.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    // A causal mask over an image's pixels in raster order is almost never what was meant.
    const bool rank_accepted = Mask == AttentionMask::Causal ? x.rank() == 3 : x.rank() >= 3;
    if (!rank_accepted || x.shape().cols() != embed_dim_ || x.shape()[0] == 0 ||
        attention_sequence(x.shape()) == 0) {
      if constexpr (Mask == AttentionMask::Causal) {
        throw shape_error(mpx::detail::concat(this->label(), ": expected input of shape [batch, sequence, ",
                                              embed_dim_, "] with batch and sequence at least 1, received ",
                                              x.shape()));
      }
      throw shape_error(mpx::detail::concat(this->label(), ": expected input of shape [batch, sequence, ",
                                            embed_dim_, "] (or [batch, d1, ..., dk, ", embed_dim_,
                                            "]) with batch and sequence at least 1, received ", x.shape()));
    }
    if constexpr (Padding == KeyPadding::ByLength) check_lengths(x.shape());
    const auto& qkv = qkv_.forward(x);
    if (this->training()) {
      if (!attend_fused(qkv, true)) attend(qkv, {q_, k_, v_, scores_, probs_, heads_out_});
      input_ = &x;
    } else {
      if (!attend_fused(qkv, false)) {
        Tensor<T, Device> q, k, v, probs, heads_out;  // freed on return: evaluation saves nothing
        Tensor<Acc, Device> scores;
        attend(qkv, {q, k, v, scores, probs, heads_out});
      }
      input_ = nullptr;
    }
    return proj_.forward(merged_);
  }

  /// @brief Accumulates the four parameter gradients from dy and, if asked, returns dx (valid until
  /// the next backward).
  /// @param dy         dL/dy, of the forward's output shape.
  /// @param input_grad whether to compute dx (false returns null).
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    if (input_.empty()) throw_backward_without_saved_state(this->label(), this->training());
    require_shape(this->label().c_str(), "upstream gradient", dy.shape(), merged_.shape());
    const Tensor<T, Device>& d_merged = *proj_.backward(dy, true);
    ensure_shape(d_qkv_, merged_.shape().with_last(3 * embed_dim_));
    if (kernel_ == AttentionKernel::Fused) {
      if constexpr (fused_attention_possible) {
        Backend<Device>::attention_fused_backward(*fused_qkv_, key_counts(), merged_, d_merged, stats_,
                                                  d_qkv_, num_heads_);
      }
    } else {
      backward_batched_gemm(d_merged);
    }
    return qkv_.backward(d_qkv_, input_grad);
  }

  /// @brief Which kernels the last forward ran: `AttentionKernel::Fused` (cuDNN's SDPA; see the class
  /// comment) or `AttentionKernel::BatchedGemm` (also before any forward).
  [[nodiscard]] AttentionKernel attention_kernel() const noexcept { return kernel_; }

  /// @brief Calls f(name, parameter) for "qkv.weight", "qkv.bias", "proj.weight", "proj.bias".
  /// @tparam F a callable taking (std::string_view, Parameter&).
  /// @param f the callable.
  template <class F>
  void for_each_parameter(F&& f) {
    const auto prefixed = [&f](std::string_view prefix) {
      return [&f, prefix](std::string_view local, auto& parameter) {
        std::string name(prefix);
        name.append(local);
        f(std::string_view(name), parameter);
      };
    };
    qkv_.for_each_parameter(prefixed("qkv."));
    proj_.for_each_parameter(prefixed("proj."));
  }

  /// @brief The name used in error messages ("layers.1.block.1 (CausalSelfAttention)"); the
  /// projections are named after it ("layers.1.block.1.qkv (Linear)").
  /// @param label the layer's path and kind.
  void set_label(std::string label) {
    Base::set_label(std::move(label));
    const std::string path(label_path(this->label()));
    qkv_.set_label(path + ".qkv (Linear)");
    proj_.set_label(path + ".proj (Linear)");
  }
  /// @brief Drops the saved input pointer; backward then throws until the next forward.
  void forget_input() noexcept {
    input_ = nullptr;
    fused_qkv_ = nullptr;
    qkv_.forget_input();
  }

  /// @brief Calls `f(qkv)`, then `f(proj)`: the two projections (nn::for_each_layer).
  /// @tparam F a callable taking a layer.
  /// @param f the callable.
  template <class F>
  void for_each_child(F&& f) {
    f(qkv_);
    f(proj_);
  }

  /// @brief Training (`true`, the default) or evaluation mode, for the layer and its projections:
  /// in evaluation, forward frees its intermediates on return and backward throws until a
  /// training-mode forward has run (see nn/training_mode.hpp).
  /// @param training true for training, false for evaluation.
  void set_training(bool training) noexcept {
    Base::set_training(training);
    qkv_.set_training(training);
    proj_.set_training(training);
  }

  /// @brief The settings another tool needs to rebuild the layer: embed_dim, num_heads (as
  /// `torch.nn.MultiheadAttention` names them) and bias.
  [[nodiscard]] LayerDescription describe() const {
    return {{"embed_dim", embed_dim_}, {"num_heads", num_heads_}, {"bias", bias_}};
  }

  /// @brief Width of the input and output (C).
  [[nodiscard]] std::int64_t embed_dim() const noexcept { return embed_dim_; }
  /// @brief Number of heads (H).
  [[nodiscard]] std::int64_t num_heads() const noexcept { return num_heads_; }
  /// @brief Width of one head (C / H).
  [[nodiscard]] std::int64_t head_dim() const noexcept { return head_dim_; }
  /// @brief Reads each sequence's length (its number of real tokens) from `lengths` [batch] from now
  /// on (`PaddedSequences` calls it; the tensor outlives the layer's use of it).
  /// @param lengths the lengths, on the layer's device.
  void bind_sequence_lengths(const Tensor<std::int32_t, Device>* lengths) noexcept
      requires(Padding == KeyPadding::ByLength) {
    lengths_ = lengths;
  }

  /// @brief The fused q, k, v projection, C -> 3C.
  [[nodiscard]] Projection& qkv() noexcept { return qkv_; }
  /// @brief The output projection, C -> C.
  [[nodiscard]] Projection& proj() noexcept { return proj_; }

 private:
  static std::int64_t checked_embed_dim(std::int64_t embed_dim, std::int64_t num_heads) {
    if (embed_dim <= 0 || num_heads <= 0 || embed_dim % num_heads != 0) {
      throw invalid_argument(
          mpx::detail::concat("mpx::nn::", kind, ": embed_dim = ", embed_dim, " and num_heads = ", num_heads,
                              " are invalid; both must be positive and num_heads must divide embed_dim"));
    }
    return embed_dim;
  }
  // Where one forward puts its intermediates: the layer's buffers in training (backward reads
  // them), a forward's locals in evaluation.
  struct Intermediates {
    Tensor<T, Device>& q;
    Tensor<T, Device>& k;
    Tensor<T, Device>& v;
    Tensor<Acc, Device>& scores;
    Tensor<T, Device>& probs;
    Tensor<T, Device>& heads_out;
  };

  // softmax(Q K^T / sqrt(d) + mask) V from the qkv projection [batch, ..., 3C], merged into
  // merged_ [batch, ..., C] (the input's shape).
  void attend(const Tensor<T, Device>& qkv, Intermediates buffers) {
    kernel_ = AttentionKernel::BatchedGemm;
    const std::int64_t batch = qkv.shape()[0];
    const std::int64_t sequence = attention_sequence(qkv.shape());
    const Shape heads{batch, num_heads_, sequence, head_dim_};
    const Shape scores{batch, num_heads_, sequence, sequence};
    for (Tensor<T, Device>* buffer : {&buffers.q, &buffers.k, &buffers.v, &buffers.heads_out})
      ensure_shape(*buffer, heads);
    Backend<Device>::attention_split_heads(qkv, 0, buffers.q);
    Backend<Device>::attention_split_heads(qkv, embed_dim_, buffers.k);
    Backend<Device>::attention_split_heads(qkv, 2 * embed_dim_, buffers.v);
    ensure_shape(buffers.scores, scores);
    ensure_shape(buffers.probs, scores);
    const std::int64_t matrices = batch * num_heads_;
    Backend<Device>::template gemm<Compute>(
        buffers.q, buffers.k, buffers.scores,
        GemmConfig{.transpose_b = Transpose::Yes, .alpha = scale(), .batch_count = matrices});
    Backend<Device>::attention_softmax_forward(buffers.scores, buffers.probs, Mask, key_counts());
    Backend<Device>::template gemm<Compute>(buffers.probs, buffers.v, buffers.heads_out,
                                            GemmConfig{.batch_count = matrices});
    ensure_shape(merged_, qkv.shape().with_last(embed_dim_));
    Backend<Device>::attention_merge_heads(buffers.heads_out, 0, merged_);
  }

  // The batched-GEMM path's backward from dL/d(merged heads) into d_qkv_ (shaped by the caller).
  void backward_batched_gemm(const Tensor<T, Device>& d_merged) {
    const std::int64_t matrices = q_.shape()[0] * num_heads_;
    Tensor<T, Device>& d_out = heads_out_;  // the heads' output is not needed again: dO goes there
    Backend<Device>::attention_split_heads(d_merged, 0, d_out);
    Tensor<Acc, Device>& d_probs = scores_;  // likewise the scores: dP goes there
    Backend<Device>::template gemm<Compute>(
        d_out, v_, d_probs, GemmConfig{.transpose_b = Transpose::Yes, .batch_count = matrices});
    for (Tensor<T, Device>* buffer : {&dq_, &dk_, &dv_}) ensure_shape(*buffer, q_.shape());
    Backend<Device>::template gemm<Compute>(
        probs_, d_out, dv_, GemmConfig{.transpose_a = Transpose::Yes, .batch_count = matrices});
    ensure_shape(d_scores_, probs_.shape());
    Backend<Device>::attention_softmax_backward(probs_, d_probs, d_scores_, Mask, key_counts());
    Backend<Device>::template gemm<Compute>(d_scores_, k_, dq_,
                                            GemmConfig{.alpha = scale(), .batch_count = matrices});
    Backend<Device>::template gemm<Compute>(
        d_scores_, q_, dk_,
        GemmConfig{.transpose_a = Transpose::Yes, .alpha = scale(), .batch_count = matrices});
    Backend<Device>::attention_merge_heads(dq_, 0, d_qkv_);
    Backend<Device>::attention_merge_heads(dk_, embed_dim_, d_qkv_);
    Backend<Device>::attention_merge_heads(dv_, 2 * embed_dim_, d_qkv_);
  }

  // The fused path's forward, where the device and the layer have one and it takes this problem:
  // merged_ from the qkv projection's output, and in training the softmax statistics, the qkv
  // output kept for backward. Returns whether it ran (attend() runs otherwise).
  bool attend_fused(const Tensor<T, Device>& qkv, bool training) {
    if constexpr (fused_attention_possible) {
      if (!Backend<Device>::template attention_fused_applies<T>(head_dim_)) return false;
      ensure_shape(merged_, qkv.shape().with_last(embed_dim_));
      if (training) ensure_shape(stats_, Shape{qkv.shape()[0], num_heads_, attention_sequence(qkv.shape())});
      if (!Backend<Device>::attention_fused_forward(qkv, key_counts(), merged_, training ? &stats_ : nullptr,
                                                    num_heads_)) {
        return false;
      }
      kernel_ = AttentionKernel::Fused;
      fused_qkv_ = training ? &qkv : nullptr;
      return true;
    } else {
      return false;
    }
  }

  // The softmax's key counts: the sequences' lengths with key padding, none otherwise.
  [[nodiscard]] const Tensor<std::int32_t, Device>* key_counts() const noexcept {
    if constexpr (Padding == KeyPadding::ByLength) {
      return lengths_;
    } else {
      return nullptr;
    }
  }
  void check_lengths(const Shape& x) const {
    if (lengths_ == nullptr || lengths_->rank() != 1) {
      throw error(
          mpx::detail::concat(this->label(),
                              ": no sequence lengths; a PaddedSelfAttention runs inside an "
                              "nn::PaddedSequences model, whose set_lengths(...) comes before its forward"));
    }
    if (lengths_->shape()[0] != x[0]) {
      throw shape_error(mpx::detail::concat(this->label(), ": ", lengths_->shape()[0],
                                            " sequence lengths set for a batch of ", x[0], " (input ", x,
                                            ")"));
    }
  }

  // 1/sqrt(d), the GEMMs' alpha (a float, as GemmConfig holds it).
  [[nodiscard]] float scale() const noexcept {
    return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim_)));
  }

  std::int64_t embed_dim_;
  std::int64_t num_heads_;
  std::int64_t head_dim_;
  bool bias_;
  Projection qkv_;
  Projection proj_;
  SavedPointer<Tensor<T, Device>> input_;  // set by forward; a moved layer needs a new one
  Tensor<T, Device> q_, k_, v_;            // [batch, heads, sequence, head_dim], saved for backward
  Tensor<T, Device> heads_out_;            // O = P V, head-major; dO in backward
  Tensor<Acc, Device> scores_;             // S in fp32; dP in backward
  Tensor<T, Device> probs_;                // P in the compute type, saved for backward
  Tensor<T, Device> merged_;               // O merged to [batch, sequence, C]: proj's input
  Tensor<T, Device> d_scores_;
  Tensor<T, Device> dq_, dk_, dv_;
  Tensor<T, Device> d_qkv_;
  const Tensor<std::int32_t, Device>* lengths_ = nullptr;  // [batch], key padding only
  AttentionKernel kernel_ = AttentionKernel::BatchedGemm;  // the last forward's path
  SavedPointer<Tensor<T, Device>> fused_qkv_;  // the fused path's saved qkv output (qkv's own buffer)
  Tensor<float, Device> stats_;                // the fused path's softmax log-sum-exp [batch, heads, T]
};

/// @brief Bidirectional multi-head self-attention: every position attends to every position
/// (`torch.nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)` with query = key = value
/// and no mask). Over [batch, sequence, C], or a channels-last image [N, H, W, C] as the sequence of
/// its H * W pixels; see `BasicSelfAttention`.
/// @tparam P precision policy; @tparam Device `Host` or `Cuda`.
template <PrecisionPolicy P, class Device = Host>
using SelfAttention = BasicSelfAttention<P, Device, AttentionMask::Bidirectional>;

/// @brief Bidirectional multi-head self-attention over padded sequences: every position attends to
/// the real tokens of its sequence, the first `length` positions (`torch.nn.MultiheadAttention` with
/// `key_padding_mask` True from `length` on). The lengths come from the `nn::PaddedSequences` model
/// around it (`set_lengths` before each forward); parameters, precision and memory as
/// `BasicSelfAttention`'s.
/// @tparam P precision policy; @tparam Device `Host` or `Cuda`.
template <PrecisionPolicy P, class Device = Host>
using PaddedSelfAttention = BasicSelfAttention<P, Device, AttentionMask::Bidirectional, KeyPadding::ByLength>;

}  // namespace mpx::nn
