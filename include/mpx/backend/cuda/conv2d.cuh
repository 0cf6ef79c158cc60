// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief 2-D convolutions on the GPU through cuDNN's graph API (its C++ frontend), with the contract
/// of backend/conv2d_spec.hpp and the signatures of `mpx::cpu::conv2d_*`: channels-last x [N, H, W, C],
/// weight [O, KH, KW, C / groups], y [N, OH, OW, O]; operands in the compute type, fp32 sums, the
/// weight and bias gradients in fp32.
///
/// Not part of <mpx/cuda.hpp>: the frontend's headers add about 45 s of CPU time to the compile of
/// each translation unit that includes them (nvcc 13 with g++ 12; about 150 s with the frontend's
/// JSON part, left out here), so only the translation units that convolve include this header;
/// `Backend<Cuda>` names these functions through `cuda::Conv2dPasses`, which this header defines.
///
/// Each pass is one cuDNN graph (conv_fprop, + bias; conv_dgrad; conv_wgrad) with fp16 / bf16 / fp32
/// operands and fp32 compute, built once per thread, shape, type, operand alignment and cuDNN handle
/// (the plan cache, like cuda::gemm's), then executed with no host work beyond a hash lookup. Engines
/// are picked by cuDNN's heuristics (modes A, then FALLBACK), less those whose numerical notes break
/// the contract: reduced-precision reductions, down-converted inputs, FFT and Winograd (not one sum of
/// exact products), non-determinism (the bits must not change from run to run), and, for mpx::Float,
/// Tensor Cores (TF32). mpx::TF32 allows them.
///
/// Where cuDNN offers no engine for a graph (it may have none for 16-bit operands with an fp32 weight
/// gradient, or for a bias fused into a strict fp32 convolution), the pass runs widened: 16-bit operands are
/// copied into fp32, exactly, a cuDNN graph convolves in fp32 into fp32 (Tensor Cores allowed but for
/// mpx::Float: fp16 and bf16 values are exact in TF32, so products stay exact), and an mpx kernel adds the
/// bias and rounds once into the result's type. `conv2d_path_counts()` tells which path each call took.
///
/// CUDA graphs: the workspace and the widened path's buffers belong to the calling thread, grow only
/// outside capture (as cuda::gemm's scratch) and are never freed while a captured graph may use them;
/// a plan cannot be built during capture (a clear error says so). So one eager call per shape, as the
/// training step's first, uncaptured step makes, is all a capture needs.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/conv2d.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#if !__has_include(<cudnn_frontend.h>)
#error \
    "mpx/backend/cuda/conv2d.cuh needs the cuDNN frontend's headers (cudnn_frontend.h, from PyPI's nvidia-cudnn-frontend wheel): run scripts/install-deps.sh, which installs it into build/tools/python, or pip install nvidia-cudnn-frontend and point MPX_CUDNN_FRONTEND_INCLUDE_DIR (CMake) at its site-packages/include"
#endif  // !__has_include(<cudnn_frontend.h>)

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>  // the frontend (1.32) calls std::strlen without including it
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

// The frontend uses nlohmann/json only to (de)serialise graphs and plans, which mpx does not do, and
// parsing it is most of the frontend's compile time. mpx::cuda defines this too, so that every
// translation unit of a program sees the same frontend classes.
#ifndef CUDNN_FRONTEND_SKIP_JSON_LIB
#define CUDNN_FRONTEND_SKIP_JSON_LIB
#endif  // CUDNN_FRONTEND_SKIP_JSON_LIB
#include <cudnn_frontend.h>

#include "mpx/backend/conv2d_spec.hpp"
#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/context.hpp"
#include "mpx/backend/cuda/cudnn.hpp"
#include "mpx/backend/cuda/data_type.hpp"
#include "mpx/backend/cuda/gemm.hpp"
#include "mpx/backend/cuda/gemm_epilogue.cuh"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/cuda/reduce.cuh"
#include "mpx/backend/cuda/tensor_ops.cuh"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

#if CUDNN_FRONTEND_VERSION < 13200
#error \
    "mpx/backend/cuda/conv2d.cuh needs cuDNN frontend 1.32 or later (Tensor_attributes::set_alignment): scripts/install-deps.sh installs it"
#endif  // CUDNN_FRONTEND_VERSION < 13200

namespace mpx::cuda {

/// @brief How this thread's convolutions ran since the last `reset_conv2d_path_counts()`: the tests
/// and benchmarks say which path they measured.
struct Conv2dPathCounts {
  std::int64_t direct = 0;   ///< one cuDNN graph on the operands as they are (the bias fused in it)
  std::int64_t widened = 0;  ///< fp32 copies of 16-bit operands, a cuDNN graph into fp32, an mpx
                             ///< kernel for the bias and the rounding (see the file comment)

  /// @brief Every count equal.
  bool operator==(const Conv2dPathCounts&) const = default;
};

namespace detail {

namespace fe = ::cudnn_frontend;

// What a plan computes.
enum class Conv2dPass : std::uint8_t { forward, forward_bias, backward_input, backward_weight };

// The operands of a graph, by the uid the plan knows them by: the two inputs (x and w; dy and w; x
// and dy), the result (y; dx; dw) and the forward's bias.
inline constexpr std::int64_t first_uid = 1, second_uid = 2, result_uid = 3, bias_uid = 4;

// Everything that determines a plan.
struct Conv2dKey {
  int device = 0;
  std::uintptr_t handle = 0;  // the cuDNN handle the plan was built with
  Conv2dPass pass = Conv2dPass::forward;
  fe::DataType_t io_type = fe::DataType_t::FLOAT;  // the operands' type
  bool widened = false;       // every operand and the result in fp32, the bias left to mpx's kernel
  bool tensor_cores = false;  // engines with the TENSOR_CORE note allowed (not for strict fp32)
  std::int64_t batch = 0, height = 0, width = 0, in_channels = 0, out_channels = 0, groups = 1;
  std::int64_t kernel_h = 0, kernel_w = 0, stride_h = 0, stride_w = 0;
  std::int64_t padding_h = 0, padding_w = 0, dilation_h = 0, dilation_w = 0;
  // The alignment in bytes (at most 16) of the first, second, result and bias pointers; 0: none.
  std::array<std::int64_t, 4> alignment{};

  bool operator==(const Conv2dKey&) const = default;
};

struct Conv2dKeyHash {
  std::size_t operator()(const Conv2dKey& key) const noexcept {
    std::size_t h = 0;
    const auto mix = [&h](std::int64_t value) {
      h ^= std::hash<std::int64_t>{}(value) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    };
    for (const std::int64_t v : {std::int64_t{key.device},
                                 static_cast<std::int64_t>(key.handle),
                                 static_cast<std::int64_t>(key.pass),
                                 static_cast<std::int64_t>(key.io_type),
                                 std::int64_t{key.widened},
                                 std::int64_t{key.tensor_cores},
                                 key.batch,
                                 key.height,
                                 key.width,
                                 key.in_channels,
                                 key.out_channels,
                                 key.groups,
                                 key.kernel_h,
                                 key.kernel_w,
                                 key.stride_h,
                                 key.stride_w,
                                 key.padding_h,
                                 key.padding_w,
                                 key.dilation_h,
                                 key.dilation_w}) {
      mix(v);
    }
    for (const std::int64_t a : key.alignment) mix(a);
    return h;
  }
};

// A built cuDNN graph and the operand pointers its next execution reads (set before each), or, when
// cuDNN offered no engine for it, why not (remembered, so that the key is not tried again).
struct Conv2dPlan {
  std::unique_ptr<fe::graph::Graph> graph;
  std::unordered_map<std::int64_t, void*> pointers;  // by uid: the graph's non-virtual tensors
  std::int64_t workspace_bytes = 0;
  std::string refusal;  // empty when the plan runs

  [[nodiscard]] bool runs() const noexcept { return refusal.empty(); }
};

// One cache per host thread, as cuda::gemm's: a plan's pointer map is rewritten per call.
inline std::unordered_map<Conv2dKey, std::unique_ptr<Conv2dPlan>, Conv2dKeyHash>& conv2d_plans() {
  thread_local std::unordered_map<Conv2dKey, std::unique_ptr<Conv2dPlan>, Conv2dKeyHash> plans;
  return plans;
}

inline Conv2dPathCounts& conv2d_path_counts_of_thread() noexcept {
  thread_local Conv2dPathCounts counts;
  return counts;
}

// Device memory a thread's convolutions need besides their operands, per device: cuDNN's workspace,
// a result in fp32 that an mpx kernel finishes (the widened path; a weight gradient to be added), and
// the fp32 copies of two 16-bit operands (the widened path). Each only grows, outside CUDA graph
// capture, and keeps what it outgrew until clear_conv2d_cache(): see GemmScratch.
struct Conv2dScratch {
  GemmScratch workspace, result, first_operand, second_operand;
};
inline std::unordered_map<int, Conv2dScratch>& conv2d_scratches() {
  thread_local std::unordered_map<int, Conv2dScratch> scratches;
  return scratches;
}

// Whether mpx's GPU convolutions take `Compute` with operands of `T`, with a message for each misuse.
template <NumericTag Compute, class T>
consteval bool conv2d_types_supported() {
  static_assert(CudaFormat<Compute>,
                "mpx::cuda::conv2d_*: this compute format has no GPU convolution: FP8 and the other formats "
                "stored as bit patterns run on the CPU only (mpx::Host); on the GPU use mpx::BFloat16, "
                "mpx::Half, mpx::TF32 or mpx::Float");
  static_assert(!std::is_same_v<accumulate_t<Compute>, double>,
                "mpx::cuda::conv2d_*: mpx::Double convolutions run on the CPU only (mpx::Host); on the GPU "
                "use mpx::Float (strict fp32) or mpx::TF32");
  static_assert(std::is_same_v<T, storage_t<Compute>>,
                "mpx::cuda::conv2d_*: x, the weight and y (dy, dx) must hold storage_t<Compute>: "
                "Eigen::bfloat16 for mpx::BFloat16, Eigen::half for mpx::Half, float for mpx::TF32 and "
                "mpx::Float");
  return CudaFormat<Compute> && std::is_same_v<accumulate_t<Compute>, float> &&
         std::is_same_v<T, storage_t<Compute>>;
}

// The frontend's name of an operand type.
template <class T>
constexpr fe::DataType_t frontend_data_type() noexcept {
  if constexpr (std::is_same_v<T, float>) {
    return fe::DataType_t::FLOAT;
  } else if constexpr (std::is_same_v<T, Eigen::half>) {
    return fe::DataType_t::HALF;
  } else {
    static_assert(std::is_same_v<T, Eigen::bfloat16>, "fp32, fp16 and bf16 operands only");
    return fe::DataType_t::BFLOAT16;
  }
}

// The alignment cuDNN may assume of a pointer: the largest power of two dividing it, up to the 16
// bytes of a vector load (the frontend's default; more would only split the cache).
inline std::int64_t operand_alignment(const void* pointer) noexcept {
  return std::min<std::int64_t>(alignment_class(pointer), 16);
}

inline const char* pass_name(Conv2dPass pass) noexcept {
  switch (pass) {
    case Conv2dPass::forward: return "forward";
    case Conv2dPass::forward_bias: return "forward with bias";
    case Conv2dPass::backward_input: return "input gradient";
    case Conv2dPass::backward_weight: return "weight gradient";
  }
  return "?";
}

inline const char* data_type_name(fe::DataType_t type) noexcept {
  switch (type) {
    case fe::DataType_t::FLOAT: return "fp32";
    case fe::DataType_t::HALF: return "fp16";
    case fe::DataType_t::BFLOAT16: return "bf16";
    default: return "another type";
  }
}

// The key's problem in words, for messages.
inline std::string describe(const Conv2dKey& k) {
  return mpx::detail::concat(pass_name(k.pass), " of x [", k.batch, ", ", k.height, ", ", k.width, ", ",
                             k.in_channels, "] into ", k.out_channels, " channels, kernel ", k.kernel_h,
                             " x ", k.kernel_w, ", stride ", k.stride_h, " x ", k.stride_w, ", padding ",
                             k.padding_h, " x ", k.padding_w, ", dilation ", k.dilation_h, " x ",
                             k.dilation_w, ", groups ", k.groups, ", ",
                             data_type_name(k.widened ? fe::DataType_t::FLOAT : k.io_type), " operands",
                             k.tensor_cores ? "" : ", no Tensor Cores (strict fp32)");
}

// A channels-last tensor as the frontend describes one: logical dimensions in NCHW order, the
// strides of NHWC memory.
inline fe::graph::Tensor_attributes& channels_last(fe::graph::Tensor_attributes& tensor, const char* name,
                                                   std::int64_t uid, std::array<std::int64_t, 4> nchw,
                                                   fe::DataType_t type, std::int64_t alignment) {
  const auto [n, c, h, w] = nchw;
  return tensor.set_name(name)
      .set_uid(uid)
      .set_dim({n, c, h, w})
      .set_stride({h * w * c, 1, w * c, c})
      .set_data_type(type)
      .set_alignment(alignment);
}

// Builds the plan of `key`: the graph, cuDNN's engine for it (or why there is none) and its workspace.
inline std::unique_ptr<Conv2dPlan> make_conv2d_plan(const Conv2dKey& key, const Conv2dGeometry& g,
                                                    cudnnHandle_t handle) {
  auto plan = std::make_unique<Conv2dPlan>();
  plan->graph = std::make_unique<fe::graph::Graph>();
  fe::graph::Graph& graph = *plan->graph;
  const fe::DataType_t io = key.widened ? fe::DataType_t::FLOAT : key.io_type;
  const fe::DataType_t fp32 = fe::DataType_t::FLOAT;
  graph.set_io_data_type(io).set_intermediate_data_type(fp32).set_compute_data_type(fp32);

  const Size2d out = g.output();
  const std::array<std::int64_t, 4> x_dims{g.batch, g.in_channels, g.input.h, g.input.w};
  const std::array<std::int64_t, 4> w_dims{g.out_channels, g.group_in_channels(), g.window.kernel.h,
                                           g.window.kernel.w};
  const std::array<std::int64_t, 4> y_dims{g.batch, g.out_channels, out.h, out.w};
  const std::vector<std::int64_t> padding{g.window.padding.h, g.window.padding.w};
  const std::vector<std::int64_t> stride{g.window.stride.h, g.window.stride.w};
  const std::vector<std::int64_t> dilation{g.window.dilation.h, g.window.dilation.w};
  const auto input = [&](const char* name, std::int64_t uid, std::array<std::int64_t, 4> dims) {
    fe::graph::Tensor_attributes tensor;
    plan->pointers[uid] = nullptr;
    return graph.tensor(channels_last(tensor, name, uid, dims, io, key.alignment[uid - 1]));
  };
  const auto result = [&](const std::shared_ptr<fe::graph::Tensor_attributes>& tensor, const char* name,
                          std::array<std::int64_t, 4> dims, fe::DataType_t type) {
    plan->pointers[result_uid] = nullptr;
    channels_last(*tensor, name, result_uid, dims, type, key.alignment[result_uid - 1]).set_output(true);
  };

  switch (key.pass) {
    case Conv2dPass::forward:
    case Conv2dPass::forward_bias: {
      auto x = input("x", first_uid, x_dims);
      auto w = input("w", second_uid, w_dims);
      auto y = graph.conv_fprop(x, w,
                                fe::graph::Conv_fprop_attributes()
                                    .set_pre_padding(padding)
                                    .set_post_padding(padding)
                                    .set_stride(stride)
                                    .set_dilation(dilation));
      if (key.pass == Conv2dPass::forward_bias && !key.widened) {
        // The fp32 sums plus the bias, rounded once into y's type.
        y->set_data_type(fp32);
        fe::graph::Tensor_attributes bias;
        bias.set_name("bias")
            .set_uid(bias_uid)
            .set_dim({1, g.out_channels, 1, 1})
            .set_stride({g.out_channels, 1, g.out_channels, g.out_channels})
            .set_data_type(io)
            .set_alignment(key.alignment[bias_uid - 1]);
        plan->pointers[bias_uid] = nullptr;
        y = graph.pointwise(
            y, graph.tensor(bias),
            fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::ADD).set_compute_data_type(fp32));
      }
      result(y, "y", y_dims, key.widened ? fp32 : io);
      break;
    }
    case Conv2dPass::backward_input: {
      auto dy = input("dy", first_uid, y_dims);
      auto w = input("w", second_uid, w_dims);
      auto dx = graph.conv_dgrad(dy, w,
                                 fe::graph::Conv_dgrad_attributes()
                                     .set_pre_padding(padding)
                                     .set_post_padding(padding)
                                     .set_stride(stride)
                                     .set_dilation(dilation));
      result(dx, "dx", x_dims, key.widened ? fp32 : io);
      break;
    }
    case Conv2dPass::backward_weight: {
      auto x = input("x", first_uid, x_dims);
      auto dy = input("dy", second_uid, y_dims);
      auto dw = graph.conv_wgrad(dy, x,
                                 fe::graph::Conv_wgrad_attributes()
                                     .set_pre_padding(padding)
                                     .set_post_padding(padding)
                                     .set_stride(stride)
                                     .set_dilation(dilation));
      result(dw, "dw", w_dims, fp32);  // the weight gradient is fp32 whatever the operands
      break;
    }
  }

  // Engines whose numerics are not the contract's (see the file comment).
  std::vector<fe::NumericalNote_t> barred{fe::NumericalNote_t::REDUCED_PRECISION_REDUCTION,
                                          fe::NumericalNote_t::DOWN_CONVERT_INPUTS,
                                          fe::NumericalNote_t::FFT,
                                          fe::NumericalNote_t::WINOGRAD,
                                          fe::NumericalNote_t::WINOGRAD_TILE_4x4,
                                          fe::NumericalNote_t::WINOGRAD_TILE_6x6,
                                          fe::NumericalNote_t::WINOGRAD_TILE_13x13,
                                          fe::NumericalNote_t::NONDETERMINISTIC};
  if (!key.tensor_cores) barred.push_back(fe::NumericalNote_t::TENSOR_CORE);

  // Any step may say "not this graph" (cuDNN has no engine for a type combination, a fusion, a
  // geometry): the plan remembers why, and the caller takes the widened path or reports it.
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
    graph.deselect_numeric_notes(barred);
    if (!step("check_support", graph.check_support())) return plan;
    if (!step("build_plans", graph.build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE))) return plan;
  } catch (const std::exception& thrown) {  // some frontend builders throw instead of returning
    plan->refusal = mpx::detail::concat("the cuDNN frontend threw: ", thrown.what());
    return plan;
  }
  MPX_CUDNN_FRONTEND_CHECK(graph.get_workspace_size(plan->workspace_bytes));
  return plan;
}

// The cached plan of `key`, built on first use (never during capture: building runs cuDNN's
// heuristics and may compile kernels, allocate and synchronise).
inline Conv2dPlan& conv2d_plan(const Conv2dKey& key, const Conv2dGeometry& g, const CudaContext& context,
                               cudnnHandle_t handle, const char* where) {
  auto& plans = conv2d_plans();
  auto found = plans.find(key);
  if (found != plans.end()) return *found->second;
  if (capturing(context.stream())) {
    throw error(mpx::detail::concat(
        where, ": no cuDNN plan yet for the ", describe(key),
        " while the stream is being captured into a CUDA graph; run one eager step with the same shapes "
        "first, so that every plan exists"));
  }
  return *plans.emplace(key, make_conv2d_plan(key, g, handle)).first->second;
}

// The plan a call runs: `key`'s when cuDNN has an engine for it, else (where `can_widen`) the widened
// path's, whose operands have the alignments `widened_alignment`; throws mpx::cuda_error naming the
// problem and cuDNN's reasons when neither runs.
struct Conv2dChoice {
  Conv2dPlan* plan;
  bool widened;
};
inline Conv2dChoice choose_conv2d_plan(Conv2dKey key, const Conv2dGeometry& g, bool can_widen,
                                       const std::array<std::int64_t, 4>& widened_alignment,
                                       const CudaContext& context, cudnnHandle_t handle, const char* where) {
  Conv2dPlan& direct = conv2d_plan(key, g, context, handle, where);
  if (direct.runs()) return {&direct, false};
  std::string reasons = direct.refusal;
  if (can_widen) {
    key.widened = true;
    key.alignment = widened_alignment;
    Conv2dPlan& widened = conv2d_plan(key, g, context, handle, where);
    if (widened.runs()) return {&widened, true};
    reasons += mpx::detail::concat("; then in fp32: ", widened.refusal);
  }
  throw cuda_error(mpx::detail::concat(where, ": cuDNN ", CUDNN_MAJOR, ".", CUDNN_MINOR,
                                       " offers no engine for the ", describe(key), ": ", reasons));
}

// Queues `plan` on `handle`'s stream with these operands (uid, device pointer) and the thread's
// workspace, grown first if the plan needs more.
inline void run_conv2d_plan(Conv2dPlan& plan, cudnnHandle_t handle, const CudaContext& context,
                            std::initializer_list<std::pair<std::int64_t, const void*>> operands) {
  for (const auto& [uid, pointer] : operands) plan.pointers.at(uid) = const_cast<void*>(pointer);
  void* workspace =
      plan.workspace_bytes > 0
          ? conv2d_scratches()[context.device()].workspace.get(static_cast<std::size_t>(plan.workspace_bytes))
          : nullptr;
  MPX_CUDNN_FRONTEND_CHECK(plan.graph->execute(handle, plan.pointers, workspace));
}

// The key of a pass in `Compute` on operands of `T` (before the alignments are filled in).
template <NumericTag Compute, class T>
Conv2dKey conv2d_key(Conv2dPass pass, const Conv2dGeometry& g, const CudaContext& context,
                     cudnnHandle_t handle) {
  Conv2dKey key;
  key.device = context.device();
  key.handle = reinterpret_cast<std::uintptr_t>(handle);
  key.pass = pass;
  key.io_type = frontend_data_type<T>();
  // Tensor Cores (TF32 for fp32 operands) for every compute type but strict fp32, the format that
  // keeps its own fp32 storage.
  key.tensor_cores = !(std::is_same_v<T, float> && owns_storage_v<Compute>);
  key.batch = g.batch;
  key.height = g.input.h;
  key.width = g.input.w;
  key.in_channels = g.in_channels;
  key.out_channels = g.out_channels;
  key.groups = g.groups;
  key.kernel_h = g.window.kernel.h;
  key.kernel_w = g.window.kernel.w;
  key.stride_h = g.window.stride.h;
  key.stride_w = g.window.stride.w;
  key.padding_h = g.window.padding.h;
  key.padding_w = g.window.padding.w;
  key.dilation_h = g.window.dilation.h;
  key.dilation_w = g.window.dilation.w;
  return key;
}

// `source`'s elements in fp32: its own for fp32, else copied exactly into `buffer` on `stream`.
template <class T>
const float* fp32_operand(const Tensor<T, Cuda>& source, GemmScratch& buffer, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, float>) {
    return source.data();
  } else {
    const std::int64_t count = source.numel();
    auto* widened = static_cast<float*>(buffer.get(static_cast<std::size_t>(count) * sizeof(float)));
    round_nearest_kernel<Float>
        <<<elementwise_blocks(count), elementwise_threads, 0, stream>>>(source.data(), widened, count);
    MPX_CUDA_CHECK_LAUNCH("round_nearest_kernel (conv2d operand to fp32)");
    return widened;
  }
}

// y = round(t + bias) into y's type for a [rows, channels] fp32 result t (bias null: y = round(t)):
// the widened path's last step, on cuda::gemm's epilogue kernel.
template <class T>
void finish_widened(const float* t, const Tensor<T, Cuda>* bias, T* y, std::int64_t rows,
                    std::int64_t channels, cudaStream_t stream) {
  using DT = typename cuda_traits<tag_of_t<T>>::device_type;
  launch_apply_epilogue<float, DT>(
      t, nullptr, 0.0f, reinterpret_cast<DT*>(y),
      bias != nullptr ? reinterpret_cast<const DT*>(bias->data()) : nullptr, nullptr, nullptr, nullptr,
      bias != nullptr ? Epilogue::Bias : Epilogue::Default, rows, channels, stream);
}

// Checks the settings and the three tensors' shapes against `g`.
inline void check_conv2d_call(const char* where, const Conv2dGeometry& g, const Shape& x, const Shape& w,
                              const Shape& y) {
  g.check_settings(where);
  require_shape(where, "input", x, g.input_shape());
  require_shape(where, "weight", w, g.weight_shape());
  require_shape(where, "output", y, g.output_shape());
}

// The bias gradient's fixed split of the rows: at least 256 rows per chunk and at most 256 chunks,
// from the row count alone, so the order of the sums (and the bits) never changes.
struct BiasGradChunks {
  std::int64_t count;           // chunks
  std::int64_t rows_per_chunk;  // rows of each chunk but the last
};
inline BiasGradChunks bias_grad_chunks(std::int64_t rows) {
  constexpr std::int64_t min_rows = 256, max_chunks = 256;
  const std::int64_t chunks = std::clamp<std::int64_t>((rows + min_rows - 1) / min_rows, 1, max_chunks);
  const std::int64_t per_chunk = std::max<std::int64_t>(1, (rows + chunks - 1) / chunks);
  return {std::max<std::int64_t>(1, (rows + per_chunk - 1) / per_chunk), per_chunk};
}

// Threads of the bias gradient's first pass: 32 channels (one warp: each row's loads coalesce) by 8
// row lanes.
inline constexpr int bias_grad_channels = 32, bias_grad_lanes = 8;

// partials[chunk, c] = sum of dy[r, c] over the chunk's rows, in Acc, in a fixed order: each lane sums
// its rows (every 8th) in order, then the lanes' sums are added in lane order. Grid: (channel blocks,
// chunks).
template <class T, class Acc>
__global__ void __launch_bounds__(bias_grad_channels* bias_grad_lanes)
    conv2d_bias_grad_partials_kernel(const T* __restrict__ dy, std::int64_t rows, std::int64_t channels,
                                     std::int64_t rows_per_chunk, Acc* __restrict__ partials) {
  __shared__ Acc lane_sums[bias_grad_lanes][bias_grad_channels];
  const std::int64_t channel = static_cast<std::int64_t>(blockIdx.x) * bias_grad_channels + threadIdx.x;
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.y) * rows_per_chunk;
  const std::int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  Acc sum = 0;
  if (channel < channels) {
    for (std::int64_t row = begin + threadIdx.y; row < end; row += bias_grad_lanes) {
      sum += static_cast<Acc>(dy[row * channels + channel]);
    }
  }
  lane_sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && channel < channels) {
    Acc total = lane_sums[0][threadIdx.x];
    for (int lane = 1; lane < bias_grad_lanes; ++lane) total += lane_sums[lane][threadIdx.x];
    partials[static_cast<std::int64_t>(blockIdx.y) * channels + channel] = total;
  }
}

// dbias[c] = (overwrite ? 0 : dbias[c]) + the chunks' partial sums of channel c, in chunk order.
template <class Acc>
__global__ void conv2d_bias_grad_finish_kernel(const Acc* __restrict__ partials, std::int64_t chunks,
                                               std::int64_t channels, bool overwrite, Acc* dbias) {
  const std::int64_t channel = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (channel >= channels) return;
  Acc sum = partials[channel];
  for (std::int64_t chunk = 1; chunk < chunks; ++chunk) sum += partials[chunk * channels + channel];
  dbias[channel] = (overwrite ? Acc(0) : dbias[channel]) + sum;
}

}  // namespace detail

/// @brief Frees this thread's cached cuDNN plans, its convolution workspace and buffers (a CUDA graph
/// captured with them must not be replayed afterwards).
inline void clear_conv2d_cache() noexcept {
  detail::conv2d_plans().clear();
  for (auto& [device, scratch] : detail::conv2d_scratches()) {
    scratch.workspace.release();
    scratch.result.release();
    scratch.first_operand.release();
    scratch.second_operand.release();
  }
}

/// @brief Number of cached plans on this thread (each a distinct pass, shape, type, alignment and
/// path), those cuDNN refused included.
[[nodiscard]] inline std::size_t conv2d_cache_size() noexcept {
  return detail::conv2d_plans().size();
}

/// @brief How this thread's convolutions ran since the last reset (see `Conv2dPathCounts`).
[[nodiscard]] inline Conv2dPathCounts conv2d_path_counts() noexcept {
  return detail::conv2d_path_counts_of_thread();
}

/// @brief Zeroes this thread's `conv2d_path_counts()`.
inline void reset_conv2d_path_counts() noexcept {
  detail::conv2d_path_counts_of_thread() = {};
}

/// @brief y = conv2d(x, weight) (+ bias), channels-last, in the `Compute` precision on cuDNN: one
/// fp32 sum of exact products per output (TF32 products for mpx::TF32), the bias added in fp32, rounded
/// once into y; queued on `context`'s stream (asynchronous), as `mpx::cpu::conv2d_forward`.
/// @tparam Compute mpx::Float (no Tensor Cores), mpx::TF32, mpx::Half or mpx::BFloat16.
/// @param x [N, H, W, C]; @param weight [O, KH, KW, C / groups]; @param bias [O] or null (a plain
/// nullptr will do: its type is not deduced); @param y [N, OH, OW, O], written; @param geometry the
/// sizes, the kernel and how it moves; @param context the device, stream and cuDNN handle.
/// @throws mpx::invalid_argument / mpx::shape_error naming the values when the settings or a tensor do
///         not fit `geometry`; mpx::cuda_error when cuDNN fails or has no engine for the problem;
///         mpx::error when a plan would be built while the stream is being captured.
template <NumericTag Compute, class T = storage_t<Compute>>
void conv2d_forward(const Tensor<T, Cuda>& x, const Tensor<T, Cuda>& weight,
                    const std::type_identity_t<Tensor<T, Cuda>>* bias, Tensor<T, Cuda>& y,
                    const Conv2dGeometry& geometry, CudaContext& context = cuda_context()) {
  if constexpr (detail::conv2d_types_supported<Compute, T>()) {
    constexpr const char* where = "mpx::cuda::conv2d_forward";
    detail::check_conv2d_call(where, geometry, x.shape(), weight.shape(), y.shape());
    if (bias != nullptr) require_shape(where, "bias", bias->shape(), Shape{geometry.out_channels});
    if (y.numel() == 0) return;
    geometry.check_input(where);
    const cudnnHandle_t handle = cudnn_handle(context);
    detail::Conv2dKey key = detail::conv2d_key<Compute, T>(
        bias != nullptr ? detail::Conv2dPass::forward_bias : detail::Conv2dPass::forward, geometry, context,
        handle);
    key.alignment = {detail::operand_alignment(x.data()), detail::operand_alignment(weight.data()),
                     detail::operand_alignment(y.data()),
                     bias != nullptr ? detail::operand_alignment(bias->data()) : 0};
    // Widened, 16-bit operands are read from fp32 copies (256-byte aligned) and the result goes to an
    // fp32 buffer; fp32 operands are read where they are. For fp32 operands without a bias the
    // widened graph would be the direct one again.
    constexpr bool copies = !std::is_same_v<T, float>;
    const std::array<std::int64_t, 4> widened_alignment{copies ? 16 : key.alignment[0],
                                                        copies ? 16 : key.alignment[1], 16, 0};
    const detail::Conv2dChoice choice = detail::choose_conv2d_plan(key, geometry, copies || bias != nullptr,
                                                                   widened_alignment, context, handle, where);
    if (!choice.widened) {
      if (bias != nullptr) {
        detail::run_conv2d_plan(*choice.plan, handle, context,
                                {{detail::first_uid, x.data()},
                                 {detail::second_uid, weight.data()},
                                 {detail::result_uid, y.data()},
                                 {detail::bias_uid, bias->data()}});
      } else {
        detail::run_conv2d_plan(*choice.plan, handle, context,
                                {{detail::first_uid, x.data()},
                                 {detail::second_uid, weight.data()},
                                 {detail::result_uid, y.data()}});
      }
      ++detail::conv2d_path_counts_of_thread().direct;
      return;
    }
    detail::Conv2dScratch& scratch = detail::conv2d_scratches()[context.device()];
    const cudaStream_t stream = context.stream();
    const float* x32 = detail::fp32_operand(x, scratch.first_operand, stream);
    const float* w32 = detail::fp32_operand(weight, scratch.second_operand, stream);
    auto* t = static_cast<float*>(scratch.result.get(static_cast<std::size_t>(y.numel()) * sizeof(float)));
    detail::run_conv2d_plan(*choice.plan, handle, context,
                            {{detail::first_uid, x32}, {detail::second_uid, w32}, {detail::result_uid, t}});
    detail::finish_widened(t, bias, y.data(), y.numel() / geometry.out_channels, geometry.out_channels,
                           stream);
    ++detail::conv2d_path_counts_of_thread().widened;
  }
}

/// @brief dx from dy and the weight (channels-last) on cuDNN: each element one fp32 sum over every
/// (tap, output channel) that read it, rounded once into dx; as `mpx::cpu::conv2d_backward_input`.
/// @param dy [N, OH, OW, O]; @param weight [O, KH, KW, C / groups]; @param dx [N, H, W, C], written;
/// @param geometry the sizes, the kernel and how it moves; @param context the device, stream and handle.
/// @throws as `conv2d_forward`.
template <NumericTag Compute, class T = storage_t<Compute>>
void conv2d_backward_input(const Tensor<T, Cuda>& dy, const Tensor<T, Cuda>& weight, Tensor<T, Cuda>& dx,
                           const Conv2dGeometry& geometry, CudaContext& context = cuda_context()) {
  if constexpr (detail::conv2d_types_supported<Compute, T>()) {
    constexpr const char* where = "mpx::cuda::conv2d_backward_input";
    detail::check_conv2d_call(where, geometry, dx.shape(), weight.shape(), dy.shape());
    if (dx.numel() == 0) return;
    geometry.check_input(where);
    const cudnnHandle_t handle = cudnn_handle(context);
    detail::Conv2dKey key =
        detail::conv2d_key<Compute, T>(detail::Conv2dPass::backward_input, geometry, context, handle);
    key.alignment = {detail::operand_alignment(dy.data()), detail::operand_alignment(weight.data()),
                     detail::operand_alignment(dx.data()), 0};
    constexpr bool copies = !std::is_same_v<T, float>;
    const detail::Conv2dChoice choice =
        detail::choose_conv2d_plan(key, geometry, copies, {16, 16, 16, 0}, context, handle, where);
    if (!choice.widened) {
      detail::run_conv2d_plan(*choice.plan, handle, context,
                              {{detail::first_uid, dy.data()},
                               {detail::second_uid, weight.data()},
                               {detail::result_uid, dx.data()}});
      ++detail::conv2d_path_counts_of_thread().direct;
      return;
    }
    detail::Conv2dScratch& scratch = detail::conv2d_scratches()[context.device()];
    const cudaStream_t stream = context.stream();
    const float* dy32 = detail::fp32_operand(dy, scratch.first_operand, stream);
    const float* w32 = detail::fp32_operand(weight, scratch.second_operand, stream);
    auto* t = static_cast<float*>(scratch.result.get(static_cast<std::size_t>(dx.numel()) * sizeof(float)));
    detail::run_conv2d_plan(*choice.plan, handle, context,
                            {{detail::first_uid, dy32}, {detail::second_uid, w32}, {detail::result_uid, t}});
    detail::finish_widened<T>(t, nullptr, dx.data(), dx.numel() / geometry.in_channels, geometry.in_channels,
                              stream);
    ++detail::conv2d_path_counts_of_thread().widened;
  }
}

/// @brief The weight gradient in fp32 on cuDNN, dweight = the sum over every image and output position
/// of dy times the input it read, added to dweight's contents (or written, when `overwrite`: the first
/// micro-batch after `zero_grad`); as `mpx::cpu::conv2d_backward_weight`. Added, the gradient is summed
/// into a buffer first and then added to dweight in fp32 (deterministic; cuDNN has no in-place sum).
/// @param x [N, H, W, C]; @param dy [N, OH, OW, O]; @param dweight [O, KH, KW, C / groups], fp32;
/// @param overwrite write instead of add; @param geometry the sizes, the kernel and how it moves;
/// @param context the device, stream and handle. An empty batch leaves dweight as it is, or zero with
/// `overwrite`.
/// @throws as `conv2d_forward`.
template <NumericTag Compute, class T = storage_t<Compute>, class Acc = accumulate_t<Compute>>
void conv2d_backward_weight(const Tensor<T, Cuda>& x, const Tensor<T, Cuda>& dy, Tensor<Acc, Cuda>& dweight,
                            bool overwrite, const Conv2dGeometry& geometry,
                            CudaContext& context = cuda_context()) {
  if constexpr (detail::conv2d_types_supported<Compute, T>()) {
    static_assert(std::is_same_v<Acc, float>,
                  "mpx::cuda::conv2d_backward_weight: the weight gradient is fp32");
    constexpr const char* where = "mpx::cuda::conv2d_backward_weight";
    detail::check_conv2d_call(where, geometry, x.shape(), dweight.shape(), dy.shape());
    const cudaStream_t stream = context.stream();
    if (geometry.batch == 0) {  // no term: the sum is zero
      if (overwrite) {
        MPX_CUDA_CHECK(cudaMemsetAsync(dweight.data(), 0,
                                       static_cast<std::size_t>(dweight.numel()) * sizeof(float), stream));
      }
      return;
    }
    geometry.check_input(where);
    const cudnnHandle_t handle = cudnn_handle(context);
    detail::Conv2dScratch& scratch = detail::conv2d_scratches()[context.device()];
    float* out = overwrite ? dweight.data()
                           : static_cast<float*>(scratch.result.get(
                                 static_cast<std::size_t>(dweight.numel()) * sizeof(float)));
    detail::Conv2dKey key =
        detail::conv2d_key<Compute, T>(detail::Conv2dPass::backward_weight, geometry, context, handle);
    key.alignment = {detail::operand_alignment(x.data()), detail::operand_alignment(dy.data()),
                     detail::operand_alignment(out), 0};
    constexpr bool copies = !std::is_same_v<T, float>;
    const detail::Conv2dChoice choice = detail::choose_conv2d_plan(
        key, geometry, copies, {16, 16, key.alignment[2], 0}, context, handle, where);
    if (!choice.widened) {
      detail::run_conv2d_plan(
          *choice.plan, handle, context,
          {{detail::first_uid, x.data()}, {detail::second_uid, dy.data()}, {detail::result_uid, out}});
      ++detail::conv2d_path_counts_of_thread().direct;
    } else {
      const float* x32 = detail::fp32_operand(x, scratch.first_operand, stream);
      const float* dy32 = detail::fp32_operand(dy, scratch.second_operand, stream);
      detail::run_conv2d_plan(
          *choice.plan, handle, context,
          {{detail::first_uid, x32}, {detail::second_uid, dy32}, {detail::result_uid, out}});
      ++detail::conv2d_path_counts_of_thread().widened;
    }
    if (!overwrite) {
      const std::int64_t count = dweight.numel();
      detail::add_into_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0, stream>>>(
          dweight.data(), static_cast<const float*>(out), count);
      MPX_CUDA_CHECK_LAUNCH("add_into_kernel (conv2d weight gradient)");
    }
  }
}

/// @brief The bias gradient in the accumulate type: dbias[o] = the sum of dy[..., o] over every
/// position of every image, added to its contents (or written, when `overwrite`), as
/// `mpx::cpu::conv2d_backward_bias`. Summed in a fixed order that depends on the shape only (fixed
/// chunks of rows, then the chunks in order; no atomics), so the bits never change from run to run.
/// @param dy [N, OH, OW, O] (any rank: the last dimension is the channel); @param dbias [O];
/// @param overwrite write instead of add; @param context the device and stream.
template <FloatingElement T, class Acc = accumulate_t<T>>
void conv2d_backward_bias(const Tensor<T, Cuda>& dy, Tensor<Acc, Cuda>& dbias, bool overwrite,
                          CudaContext& context = cuda_context()) {
  static_assert(CudaFormat<tag_of_t<T>>,
                "mpx::cuda::conv2d_backward_bias: dy's format has no GPU kernels (FP8 and the other formats "
                "stored as bit patterns run on the CPU only)");
  static_assert(std::is_floating_point_v<Acc>, "mpx::cuda::conv2d_backward_bias: sum in float or double");
  const std::int64_t channels = dy.shape().cols();
  require_shape("mpx::cuda::conv2d_backward_bias", "bias gradient", dbias.shape(), Shape{channels});
  if (channels == 0) return;
  const std::int64_t rows = dy.numel() / channels;
  const detail::BiasGradChunks chunks = detail::bias_grad_chunks(rows);
  Acc* partials = detail::scratch<Acc>(dbias.data(), chunks.count * channels);
  const cudaStream_t stream = context.stream();
  const dim3 grid(
      static_cast<unsigned>((channels + detail::bias_grad_channels - 1) / detail::bias_grad_channels),
      static_cast<unsigned>(chunks.count));
  const dim3 block(detail::bias_grad_channels, detail::bias_grad_lanes);
  detail::conv2d_bias_grad_partials_kernel<<<grid, block, 0, stream>>>(dy.data(), rows, channels,
                                                                       chunks.rows_per_chunk, partials);
  MPX_CUDA_CHECK_LAUNCH("conv2d_bias_grad_partials_kernel");
  constexpr int threads = 256;
  detail::conv2d_bias_grad_finish_kernel<<<static_cast<unsigned>((channels + threads - 1) / threads), threads,
                                           0, stream>>>(partials, chunks.count, channels, overwrite,
                                                        dbias.data());
  MPX_CUDA_CHECK_LAUNCH("conv2d_bias_grad_finish_kernel");
}

// The class template through which `Backend<Cuda>` (backend/cuda/backend.cuh) reaches the functions
// above: declared here, defined (and documented) there with a message saying to include this header.
template <class Dependent, class Enable>
struct Conv2dPasses;

/// @brief `Backend<Cuda>`'s convolutions, present once this header is included: each forwards to the
/// function of this header it names. `Dependent` is whatever type makes the use depend on a template
/// argument of the caller, so that the check happens where a convolution is instantiated.
template <class Dependent>
struct Conv2dPasses<Dependent, void> {
  /// @brief `conv2d_forward<Compute>`.
  template <NumericTag Compute, class... Args>
  static void forward(Args&&... args) {
    conv2d_forward<Compute>(std::forward<Args>(args)...);
  }
  /// @brief `conv2d_backward_input<Compute>`.
  template <NumericTag Compute, class... Args>
  static void backward_input(Args&&... args) {
    conv2d_backward_input<Compute>(std::forward<Args>(args)...);
  }
  /// @brief `conv2d_backward_weight<Compute>`.
  template <NumericTag Compute, class... Args>
  static void backward_weight(Args&&... args) {
    conv2d_backward_weight<Compute>(std::forward<Args>(args)...);
  }
  /// @brief `conv2d_backward_bias`.
  template <class... Args>
  static void backward_bias(Args&&... args) {
    conv2d_backward_bias(std::forward<Args>(args)...);
  }
};

}  // namespace mpx::cuda
