// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Whole-tensor operations on the GPU that give the host's bits exactly: conversions between
/// precisions (nearest and stochastic, as mpx::round_into), elementwise sums (as
/// Backend<Host>::add_into and add), uniform initialisation (as Backend<Host>::fill_uniform), and a
/// non-finite check that writes a device flag.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/tensor_ops.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstdint>
#include <limits>

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/normal_fill_spec.hpp"
#include "mpx/numeric/random.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// out[i] = round_to<To>(in[i] read in its accumulate type), as mpx::round_into.
template <class To, class From>
__global__ void round_nearest_kernel(const From* in, storage_t<To>* out, std::int64_t count) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = round_to<To>(static_cast<accumulate_t<From>>(in[i]));
  }
}

// One Philox block per 4 elements, lane = i % 4, exactly as the host's stochastic round_into.
template <class To>
__global__ void round_stochastic_kernel(const float* in, storage_t<To>* out, std::int64_t count,
                                        std::uint64_t seed, std::uint64_t stream) {
  const std::int64_t blocks = (count + 3) / 4;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t block = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; block < blocks;
       block += stride) {
    const auto bits = philox_block(seed, stream, static_cast<std::uint64_t>(block));
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) {
      const std::int64_t i = block * 4 + lane;
      if (i < count) out[i] = round_stochastic<To>(in[i], bits.v[lane]);
    }
  }
}

// destination[i] += source[i] in the accumulate type, rounded into T: what Eigen's `+=` does on the host
// (its half and bfloat16 operator+ add in float and round once).
template <class T>
__global__ void add_into_kernel(T* destination, const T* source, std::int64_t count) {
  using Acc = accumulate_t<T>;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    destination[i] = round_to<tag_of_t<T>>(static_cast<Acc>(destination[i]) + static_cast<Acc>(source[i]));
  }
}

// sum[i] = a[i] + b[i] in the accumulate type, rounded once into T, as Backend<Host>::add.
template <class T>
__global__ void add_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ sum,
                           std::int64_t count) {
  using Acc = accumulate_t<T>;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    sum[i] = round_to<tag_of_t<T>>(static_cast<Acc>(a[i]) + static_cast<Acc>(b[i]));
  }
}

template <class T>
__global__ void fill_uniform_kernel(T* out, std::int64_t count, double low, double high, std::uint64_t seed,
                                    std::uint64_t stream) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = round_to<tag_of_t<T>>(
        uniform_between(low, high, random_bits(seed, stream, static_cast<std::uint64_t>(i))));
  }
}

// *flag = 1 when some element is inf or NaN; one store per block that found one, never a clear.
template <class T>
__global__ void flag_nonfinite_kernel(const T* x, std::int64_t count, int* flag) {
  using Acc = accumulate_t<T>;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  int found = 0;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    // NaN fails every comparison and inf exceeds the largest finite value.
    if (!(fabs(static_cast<Acc>(x[i])) <= std::numeric_limits<Acc>::max())) found = 1;
  }
  if (__syncthreads_or(found) && threadIdx.x == 0) *flag = 1;
}

}  // namespace detail

/// @brief Rounds every element of `source` into precision `To` and writes it to `destination` (same
/// shape), on the device: the bits of mpx::round_into (TF32 by the Tensor Core rule).
template <NumericTag To, Element From>
void round_into(const Tensor<From, Cuda>& source, Tensor<storage_t<To>, Cuda>& destination,
                RoundNearest = {}) {
  require_shape("mpx::cuda::round_into", "destination", destination.shape(), source.shape());
  const std::int64_t count = source.numel();
  if (count == 0) return;
  detail::round_nearest_kernel<To>
      <<<detail::elementwise_blocks(count), detail::elementwise_threads, 0, detail::stream()>>>(
          source.data(), destination.data(), count);
  MPX_CUDA_CHECK_LAUNCH("round_nearest_kernel");
}

/// @brief Stochastic rounding of fp32 into fp16 or bf16 on the device: element i (row-major) uses
/// `random_bits(rounding.seed, rounding.stream, i)`, the bits the host's round_into draws.
template <SixteenBitTag To>
void round_into(const Tensor<float, Cuda>& source, Tensor<storage_t<To>, Cuda>& destination,
                RoundStochastic rounding) {
  require_shape("mpx::cuda::round_into", "destination", destination.shape(), source.shape());
  const std::int64_t count = source.numel();
  if (count == 0) return;
  detail::round_stochastic_kernel<To>
      <<<detail::elementwise_blocks((count + 3) / 4), detail::elementwise_threads, 0, detail::stream()>>>(
          source.data(), destination.data(), count, rounding.seed, rounding.stream);
  MPX_CUDA_CHECK_LAUNCH("round_stochastic_kernel");
}

/// @brief destination += source, elementwise (same shape), in the destination's type: 16-bit
/// elements are added in fp32 and rounded once, as on the host.
template <Element T>
void add_into(Tensor<T, Cuda>& destination, const Tensor<T, Cuda>& source) {
  require_shape("mpx::cuda::add_into", "source", source.shape(), destination.shape());
  const std::int64_t count = destination.numel();
  if (count == 0) return;
  detail::add_into_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                            detail::stream()>>>(destination.data(), source.data(), count);
  MPX_CUDA_CHECK_LAUNCH("add_into_kernel");
}

/// @brief sum = a + b, elementwise (same shapes), added in the accumulate type and rounded once: the
/// bits of Backend<Host>::add.
template <FloatingElement T>
void add(const Tensor<T, Cuda>& a, const Tensor<T, Cuda>& b, Tensor<T, Cuda>& sum) {
  require_shape("mpx::cuda::add", "b", b.shape(), a.shape());
  require_shape("mpx::cuda::add", "sum", sum.shape(), a.shape());
  const std::int64_t count = a.numel();
  if (count == 0) return;
  detail::add_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0, detail::stream()>>>(
      a.data(), b.data(), sum.data(), count);
  MPX_CUDA_CHECK_LAUNCH("add_kernel");
}

/// @brief Fills with values uniform on [low, high): element i is
/// `round_to(uniform_between(low, high, random_bits(seed, stream, i)))`, bit for bit what
/// Backend<Host>::fill_uniform writes, so a model initialised on either device starts identical.
template <Element T>
void fill_uniform(Tensor<T, Cuda>& tensor, double low, double high, std::uint64_t seed,
                  std::uint64_t stream) {
  const std::int64_t count = tensor.numel();
  if (count == 0) return;
  detail::fill_uniform_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                detail::stream()>>>(tensor.data(), count, low, high, seed, stream);
  MPX_CUDA_CHECK_LAUNCH("fill_uniform_kernel");
}

/// @brief Fills with values normal with the given mean and standard deviation, bit for bit what
/// Backend<Host>::fill_normal writes: element i is `round_to(normal_at(mean, stddev, seed, stream,
/// i))`. The values are drawn on the host and copied: the Box-Muller transform's log and cos differ
/// from glibc's in the last bit on the device, and initialisation is not on the training step's path.
template <FloatingElement T>
void fill_normal(Tensor<T, Cuda>& tensor, double mean, double stddev, std::uint64_t seed,
                 std::uint64_t stream) {
  auto host = Tensor<T, Host>::uninitialized(tensor.shape());
  normal_values_into(host.data(), 0, host.numel(), mean, stddev, seed, stream);
  copy(tensor, host);  // pageable host memory: staged before the call returns, so `host` may go
}

/// @brief Stores 1 into `*flag` (device memory) if any element of `x` is inf or NaN; leaves it as it
/// is otherwise, so one flag can collect several tensors. No host synchronisation.
template <Element T>
void flag_nonfinite(const Tensor<T, Cuda>& x, int* flag) {
  const std::int64_t count = x.numel();
  if (count == 0) return;
  detail::flag_nonfinite_kernel<<<detail::elementwise_blocks(count), detail::elementwise_threads, 0,
                                  detail::stream()>>>(x.data(), count, flag);
  MPX_CUDA_CHECK_LAUNCH("flag_nonfinite_kernel");
}

}  // namespace mpx::cuda
