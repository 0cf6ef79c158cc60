// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Which precision each kind of operation runs in: autocast's op lists as a type trait that
/// layers consult instead of deciding for themselves.

#include "mpx/numeric/tags.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx {

/// @brief Operation kinds, grouped by how autocast treats them.
namespace op {
/// Matmul and linear layers: operands in the compute type, accumulation in fp32.
struct Matmul {};
/// Elementwise activations (ReLU, GELU): read and write the compute type, math in fp32 registers.
struct Activation {};
/// Softmax: fp32 in, fp32 out.
struct Softmax {};
/// Log-softmax: fp32 in, fp32 out.
struct LogSoftmax {};
/// Cross-entropy and other losses: fp32.
struct Loss {};
/// Normalisation statistics (mean, variance) and their backward: fp32.
struct NormStatistics {};
/// Sums, means and norms over many elements (gradient norms, bias gradients): fp32.
struct Reduction {};
/// Optimizer updates: on master weights, with fp32 math.
struct OptimizerUpdate {};
}  // namespace op

/// @brief The precision an operation of kind `Op` uses under policy `P`.
///
/// `storage` is the tag the op's inputs are cast to and its outputs are written in; `accumulate` is
/// the tag its arithmetic happens in (the precision's accumulate type, the one name mpx has for it).
/// The primary template covers the fp32 ops (softmax, losses, norm statistics, reductions); the
/// specialisations below cover the rest.
template <class Op, PrecisionPolicy P>
struct op_precision {
  /// @brief Element type the operation reads and writes.
  using storage = typename P::accumulate_type;
  /// @brief Type its arithmetic happens in.
  using accumulate = typename P::accumulate_type;
};

template <PrecisionPolicy P>
struct op_precision<op::Matmul, P> {
  using storage = typename P::compute_type;
  using accumulate = typename P::accumulate_type;
};

template <PrecisionPolicy P>
struct op_precision<op::Activation, P> {
  using storage = typename P::compute_type;
  using accumulate = typename P::accumulate_type;
};

template <PrecisionPolicy P>
struct op_precision<op::OptimizerUpdate, P> {
  using storage = typename P::master_type;
  using accumulate = typename P::accumulate_type;
};

/// @brief Tag an op of kind `Op` stores its inputs and outputs in under `P`.
template <class Op, PrecisionPolicy P>
using op_storage_t = typename op_precision<Op, P>::storage;
/// @brief Tag an op of kind `Op` computes and accumulates in under `P`.
template <class Op, PrecisionPolicy P>
using op_accumulate_t = typename op_precision<Op, P>::accumulate;

}  // namespace mpx
