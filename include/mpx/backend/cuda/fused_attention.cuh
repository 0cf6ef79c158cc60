// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Bidirectional attention on the GPU in one fused kernel per pass: cuDNN's scaled-dot-product
/// attention (SDPA) through its frontend's graph API, fp16 / bf16 operands, fp32 scores, softmax and
/// statistics, with a per-sequence key-padding mask. It is the fused path of
/// `cuda::attention_fused_forward` / `attention_fused_backward` (backend/cuda/attention.cuh), which
/// `nn::SelfAttention` and `nn::PaddedSelfAttention` take on mpx::Cuda where it applies, the
/// batched-GEMM path otherwise.
///
/// Opt-in, as conv2d.cuh is: the frontend's headers add about 45 s to the compile of each
/// translation unit that includes them, so <mpx/cuda.hpp> does not include this header. Including it
/// in one translation unit of a program turns the fused path on for the whole program (the entry
/// points are set during static initialisation; attention.cuh says why it is not per translation
/// unit).
///
/// What it computes, with the contract of backend/attention_spec.hpp: Q, K, V are read in place from
/// the qkv projection's output [batch, T, 3C] (strided [batch, heads, T, d] views, no copies), the
/// merged output [batch, T, C] is written in place, and backward writes dQ, dK, dV into the qkv
/// gradient. With key counts (the sequences' lengths), key j of sequence b is allowed when
/// j < length[b]; every query attends (cuDNN's seq_len_q is T for every sequence), so the queries at
/// padded positions get the outputs and gradients the batched-GEMM path gives them. Two things cuDNN
/// leaves open are fixed by mpx's kernels around it: a sequence of length 0 (cuDNN before 9.25
/// returns NaN for it) runs with one key and its outputs and gradients are then set to zeros, and
/// the gradients of padded keys and values are set to exactly zero.
///
/// Limits (`attention_fused_applies`): fp16 or bf16 operands; head width d a multiple of 8, at most
/// 128 (256 on compute capability 9.x, Hopper); compute capability 8.0 or newer; cuDNN 9 at run time;
/// operands 16-byte aligned. Beyond those cuDNN may refuse a shape (one position per sequence, for
/// instance: its backward does not take s_q = s_kv = 1); the refusal is remembered per shape, counted
/// (`fused_attention_counts`) and explained (`last_fused_attention_refusal`), and the caller runs the
/// batched-GEMM path.
///
/// Plans: one cuDNN graph per pass (forward with statistics for training, forward without for
/// evaluation, backward), built once per thread, device, cuDNN handle, type, shape and mask, then
/// executed with no host work beyond a hash lookup. The backward asks for cuDNN's deterministic
/// algorithm, so its bits do not change from run to run. A forward with statistics builds its
/// backward's plan too, so that a forward that ran fused always has a backward that runs.
///
/// CUDA graphs: as conv2d.cuh, the workspace and the lengths buffer belong to the calling thread and
/// grow only outside capture; a plan cannot be built during capture (an error says so). One eager
/// step per shape, as the training step's first, is all a capture needs.
///
/// Not yet run on a GPU (written on a machine without one; tests/cuda/fused_attention_cuda_test.cu
/// waits for the next GPU session).

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/fused_attention.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#if !__has_include(<cudnn_frontend.h>)
#error \
    "mpx/backend/cuda/fused_attention.cuh needs the cuDNN frontend's headers (cudnn_frontend.h, from PyPI's nvidia-cudnn-frontend wheel): run scripts/install-deps.sh, which installs it into build/tools/python, or pip install nvidia-cudnn-frontend and point MPX_CUDNN_FRONTEND_INCLUDE_DIR (CMake) at its site-packages/include"
#endif  // !__has_include(<cudnn_frontend.h>)

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>  // the frontend (1.32) calls std::strlen without including it
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include <cuda_runtime_api.h>

// See conv2d.cuh: the frontend without its JSON serialisation, in every translation unit alike.
#ifndef CUDNN_FRONTEND_SKIP_JSON_LIB
#define CUDNN_FRONTEND_SKIP_JSON_LIB
#endif  // CUDNN_FRONTEND_SKIP_JSON_LIB
#include <cudnn_frontend.h>

#include "mpx/backend/attention_spec.hpp"
#include "mpx/backend/cuda/attention.cuh"
#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/context.hpp"
#include "mpx/backend/cuda/cudnn.hpp"
#include "mpx/backend/cuda/gemm.hpp"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/error.hpp"
#include "mpx/tensor/tensor.hpp"

#if CUDNN_FRONTEND_VERSION < 13200
#error \
    "mpx/backend/cuda/fused_attention.cuh needs cuDNN frontend 1.32 or later (Tensor_attributes::set_alignment, SDPA_attributes::set_generate_stats): scripts/install-deps.sh installs it"
#endif  // CUDNN_FRONTEND_VERSION < 13200

namespace mpx::cuda {

/// @brief The oldest cuDNN (cudnnGetVersion() at run time) the fused attention runs on. The frontend
/// itself refuses the releases with known SDPA bugs (9.10.0 and 9.10.1), per graph.
inline constexpr std::size_t fused_attention_min_cudnn_version = 90000;

/// @brief The widest head `attention_fused_applies` lets through on a device of compute capability
/// `major`: 256 on Hopper (9.x), whose cuDNN kernels take it forward and backward; 128 elsewhere.
[[nodiscard]] constexpr std::int64_t fused_attention_max_head_dim(int major) noexcept {
  return major == 9 ? 256 : 128;
}

/// @brief What this thread's fused attention did since the last `reset_fused_attention_counts()`.
struct FusedAttentionCounts {
  std::int64_t forward = 0;   ///< forwards that ran fused
  std::int64_t backward = 0;  ///< backwards that ran fused
  std::int64_t refused = 0;   ///< forwards within the limits that cuDNN refused (the batched-GEMM path ran)

  /// @brief Every count equal.
  bool operator==(const FusedAttentionCounts&) const = default;
};

namespace detail {

namespace fe = ::cudnn_frontend;

enum class FusedAttentionPass : std::uint8_t { inference, training, backward };

// The operands of the graphs, by the uid a plan knows them by.
struct FusedAttentionUid {
  static constexpr std::int64_t q = 1, k = 2, v = 3, o = 4, stats = 5, seq_len_q = 6, seq_len_kv = 7, d_o = 8,
                                d_q = 9, d_k = 10, d_v = 11;
};

// Everything that determines a plan (every operand is 16-byte aligned: the caller checks it).
struct FusedAttentionKey {
  int device = 0;
  std::uintptr_t handle = 0;  // the cuDNN handle the plan was built with
  FusedAttentionPass pass = FusedAttentionPass::inference;
  fe::DataType_t io_type = fe::DataType_t::HALF;
  bool padded = false;  // a key-padding mask (per-sequence lengths)
  std::int64_t batch = 0, heads = 0, sequence = 0, head_dim = 0;

  bool operator==(const FusedAttentionKey&) const = default;
};

struct FusedAttentionKeyHash {
  std::size_t operator()(const FusedAttentionKey& key) const noexcept {
    std::size_t h = 0;
    for (const std::int64_t v :
         {std::int64_t{key.device}, static_cast<std::int64_t>(key.handle),
          static_cast<std::int64_t>(key.pass), static_cast<std::int64_t>(key.io_type),
          std::int64_t{key.padded}, key.batch, key.heads, key.sequence, key.head_dim}) {
      h ^= std::hash<std::int64_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    }
    return h;
  }
};

// A built graph and the operand pointers its next execution reads, or why cuDNN refused it
// (remembered, so that the key is not tried again).
struct FusedAttentionPlan {
  std::unique_ptr<fe::graph::Graph> graph;
  std::unordered_map<std::int64_t, void*> pointers;  // by uid: the graph's non-virtual tensors
  std::int64_t workspace_bytes = 0;
  std::string refusal;  // empty when the plan runs

  [[nodiscard]] bool runs() const noexcept { return refusal.empty(); }
};

// One cache per host thread, as conv2d.cuh's: a plan's pointer map is rewritten per call.
inline std::unordered_map<FusedAttentionKey, std::unique_ptr<FusedAttentionPlan>, FusedAttentionKeyHash>&
fused_attention_plans() {
  thread_local std::unordered_map<FusedAttentionKey, std::unique_ptr<FusedAttentionPlan>,
                                  FusedAttentionKeyHash>
      plans;
  return plans;
}

// Device memory besides the operands, per device: cuDNN's workspace, and the int32 [2, batch] lengths
// cuDNN reads (seq_len_q, then seq_len_kv). Each only grows, outside capture (see GemmScratch).
struct FusedAttentionScratch {
  GemmScratch workspace, lengths;
};
inline std::unordered_map<int, FusedAttentionScratch>& fused_attention_scratches() {
  thread_local std::unordered_map<int, FusedAttentionScratch> scratches;
  return scratches;
}

inline FusedAttentionCounts& fused_attention_counts_of_thread() noexcept {
  thread_local FusedAttentionCounts counts;
  return counts;
}
inline std::string& last_fused_attention_refusal_of_thread() {
  thread_local std::string refusal;
  return refusal;
}

// The frontend's name of a 16-bit operand type.
template <class T>
constexpr fe::DataType_t fused_attention_io_type() noexcept {
  if constexpr (std::is_same_v<T, Eigen::half>) {
    return fe::DataType_t::HALF;
  } else {
    static_assert(std::is_same_v<T, Eigen::bfloat16>, "fp16 and bf16 operands only");
    return fe::DataType_t::BFLOAT16;
  }
}

inline const char* fused_attention_pass_name(FusedAttentionPass pass) noexcept {
  switch (pass) {
    case FusedAttentionPass::inference: return "forward";
    case FusedAttentionPass::training: return "forward with statistics";
    case FusedAttentionPass::backward: return "backward";
  }
  return "?";
}

// The key's problem in words, for messages.
inline std::string describe(const FusedAttentionKey& k) {
  return mpx::detail::concat("attention ", fused_attention_pass_name(k.pass), " of batch ", k.batch, ", ",
                             k.heads, " heads, sequence ", k.sequence, ", head width ", k.head_dim, ", ",
                             k.io_type == fe::DataType_t::HALF ? "fp16" : "bf16",
                             k.padded ? " operands, key padding" : " operands");
}

// Builds the plan of `key`: the graph, cuDNN's engine for it (or why there is none) and its workspace.
inline std::unique_ptr<FusedAttentionPlan> make_fused_attention_plan(const FusedAttentionKey& key,
                                                                     cudnnHandle_t handle) {
  using Uid = FusedAttentionUid;
  auto plan = std::make_unique<FusedAttentionPlan>();
  plan->graph = std::make_unique<fe::graph::Graph>();
  fe::graph::Graph& graph = *plan->graph;
  const fe::DataType_t io = key.io_type;
  const fe::DataType_t fp32 = fe::DataType_t::FLOAT;
  graph.set_io_data_type(io).set_intermediate_data_type(fp32).set_compute_data_type(fp32);

  // [batch, heads, T, d] views: of the qkv projection's [batch, T, 3C] (Q, K, V and their gradients)
  // and of the merged heads' [batch, T, C] (O and dO).
  const std::int64_t b = key.batch, h = key.heads, t = key.sequence, d = key.head_dim, c = h * d;
  const std::vector<std::int64_t> dims{b, h, t, d};
  const std::vector<std::int64_t> qkv_strides{t * 3 * c, d, 3 * c, 1};
  const std::vector<std::int64_t> merged_strides{t * c, d, c, 1};
  const std::vector<std::int64_t> stats_dims{b, h, t, 1};
  const std::vector<std::int64_t> stats_strides{h * t, t, 1, 1};
  const auto operand = [&](const char* name, std::int64_t uid, const std::vector<std::int64_t>& strides) {
    plan->pointers[uid] = nullptr;
    return graph.tensor(fe::graph::Tensor_attributes()
                            .set_name(name)
                            .set_uid(uid)
                            .set_dim(dims)
                            .set_stride(strides)
                            .set_data_type(io)
                            .set_alignment(16));
  };
  const auto result = [&](const std::shared_ptr<fe::graph::Tensor_attributes>& tensor, std::int64_t uid,
                          const std::vector<std::int64_t>& strides) {
    plan->pointers[uid] = nullptr;
    tensor->set_output(true).set_uid(uid).set_dim(dims).set_stride(strides).set_data_type(io).set_alignment(
        16);
  };
  const auto lengths = [&](const char* name, std::int64_t uid) {
    plan->pointers[uid] = nullptr;
    return graph.tensor(fe::graph::Tensor_attributes()
                            .set_name(name)
                            .set_uid(uid)
                            .set_dim({b, 1, 1, 1})
                            .set_stride({1, 1, 1, 1})
                            .set_data_type(fe::DataType_t::INT32));
  };
  const auto q = operand("q", Uid::q, qkv_strides);
  const auto k = operand("k", Uid::k, qkv_strides);
  const auto v = operand("v", Uid::v, qkv_strides);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));

  if (key.pass != FusedAttentionPass::backward) {
    const bool training = key.pass == FusedAttentionPass::training;
    fe::graph::SDPA_attributes attributes;
    attributes.set_name("sdpa").set_generate_stats(training).set_attn_scale(scale);
    if (key.padded) {
      attributes.set_padding_mask(true)
          .set_seq_len_q(lengths("seq_len_q", Uid::seq_len_q))
          .set_seq_len_kv(lengths("seq_len_kv", Uid::seq_len_kv));
    }
    auto [o, stats] = graph.sdpa(q, k, v, attributes);
    result(o, Uid::o, merged_strides);
    if (training) {
      plan->pointers[Uid::stats] = nullptr;
      stats->set_output(true)
          .set_uid(Uid::stats)
          .set_dim(stats_dims)
          .set_stride(stats_strides)
          .set_data_type(fp32);
    }
  } else {
    const auto o = operand("o", Uid::o, merged_strides);
    const auto d_o = operand("d_o", Uid::d_o, merged_strides);
    plan->pointers[Uid::stats] = nullptr;
    const auto stats = graph.tensor(fe::graph::Tensor_attributes()
                                        .set_name("stats")
                                        .set_uid(Uid::stats)
                                        .set_dim(stats_dims)
                                        .set_stride(stats_strides)
                                        .set_data_type(fp32));
    fe::graph::SDPA_backward_attributes attributes;
    attributes.set_name("sdpa_backward").set_attn_scale(scale).set_deterministic_algorithm(true);
    if (key.padded) {
      attributes.set_padding_mask(true)
          .set_seq_len_q(lengths("seq_len_q", Uid::seq_len_q))
          .set_seq_len_kv(lengths("seq_len_kv", Uid::seq_len_kv));
    }
    auto [d_q, d_k, d_v] = graph.sdpa_backward(q, k, v, o, d_o, stats, attributes);
    result(d_q, Uid::d_q, qkv_strides);
    result(d_k, Uid::d_k, qkv_strides);
    result(d_v, Uid::d_v, qkv_strides);
  }

  // Any step may say "not this graph"; the plan remembers why and the caller runs the other path.
  const auto step = [&plan](const char* what, fe::error_t status) {
    if (status.is_bad()) plan->refusal = mpx::detail::concat(what, ": ", status.get_message());
    return status.is_good();
  };
  try {
    if (!step("validate", graph.validate())) return plan;
    if (!step("build_operation_graph", graph.build_operation_graph(handle))) return plan;
    if (!step("create_execution_plans",
              graph.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}))) {
      return plan;
    }
    if (!step("check_support", graph.check_support())) return plan;
    if (!step("build_plans", graph.build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE))) return plan;
  } catch (const std::exception& thrown) {  // some frontend builders throw instead of returning
    plan->refusal = mpx::detail::concat("the cuDNN frontend threw: ", thrown.what());
    return plan;
  }
  MPX_CUDNN_FRONTEND_CHECK(graph.get_workspace_size(plan->workspace_bytes));
  return plan;
}

// The cached plan of `key`, built on first use (never during capture).
inline FusedAttentionPlan& fused_attention_plan(const FusedAttentionKey& key, const CudaContext& context,
                                                cudnnHandle_t handle, const char* where) {
  auto& plans = fused_attention_plans();
  auto found = plans.find(key);
  if (found != plans.end()) return *found->second;
  if (capturing(context.stream())) {
    throw error(mpx::detail::concat(
        where, ": no cuDNN plan yet for the ", describe(key),
        " while the stream is being captured into a CUDA graph; run one eager step with the same shapes "
        "first, so that every plan exists"));
  }
  return *plans.emplace(key, make_fused_attention_plan(key, handle)).first->second;
}

// Queues `plan` on `handle`'s stream with its operands set and the thread's workspace, grown first if
// the plan needs more.
inline void run_fused_attention_plan(FusedAttentionPlan& plan, cudnnHandle_t handle,
                                     const CudaContext& context,
                                     std::initializer_list<std::pair<std::int64_t, const void*>> operands) {
  for (const auto& [uid, pointer] : operands) {
    const auto slot = plan.pointers.find(uid);
    if (slot != plan.pointers.end()) slot->second = const_cast<void*>(pointer);
  }
  void* workspace = plan.workspace_bytes > 0 ? fused_attention_scratches()[context.device()].workspace.get(
                                                   static_cast<std::size_t>(plan.workspace_bytes))
                                             : nullptr;
  MPX_CUDNN_FRONTEND_CHECK(plan.graph->execute(handle, plan.pointers, workspace));
}

// The problem's sizes, from validated operands.
struct FusedAttentionShape {
  std::int64_t batch, heads, sequence, head_dim;
};
template <class T>
FusedAttentionShape fused_attention_shape(const Tensor<T, Cuda>& qkv, std::int64_t num_heads) {
  return {qkv.shape()[0], num_heads, attention_sequence(qkv.shape()), qkv.shape().cols() / 3 / num_heads};
}

template <class T>
FusedAttentionKey fused_attention_key(FusedAttentionPass pass, const FusedAttentionShape& shape, bool padded,
                                      const CudaContext& context, cudnnHandle_t handle) {
  FusedAttentionKey key;
  key.device = context.device();
  key.handle = reinterpret_cast<std::uintptr_t>(handle);
  key.pass = pass;
  key.io_type = fused_attention_io_type<T>();
  key.padded = padded;
  key.batch = shape.batch;
  key.heads = shape.heads;
  key.sequence = shape.sequence;
  key.head_dim = shape.head_dim;
  return key;
}

inline bool aligned_16(const void* pointer) noexcept {
  return alignment_class(pointer) >= 16;
}

// seq_len_q[b] = T (every query attends) and seq_len_kv[b] = length[b] clamped to [1, T]: cuDNN reads
// no key past T, and a sequence of length 0 runs with one key, its results set to zero afterwards.
__global__ void fused_attention_lengths_kernel(const std::int32_t* lengths, std::int32_t* seq_len_q,
                                               std::int32_t* seq_len_kv, std::int64_t batch,
                                               std::int32_t sequence) {
  const std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  const std::int32_t length = lengths[b];
  seq_len_q[b] = sequence;
  seq_len_kv[b] = length < 1 ? 1 : (length > sequence ? sequence : length);
}

// Zeroes, in `data` [batch, T, width] (one block per row (b, t)), the whole row when sequence b has
// length <= 0, and its last `key_columns` columns when t >= length[b] (a padded key's and value's
// gradients); other rows are left as they are.
template <class T>
__global__ void fused_attention_mask_rows_kernel(T* data, const std::int32_t* lengths, std::int64_t sequence,
                                                 std::int64_t width, std::int64_t key_columns) {
  const std::int64_t row = blockIdx.x;
  const std::int32_t length = lengths[row / sequence];
  const std::int64_t first = length <= 0 ? 0 : row % sequence >= length ? width - key_columns : width;
  T* r = data + row * width;
  for (std::int64_t j = first + threadIdx.x; j < width; j += blockDim.x) r[j] = T(0);
}

// The lengths cuDNN reads, written from `key_counts` on the context's stream: [seq_len_q, seq_len_kv].
inline std::int32_t* fused_attention_lengths(const Tensor<std::int32_t, Cuda>& key_counts,
                                             std::int64_t sequence, const CudaContext& context) {
  const std::int64_t batch = key_counts.shape()[0];
  auto* lengths = static_cast<std::int32_t*>(fused_attention_scratches()[context.device()].lengths.get(
      static_cast<std::size_t>(2 * batch) * sizeof(std::int32_t)));
  constexpr int threads = 128;
  fused_attention_lengths_kernel<<<static_cast<unsigned>((batch + threads - 1) / threads), threads, 0,
                                   context.stream()>>>(key_counts.data(), lengths, lengths + batch, batch,
                                                       static_cast<std::int32_t>(sequence));
  MPX_CUDA_CHECK_LAUNCH("fused_attention_lengths_kernel");
  return lengths;
}

template <class T>
void mask_fused_attention_rows(T* data, const Tensor<std::int32_t, Cuda>& key_counts, std::int64_t sequence,
                               std::int64_t width, std::int64_t key_columns, const CudaContext& context) {
  const std::int64_t rows = key_counts.shape()[0] * sequence;
  fused_attention_mask_rows_kernel<<<static_cast<unsigned>(rows), 128, 0, context.stream()>>>(
      data, key_counts.data(), sequence, width, key_columns);
  MPX_CUDA_CHECK_LAUNCH("fused_attention_mask_rows_kernel");
}

// Remembers why cuDNN refused a plan, counts it, and says the fused path did not run.
inline bool refuse_fused_attention(const FusedAttentionKey& key, const FusedAttentionPlan& plan) {
  ++fused_attention_counts_of_thread().refused;
  last_fused_attention_refusal_of_thread() =
      mpx::detail::concat("cuDNN ", cudnnGetVersion(), " refused the ", describe(key), ": ", plan.refusal);
  return false;
}

// `attention_fused_applies`'s limits (see the file comment).
inline bool fused_attention_supported(std::int64_t head_dim, const CudaContext& context) {
  const cudaDeviceProp& properties = context.properties();
  return properties.major >= 8 && head_dim > 0 && head_dim % 8 == 0 &&
         head_dim <= fused_attention_max_head_dim(properties.major) &&
         cudnnGetVersion() >= fused_attention_min_cudnn_version;
}

// `attention_fused_forward`'s fused path, its operands validated.
template <class T>
bool fused_attention_forward(const Tensor<T, Cuda>& qkv, const Tensor<std::int32_t, Cuda>* key_counts,
                             Tensor<T, Cuda>& out, Tensor<float, Cuda>* stats, std::int64_t num_heads,
                             CudaContext& context) {
  constexpr const char* where = "mpx::cuda::attention_fused_forward";
  const FusedAttentionShape shape = fused_attention_shape(qkv, num_heads);
  if (shape.batch == 0 || shape.sequence == 0 || !fused_attention_supported(shape.head_dim, context) ||
      !aligned_16(qkv.data()) || !aligned_16(out.data()) ||
      (stats != nullptr && !aligned_16(stats->data()))) {
    return false;
  }
  const cudnnHandle_t handle = cudnn_handle(context);
  const bool padded = key_counts != nullptr;
  const FusedAttentionKey key =
      fused_attention_key<T>(stats != nullptr ? FusedAttentionPass::training : FusedAttentionPass::inference,
                             shape, padded, context, handle);
  FusedAttentionPlan& plan = fused_attention_plan(key, context, handle, where);
  if (!plan.runs()) return refuse_fused_attention(key, plan);
  if (stats != nullptr) {  // training: the backward must run fused too
    const FusedAttentionKey backward_key =
        fused_attention_key<T>(FusedAttentionPass::backward, shape, padded, context, handle);
    const FusedAttentionPlan& backward = fused_attention_plan(backward_key, context, handle, where);
    if (!backward.runs()) return refuse_fused_attention(backward_key, backward);
  }
  using Uid = FusedAttentionUid;
  const std::int64_t c = shape.heads * shape.head_dim;
  const T* base = qkv.data();
  const std::int32_t* lengths =
      padded ? fused_attention_lengths(*key_counts, shape.sequence, context) : nullptr;
  run_fused_attention_plan(plan, handle, context,
                           {{Uid::q, base},
                            {Uid::k, base + c},
                            {Uid::v, base + 2 * c},
                            {Uid::o, out.data()},
                            {Uid::stats, stats != nullptr ? stats->data() : nullptr},
                            {Uid::seq_len_q, lengths},
                            {Uid::seq_len_kv, lengths != nullptr ? lengths + shape.batch : nullptr}});
  if (padded) mask_fused_attention_rows(out.data(), *key_counts, shape.sequence, c, 0, context);
  ++fused_attention_counts_of_thread().forward;
  return true;
}

// `attention_fused_backward`'s fused path, its operands validated.
template <class T>
void fused_attention_backward(const Tensor<T, Cuda>& qkv, const Tensor<std::int32_t, Cuda>* key_counts,
                              const Tensor<T, Cuda>& out, const Tensor<T, Cuda>& d_out,
                              const Tensor<float, Cuda>& stats, Tensor<T, Cuda>& d_qkv,
                              std::int64_t num_heads, CudaContext& context) {
  constexpr const char* where = "mpx::cuda::attention_fused_backward";
  const FusedAttentionShape shape = fused_attention_shape(qkv, num_heads);
  for (const void* pointer : {static_cast<const void*>(qkv.data()), static_cast<const void*>(out.data()),
                              static_cast<const void*>(d_out.data()), static_cast<const void*>(stats.data()),
                              static_cast<const void*>(d_qkv.data())}) {
    if (!aligned_16(pointer)) {
      throw invalid_argument(
          mpx::detail::concat(where, ": operand at ", pointer,
                              " is not 16-byte aligned; cuDNN's attention needs every operand "
                              "aligned (tensors mpx allocates are)"));
    }
  }
  if (shape.batch == 0 || shape.sequence == 0) return;
  const cudnnHandle_t handle = cudnn_handle(context);
  const bool padded = key_counts != nullptr;
  const FusedAttentionKey key =
      fused_attention_key<T>(FusedAttentionPass::backward, shape, padded, context, handle);
  FusedAttentionPlan& plan = fused_attention_plan(key, context, handle, where);
  if (!plan.runs()) {
    throw cuda_error(mpx::detail::concat(where, ": cuDNN ", cudnnGetVersion(), " refused the ", describe(key),
                                         " (", plan.refusal,
                                         "); a forward with statistics checks this before it runs fused"));
  }
  using Uid = FusedAttentionUid;
  const std::int64_t c = shape.heads * shape.head_dim;
  const T* base = qkv.data();
  T* d_base = d_qkv.data();
  const std::int32_t* lengths =
      padded ? fused_attention_lengths(*key_counts, shape.sequence, context) : nullptr;
  run_fused_attention_plan(plan, handle, context,
                           {{Uid::q, base},
                            {Uid::k, base + c},
                            {Uid::v, base + 2 * c},
                            {Uid::o, out.data()},
                            {Uid::d_o, d_out.data()},
                            {Uid::stats, stats.data()},
                            {Uid::d_q, d_base},
                            {Uid::d_k, d_base + c},
                            {Uid::d_v, d_base + 2 * c},
                            {Uid::seq_len_q, lengths},
                            {Uid::seq_len_kv, lengths != nullptr ? lengths + shape.batch : nullptr}});
  if (padded) mask_fused_attention_rows(d_base, *key_counts, shape.sequence, 3 * c, 2 * c, context);
  ++fused_attention_counts_of_thread().backward;
}

// Points attention.cuh's entry points for operands of T at this header's functions.
template <class T>
bool register_fused_attention_for() {
  FusedAttentionEntry<T>::applies = &fused_attention_supported;
  FusedAttentionEntry<T>::forward = &fused_attention_forward<T>;
  FusedAttentionEntry<T>::backward = &fused_attention_backward<T>;
  return true;
}

// An inline variable: its initialiser runs once per program, during static initialisation, however many
// translation units include this header.
inline const bool fused_attention_registered =
    register_fused_attention_for<Eigen::half>() && register_fused_attention_for<Eigen::bfloat16>();

}  // namespace detail

/// @brief How this thread's fused attention ran since the last reset (see `FusedAttentionCounts`).
[[nodiscard]] inline FusedAttentionCounts fused_attention_counts() noexcept {
  return detail::fused_attention_counts_of_thread();
}

/// @brief Zeroes this thread's `fused_attention_counts()` and forgets its last refusal.
inline void reset_fused_attention_counts() {
  detail::fused_attention_counts_of_thread() = {};
  detail::last_fused_attention_refusal_of_thread().clear();
}

/// @brief Why cuDNN last refused a fused attention on this thread (the problem, cuDNN's version and
/// its reason), or empty.
[[nodiscard]] inline std::string last_fused_attention_refusal() {
  return detail::last_fused_attention_refusal_of_thread();
}

/// @brief Number of cached fused-attention plans on this thread, those cuDNN refused included.
[[nodiscard]] inline std::size_t fused_attention_cache_size() noexcept {
  return detail::fused_attention_plans().size();
}

/// @brief Frees this thread's cached plans, workspace and lengths buffers (a CUDA graph captured with
/// them must not be replayed afterwards).
inline void clear_fused_attention_cache() noexcept {
  detail::fused_attention_plans().clear();
  for (auto& [device, scratch] : detail::fused_attention_scratches()) {
    scratch.workspace.release();
    scratch.lengths.release();
  }
}

}  // namespace mpx::cuda
