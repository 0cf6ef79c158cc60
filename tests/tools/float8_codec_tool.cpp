// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx's side of tests/interop/float8_vs_references.py:
//   float8_codec_tool <inputs> <directory>
// reads <inputs> (little-endian float32 values) and writes, into <directory>:
//   decode_e4m3.f32, decode_e5m2.f32                 the value of each of the 256 codes, as float32;
//   e4m3_saturate.u8, e4m3_nonfinite.u8,
//   e5m2_saturate.u8, e5m2_nonfinite.u8              each input's code under each overflow rule.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <mpx/mpx.hpp>

namespace {

template <class T>
void write(const std::filesystem::path& path, const std::vector<T>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(T)));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

template <class Tag>
std::vector<float> decoded() {
  std::vector<float> values;
  for (unsigned code = 0; code < 256; ++code)
    values.push_back(static_cast<float>(mpx::Encoded<Tag>::from_bits(static_cast<std::uint8_t>(code))));
  return values;
}

template <class Tag, mpx::Overflow Rule>
std::vector<std::uint8_t> encoded(const std::vector<float>& inputs) {
  std::vector<std::uint8_t> codes;
  codes.reserve(inputs.size());
  for (const float x : inputs) codes.push_back(mpx::round_to<Tag, Rule>(x).bits);
  return codes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: float8_codec_tool <inputs.f32> <directory>\n");
    return 2;
  }
  try {
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) throw std::runtime_error(std::string("cannot open ") + argv[1]);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad() || bytes.size() % sizeof(float) != 0)
      throw std::runtime_error(std::string("cannot read float32 values from ") + argv[1]);
    std::vector<float> inputs(bytes.size() / sizeof(float));
    std::memcpy(inputs.data(), bytes.data(), bytes.size());
    const std::filesystem::path out = argv[2];
    std::filesystem::create_directories(out);
    write(out / "decode_e4m3.f32", decoded<mpx::Float8E4M3>());
    write(out / "decode_e5m2.f32", decoded<mpx::Float8E5M2>());
    write(out / "e4m3_saturate.u8", encoded<mpx::Float8E4M3, mpx::Overflow::Saturate>(inputs));
    write(out / "e4m3_nonfinite.u8", encoded<mpx::Float8E4M3, mpx::Overflow::NonFinite>(inputs));
    write(out / "e5m2_saturate.u8", encoded<mpx::Float8E5M2, mpx::Overflow::Saturate>(inputs));
    write(out / "e5m2_nonfinite.u8", encoded<mpx::Float8E5M2, mpx::Overflow::NonFinite>(inputs));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "float8_codec_tool: %s\n", error.what());
    return 1;
  }
  return 0;
}
