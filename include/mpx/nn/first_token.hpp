// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::FirstToken`: each sequence's first token, [N, T, C] to [N, C]: the [CLS] token a
/// BERT-style encoder's classification head reads.

#include <cstdint>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/transfer.hpp"

namespace mpx::nn {

/// @brief y[n, :] = x[n, 0, :] over sequences x [N, T, C]: PyTorch's `x[:, 0]`, the pooled [CLS]
/// token of a BERT-style encoder (followed, as in BERT, by a `Linear` pooler and the classifier).
/// Backward writes dy into position 0 of dx and zeros elsewhere. A copy in the compute type (the
/// backends' `gather_rows` of rows 0, T, 2T, ...): the same bits on every device. In a
/// `PaddedSequences` model position 0 is always a real token of a sequence of length >= 1.
/// @tparam P precision policy; @tparam Device `Host` or `Cuda`.
template <PrecisionPolicy P, class Device = Host>
class FirstToken : public LayerBase<FirstToken<P, Device>, P, Device> {
  using T = compute_t<P>;

 public:
  /// @brief Layer name used in messages and model descriptions.
  static constexpr std::string_view kind = "FirstToken";
  using LayerBase<FirstToken, P, Device>::forward;

  /// @brief x[:, 0] (valid until the next forward).
  /// @param x sequences [N, T, C] with T >= 1.
  /// @throws mpx::shape_error naming the layer and x's shape otherwise.
  const Tensor<T, Device>& forward(const Tensor<T, Device>& x) {
    if (x.rank() != 3 || x.shape()[1] == 0) {
      throw shape_error(mpx::detail::concat(this->label(),
                                            ": expected sequences [batch, sequence, features] ",
                                            "with a sequence of at least 1, received ", x.shape()));
    }
    if (!(x.shape() == input_shape_)) {  // the rows of the first tokens: 0, T, 2T, ...
      Tensor<std::int32_t, Host> rows(Shape{x.shape()[0]});
      for (std::int64_t n = 0; n < rows.numel(); ++n) rows[n] = static_cast<std::int32_t>(n * x.shape()[1]);
      ensure_shape(rows_, rows.shape());
      mpx::copy(rows_, rows);
    }
    input_shape_ = x.shape();
    ensure_shape(output_, Shape{x.shape()[0], x.shape()[2]});
    Backend<Device>::gather_rows(x, rows_, output_);
    return output_;
  }

  /// @brief dx: dy at position 0, zeros elsewhere (valid until the next backward); null when
  /// `input_grad` is false.
  /// @param dy         dL/dy [N, C].
  /// @param input_grad whether to compute dx.
  const Tensor<T, Device>* backward(const Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(input_shape_.rank() == 3, dy.shape(), output_.shape());
    if (!input_grad) return nullptr;
    ensure_shape(input_grad_, input_shape_);
    Backend<Device>::gather_rows_backward(dy, rows_, input_grad_);
    return &input_grad_;
  }

  /// @brief No parameters.
  /// @tparam F a callable taking (std::string_view, Parameter&).
  template <class F>
  void for_each_parameter(F&&) {}
  /// @brief Nothing to initialise.
  void initialize(std::uint64_t, std::uint64_t) {}
  /// @brief Forgets the input's shape; backward then throws until the next forward.
  void forget_input() noexcept { input_shape_ = Shape{}; }  // rows_ is rebuilt by the next forward
  /// @brief No settings.
  [[nodiscard]] LayerDescription describe() const { return {}; }

 private:
  Shape input_shape_;                  // rank 0 until a forward ran
  Tensor<std::int32_t, Device> rows_;  // 0, T, 2T, ... for input_shape_
  Tensor<T, Device> output_;
  Tensor<T, Device> input_grad_;
};

}  // namespace mpx::nn
