// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Whole-gradient passes on the GPU: unscale fused with the finite check and the squared norm
/// (over many tensors in one launch, results in device memory) and in-place scaling. Mirrors
/// cpu/gradient.hpp.
///
/// The squared norm is deterministic: each tensor is cut into fixed chunks of `gradient_chunk`
/// elements (multi_tensor.cuh), one block sums one chunk in a fixed order into a partial, and the
/// block that finishes last adds the partials in a fixed order, whichever block that is. The result
/// depends on the shapes only, never on the device or on timing; it differs from the CPU's double sum
/// (another order) by rounding, about 1e-16 relative.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/gradient.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>

#include "mpx/backend/cuda/device_array.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/cuda/multi_tensor.cuh"
#include "mpx/backend/gradient_spec.hpp"
#include "mpx/backend/optimizer_math.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

/// Elements of a gradient that one block of `unscale_and_inspect` reads: the unit of the fixed
/// partition of the squared norm.
inline constexpr std::int64_t gradient_chunk = 16384;

/// @brief The scratch memory of a training step's whole-tensor passes: one double per chunk of the
/// gradients (`unscale_and_inspect`'s partial sums), and four words that the passes' "last block
/// done" pattern counts and flags in (zero between launches). A trainer keeps one and passes it to
/// every step; it is allocated on first use (so run one step, or call `reserve`, before capturing a
/// step in a CUDA graph) and never shrunk.
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

  /// @brief Makes room for `count` partial sums (allocates only when growing) and allocates the
  /// counters. Allocating while the context's stream is being captured throws `mpx::error`: the
  /// graph would own the new memory.
  void reserve(std::int64_t count) {
    if (sync_.empty()) {
      refuse_during_capture("its counters", 0);
      static constexpr unsigned int zeros[sync_words] = {};
      sync_ = DeviceArray<unsigned int>(std::span<const unsigned int>(zeros));
    }
    if (count <= static_cast<std::int64_t>(partials_.size())) return;
    refuse_during_capture("partial sums", count);
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
  /// @brief Word `index` (< 4) of the counters (device memory, 0 between launches; null before
  /// `reserve`): 0 and 1 count the blocks of the gradient pass and of the input check, 2 and 3 are
  /// their non-finite flags.
  [[nodiscard]] unsigned int* sync(int index) noexcept {
    return sync_.empty() ? nullptr : sync_.data() + index;
  }

 private:
  static constexpr std::size_t sync_words = 4;

  void refuse_during_capture(const char* what, std::int64_t count) const {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    MPX_CUDA_CHECK(cudaStreamIsCapturing(cuda_context().stream(), &capture));
    if (capture != cudaStreamCaptureStatusNone) {
      throw error(mpx::detail::concat(
          "mpx::cuda::GradientWorkspace: allocating ", what, " (", count, " partial sums needed, room for ",
          partials_.size(),
          ") while a CUDA graph is being captured; run one step (or reserve_for the gradients) before "
          "capturing"));
    }
  }

  DeviceArray<double> partials_;
  DeviceArray<unsigned int> sync_;
};

/// @brief A continuation that does nothing: the multi-tensor `unscale_and_inspect` and the fused
/// `flag_nonfinite` without one.
struct NoContinuation {
  /// @brief Does nothing.
  template <class... Args>
  MPX_HOST_DEVICE void operator()(Args...) const {}
};

namespace detail {

inline constexpr int gradient_threads = 256;

// The gradients of one launch: up to 96 tensors, 24 bytes each in the kernel's parameters.
template <class G>
using GradientList = TensorChunks<G*, 96, gradient_chunk>;

// Where the unscaling factor comes from: float(1.0 / double(scale)) of a scale in device memory (the
// step's scaler), or a host value when `device_scale` is null; and what the gradients are divided by
// first (the step's micro-batches; 1: nothing).
template <class G>
struct UnscaleFactor {
  const float* device_scale;
  G host_factor;
  G divisor = G(1);

  __device__ G value() const {
    if (device_scale == nullptr) return host_factor;
    return static_cast<G>(static_cast<float>(mpx::detail::div_rn(1.0, static_cast<double>(*device_scale))));
  }
};

// What the last block of a pass does: *sum_of_squares += the partial sums [0, total_chunks) in a
// fixed order, *nonfinite = 1 if a block raised *found, then the continuation. `counter` is null in
// the launches before the last one (their blocks only write partials and *found).
struct PassEnd {
  unsigned int* counter;
  unsigned int* found;
  double* sum_of_squares;
  int* nonfinite;
  std::int64_t total_chunks;
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

// g / divisor rounded into G, as `g /= divisor` rounds on the CPU.
template <class G>
__device__ G divided(G g, G divisor) {
  if constexpr (std::is_floating_point_v<G>) {
    return mpx::detail::div_rn(g, divisor);
  } else {
    return round_to<tag_of_t<G>>(mpx::detail::div_rn(static_cast<float>(g), static_cast<float>(divisor)));
  }
}

template <class G>
__device__ double to_double(G g) {
  return static_cast<double>(static_cast<accumulate_t<G>>(g));
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

// One block per chunk: divides it by factor.divisor (unless 1) and scales it (when Scale) in place,
// writes the sum of its squares to partials[first_block + blockIdx.x] and raises *end.found if a
// value is inf or NaN. In the last launch of a pass, the block that finishes last adds the partials
// of every launch in a fixed order (the same whichever block that is), publishes the flag and runs
// then(args...): one kernel instead of a pass, a one-block sum and a one-thread decision.
template <bool Scale, class G, class Then, class... Args>
__global__ void __launch_bounds__(gradient_threads)
    unscale_and_inspect_kernel(__grid_constant__ const GradientList<G> list, UnscaleFactor<G> factor,
                               double* partials, std::int64_t first_block, PassEnd end, Then then,
                               Args... args) {
  const auto range = list.range(blockIdx.x);
  G* g = list.entries[range.tensor];
  [[maybe_unused]] G f{};
  if constexpr (Scale) f = factor.value();
  const bool divide = factor.divisor != G(1);
  double sum = 0.0;
  bool finite = true;
  for (std::int64_t i = range.begin + threadIdx.x; i < range.end; i += gradient_threads) {
    G value = g[i];
    if (divide) value = divided(value, factor.divisor);
    if constexpr (Scale) value = scaled(value, f);
    if (Scale || divide) g[i] = value;
    const double d = to_double(value);
    sum += d * d;
    finite = finite && is_finite(value);
  }
  const double total = block_sum<gradient_threads>(sum);
  const bool all_finite = __syncthreads_and(finite) != 0;
  if (threadIdx.x == 0) {
    partials[first_block + blockIdx.x] = total;
    if (!all_finite) atomicExch(end.found, 1u);
  }
  if (end.counter == nullptr || !last_block_done(end.counter)) return;
  double final_sum = 0.0;
  for (std::int64_t i = threadIdx.x; i < end.total_chunks; i += gradient_threads)
    final_sum += __ldcg(partials + i);
  final_sum = block_sum<gradient_threads>(final_sum);
  if (threadIdx.x == 0) {
    *end.sum_of_squares += final_sum;
    if (atomicExch(end.found, 0u) != 0u) *end.nonfinite = 1;
    then(args...);
  }
}

// Queues the passes over `gradients`: *sum_of_squares += their sum of squares, *nonfinite = 1 when a
// value is inf or NaN; first divides them by `factor.divisor` (unless 1) and, with Scale, multiplies
// them by `factor`; then then(args...), in the last block of the last launch (or in one thread when
// there is no gradient element at all).
template <bool Scale, class G, class Then, class... Args>
void launch_unscale_and_inspect(std::span<Tensor<G, Cuda>* const> gradients, UnscaleFactor<G> factor,
                                double* sum_of_squares, int* nonfinite, GradientWorkspace& workspace,
                                const Then& then, Args... args) {
  const std::int64_t chunks = GradientWorkspace::chunks(gradients);
  workspace.reserve(chunks);
  if (chunks == 0) {  // no element to inspect: only the continuation runs
    if constexpr (!std::is_same_v<Then, NoContinuation>) single_thread(then, args...);
    return;
  }
  double* partials = workspace.partials();
  const PassEnd last{workspace.sync(0), workspace.sync(2), sum_of_squares, nonfinite, chunks};
  constexpr auto kernel = &unscale_and_inspect_kernel<Scale, G, Then, Args...>;
  static_assert(sizeof(GradientList<G>) + sizeof(UnscaleFactor<G>) + sizeof(PassEnd) + sizeof(Then) +
                        (sizeof(Args) + ... + 0) + 16 <=
                    portable_kernel_parameter_bytes,
                "mpx::cuda::unscale_and_inspect: the kernel's parameters exceed 4 KB");
  const auto launch = [&](const GradientList<G>& list, std::int64_t first_block, bool is_last) {
    PassEnd end = last;
    if (!is_last) end.counter = nullptr;
    kernel<<<static_cast<unsigned int>(list.first_chunk[list.count]), gradient_threads, 0, stream()>>>(
        list, factor, partials, first_block, end, then, args...);
    MPX_CUDA_CHECK_LAUNCH("mpx::cuda::unscale_and_inspect_kernel");
  };
  ChunkedLaunches<GradientList<G>> launches;
  for (Tensor<G, Cuda>* g : gradients) launches.add(g->data(), g->numel(), launch);
  launches.finish(launch);
}

template <class G>
__global__ void scale_in_place_kernel(G* g, std::int64_t count, G factor) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    g[i] = scaled(g[i], factor);
}

// *flag = 1 when x holds inf or NaN, after before(args...): every block raises *found, the last one
// runs before(args...) and then publishes the flag.
template <class T, class Before, class... Args>
__global__ void flag_nonfinite_after_kernel(const T* x, std::int64_t count, int* flag, unsigned int* counter,
                                            unsigned int* found, Before before, Args... args) {
  using Acc = accumulate_t<T>;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  int local = 0;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    // NaN fails every comparison and inf exceeds the largest finite value.
    if (!(fabs(static_cast<Acc>(x[i])) <= std::numeric_limits<Acc>::max())) local = 1;
  }
  if (__syncthreads_or(local) != 0 && threadIdx.x == 0) atomicExch(found, 1u);
  if (!last_block_done(counter)) return;
  if (threadIdx.x == 0) {
    before(args...);
    if (atomicExch(found, 0u) != 0u) *flag = 1;
  }
}

}  // namespace detail

/// @brief One pass over all `gradients` of a training step, as `cpu::unscale_and_inspect` does it:
/// divides each by `micro_batches` (when more than one; each holds the sum over the step's
/// micro-batches), multiplies it by `float(1.0 / double(*scale))` (GradScaler's inverse, computed on
/// the device; only when `Scale`), raises `*nonfinite` (to 1) when a value is inf or NaN, and adds the
/// sum of the squares of the final values, in double, to `*sum_of_squares`. Queued on the context's
/// stream without a host synchronisation or copy: one launch for up to 96 tensors (more when more),
/// and no other kernel. The sum is deterministic (see the file comment). The three pointers are device
/// memory; `workspace` holds the partial sums and counters.
template <bool Scale, Element G>
void unscale_and_inspect(std::span<Tensor<G, Cuda>* const> gradients, const float* scale,
                         std::int64_t micro_batches, double* sum_of_squares, int* nonfinite,
                         GradientWorkspace& workspace) {
  unscale_and_inspect<Scale>(gradients, scale, micro_batches, sum_of_squares, nonfinite, workspace,
                             NoContinuation{});
}

/// @brief As above, and then `then(args...)` (a `MPX_HOST_DEVICE` functor; `args` are device
/// pointers or values) once the pass's results are in place: on a GPU by one thread of the block
/// that finishes last, in the same kernel (a training step's skip, clipping and scaler decisions
/// this way cost no launch of their own).
template <bool Scale, Element G, class Then, class... Args>
void unscale_and_inspect(std::span<Tensor<G, Cuda>* const> gradients, const float* scale,
                         std::int64_t micro_batches, double* sum_of_squares, int* nonfinite,
                         GradientWorkspace& workspace, const Then& then, Args... args) {
  if (scale == nullptr || sum_of_squares == nullptr || nonfinite == nullptr) {
    throw invalid_argument("mpx::cuda::unscale_and_inspect: the scale, sum or flag pointer is null");
  }
  for (const Tensor<G, Cuda>* g : gradients) {
    if (g == nullptr) throw invalid_argument("mpx::cuda::unscale_and_inspect: a gradient is null");
  }
  const G divisor = micro_batches_divisor<G>("mpx::cuda::unscale_and_inspect", micro_batches);
  detail::launch_unscale_and_inspect<Scale, G>(gradients, detail::UnscaleFactor<G>{scale, G{}, divisor},
                                               sum_of_squares, nonfinite, workspace, then, args...);
}

/// @brief Runs `before(args...)` (a `MPX_HOST_DEVICE` functor) and then stores 1 into `*flag` if
/// any element of `x` is inf or NaN, in one kernel: `before` runs in the block that finishes last,
/// before it publishes the flag. A training step's first kernel begins the step this way (its
/// `BeginStep` clears the flag that the input check then raises). `workspace` holds the counters.
template <Element T, class Before, class... Args>
void flag_nonfinite(const Tensor<T, Cuda>& x, int* flag, GradientWorkspace& workspace, const Before& before,
                    Args... args) {
  if (flag == nullptr) throw invalid_argument("mpx::cuda::flag_nonfinite: the flag pointer is null");
  workspace.reserve(0);
  const std::int64_t count = x.numel();
  detail::flag_nonfinite_after_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                        detail::stream()>>>(x.data(), count, flag, workspace.sync(1),
                                                            workspace.sync(3), before, args...);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::flag_nonfinite_after_kernel");
}

/// @brief The CPU signature (`cpu::unscale_and_inspect`): multiplies `grad` by `factor` (only when
/// `Scale`) and returns its finiteness and sum of squares. Waits for the stream to return them, so
/// it has no place in a training step; the step uses the multi-tensor overload.
template <bool Scale, Element G>
GradientStats unscale_and_inspect(Tensor<G, Cuda>& grad, G factor) {
  struct Found {
    double sum_of_squares;
    int nonfinite;
  };
  const Found zero{0.0, 0};
  DeviceArray<Found> result(std::span<const Found>(&zero, 1));
  GradientWorkspace workspace;
  Tensor<G, Cuda>* const list[] = {&grad};
  detail::launch_unscale_and_inspect<Scale, G>(
      std::span<Tensor<G, Cuda>* const>(list), detail::UnscaleFactor<G>{nullptr, factor, G(1)},
      &result.data()->sum_of_squares, &result.data()->nonfinite, workspace, NoContinuation{});
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
