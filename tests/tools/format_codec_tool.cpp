// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx's side of tests/interop/formats_vs_references.py:
//   format_codec_tool <inputs> <directory>
// reads <inputs> (little-endian float32 values) and writes, into <directory>, for each format kept
// as bit patterns (e4m3, e5m2, e2m1, e2m3, e3m2, e8m0):
//   decode_<format>.f32          the value of each code (all 2^bits of them), as float32;
//   <format>_saturate.u8         each input's code, overflowing to +-max_finite;
//   <format>_nonfinite.u8        each input's code, overflowing to infinity or NaN (formats that have
//                                either).
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
  using Code = typename mpx::Encoded<Tag>::bits_type;
  constexpr unsigned codes = 1u << (mpx::numeric_traits<Tag>::exponent_bits +
                                    mpx::numeric_traits<Tag>::mantissa_bits + (mpx::has_sign_v<Tag> ? 1 : 0));
  std::vector<float> values;
  for (unsigned code = 0; code < codes; ++code)
    values.push_back(static_cast<float>(mpx::Encoded<Tag>::from_bits(static_cast<Code>(code))));
  return values;
}

template <class Tag, mpx::Overflow Rule>
std::vector<std::uint8_t> encoded(const std::vector<float>& inputs) {
  std::vector<std::uint8_t> codes;
  codes.reserve(inputs.size());
  for (const float x : inputs) codes.push_back(mpx::round_to<Tag, Rule>(x).bits);
  return codes;
}

template <class Tag>
void write_format(const std::filesystem::path& out, const std::vector<float>& inputs) {
  const std::string name(mpx::numeric_traits<Tag>::name);
  write(out / ("decode_" + name + ".f32"), decoded<Tag>());
  write(out / (name + "_saturate.u8"), encoded<Tag, mpx::Overflow::Saturate>(inputs));
  if constexpr (mpx::numeric_traits<Tag>::non_finite != mpx::NonFinite::None)
    write(out / (name + "_nonfinite.u8"), encoded<Tag, mpx::Overflow::NonFinite>(inputs));
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
    write_format<mpx::Float8E4M3>(out, inputs);
    write_format<mpx::Float8E5M2>(out, inputs);
    write_format<mpx::Float4E2M1>(out, inputs);
    write_format<mpx::Float6E2M3>(out, inputs);
    write_format<mpx::Float6E3M2>(out, inputs);
    write_format<mpx::Float8E8M0>(out, inputs);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "float8_codec_tool: %s\n", error.what());
    return 1;
  }
  return 0;
}
