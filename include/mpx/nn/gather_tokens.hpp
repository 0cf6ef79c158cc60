// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::GatherTokens`: the tokens of a batch chosen for this step, [N, T, C] to [M, C]: the
/// masked tokens a masked-language-model head predicts (BERT's `gather_indexes`), so that its large
/// output layer runs on them alone.

#include <cstdint>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/row_gather_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

/// @brief The tokens chosen for the next forward, as rows n T + t of the batch's [N T, C] tokens:
/// set by `nn::PaddedSequences::select_tokens`, read by its `GatherTokens` layers.
/// @tparam Device where the layers run.
template <class Device>
struct TokenSelection {
  Tensor<std::int32_t, Host> host;      ///< [M], checked against the batch in forward
  Tensor<std::int32_t, Device> device;  ///< the same indices where the gather runs
};

/// @brief y[m] = x[n, t] for the m-th chosen token (row n T + t) of sequences x [N, T, C]: y is
/// [M, C], in the order chosen. Backward writes dy's rows back at the chosen tokens and zeros
/// elsewhere (the backends' `gather_rows`: copies, the same bits on every device).
///
/// The choice comes from the `nn::PaddedSequences` model around the layer
/// (`select_tokens(rows)` before each forward; distinct rows); a masked-language model puts it between
/// the encoder and its vocabulary-sized output layer, whose cost then scales with the masked tokens
/// (15%) instead of all of them. Outside such a model, or with no selection, forward says so.
/// @tparam P precision policy; @tparam Device `Host` or `Cuda`.
template <PrecisionPolicy P, class Device = Host>
class GatherTokens : public LayerBase<GatherTokens<P, Device>, P, Device> {
  using T = compute_t<P>;

 public:
  /// @brief Layer name used in messages and model descriptions.
  static constexpr std::string_view kind = "GatherTokens";
  using LayerBase<GatherTokens, P, Device>::forward;

  /// @brief Reads the chosen tokens from `selection` from now on (`PaddedSequences` calls it).
  /// @param selection the model's selection; it outlives the layer's use of it.
  void bind_token_selection(const TokenSelection<Device>* selection) noexcept { selection_ = selection; }

  /// @brief The chosen tokens of x, [M, C] (valid until the next forward).
  /// @param x sequences [N, T, C].
  /// @throws mpx::error without a selection; mpx::shape_error naming the layer unless x has rank 3;
  ///         mpx::invalid_argument naming a chosen row outside x's N T tokens.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    if (selection_ == nullptr || selection_->host.rank() != 1) {
      throw error(mpx::detail::concat(this->label(),
                                      ": no tokens chosen; a GatherTokens runs inside an "
                                      "nn::PaddedSequences model, whose select_tokens(...) comes "
                                      "before its forward"));
    }
    if (x.rank() != 3) {
      throw shape_error(mpx::detail::concat(
          this->label(), ": expected sequences [batch, sequence, features], received ", x.shape()));
    }
    check_row_indices(this->label().c_str(), selection_->host.data(), selection_->host.numel(),
                      x.shape().rows());
    input_shape_ = x.shape();
    ensure_shape(output_, Shape{selection_->host.numel(), x.shape().cols()});
    Backend<Device>::gather_rows(x, selection_->device, output_);
    return output_;
  }

  /// @brief dx: dy's rows at the chosen tokens, zeros elsewhere (valid until the next backward); null
  /// when `input_grad` is false.
  /// @param dy         dL/dy [M, C].
  /// @param input_grad whether to compute dx.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(input_shape_.rank() == 3, dy.shape(), output_.shape());
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, input_shape_);
    Backend<Device>::gather_rows_backward(dy, selection_->device, input_grad_);
    return &input_grad_;
  }

  /// @brief No parameters.
  /// @tparam F a callable taking (std::string_view, Parameter&).
  template <class F>
  void for_each_parameter(F&&) {}
  /// @brief Nothing to initialise.
  void initialize(std::uint64_t, std::uint64_t) {}
  /// @brief Forgets the input's shape; backward then throws until the next forward.
  void forget_input() noexcept { input_shape_ = Shape{}; }
  /// @brief No settings.
  [[nodiscard]] LayerDescription describe() const { return {}; }

 private:
  const TokenSelection<Device>* selection_ = nullptr;
  Shape input_shape_;  // rank 0 until a forward ran
  Tensor<T, Device> output_;
  Tensor<T, Device> input_grad_;
};

}  // namespace mpx::nn
