// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The device draws and rounds exactly as the host does: round-to-nearest through CUDA's intrinsics,
// TF32 through PTX's cvt.rna.tf32.f32, and stochastic rounding through the shared Philox bits.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <mpx/cuda.hpp>

namespace {

// Owns a device buffer for the duration of one test.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    MPX_CUDA_CHECK(cudaMalloc(&data_, count * sizeof(T)));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(data_); }
  T* get() { return data_; }
  void upload(const std::vector<T>& host) {
    MPX_CUDA_CHECK(cudaMemcpy(data_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    MPX_CUDA_CHECK(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t count_;
};

__global__ void round_nearest_kernel(const float* in, std::uint16_t* half_out, std::uint16_t* bf16_out,
                                     float* tf32_out, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  half_out[i] = __half_as_ushort(__float2half_rn(in[i]));
  bf16_out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(in[i]));
  tf32_out[i] = mpx::cuda::detail::round_tf32_device(in[i]);  // PTX's cvt.rna.tf32.f32, NaN kept
}

__global__ void round_stochastic_kernel(const float* in, std::uint16_t* half_out, std::uint16_t* bf16_out,
                                        int count, std::uint64_t seed, std::uint64_t stream) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const std::uint32_t bits = mpx::random_bits(seed, stream, static_cast<std::uint64_t>(i));
  half_out[i] = mpx::bits_of(mpx::round_stochastic<mpx::Half>(in[i], bits));
  bf16_out[i] = mpx::bits_of(mpx::round_stochastic<mpx::BFloat16>(in[i], bits));
}

std::vector<float> test_inputs(int count) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  std::uniform_real_distribution<float> moderate(-70000.0f, 70000.0f);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const std::uint32_t bits = any_bits(rng);
    values[static_cast<std::size_t>(i)] = (i % 2 == 0) ? moderate(rng) : std::bit_cast<float>(bits);
  }
  return values;
}

bool same_float_or_both_nan(float a, float b) {
  if (a != a && b != b) return true;
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("device round-to-nearest matches mpx::round_to on the host", "[cuda][numeric]") {
  constexpr int count = 1 << 20;
  const auto inputs = test_inputs(count);
  DeviceBuffer<float> in(count);
  DeviceBuffer<std::uint16_t> half_out(count), bf16_out(count);
  DeviceBuffer<float> tf32_out(count);
  in.upload(inputs);
  round_nearest_kernel<<<(count + 255) / 256, 256>>>(in.get(), half_out.get(), bf16_out.get(), tf32_out.get(),
                                                     count);
  MPX_CUDA_CHECK(cudaGetLastError());
  const auto halves = half_out.download();
  const auto bf16s = bf16_out.download();
  const auto tf32s = tf32_out.download();
  int mismatches = 0;
  for (int i = 0; i < count; ++i) {
    const float x = inputs[static_cast<std::size_t>(i)];
    const auto h = mpx::round_to<mpx::Half>(x);
    const auto b = mpx::round_to<mpx::BFloat16>(x);
    const bool half_ok = (x != x) ? (halves[i] & 0x7c00u) == 0x7c00u && (halves[i] & 0x3ffu) != 0
                                  : halves[i] == mpx::bits_of(h);
    const bool bf16_ok =
        (x != x) ? (bf16s[i] & 0x7f80u) == 0x7f80u && (bf16s[i] & 0x7fu) != 0 : bf16s[i] == mpx::bits_of(b);
    // mpx promises that NaN stays NaN, not which payload it keeps.
    const bool tf32_ok = same_float_or_both_nan(tf32s[i], mpx::round_tf32(x));
    if (!(half_ok && bf16_ok && tf32_ok) && ++mismatches <= 5) {
      UNSCOPED_INFO("x bits " << std::hex << std::bit_cast<std::uint32_t>(x));
    }
  }
  REQUIRE(mismatches == 0);
}

TEST_CASE("device stochastic rounding draws the same bits as the host", "[cuda][numeric]") {
  constexpr int count = 1 << 20;
  const auto inputs = test_inputs(count);
  const std::uint64_t seed = 0x5eedULL, stream = 3;
  DeviceBuffer<float> in(count);
  DeviceBuffer<std::uint16_t> half_out(count), bf16_out(count);
  in.upload(inputs);
  round_stochastic_kernel<<<(count + 255) / 256, 256>>>(in.get(), half_out.get(), bf16_out.get(), count, seed,
                                                        stream);
  MPX_CUDA_CHECK(cudaGetLastError());
  const auto halves = half_out.download();
  const auto bf16s = bf16_out.download();
  int mismatches = 0;
  for (int i = 0; i < count; ++i) {
    const float x = inputs[static_cast<std::size_t>(i)];
    const std::uint32_t bits = mpx::random_bits(seed, stream, static_cast<std::uint64_t>(i));
    // NaN stays NaN; its payload is the conversion's (the device's __float2half_rn gives 0x7fff,
    // Eigen on the host keeps the top payload bits), as in round-to-nearest above.
    if (x != x) {
      if ((halves[i] & 0x7c00u) != 0x7c00u || (halves[i] & 0x3ffu) == 0) ++mismatches;
      if ((bf16s[i] & 0x7f80u) != 0x7f80u || (bf16s[i] & 0x7fu) == 0) ++mismatches;
      continue;
    }
    if (halves[i] != mpx::bits_of(mpx::round_stochastic<mpx::Half>(x, bits))) ++mismatches;
    if (bf16s[i] != mpx::bits_of(mpx::round_stochastic<mpx::BFloat16>(x, bits))) ++mismatches;
  }
  REQUIRE(mismatches == 0);
}

int main(int argc, char** argv) {
  // Listing tests and tags needs no device (scripts/gpu_session.sh splits the run by tag with it).
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--list", 6) == 0) return Catch::Session().run(argc, argv);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("mpx_cuda_tests: no CUDA device present; skipping (exit code 77)\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
