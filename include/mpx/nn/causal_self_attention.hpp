// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::CausalSelfAttention`: GPT-2's multi-head causal self-attention, with batched GEMMs in
/// the compute type (fp32 accumulation) and the scores, mask and softmax in fp32; the causal form of
/// `nn::BasicSelfAttention` (nn/self_attention.hpp), whose code it is.

#include "mpx/backend/attention_spec.hpp"
#include "mpx/nn/self_attention.hpp"

namespace mpx::nn {

/// @brief y = proj(concat_h softmax(Q_h K_h^T / sqrt(d) + causal mask) V_h) over x [batch, sequence,
/// embed_dim], with [Q | K | V] = qkv(x): PyTorch/nanoGPT's `CausalSelfAttention` (`c_attn`, `c_proj`);
/// position t attends to positions 0 .. t (inputs [batch, d1, ..., dk, C] in row-major order of their
/// positions). Parameters "qkv.weight" [3C, C], "qkv.bias" [3C], "proj.weight" [C, C], "proj.bias"
/// [C]; precision, memory and evaluation mode as `BasicSelfAttention` says.
/// @tparam P precision policy; @tparam Device `Host` or `Cuda`.
template <PrecisionPolicy P, class Device = Host>
using CausalSelfAttention = BasicSelfAttention<P, Device, AttentionMask::Causal>;

}  // namespace mpx::nn
