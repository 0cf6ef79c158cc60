// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::TokenTypeEmbedding`: BERT's segment embedding, a learned row per token type added to
/// each token's features (type 0 for a single sentence; 0 and 1 for the two halves of a pair).

#include <cstdint>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/embedding_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/parameter.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

/// @brief The token types of the next forward, one per token of the padded batch: set by
/// `nn::PaddedSequences::set_token_types` (which shapes them [N, T] in its forward), read by its
/// `TokenTypeEmbedding` layers. Rank 0 (none set) means every token is of type 0.
/// @tparam Device where the layers run.
template <class Device>
struct TokenTypes {
  Tensor<std::int32_t, Host> host;      ///< checked against the batch and the table in forward
  Tensor<std::int32_t, Device> device;  ///< the same types where the layer runs
};

/// @brief Construction options of `TokenTypeEmbedding` (outside the class template, as
/// `EmbeddingOptions`).
struct TokenTypeEmbeddingOptions {
  /// @brief Standard deviation of the normal initial weights (mean 0); 0.02 as BERT.
  double init_std = 0.02;
};

/// @brief y[n, t, :] = x[n, t, :] + weight[type[n, t], :] for x [N, T, embedding_dim] in the compute
/// type; weight [num_types, embedding_dim] is named "weight" (BERT's `token_type_embeddings`, a
/// `torch.nn.Embedding(num_types, embedding_dim)` applied to the token type ids).
///
/// The types come from the `nn::PaddedSequences` model around the layer (`set_token_types`, one per
/// token); when none were set every token is of type 0, BERT's default for single sentences. The
/// row is read from the compute copy and added to x in the accumulate type, rounded once (exact in
/// fp32). Backward accumulates dW[type] += dy at that type's tokens, in token order and in the
/// accumulate type (the `Embedding` layer's kernel: the same bits on every run and device), and
/// returns dy itself as dx.
/// @tparam P precision policy; @tparam Device `Host` or `Cuda`.
template <PrecisionPolicy P, class Device = Host>
class TokenTypeEmbedding : public LayerBase<TokenTypeEmbedding<P, Device>, P, Device> {
  using T = compute_t<P>;
  using Param = Parameter<P, Device>;

 public:
  /// @brief Layer name used in messages and model descriptions.
  static constexpr std::string_view kind = "TokenTypeEmbedding";
  using LayerBase<TokenTypeEmbedding, P, Device>::forward;

  /// @brief Construction options (see `TokenTypeEmbeddingOptions`).
  using Options = TokenTypeEmbeddingOptions;

  /// @brief A table of `num_types` rows of `embedding_dim` values, initialised from (0, 0).
  /// @throws mpx::invalid_argument unless both are positive and init_std is non-negative.
  TokenTypeEmbedding(std::int64_t num_types, std::int64_t embedding_dim, Options options = {})
      : num_types_(num_types),
        embedding_dim_(embedding_dim),
        options_(options),
        weight_("weight", Shape{num_types, embedding_dim}) {
    if (num_types <= 0 || num_types > (std::int64_t{1} << 31) - 1 || embedding_dim <= 0 ||
        !(options.init_std >= 0.0)) {
      throw invalid_argument(mpx::detail::concat(
          "mpx::nn::TokenTypeEmbedding: num_types must be in [1, 2^31), embedding_dim positive and init_std "
          "non-negative, got num_types = ",
          num_types, ", embedding_dim = ", embedding_dim, ", init_std = ", options.init_std));
    }
    initialize(0, 0);
  }

  /// @brief Re-initialises the weight to N(0, init_std^2) from (seed, stream), as `Embedding` does.
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    Backend<Device>::fill_normal(weight_.master(), 0.0, options_.init_std, seed, 2 * stream);
    weight_.refresh_compute_copy();
  }

  /// @brief Reads the token types from `types` from now on (`PaddedSequences` calls it).
  /// @param types the model's token types; they outlive the layer's use of them.
  void bind_token_types(const TokenTypes<Device>* types) noexcept { types_ = types; }

  /// @brief x plus each token's type row (valid until the next forward).
  /// @param x sequences [N, T, embedding_dim].
  /// @throws mpx::shape_error naming the layer unless x is [N, T, embedding_dim] and the token types,
  ///         when set, are N T; mpx::invalid_argument naming the first type outside [0, num_types).
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    if (x.rank() != 3 || x.shape()[2] != embedding_dim_) {
      throw shape_error(mpx::detail::concat(this->label(), ": expected sequences [batch, sequence, ",
                                            embedding_dim_, "], received ", x.shape()));
    }
    const Shape tokens{x.shape()[0], x.shape()[1]};
    ids_ = &default_types(tokens);
    if (types_ != nullptr && types_->host.rank() != 0) {
      if (!(types_->host.shape() == tokens)) {
        throw shape_error(mpx::detail::concat(this->label(), ": token types ", types_->host.shape(),
                                              " set for x ", x.shape(), " (one type per token, ", tokens,
                                              ")"));
      }
      check_token_ids(this->label().c_str(), types_->host, num_types_);
      ids_ = &types_->device;
    }
    ensure_shape(rows_, x.shape());
    ensure_shape(output_, x.shape());
    Backend<Device>::embedding_forward(*ids_, weight_.compute(), rows_);
    Backend<Device>::add(x, rows_, output_);
    return output_;
  }

  /// @brief Accumulates dW (+=); returns `&dy` (dx = dy) when `input_grad`, else null.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(ids_ != nullptr, dy.shape(), output_.shape());
    Backend<Device>::embedding_backward(*ids_, dy, weight_.grad(), workspace_);
    return input_grad ? &dy : nullptr;
  }

  /// @brief Calls `f("weight", parameter)`.
  template <class F>
  void for_each_parameter(F&& f) {
    f(std::string_view("weight"), weight_);
  }

  /// @brief Makes backward throw until the next forward.
  void forget_input() noexcept { ids_ = nullptr; }

  /// @brief The settings another tool needs to rebuild the layer, under `torch.nn.Embedding`'s names:
  /// num_embeddings (the number of types) and embedding_dim.
  [[nodiscard]] LayerDescription describe() const {
    return {{"num_embeddings", num_types_}, {"embedding_dim", embedding_dim_}};
  }

  /// @brief Number of token types (rows).
  [[nodiscard]] std::int64_t num_types() const noexcept { return num_types_; }
  /// @brief Width of a row.
  [[nodiscard]] std::int64_t embedding_dim() const noexcept { return embedding_dim_; }
  /// @brief The weight parameter, [num_types, embedding_dim].
  [[nodiscard]] Param& weight() noexcept { return weight_; }

 private:
  // Type 0 for every token of a batch of `tokens`, made once per batch shape.
  const Tensor<std::int32_t, Device>& default_types(const Shape& tokens) {
    if (!(zeros_.shape() == tokens)) {
      ensure_shape(zeros_, tokens);
      zeros_.set_zero();
    }
    return zeros_;
  }

  std::int64_t num_types_;
  std::int64_t embedding_dim_;
  Options options_;
  Param weight_;
  const TokenTypes<Device>* types_ = nullptr;
  const Tensor<std::int32_t, Device>* ids_ = nullptr;  // the types of the last forward, [N, T]
  Tensor<std::int32_t, Device> zeros_;
  Tensor<T, Device> rows_;
  Tensor<T, Device> output_;
  typename Backend<Device>::EmbeddingWorkspace workspace_;
};

}  // namespace mpx::nn
