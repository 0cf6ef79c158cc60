// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::PositionalEmbedding`: a learned position table added to a sequence of activations,
/// as GPT-2's `wpe`.

#include <cstdint>
#include <string>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/embedding_spec.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/parameter.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

/// @brief Construction options of `PositionalEmbedding` (outside the class template, as
/// `EmbeddingOptions`).
struct PositionalEmbeddingOptions {
  /// @brief Standard deviation of the normal initial weights (mean 0); 0.02 as GPT-2 and nanoGPT.
  double init_std = 0.02;
};

/// @brief y[b, t, :] = x[b, t, :] + weight[t, :] for x [batch, sequence, embedding_dim] in the
/// compute type, sequence <= max_positions; weight [max_positions, embedding_dim] is named
/// "weight" (GPT-2's `wpe`, a `torch.nn.Embedding(max_positions, embedding_dim)` applied to
/// `arange(sequence)`).
///
/// The sum is taken in fp32 (the accumulate type of the compute type; fp64 under fp64) from the master
/// weights, which need no compute copy, and rounded once into the compute type. Backward
/// accumulates dW[t] += dy[b, t] over b in batch order in the accumulate type (fp32), the same bits
/// on every run and device, and returns dy itself as dx (the derivative in x is the identity), so it
/// saves nothing and copies nothing: the layer holds only its output.
///
/// @tparam P precision policy; @tparam Device `Host` or `Cuda`.
template <PrecisionPolicy P, class Device = Host>
class PositionalEmbedding : public LayerBase<PositionalEmbedding<P, Device>, P, Device> {
  using T = compute_t<P>;
  using Param = MasterParameter<P, Device>;  // read in the master type (fp32 math): no compute copy

 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "PositionalEmbedding";

  /// @brief Construction options (see `PositionalEmbeddingOptions`).
  using Options = PositionalEmbeddingOptions;

  /// @brief A table for sequences of up to `max_positions` tokens of width `embedding_dim`,
  /// initialised from (0, 0).
  PositionalEmbedding(std::int64_t max_positions, std::int64_t embedding_dim, Options options = {})
      : max_positions_(max_positions),
        embedding_dim_(embedding_dim),
        options_(options),
        weight_("weight", Shape{max_positions, embedding_dim}) {
    if (max_positions <= 0 || embedding_dim <= 0) {
      throw invalid_argument(
          mpx::detail::concat("mpx::nn::PositionalEmbedding: max_positions and embedding_dim must be "
                              "positive, got max_positions = ",
                              max_positions, ", embedding_dim = ", embedding_dim));
    }
    if (!(options.init_std >= 0.0)) {
      throw invalid_argument(mpx::detail::concat(
          "mpx::nn::PositionalEmbedding: init_std = ", options.init_std, " must be non-negative"));
    }
    initialize(0, 0);
  }

  /// @brief Re-initialises the weight to N(0, init_std^2) from (seed, stream): element i draws
  /// `normal_at(0, init_std, seed, 2 stream, i)`, the same values on every machine and device.
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    Backend<Device>::fill_normal(weight_.master(), 0.0, options_.init_std, seed, 2 * stream);
    weight_.refresh_compute_copy();
  }

  /// @brief x plus the first `sequence` rows of the table, broadcast over the batch. Backward needs
  /// nothing from x, so x may be a temporary.
  /// @throws mpx::shape_error naming the layer, the sequence length and max_positions when the
  /// sequence is longer than the table, or the width differs.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    validate_positional_embedding(this->label().c_str(), x, weight_.master());
    ensure_shape(output_, x.shape());
    Backend<Device>::positional_embedding_forward(x, weight_.master(), output_);
    forward_done_ = true;
    return output_;
  }

  /// @brief Accumulates dW (+=, in the accumulate type, in batch order); returns `&dy` (dx = dy) when
  /// `input_grad`, else null.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(forward_done_, dy.shape(), output_.shape());
    Backend<Device>::positional_embedding_backward(dy, weight_.grad());
    return input_grad ? &dy : nullptr;
  }

  /// @brief Calls `f("weight", parameter)`.
  template <class F>
  void for_each_parameter(F&& f) {
    f(std::string_view("weight"), weight_);
  }

  /// @brief Makes backward throw until the next forward (nothing else is saved).
  void forget_input() noexcept { forward_done_ = false; }

  /// @brief The settings another tool needs to rebuild the layer: max_positions and embedding_dim
  /// (a `torch.nn.Embedding(max_positions, embedding_dim)` holds the same table).
  [[nodiscard]] LayerDescription describe() const {
    return {{"max_positions", max_positions_}, {"embedding_dim", embedding_dim_}};
  }

  /// @brief The longest sequence the table covers.
  [[nodiscard]] std::int64_t max_positions() const noexcept { return max_positions_; }
  /// @brief Width of a row.
  [[nodiscard]] std::int64_t embedding_dim() const noexcept { return embedding_dim_; }
  /// @brief The weight parameter, [max_positions, embedding_dim], in the master type.
  [[nodiscard]] Param& weight() noexcept { return weight_; }

 private:
  std::int64_t max_positions_;
  std::int64_t embedding_dim_;
  Options options_;
  Param weight_;
  Tensor<T, Device> output_;
  bool forward_done_ = false;
};

}  // namespace mpx::nn
