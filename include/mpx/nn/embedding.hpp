// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::Embedding`: int32 token ids -> rows of a learned table in the compute type, with the
/// weight gradient accumulated in fp32 in a fixed order.

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/embedding_spec.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/parameter.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

/// @brief Construction options of `Embedding` (outside the class template, so that naming them, as
/// `layers<P, Device>::embedding`'s signature does, needs no complete `Backend<Device>`).
struct EmbeddingOptions {
  /// @brief Standard deviation of the normal initial weights (mean 0): 1, as `torch.nn.Embedding`;
  /// GPT-2 uses 0.02.
  double init_std = 1.0;
};

/// @brief A token embedding, as `torch.nn.Embedding`: ids [batch, sequence] (any rank from 1 to 3)
/// of type `std::int32_t` map to rows of weight [num_embeddings, embedding_dim] (PyTorch's layout
/// and parameter name, "weight"), giving [batch, sequence, embedding_dim] in the compute type.
///
/// Forward copies rows of the compute copy of the weight (bf16/fp16 rows are the master rows
/// rounded to nearest-even, bit for bit). Backward accumulates dW in the accumulate type (fp32) from
/// the compute-type upstream gradient in a fixed order: the row of an id that occurs at positions
/// p1 < p2 < ... of the flattened ids becomes ((dW + dy[p1]) + dy[p2]) + ..., on every run and on
/// every device (the GPU sorts (id, position) pairs with CUB's stable radix sort, then one thread
/// block per run of equal ids adds its positions in order, so no float atomics are involved and the
/// work scales to any vocabulary). The ids have no gradient: backward returns null.
///
/// An id outside [0, num_embeddings) throws `mpx::invalid_argument` on the CPU, naming the layer,
/// the id and its position. A GPU kernel cannot throw: there the row of such an id is NaN in the
/// output (so the loss and gradients are NaN and the training step is skipped as non-finite), and
/// backward leaves the weight gradient untouched for it.
///
/// Memory: forward keeps a pointer to the ids (they must stay alive until backward) and its output
/// [tokens, embedding_dim] in the compute type; on the GPU, backward's sort buffers take about
/// 16 bytes per token plus CUB's scratch, allocated by the first backward and reused after.
///
/// @tparam P precision policy; @tparam Device `Host` or `Cuda`.
template <PrecisionPolicy P, class Device = Host>
class Embedding : public LayerBase<Embedding<P, Device>, P, Device, std::int32_t> {
  using Param = Parameter<P, Device>;
  using T = compute_t<P>;
  using Ids = Tensor<std::int32_t, Device>;

 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "Embedding";
  using LayerBase<Embedding<P, Device>, P, Device, std::int32_t>::forward;

  /// @brief Construction options (see `EmbeddingOptions`).
  using Options = EmbeddingOptions;

  /// @brief A table of `num_embeddings` rows of `embedding_dim` values, initialised from (0, 0).
  Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, Options options = {})
      : num_embeddings_(num_embeddings),
        embedding_dim_(embedding_dim),
        options_(options),
        weight_("weight", Shape{num_embeddings, embedding_dim}) {
    if (num_embeddings <= 0 || embedding_dim <= 0 || num_embeddings > (std::int64_t{1} << 31) - 1) {
      throw invalid_argument(
          mpx::detail::concat("mpx::nn::Embedding: num_embeddings must be in [1, 2^31) and embedding_dim "
                              "positive, got num_embeddings = ",
                              num_embeddings, ", embedding_dim = ", embedding_dim));
    }
    if (!(options.init_std >= 0.0)) {
      throw invalid_argument(
          mpx::detail::concat("mpx::nn::Embedding: init_std = ", options.init_std, " must be non-negative"));
    }
    initialize(0, 0);
  }

  /// @brief Re-initialises the weight to N(0, init_std^2) from (seed, stream): element i draws
  /// `normal_at(0, init_std, seed, 2 stream, i)`, the same values on every machine and device (the
  /// stream a `Linear` at this place would use for its weight, so no two layers share one).
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    Backend<Device>::fill_normal(weight_.master(), 0.0, options_.init_std, seed, 2 * stream);
    weight_.refresh_compute_copy();
  }

  /// @brief The rows of the ids: [..., embedding_dim] in the compute type. Keeps a pointer to `ids`.
  const Tensor<T, Device>& forward(const Ids& ids) {
    ensure_shape(output_, embedding_output_shape(this->label().c_str(), ids.shape(), embedding_dim_));
    if constexpr (std::is_same_v<Device, Host>) check_token_ids(this->label().c_str(), ids, num_embeddings_);
    Backend<Device>::embedding_forward(ids, weight_.compute(), output_);
    ids_ = &ids;
    return output_;
  }

  /// @brief Accumulates dW (+=, in the accumulate type, in position order); returns null (token
  /// ids have no gradient), whatever `input_grad` says.
  const Ids* backward(const Tensor<T, Device>& dy, bool /*input_grad*/ = true) {
    this->check_backward(!ids_.empty(), dy.shape(), output_.shape());
    Backend<Device>::embedding_backward(*ids_, dy, weight_.grad(), workspace_);
    return nullptr;
  }

  /// @brief Calls `f("weight", parameter)`.
  template <class F>
  void for_each_parameter(F&& f) {
    f(std::string_view("weight"), weight_);
  }

  /// @brief Drops the saved ids pointer; backward then throws until the next forward.
  void forget_input() noexcept { ids_ = nullptr; }

  /// @brief The settings another tool needs to rebuild the layer, under `torch.nn.Embedding`'s
  /// names: num_embeddings, embedding_dim.
  [[nodiscard]] LayerDescription describe() const {
    return {{"num_embeddings", num_embeddings_}, {"embedding_dim", embedding_dim_}};
  }

  /// @brief Number of rows (the vocabulary size).
  [[nodiscard]] std::int64_t num_embeddings() const noexcept { return num_embeddings_; }
  /// @brief Width of a row.
  [[nodiscard]] std::int64_t embedding_dim() const noexcept { return embedding_dim_; }
  /// @brief The weight parameter, [num_embeddings, embedding_dim].
  [[nodiscard]] Param& weight() noexcept { return weight_; }

 private:
  std::int64_t num_embeddings_;
  std::int64_t embedding_dim_;
  Options options_;
  Param weight_;
  SavedPointer<Ids> ids_;  // the model's input, kept alive by the caller until backward
  Tensor<T, Device> output_;
  typename Backend<Device>::EmbeddingWorkspace workspace_;
};

}  // namespace mpx::nn
