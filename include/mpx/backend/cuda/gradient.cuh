// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Whole-gradient passes on the GPU: unscale fused with the finite check and the squared norm
/// (over many tensors in one launch, results in device memory) and in-place scaling. Mirrors
/// cpu/gradient.hpp.
///
/// The squared norm is deterministic: each tensor is cut into fixed chunks of `gradient_chunk`
/// elements, one block sums one chunk in a fixed order into a partial, and one single-block pass adds
/// the partials in a fixed order. The result depends on the shapes only, never on the device or on
/// timing; it differs from the CPU's double sum (another order) by rounding, about 1e-16 relative.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/gradient.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "mpx/backend/cpu/gradient.hpp"
#include "mpx/backend/cuda/device_array.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/optimizer_math.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

/// Elements of a gradient that one block of `unscale_and_inspect` reads: the unit of the fixed
/// partition of the squared norm.
inline constexpr std::int64_t gradient_chunk = 16384;

/// @brief The scratch memory of `unscale_and_inspect`: one double per chunk of the gradients. A
/// trainer keeps one and passes it to every step; it grows on first use (an allocation, so run one
/// step, or call `reserve`, before capturing a step in a CUDA graph) and is never shrunk.
class GradientWorkspace {
 public:
  /// @brief An empty workspace.
  GradientWorkspace() = default;

  /// @brief Chunks of `gradient_chunk` elements that `gradients` are cut into.
  template <Element G>
  [[nodiscard]] static std::int64_t chunks(std::span<Tensor<G, Cuda>* const> gradients) {
    std::int64_t total = 0;
    for (const Tensor<G, Cuda>* g : gradients) total += (g->numel() + gradient_chunk - 1) / gradient_chunk;
    return total;
  }

  /// @brief Makes room for `count` partial sums (allocates only when growing). Growing while the
  /// context's stream is being captured throws `mpx::error`: the graph would own the new memory.
  void reserve(std::int64_t count) {
    if (count <= static_cast<std::int64_t>(partials_.size())) return;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    MPX_CUDA_CHECK(cudaStreamIsCapturing(cuda_context().stream(), &capture));
    if (capture != cudaStreamCaptureStatusNone) {
      throw error(mpx::detail::concat(
          "mpx::cuda::GradientWorkspace: ", count, " partial sums needed, room for ", partials_.size(),
          " while a CUDA graph is being captured; run one step (or reserve_for the "
          "gradients) before capturing"));
    }
    partials_ = DeviceArray<double>(static_cast<std::size_t>(count));
  }

  /// @brief Makes room for one pass over `gradients`.
  template <Element G>
  void reserve_for(std::span<Tensor<G, Cuda>* const> gradients) {
    reserve(chunks(gradients));
  }

  /// @brief The partial sums (device memory).
  [[nodiscard]] double* partials() noexcept { return partials_.data(); }
  /// @brief Partial sums there is room for.
  [[nodiscard]] std::int64_t capacity() const noexcept { return static_cast<std::int64_t>(partials_.size()); }

 private:
  DeviceArray<double> partials_;
};

namespace detail {

inline constexpr int gradient_threads = 256;
inline constexpr int sum_partials_threads = 1024;

// The tensors of one launch, passed by value in the kernel's parameters (as PyTorch's
// multi_tensor_apply does), so no host-to-device copy precedes the launch and it can be captured in
// a graph. Block b reads chunk b - first_chunk[t] of the tensor t with first_chunk[t] <= b <
// first_chunk[t + 1]. 64 tensors make 1.6 KB of parameters, well inside the 4 KB every device takes.
template <class G>
struct GradientList {
  static constexpr int capacity = 64;
  G* data[capacity];
  std::int64_t numel[capacity];
  std::int64_t first_chunk[capacity + 1];
  int count;
};

// Where the unscaling factor comes from: float(1.0 / double(scale)) of a scale in device memory (the
// step's scaler), or a host value when `device_scale` is null.
template <class G>
struct UnscaleFactor {
  const float* device_scale;
  G host_factor;

  __device__ G value() const {
    if (device_scale == nullptr) return host_factor;
    return static_cast<G>(static_cast<float>(mpx::detail::div_rn(1.0, static_cast<double>(*device_scale))));
  }
};

// g * factor rounded into G, as `g *= factor` rounds on the CPU (Eigen's fp16/bf16 multiply in
// fp32 and round once).
template <class G>
__device__ G scaled(G g, G factor) {
  if constexpr (std::is_floating_point_v<G>) {
    return mpx::detail::mul_rn(g, factor);
  } else {
    return round_to<tag_of_t<G>>(mpx::detail::mul_rn(static_cast<float>(g), static_cast<float>(factor)));
  }
}

template <class G>
__device__ double to_double(G g) {
  return static_cast<double>(static_cast<math_t<tag_of_t<G>>>(g));
}

// Exponent bits all set: inf or NaN.
template <class G>
__device__ bool is_finite(G g) {
  if constexpr (std::is_same_v<G, double>) {
    return (__double_as_longlong(g) & 0x7ff0000000000000ll) != 0x7ff0000000000000ll;
  } else if constexpr (std::is_same_v<G, float>) {
    return (__float_as_uint(g) & 0x7f800000u) != 0x7f800000u;
  } else {
    return is_finite(static_cast<float>(g));
  }
}

// The sum of `value` over the block, in a fixed order: a shuffle tree in each warp, then warp 0
// adds the warps' sums. Valid in thread 0.
template <int Threads>
__device__ double block_sum(double value) {
  static_assert(Threads % 32 == 0 && Threads <= 1024, "whole warps, at most 32 of them");
  __shared__ double warp_sums[Threads / 32];
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (lane == 0) warp_sums[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < Threads / 32 ? warp_sums[lane] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  }
  return value;
}

// One block per chunk: scales it in place (when Scale), writes the sum of its squares to
// partials[blockIdx.x] and raises *nonfinite if a value is inf or NaN.
template <bool Scale, class G>
__global__ void __launch_bounds__(gradient_threads)
    unscale_and_inspect_kernel(GradientList<G> list, UnscaleFactor<G> factor, double* partials,
                               int* nonfinite) {
  const auto chunk = static_cast<std::int64_t>(blockIdx.x);
  int low = 0;  // the last tensor whose first chunk is <= this one (binary search, uniform per block)
  int high = list.count - 1;
  while (low < high) {
    const int middle = (low + high + 1) / 2;
    if (list.first_chunk[middle] <= chunk) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  G* g = list.data[low];
  const std::int64_t begin = (chunk - list.first_chunk[low]) * gradient_chunk;
  const std::int64_t end =
      begin + gradient_chunk < list.numel[low] ? begin + gradient_chunk : list.numel[low];
  [[maybe_unused]] G f{};
  if constexpr (Scale) f = factor.value();
  double sum = 0.0;
  bool finite = true;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += gradient_threads) {
    G value = g[i];
    if constexpr (Scale) {
      value = scaled(value, f);
      g[i] = value;
    }
    const double d = to_double(value);
    sum += d * d;
    finite = finite && is_finite(value);
  }
  const double total = block_sum<gradient_threads>(sum);
  const bool all_finite = __syncthreads_and(finite) != 0;
  if (threadIdx.x == 0) {
    partials[chunk] = total;
    if (!all_finite) *nonfinite = 1;
  }
}

// One block: *total += the sum of partials[0, count), in a fixed order. (Kernels in headers are
// templates: a plain __global__ function would be defined again in every translation unit.)
template <int Threads>
__global__ void __launch_bounds__(Threads)
    sum_partials_kernel(const double* partials, std::int64_t count, double* total) {
  double sum = 0.0;
  for (std::int64_t i = threadIdx.x; i < count; i += Threads) sum += partials[i];
  sum = block_sum<Threads>(sum);
  if (threadIdx.x == 0) *total += sum;
}

// Queues the passes over `gradients`: *sum_of_squares += their sum of squares, *nonfinite = 1 when a
// value is inf or NaN; with Scale, multiplies them by `factor` first.
template <bool Scale, class G>
void launch_unscale_and_inspect(std::span<Tensor<G, Cuda>* const> gradients, UnscaleFactor<G> factor,
                                double* sum_of_squares, int* nonfinite, GradientWorkspace& workspace) {
  const std::int64_t chunks = GradientWorkspace::chunks(gradients);
  if (chunks == 0) return;
  workspace.reserve(chunks);
  double* partials = workspace.partials();
  std::int64_t done = 0;  // chunks of earlier launches
  GradientList<G> list{};
  const auto launch = [&] {  // the tensors in `list`, then an empty list (first_chunk[0] stays 0)
    const std::int64_t blocks = list.first_chunk[list.count];
    unscale_and_inspect_kernel<Scale, G>
        <<<static_cast<unsigned int>(blocks), gradient_threads, 0, stream()>>>(list, factor, partials + done,
                                                                               nonfinite);
    MPX_CUDA_CHECK_LAUNCH("mpx::cuda::unscale_and_inspect_kernel");
    done += blocks;
    list.count = 0;
  };
  for (Tensor<G, Cuda>* g : gradients) {
    if (g->empty()) continue;
    const std::int64_t tensor_chunks = (g->numel() + gradient_chunk - 1) / gradient_chunk;
    // (64 tensors stay far below a grid's 2^31 - 1 blocks: that would take 2^45 elements.)
    if (list.count == GradientList<G>::capacity) launch();
    list.data[list.count] = g->data();
    list.numel[list.count] = g->numel();
    list.first_chunk[list.count + 1] = list.first_chunk[list.count] + tensor_chunks;
    ++list.count;
  }
  if (list.count > 0) launch();
  sum_partials_kernel<sum_partials_threads>
      <<<1, sum_partials_threads, 0, stream()>>>(partials, chunks, sum_of_squares);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::sum_partials_kernel");
}

template <class G>
__global__ void scale_in_place_kernel(G* g, std::int64_t count, G factor) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    g[i] = scaled(g[i], factor);
}

}  // namespace detail

/// @brief One pass over all `gradients` of a training step: multiplies each by
/// `float(1.0 / double(*scale))` (GradScaler's inverse, computed on the device; only when `Scale`),
/// raises `*nonfinite` (to 1) when a value is inf or NaN, and adds the sum of the squares of the
/// (unscaled) values, in double, to `*sum_of_squares`. Queued on the context's stream without a host
/// synchronisation or copy; up to 64 tensors per launch, more launches when more. The sum is
/// deterministic (see the file comment). The three pointers are device memory; `workspace` holds the
/// partial sums.
template <bool Scale, Element G>
void unscale_and_inspect(std::span<Tensor<G, Cuda>* const> gradients, const float* scale,
                         double* sum_of_squares, int* nonfinite, GradientWorkspace& workspace) {
  if (scale == nullptr || sum_of_squares == nullptr || nonfinite == nullptr) {
    throw invalid_argument("mpx::cuda::unscale_and_inspect: the scale, sum or flag pointer is null");
  }
  for (const Tensor<G, Cuda>* g : gradients) {
    if (g == nullptr) throw invalid_argument("mpx::cuda::unscale_and_inspect: a gradient is null");
  }
  detail::launch_unscale_and_inspect<Scale, G>(gradients, detail::UnscaleFactor<G>{scale, G{}},
                                               sum_of_squares, nonfinite, workspace);
}

/// @brief The CPU signature (`cpu::unscale_and_inspect`): multiplies `grad` by `factor` (only when
/// `Scale`) and returns its finiteness and sum of squares. Waits for the stream to return them, so
/// it has no place in a training step; the step uses the multi-tensor overload.
template <bool Scale, Element G>
cpu::GradientStats unscale_and_inspect(Tensor<G, Cuda>& grad, G factor) {
  struct Found {
    double sum_of_squares;
    int nonfinite;
  };
  const Found zero{0.0, 0};
  DeviceArray<Found> result(std::span<const Found>(&zero, 1));
  GradientWorkspace workspace;
  Tensor<G, Cuda>* const list[] = {&grad};
  detail::launch_unscale_and_inspect<Scale, G>(
      std::span<Tensor<G, Cuda>* const>(list), detail::UnscaleFactor<G>{nullptr, factor},
      &result.data()->sum_of_squares, &result.data()->nonfinite, workspace);
  const Found found = result.download()[0];
  return {found.sum_of_squares, found.nonfinite == 0};
}

/// @brief grad *= factor, elementwise (queued; no synchronisation).
template <Element G>
void scale_in_place(Tensor<G, Cuda>& grad, G factor) {
  if (grad.empty()) return;
  detail::scale_in_place_kernel<<<detail::elementwise_blocks(grad.numel()), detail::elementwise_threads, 0,
                                  detail::stream()>>>(grad.data(), grad.numel(), factor);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::scale_in_place_kernel");
}

}  // namespace mpx::cuda
