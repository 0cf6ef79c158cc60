// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx's side of tests/interop/block_scaling_vs_references.py:
//   block_quantize_tool <inputs.f32> <rows> <cols> <directory>
// reads a [rows, cols] fp32 matrix and writes, into <directory>, its quantization under each
// block-scaling recipe: <name>.codes.u8 (one code per byte, [rows, cols] or the transpose's
// [cols, rows]) and <name>.scales (E8M0 or E4M3 codes as .u8, fp32 scales as .f32), and for NVFP4
// <name>.global.f32 (the global decode scale). Names:
//   mx_<element>_<rounding>       1 x 32 blocks, element e4m3, e5m2, e2m3, e3m2, e2m1, rounding floor,
//                                 roundup, rceil; mx_e4m3_floor_t the transpose's copy
//   nvfp4_1d, nvfp4_2d            1 x 16 and 16 x 16 blocks
//   fp8block_1d, fp8block_2d      1 x 128 and 128 x 128 blocks, power-of-two scales;
//   fp8block_1d_exact             1 x 128, scales not rounded
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <mpx/backend/cpu/block_quantize.hpp>

namespace {

void write_bytes(const std::filesystem::path& path, const void* data, std::size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

template <class Recipe>
void quantize_and_write(const mpx::Tensor<float, mpx::Host>& x, mpx::BlockShape block, bool transpose,
                        const std::filesystem::path& out, const std::string& name) {
  mpx::BlockQuantized<Recipe> q;
  mpx::cpu::quantize_blocks(x, block, q, {.transpose = transpose});
  write_bytes(out / (name + ".codes.u8"), q.codes.data(), q.codes.size_bytes());
  const bool fp32_scales = std::is_same_v<mpx::block_scale_storage_t<Recipe>, float>;
  write_bytes(out / (name + (fp32_scales ? ".scales.f32" : ".scales.u8")), q.scales.data(),
              q.scales.size_bytes());
  write_bytes(out / (name + ".global.f32"), &q.global_decode_scale, sizeof(float));
}

template <class Element>
void mx_all_roundings(const mpx::Tensor<float, mpx::Host>& x, const std::filesystem::path& out) {
  using enum mpx::E8M0Rounding;
  const std::string element(mpx::numeric_traits<Element>::name);
  quantize_and_write<mpx::MxScaling<Element, Floor>>(x, {1, 32}, false, out, "mx_" + element + "_floor");
  quantize_and_write<mpx::MxScaling<Element, RoundUp>>(x, {1, 32}, false, out, "mx_" + element + "_roundup");
  quantize_and_write<mpx::MxScaling<Element, RCeil>>(x, {1, 32}, false, out, "mx_" + element + "_rceil");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: block_quantize_tool <inputs.f32> <rows> <cols> <directory>\n");
    return 2;
  }
  try {
    const std::int64_t rows = std::atoll(argv[2]), cols = std::atoll(argv[3]);
    std::ifstream in(argv[1], std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (rows <= 0 || cols <= 0 || bytes.size() != static_cast<std::size_t>(rows * cols) * sizeof(float))
      throw std::runtime_error(std::string("cannot read a [") + argv[2] + ", " + argv[3] +
                               "] fp32 matrix from " + argv[1]);
    mpx::Tensor<float, mpx::Host> x(mpx::Shape{rows, cols});
    std::memcpy(x.data(), bytes.data(), bytes.size());
    const std::filesystem::path out = argv[4];
    std::filesystem::create_directories(out);
    mx_all_roundings<mpx::Float8E4M3>(x, out);
    mx_all_roundings<mpx::Float8E5M2>(x, out);
    mx_all_roundings<mpx::Float6E2M3>(x, out);
    mx_all_roundings<mpx::Float6E3M2>(x, out);
    mx_all_roundings<mpx::Float4E2M1>(x, out);
    quantize_and_write<mpx::MxScaling<>>(x, {1, 32}, true, out, "mx_e4m3_floor_t");
    quantize_and_write<mpx::Nvfp4Scaling<>>(x, {1, 16}, false, out, "nvfp4_1d");
    quantize_and_write<mpx::Nvfp4Scaling<>>(x, {16, 16}, false, out, "nvfp4_2d");
    quantize_and_write<mpx::Fp8BlockScaling<>>(x, {1, 128}, false, out, "fp8block_1d");
    quantize_and_write<mpx::Fp8BlockScaling<>>(x, {128, 128}, false, out, "fp8block_2d");
    quantize_and_write<mpx::Fp8BlockScaling<false>>(x, {1, 128}, false, out, "fp8block_1d_exact");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "block_quantize_tool: %s\n", error.what());
    return 1;
  }
  return 0;
}
