// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// A number format of the user's own, defined in this file and nowhere in include/: OCP MX's E3M2
// (6 bits: sign, 3 exponent bits, 2 mantissa bits, bias 3, subnormals, no infinity or NaN,
// saturating), kept as bit patterns in a byte. Its 64 codes decode and encode as a scalar reference
// written here from the format's definition says, the CPU GEMM widens it through its traits, and a
// model whose Linear layers compute in it trains.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/mpx.hpp>

#include "../support/temp_dir.hpp"

// [format]
// A tag names the format; numeric_traits describes it, and everything else derives from that.
struct E3M2 {};

template <>
struct mpx::numeric_traits<E3M2> {
  using storage_type = mpx::Encoded<E3M2>;  // a byte holding the code: no C++ scalar type needed
  using accumulate_type = float;            // arithmetic and sums happen in fp32
  static constexpr std::string_view name = "e3m2";
  static constexpr int exponent_bits = 3;
  static constexpr int mantissa_bits = 2;
  static constexpr int exponent_bias = 3;
  static constexpr bool has_subnormals = true;                        // 0.0625, 0.125, 0.1875
  static constexpr mpx::NonFinite non_finite = mpx::NonFinite::None;  // all 64 codes are numbers
  static constexpr bool saturates = true;                             // out of range gives +-28
  static constexpr float max_finite = 28.0f;                          // 1.75 * 2^4
  static constexpr std::string_view safetensors_dtype = "";           // none here
  static constexpr std::string_view cuda_data_type = "";              // runs on the CPU only
};

// Linear layers computing in E3M2, with fp32 master weights and fp32 accumulation.
using e3m2_mixed = mpx::Precision<E3M2>;
// [format]

namespace {

using Code = mpx::Encoded<E3M2>;

// ---- a scalar reference, from the format's definition ----------------------------------------

// The value of code c: (-1)^s 2^(e - 3) 1.m for e > 0, (-1)^s 2^-2 0.m for e = 0.
double reference_value(unsigned code) {
  const unsigned sign = (code >> 5) & 1u;
  const unsigned exponent = (code >> 2) & 7u;
  const unsigned mantissa = code & 3u;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa / 4.0, -2)
                                         : std::ldexp(1.0 + mantissa / 4.0, static_cast<int>(exponent) - 3);
  return sign != 0 ? -magnitude : magnitude;
}

// The code x rounds to: the nearest of the 32 magnitudes, ties to the even code (the one whose
// mantissa's last bit is 0), beyond 28 saturated to 28; NaN to +28 (mpx's rule for formats without
// NaN); the sign kept, zero included.
unsigned reference_code(float x) {
  if (std::isnan(x)) return 31u;
  const unsigned sign = std::signbit(x) ? 32u : 0u;
  const double magnitude = std::fabs(static_cast<double>(x));
  if (magnitude >= 28.0) return sign | 31u;  // the largest value is the nearest (the distances round)
  unsigned best = 0;
  for (unsigned code = 1; code < 32; ++code) {
    const double distance = std::fabs(reference_value(code) - magnitude);
    const double best_distance = std::fabs(reference_value(best) - magnitude);
    if (distance < best_distance || (distance == best_distance && (code & 1u) == 0)) best = code;
  }
  return sign | best;
}

// Every number of interest: each code's value, the midpoints between neighbours, one float either side
// of each, far out of range, the specials.
std::vector<float> probe_values() {
  std::vector<float> values;
  for (unsigned code = 0; code < 64; ++code) values.push_back(static_cast<float>(reference_value(code)));
  for (unsigned code = 0; code < 31; ++code) {
    for (const double sign : {1.0, -1.0}) {
      const auto mid = static_cast<float>(sign * (reference_value(code) + reference_value(code + 1)) / 2);
      values.push_back(mid);
    }
  }
  const std::size_t exact = values.size();
  for (std::size_t i = 0; i < exact; ++i) {
    values.push_back(std::nextafter(values[i], std::numeric_limits<float>::infinity()));
    values.push_back(std::nextafter(values[i], -std::numeric_limits<float>::infinity()));
  }
  for (const float x :
       {30.0f, 32.0f, 1e30f, std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity(),
        0.03125f, 0.01f, 1e-30f, std::numeric_limits<float>::denorm_min()}) {
    values.push_back(x);
    values.push_back(-x);
  }
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-40.0f, 40.0f);
  for (int i = 0; i < 20000; ++i) values.push_back(uniform(random));
  return values;
}

}  // namespace

TEST_CASE("A format of the user's own: E3M2's 64 codes decode as its definition says", "[numeric][format]") {
  STATIC_REQUIRE(mpx::NumericTag<E3M2>);
  STATIC_REQUIRE(sizeof(Code) == 1);
  STATIC_REQUIRE(mpx::FloatingElement<Code>);
  STATIC_REQUIRE(std::is_same_v<mpx::tag_of_t<Code>, E3M2>);
  STATIC_REQUIRE(std::is_same_v<mpx::accumulate_t<Code>, float>);
  STATIC_REQUIRE(mpx::min_positive_v<E3M2> == 0.0625f);
  STATIC_REQUIRE(mpx::min_normal_v<E3M2> == 0.25f);
  STATIC_REQUIRE(mpx::epsilon_v<E3M2> == 0.25f);
  for (unsigned code = 0; code < 64; ++code) {
    INFO("code " << code);
    const float value = static_cast<float>(Code::from_bits(static_cast<std::uint8_t>(code)));
    CHECK(static_cast<double>(value) == reference_value(code));
    CHECK(std::signbit(value) == (code >= 32));      // -0 is code 32
    CHECK(mpx::round_to<E3M2>(value).bits == code);  // every code is the encoding of its value
  }
  // The CPU backend's vectorised widening computes the same values from the traits.
  STATIC_REQUIRE(mpx::cpu::detail::decodes_by_arithmetic<E3M2>);
  std::vector<Code> codes(64);
  for (unsigned code = 0; code < 64; ++code) codes[code] = Code::from_bits(static_cast<std::uint8_t>(code));
  std::vector<float> widened(64);
  mpx::cpu::detail::widen_range<E3M2>(codes.data(), widened.data(), 0, 64);
  for (unsigned code = 0; code < 64; ++code) {
    CHECK(std::bit_cast<std::uint32_t>(widened[code]) ==
          std::bit_cast<std::uint32_t>(static_cast<float>(codes[code])));
  }
}

TEST_CASE("A format of the user's own: encoding into E3M2 rounds to nearest even and saturates",
          "[numeric][format]") {
  for (const float x : probe_values()) {
    INFO("x = " << x);
    CHECK(unsigned{mpx::round_to<E3M2>(x).bits} == reference_code(x));
  }
  // The cases by name: a tie below the smallest subnormal goes to zero, between codes to the even one.
  CHECK(static_cast<float>(mpx::round_to<E3M2>(0.03125f)) == 0.0f);
  CHECK(static_cast<float>(mpx::round_to<E3M2>(0.09375f)) == 0.125f);
  CHECK(static_cast<float>(mpx::round_to<E3M2>(26.0f)) == 24.0f);
  CHECK(static_cast<float>(mpx::round_to<E3M2>(-1e30f)) == -28.0f);
  CHECK(static_cast<float>(mpx::round_to<E3M2>(std::numeric_limits<float>::infinity())) == 28.0f);
  // A whole tensor converts the same way, element by element.
  mpx::Tensor<float> x(mpx::Shape{4});
  x[0] = 0.3f;
  x[1] = -5.5f;
  x[2] = 100.0f;
  x[3] = 1e-3f;
  const auto y = mpx::convert<E3M2>(x);
  CHECK(y[0].bits == 0b000101);  // 0.3125
  CHECK(static_cast<float>(y[1]) == -6.0f);
  CHECK(static_cast<float>(y[2]) == 28.0f);
  CHECK(static_cast<float>(y[3]) == 0.0f);
}

TEST_CASE("A format of the user's own: the CPU GEMM widens E3M2 operands through its traits",
          "[numeric][format][gemm]") {
  // D = A B^T + bias, D in fp32 and in E3M2. Operands between 0.25 and 7 in magnitude: their
  // products and sums are exact in fp32, so D has one right answer.
  std::mt19937 random(11);
  std::uniform_int_distribution<unsigned> sign_and_mantissa(0, 7);
  std::uniform_int_distribution<unsigned> exponent(1, 5);
  const auto code = [&](std::mt19937& r) {
    const unsigned low = sign_and_mantissa(r);
    return (low & 4u) << 3 | exponent(r) << 2 | (low & 3u);
  };
  mpx::Tensor<Code> a(mpx::Shape{5, 3});
  mpx::Tensor<Code> b(mpx::Shape{4, 3});
  mpx::Tensor<Code> bias(mpx::Shape{4});
  for (std::int64_t i = 0; i < a.numel(); ++i)
    a[i] = Code::from_bits(static_cast<std::uint8_t>(code(random)));
  for (std::int64_t i = 0; i < b.numel(); ++i)
    b[i] = Code::from_bits(static_cast<std::uint8_t>(code(random)));
  for (std::int64_t i = 0; i < bias.numel(); ++i)
    bias[i] = Code::from_bits(static_cast<std::uint8_t>(code(random)));
  mpx::Tensor<float> wide(mpx::Shape{5, 4});
  mpx::Tensor<Code> narrow(mpx::Shape{5, 4});
  mpx::cpu::gemm<E3M2>(a, b, narrow, {.transpose_b = mpx::Transpose::Yes, .epilogue = mpx::Epilogue::Bias},
                       {.bias = &bias});
  mpx::cpu::gemm<E3M2>(a, b, wide, {.transpose_b = mpx::Transpose::Yes});
  for (std::int64_t i = 0; i < 5; ++i) {
    for (std::int64_t j = 0; j < 4; ++j) {
      double sum = 0.0;
      for (std::int64_t k = 0; k < 3; ++k)
        sum += reference_value(a[i * 3 + k].bits) * reference_value(b[j * 3 + k].bits);
      INFO("D[" << i << ", " << j << "]");
      CHECK(static_cast<double>(wide[i * 4 + j]) == sum);
      const double biased = static_cast<double>(static_cast<float>(sum) + static_cast<float>(bias[j]));
      CHECK(unsigned{narrow[i * 4 + j].bits} == reference_code(static_cast<float>(biased)));
    }
  }
}

TEST_CASE("A format of the user's own: a model whose Linear layers compute in E3M2 trains on the CPU",
          "[numeric][format][train]") {
  // Four Gaussian blobs in 8 dimensions; 8 -> 32 (ReLU) -> 4, every matmul operand and activation in
  // E3M2, masters, gradients and AdamW's state in fp32.
  constexpr std::int64_t features = 8;
  constexpr std::int64_t classes = 4;
  constexpr std::int64_t batch = 64;
  std::mt19937 random(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> label(0, classes - 1);
  std::vector<float> centres(static_cast<std::size_t>(classes * features));
  for (float& c : centres) c = 1.5f * normal(random);
  mpx::Tensor<float> x(mpx::Shape{batch, features});
  mpx::Tensor<std::int32_t> y(mpx::Shape{batch});
  for (std::int64_t row = 0; row < batch; ++row) {
    y[row] = label(random);
    for (std::int64_t f = 0; f < features; ++f)
      x[row * features + f] =
          centres[static_cast<std::size_t>(y[row] * features + f)] + 0.7f * normal(random);
  }

  mpx::nn::Sequential model{mpx::nn::Linear<e3m2_mixed, mpx::nn::Activation::ReLU>(features, 32),
                            mpx::nn::Linear<e3m2_mixed>(32, classes)};
  model.initialize(5);
  STATIC_REQUIRE(std::is_same_v<decltype(model)::input_type, Code>);
  STATIC_REQUIRE(e3m2_mixed::name == "e3m2_mixed");
  // E3M2's exponent range is narrower than fp32's, so a model computing in it defaults to loss
  // scaling, as fp16 does. Its overflow saturates instead of reaching infinity, which dynamic scaling
  // would never see, so this test fixes the scale: 2^8 lifts the loss gradients (at most 1/64 per
  // logit) into E3M2's range.
  STATIC_REQUIRE(std::is_same_v<mpx::default_scaler_t<e3m2_mixed>, mpx::DynamicLossScaling>);
  mpx::nn::SoftmaxCrossEntropy<e3m2_mixed> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 0.02f});
  mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer), mpx::StaticLossScaling> trainer(
      model, loss, optimizer, {.max_grad_norm = {}, .scaler = {.scale = 256.0f}});

  std::vector<double> losses;
  for (int step = 0; step < 40; ++step) {
    const mpx::StepResult result = trainer.step(x, y);
    REQUIRE(result.stepped);
    losses.push_back(result.loss);
  }
  INFO("first loss " << losses.front() << ", last " << losses.back());
  CHECK(std::isfinite(losses.back()));
  CHECK(losses.back() < 0.5 * losses.front());

  // Its weights save and load as any model's (fp32 masters): a fresh model given the file computes
  // the same E3M2 logits, bit for bit.
  const mpx::test::TempDir dir("mpx_custom_format");
  mpx::io::save_weights(model, dir / "e3m2.safetensors");
  mpx::nn::Sequential restored{mpx::nn::Linear<e3m2_mixed, mpx::nn::Activation::ReLU>(features, 32),
                               mpx::nn::Linear<e3m2_mixed>(32, classes)};
  mpx::io::load_weights(restored, dir / "e3m2.safetensors");
  std::vector<unsigned> trained;
  for (const Code logit : model.forward(x).values()) trained.push_back(logit.bits);
  std::vector<unsigned> loaded;
  for (const Code logit : restored.forward(x).values()) loaded.push_back(logit.bits);
  CHECK(loaded == trained);
}

namespace {
// The generic codec is the one Eigen's fp16 follows when the layout is fp16's: a format with fp16's
// traits kept as bit patterns.
struct Fp16Bits {};
}  // namespace

template <>
struct mpx::numeric_traits<Fp16Bits> {
  using storage_type = mpx::Encoded<Fp16Bits>;
  using accumulate_type = float;
  static constexpr std::string_view name = "fp16_bits";
  static constexpr int exponent_bits = 5;
  static constexpr int mantissa_bits = 10;
  static constexpr int exponent_bias = 15;
  static constexpr bool has_subnormals = true;
  static constexpr mpx::NonFinite non_finite = mpx::NonFinite::InfAndNan;
  static constexpr bool saturates = false;
  static constexpr float max_finite = 65504.0f;
  static constexpr std::string_view safetensors_dtype = "";
  static constexpr std::string_view cuda_data_type = "";
};

TEST_CASE("A format kept as bit patterns with fp16's layout converts as Eigen::half", "[numeric][format]") {
  STATIC_REQUIRE(sizeof(mpx::Encoded<Fp16Bits>) == 2);
  for (std::uint32_t code = 0; code < 65536; ++code) {
    const float expected = static_cast<float>(std::bit_cast<Eigen::half>(static_cast<std::uint16_t>(code)));
    const float value =
        static_cast<float>(mpx::Encoded<Fp16Bits>::from_bits(static_cast<std::uint16_t>(code)));
    if (std::isnan(expected)) {
      REQUIRE(std::isnan(value));
    } else {
      REQUIRE(std::bit_cast<std::uint32_t>(value) == std::bit_cast<std::uint32_t>(expected));
    }
  }
  std::mt19937 random(13);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 1000000; ++i) {
    auto x = std::bit_cast<float>(bits(random));
    if (i % 2 == 0)
      x = std::ldexp(std::fmod(x, 2.0f), static_cast<int>(bits(random) % 48) - 30);  // fp16's range
    if (std::isnan(x)) continue;
    const auto expected = std::bit_cast<std::uint16_t>(static_cast<Eigen::half>(x));
    INFO("x = " << x);
    REQUIRE(mpx::round_to<Fp16Bits>(x).bits == expected);
  }
}
