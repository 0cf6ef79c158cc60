// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Stochastic rounding into fp16/bf16 (mpx::round_stochastic, mpx::convert with RoundStochastic) and
// the counter-based random bits it draws (mpx::philox_block, mpx::random_bits).
//
// The neighbours lo (toward zero) and hi of a value, and the rounding threshold, come from the
// test's own IEEE reference (tests/support/reference_rounding.hpp), never from mpx or Eigen. Where
// hi would be past the largest finite value, the result is infinity and, as round_stochastic
// documents, it stands for the next step of the top binade (2^16 for fp16, 2^128 for bf16) when
// errors are averaged.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <mpx/error.hpp>
#include <mpx/numeric/random.hpp>
#include <mpx/numeric/rounding.hpp>
#include <mpx/numeric/traits.hpp>
#include <mpx/tensor/convert.hpp>
#include <mpx/tensor/tensor.hpp>

#include "../support/mismatch_log.hpp"
#include "../support/reference_rounding.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx_test::BinaryFormat;
using mpx_test::bits_of_float;
using mpx_test::float_from_bits;
using mpx_test::hex;
using mpx_test::MismatchLog;

template <class Tag>
constexpr BinaryFormat format_of() {
  if constexpr (std::is_same_v<Tag, mpx::Half>) {
    return mpx_test::fp16_format;
  } else {
    return mpx_test::bf16_format;
  }
}

template <class Tag>
std::uint16_t stochastic_bits(float x, std::uint32_t random) {
  return mpx::bits_of(mpx::round_stochastic<Tag>(x, random));
}

/// The two candidates for a finite x, from the reference: lo is x rounded toward zero, hi the next
/// value away from zero (infinity past the largest finite; `hi` then holds the overflow threshold).
/// For a representable x, lo == hi == |x|. `threshold` = floor((|x| - lo) / (hi - lo) * 2^32): the
/// number of the 2^32 random words that must round away from zero. All exact in double.
struct Neighbours {
  double lo = 0;
  double hi = 0;
  std::uint16_t lo_bits = 0;  // sign included
  std::uint16_t hi_bits = 0;
  double threshold = 0;
};

Neighbours neighbours(BinaryFormat format, float x) {
  const double magnitude = std::fabs(static_cast<double>(x));
  const std::uint32_t sign = std::signbit(x) ? format.sign_mask() : 0u;
  Neighbours n;
  const double overflow = mpx_test::overflow_threshold(format);
  if (magnitude >= overflow) {  // past the top step: always infinity
    n.lo = n.hi = overflow;
    n.lo_bits = n.hi_bits = static_cast<std::uint16_t>(sign | format.exponent_mask());
    return n;
  }
  n.lo = mpx_test::round_magnitude(format, magnitude, mpx_test::Rounding::TowardZero);
  n.hi = n.lo == magnitude ? n.lo : n.lo + mpx_test::quantum_at(format, n.lo);
  n.lo_bits = static_cast<std::uint16_t>(sign | mpx_test::encode_magnitude(format, n.lo));
  n.hi_bits = static_cast<std::uint16_t>(
      sign |
      mpx_test::encode_magnitude(format, n.hi >= overflow ? std::numeric_limits<double>::infinity() : n.hi));
  n.threshold = n.hi == n.lo ? 0.0 : std::floor((magnitude - n.lo) / (n.hi - n.lo) * 0x1p32);
  return n;
}

std::vector<float> random_values_with_exponents(std::size_t count, std::uint64_t seed,
                                                std::uint32_t first_field, std::uint32_t last_field) {
  std::mt19937_64 engine(seed);
  std::vector<float> values(count);
  for (float& value : values) {
    const std::uint64_t draw = engine();
    const std::uint32_t sign = static_cast<std::uint32_t>(draw >> 63) << 31;
    const auto field =
        first_field + static_cast<std::uint32_t>((draw >> 32) % (last_field - first_field + 1));
    value = float_from_bits(sign | (field << 23) | (static_cast<std::uint32_t>(draw) & 0x007fffffu));
  }
  return values;
}

/// Checks the documented rule exactly: away from zero iff random < threshold, at the random words
/// where the answer changes (threshold - 1, threshold) and at both ends.
template <class Tag>
void check_threshold_rule(const std::vector<float>& inputs) {
  constexpr BinaryFormat format = format_of<Tag>();
  MismatchLog log("round_stochastic(x, r) is hi iff r < floor(frac * 2^32), else lo");
  std::mt19937 engine(0x5eed);
  for (const float x : inputs) {
    const Neighbours n = neighbours(format, x);
    std::vector<std::uint32_t> words = {0u, 0xffffffffu, static_cast<std::uint32_t>(engine())};
    if (n.threshold >= 1) words.push_back(static_cast<std::uint32_t>(n.threshold - 1));
    if (n.threshold < 0x1p32) words.push_back(static_cast<std::uint32_t>(n.threshold));
    for (const std::uint32_t word : words) {
      const std::uint16_t got = stochastic_bits<Tag>(x, word);
      const std::uint16_t expected = static_cast<double>(word) < n.threshold ? n.hi_bits : n.lo_bits;
      log.check(got == expected, [&] {
        return "x = " + mpx_test::describe_float(x) + ", r = " + hex(word, 8) + ": got " + hex(got, 4) +
               ", expected " + hex(expected, 4) + " (lo " + hex(n.lo_bits, 4) + ", hi " + hex(n.hi_bits, 4) +
               ")";
      });
    }
  }
  INFO(log.summary());
  CHECK(log.failures() == 0);
  CHECK(log.checked() >= 3 * inputs.size());
}

/// Mean rounding error of `draws` stochastic roundings of x, element i drawing random_bits(seed,
/// stream, i). Unbiased means E[error] = 0; the test allows 3 standard errors, where one draw's
/// error is hi - x with probability p and lo - x otherwise, so
///   sigma_mean = (hi - lo) * sqrt(p (1 - p) / draws),
/// with p estimated by the observed fraction of draws that rounded to hi. Every draw must be lo or
/// hi; a representable x must never change (then lo == hi and sigma is 0, so the mean must be 0).
template <class Tag>
void check_unbiased(float x, std::uint64_t stream) {
  constexpr BinaryFormat format = format_of<Tag>();
  constexpr std::uint64_t draws = 1'000'000;
  constexpr std::uint64_t seed = 0x5702'4a57'1c00'0001;
  const Neighbours n = neighbours(format, x);
  const double sign = std::signbit(x) ? -1.0 : 1.0;
  const double exact = static_cast<double>(x);

  std::uint64_t to_hi = 0;
  std::uint64_t other = 0;
  std::uint16_t first_other = 0;
  double error_sum = 0;
  for (std::uint64_t i = 0; i < draws; ++i) {
    const std::uint16_t got = stochastic_bits<Tag>(x, mpx::random_bits(seed, stream, i));
    if (got == n.hi_bits && n.hi != n.lo) {
      ++to_hi;
      error_sum += sign * n.hi - exact;
    } else if (got == n.lo_bits) {
      error_sum += sign * n.lo - exact;
    } else {
      if (other++ == 0) first_other = got;
    }
  }
  const double p = static_cast<double>(to_hi) / draws;
  const double mean_error = error_sum / draws;
  const double sigma = (n.hi - n.lo) * std::sqrt(p * (1 - p) / draws);
  const double expected_p = n.threshold * 0x1p-32;
  INFO("x = " << mpx_test::describe_float(x) << ", lo " << hex(n.lo_bits, 4) << ", hi " << hex(n.hi_bits, 4)
              << ": P(hi) observed " << p << ", exact " << expected_p << "; mean error " << mean_error
              << ", 3 sigma " << 3 * sigma);
  INFO("draws that were neither neighbour: " << other << " (first " << hex(first_other, 4) << ")");
  CHECK(other == 0);
  CHECK(std::fabs(mean_error) <= 3 * sigma);
  if (n.hi == n.lo) {
    CHECK(to_hi == 0);  // representable: never changed (mean error exactly 0 above)
  } else {
    CHECK(to_hi > 0);  // both neighbours occur, so sigma > 0 and the bound is meaningful
    CHECK(to_hi < draws);
  }
}

}  // namespace

// ---- Philox and random_bits ---------------------------------------------------------------------

TEST_CASE("philox_block is Random123's Philox4x32-10 with counter (block, stream) and key seed",
          "[numeric][random]") {
  // Known-answer vectors from Random123's tests/kat_vectors ("philox4x32 10" lines: counter words,
  // key words, output words). philox_block lays out counter = (block lo, block hi, stream lo,
  // stream hi) and key = (seed lo, seed hi), so the vectors map to these arguments.
  struct KnownAnswer {
    std::uint64_t seed, stream, block;
    std::uint32_t words[4];
  };
  const KnownAnswer vectors[] = {
      {0, 0, 0, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {~0ull, ~0ull, ~0ull, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {0x299f31d0'a4093822,
       0x03707344'13198a2e,
       0x85a308d3'243f6a88,
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const KnownAnswer& v : vectors) {
    const auto block = mpx::philox_block(v.seed, v.stream, v.block);
    for (int word = 0; word < 4; ++word) {
      INFO("seed " << hex(v.seed, 16) << ", stream " << hex(v.stream, 16) << ", block " << hex(v.block, 16)
                   << ", word " << word);
      CHECK(block.v[word] == v.words[word]);
    }
  }
}

TEST_CASE("random_bits(seed, stream, i) is word i % 4 of philox_block(seed, stream, i / 4)",
          "[numeric][random]") {
  MismatchLog log("random_bits == philox_block word");
  const std::uint64_t seeds[] = {0, 1, 0xdeadbeef'cafef00d, ~0ull};
  const std::uint64_t streams[] = {0, 1, (1ull << 32) + 7, ~0ull};
  std::vector<std::uint64_t> indices;
  for (std::uint64_t i = 0; i < 1024; ++i) indices.push_back(i);
  for (const std::uint64_t base : {1ull << 34, 1ull << 63, ~0ull - 15}) {  // block's high word in use
    for (std::uint64_t i = 0; i < 16; ++i) indices.push_back(base + i);
  }
  for (const std::uint64_t seed : seeds) {
    for (const std::uint64_t stream : streams) {
      for (const std::uint64_t index : indices) {
        const std::uint32_t got = mpx::random_bits(seed, stream, index);
        const std::uint32_t expected = mpx::philox_block(seed, stream, index / 4).v[index % 4];
        log.check(got == expected, [&] {
          return "seed " + hex(seed, 16) + ", stream " + hex(stream, 16) + ", index " + hex(index, 16);
        });
      }
    }
  }
  INFO(log.summary());
  CHECK(log.failures() == 0);
}

TEST_CASE("random_bits is a pure function of all 64 bits of seed, stream and index", "[numeric][random]") {
  constexpr std::uint64_t seed = 0x0123'4567'89ab'cdef;
  constexpr std::uint64_t stream = 42;
  constexpr int count = 4096;
  std::vector<std::uint32_t> forward(count);
  for (int i = 0; i < count; ++i) forward[i] = mpx::random_bits(seed, stream, static_cast<std::uint64_t>(i));

  // Same arguments, other order, other calls in between: same words (no hidden state).
  int repeat_mismatches = 0;
  for (int i = count - 1; i >= 0; --i) {
    (void)mpx::random_bits(seed + 1, stream, static_cast<std::uint64_t>(i) * 7);
    repeat_mismatches += mpx::random_bits(seed, stream, static_cast<std::uint64_t>(i)) != forward[i];
  }
  CHECK(repeat_mismatches == 0);

  // Changing any argument, in its low or its high 32 bits, changes the words (a 32-bit collision
  // among 4096 draws has probability ~1e-6; the seeds here are fixed, so this cannot flake).
  struct Change {
    const char* what;
    std::uint64_t seed, stream, index_offset;
  };
  const Change changes[] = {
      {"seed + 1", seed + 1, stream, 0},
      {"seed + 2^32", seed + (1ull << 32), stream, 0},
      {"stream + 1", seed, stream + 1, 0},
      {"stream + 2^32", seed, stream + (1ull << 32), 0},
      {"index + 2^34 (block + 2^32)", seed, stream, 1ull << 34},
      {"index + 4 (next block)", seed, stream, 4},
  };
  for (const Change& change : changes) {
    int equal = 0;
    for (int i = 0; i < count; ++i) {
      equal +=
          mpx::random_bits(change.seed, change.stream, static_cast<std::uint64_t>(i) + change.index_offset) ==
          mpx::random_bits(seed, stream, static_cast<std::uint64_t>(i));
    }
    INFO(change.what);
    CHECK(equal == 0);
  }
}

TEST_CASE(
    "uniform_from_bits maps 32 random bits onto the unit interval, 0 included and 1 excluded, in steps of "
    "2^-24",
    "[numeric][random]") {
  CHECK(mpx::uniform_from_bits(0u) == 0.0f);
  CHECK(mpx::uniform_from_bits(0xffu) == 0.0f);  // the low 8 bits are dropped
  CHECK(mpx::uniform_from_bits(0x100u) == 0x1p-24f);
  CHECK(mpx::uniform_from_bits(0x80000000u) == 0.5f);
  CHECK(mpx::uniform_from_bits(0xffffffffu) == 1.0f - 0x1p-24f);  // strictly below 1
}

// ---- round_stochastic ---------------------------------------------------------------------------

TEST_CASE(
    "round_stochastic<Half> rounds away from zero exactly when the random word is below floor(frac * 2^32)",
    "[numeric][rounding][stochastic][fp16]") {
  // fp32 exponents 2^-27 .. 2^17: below the smallest subnormal, subnormals, normals, the step between
  // 65504 and infinity, and past it (always infinity); both signs.
  std::vector<float> inputs = random_values_with_exponents(200'000, 0x51, 100, 144);
  for (const float edge : {65504.0f, 65505.0f, 65519.0f, 65520.0f, 65535.99f, 65536.0f, 0x1p-24f, 0x1p-25f,
                           0x1.ff8p-15f, 0x1p-14f, 1.0f, 0.0f, -0.0f}) {
    inputs.push_back(edge);
    inputs.push_back(-edge);
  }
  check_threshold_rule<mpx::Half>(inputs);
}

TEST_CASE(
    "round_stochastic<BFloat16> rounds away from zero exactly when the random word is below floor(frac * "
    "2^32)",
    "[numeric][rounding][stochastic][bf16]") {
  // All fp32 exponents (float subnormals = the bf16 subnormal range), plus the ends.
  std::vector<float> inputs = random_values_with_exponents(200'000, 0x52, 0, 254);
  const std::vector<float> bottom = random_values_with_exponents(50'000, 0x53, 0, 2);
  inputs.insert(inputs.end(), bottom.begin(), bottom.end());
  for (const float edge :
       {std::numeric_limits<float>::max(), 0x1.fep127f, 0x1.fe8p127f, 0x1p-133f, 0x1p-134f, 0x1.fcp-127f,
        0x1p-126f, std::numeric_limits<float>::denorm_min(), 1.0f, 0.0f, -0.0f}) {
    inputs.push_back(edge);
    inputs.push_back(-edge);
  }
  check_threshold_rule<mpx::BFloat16>(inputs);
}

TEST_CASE("round_stochastic<Half> is unbiased: mean error over 10^6 draws within 3 sigma of 0",
          "[numeric][rounding][stochastic][fp16]") {
  const float values[] = {
      1.0f + 0x1p-12f,  // P(hi) = 1/4
      0.1f,
      -2.7182817f,
      1000.1f,   // spacing 0.5
      3.0e-6f,   // fp16 subnormal range (spacing 2^-24)
      -1.0e-8f,  // below the smallest subnormal: -0 or -2^-24
      65510.0f,  // between the largest finite and the next step: 65504 or inf
      -65530.0f,
      1.0f,  // representable: must never change
      -0.5f,
      0x1p-24f,  // the smallest subnormal
      0x1p-14f,  // the smallest normal
      65504.0f,  // the largest finite
  };
  std::uint64_t stream = 0;
  for (const float x : values) {
    check_unbiased<mpx::Half>(x, stream++);
  }
}

TEST_CASE("round_stochastic<BFloat16> is unbiased: mean error over 10^6 draws within 3 sigma of 0",
          "[numeric][rounding][stochastic][bf16]") {
  const float values[] = {
      1.0f + 0x1p-10f,  // P(hi) = 1/8
      3.14159265f,
      -1.0e-3f,
      1.0e30f,
      0x1.fe8p127f,   // between the largest finite 0x1.fep127 and 2^128: P(inf) = 1/4
      -0x1.ffcp127f,  // P(-inf) = 7/8
      1.0e-39f,       // bf16 subnormal range (a float subnormal; spacing 2^-133)
      -5.0e-41f,      // below the smallest bf16 subnormal: -0 or -2^-133
      1.0f,           // representable: must never change
      -2.0f,
      0x1.fep127f,  // the largest finite
      0x1p-133f,    // the smallest subnormal
      0x1p-126f,    // the smallest normal
  };
  std::uint64_t stream = 100;
  for (const float x : values) {
    check_unbiased<mpx::BFloat16>(x, stream++);
  }
}

TEST_CASE("round_stochastic passes zeros, infinities and NaNs through, keeping the sign",
          "[numeric][rounding][stochastic]") {
  const std::uint32_t words[] = {0u, 1u, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu};
  const std::uint32_t special_inputs[] = {0x00000000, 0x80000000, 0x7f800000, 0xff800000,
                                          0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001,
                                          0x7fa00000, 0x7fffffff, 0xffffffff, 0x7fc01234};
  for (const std::uint32_t input : special_inputs) {
    const float x = float_from_bits(input);
    for (const std::uint32_t word : words) {
      const std::uint16_t half = stochastic_bits<mpx::Half>(x, word);
      const std::uint16_t bf16 = stochastic_bits<mpx::BFloat16>(x, word);
      INFO("x = " << hex(input, 8) << ", r = " << hex(word, 8) << ": fp16 " << hex(half, 4) << ", bf16 "
                  << hex(bf16, 4));
      const bool negative = (input & 0x80000000u) != 0;
      CHECK(((half & 0x8000u) != 0) == negative);
      CHECK(((bf16 & 0x8000u) != 0) == negative);
      if (std::isnan(x)) {
        CHECK(mpx_test::is_nan_bits(mpx_test::fp16_format, half));
        CHECK(mpx_test::is_nan_bits(mpx_test::bf16_format, bf16));
      } else if (std::isinf(x)) {
        CHECK((half & 0x7fffu) == 0x7c00u);
        CHECK((bf16 & 0x7fffu) == 0x7f80u);
      } else {
        CHECK((half & 0x7fffu) == 0u);
        CHECK((bf16 & 0x7fffu) == 0u);
      }
    }
  }
}

TEST_CASE("round_stochastic is reproducible, and seed, stream and index each change the draws",
          "[numeric][rounding][stochastic]") {
  // Values spread over [1, 2): the chance that two independent draws disagree is E[2 p (1 - p)] = 1/3.
  constexpr int count = 8192;
  std::mt19937 engine(7);
  std::vector<float> values(count);
  for (float& value : values) value = 1.0f + static_cast<float>(engine() >> 9) * 0x1p-23f;

  const auto draw = [&](std::uint64_t seed, std::uint64_t stream, std::uint64_t offset) {
    std::vector<std::uint16_t> out(count);
    for (int i = 0; i < count; ++i) {
      out[i] = stochastic_bits<mpx::Half>(values[i], mpx::random_bits(seed, stream, i + offset));
    }
    return out;
  };
  const auto fraction_differing = [](const std::vector<std::uint16_t>& a,
                                     const std::vector<std::uint16_t>& b) {
    int differ = 0;
    for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
    return static_cast<double>(differ) / static_cast<double>(a.size());
  };

  const auto base = draw(11, 3, 0);
  CHECK(draw(11, 3, 0) == base);
  // 1/3 expected; the standard error is 0.005, so [0.25, 0.42] cannot be missed by chance.
  for (const auto& [what, other] : {std::pair{"seed", draw(12, 3, 0)}, std::pair{"stream", draw(11, 4, 0)},
                                    std::pair{"index", draw(11, 3, 1)}}) {
    const double differing = fraction_differing(base, other);
    INFO("changed " << what << ": fraction of results that differ " << differing);
    CHECK(differing > 0.25);
    CHECK(differing < 0.42);
  }
}

// ---- convert / round_into with RoundStochastic --------------------------------------------------

namespace {

/// Values of every kind: random over a format's range, its subnormals, specials.
std::vector<float> mixed_values(std::size_t count, std::uint64_t seed, std::uint32_t first_field,
                                std::uint32_t last_field) {
  std::vector<float> values = random_values_with_exponents(count, seed, first_field, last_field);
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            1.0f,
                            65510.0f,
                            0x1.fe8p127f,
                            1e-39f};
  for (std::size_t i = 0; i < values.size(); i += 7) values[i] = specials[(i / 7) % std::size(specials)];
  return values;
}

template <class Tag>
void check_tensor_conversion(const mpx::Shape& shape, std::uint64_t seed, std::uint64_t stream,
                             std::uint32_t first_field, std::uint32_t last_field) {
  auto source = mpx::Tensor<float>::uninitialized(shape);
  const std::vector<float> values =
      mixed_values(static_cast<std::size_t>(source.numel()), seed ^ stream, first_field, last_field);
  for (std::int64_t i = 0; i < source.numel(); ++i) source[i] = values[static_cast<std::size_t>(i)];

  const mpx::RoundStochastic rounding{seed, stream};
  const auto converted = mpx::convert<Tag>(source, rounding);
  auto into = mpx::Tensor<mpx::storage_t<Tag>>(shape);
  mpx::round_into<Tag>(source, into, rounding);
  const auto nearest = mpx::convert<Tag>(source);

  REQUIRE(converted.shape() == shape);
  REQUIRE(nearest.shape() == shape);
  MismatchLog log_convert("convert element i == round_stochastic(x[i], random_bits(seed, stream, i))");
  MismatchLog log_into("round_into element i == round_stochastic(x[i], random_bits(seed, stream, i))");
  MismatchLog log_nearest("convert without rounding argument == round_to (nearest)");
  for (std::int64_t i = 0; i < source.numel(); ++i) {
    const std::uint16_t expected =
        stochastic_bits<Tag>(source[i], mpx::random_bits(seed, stream, static_cast<std::uint64_t>(i)));
    const auto describe = [&] {
      return "element " + std::to_string(i) + ", x = " + mpx_test::describe_float(source[i]);
    };
    log_convert.check(mpx::bits_of(converted[i]) == expected, describe);
    log_into.check(mpx::bits_of(into[i]) == expected, describe);
    log_nearest.check(mpx::bits_of(nearest[i]) == mpx::bits_of(mpx::round_to<Tag>(source[i])), describe);
  }
  INFO("shape " << shape.to_string() << ", seed " << seed << ", stream " << stream);
  for (const MismatchLog* log : {&log_convert, &log_into, &log_nearest}) {
    INFO(log->summary());
    CHECK(log->failures() == 0);
  }
}

}  // namespace

TEST_CASE("convert and round_into with RoundStochastic round element i with random_bits(seed, stream, i)",
          "[numeric][rounding][stochastic][convert]") {
  // Element counts that are and are not multiples of the 4 words per Philox block; ranks 1 to 4.
  const mpx::Shape shapes[] = {mpx::Shape{1},     mpx::Shape{3},       mpx::Shape{1001},
                               mpx::Shape{7, 13}, mpx::Shape{3, 5, 7}, mpx::Shape{2, 3, 4, 5},
                               mpx::Shape{64, 65}};
  for (const mpx::Shape& shape : shapes) {
    check_tensor_conversion<mpx::Half>(shape, 1234, 0, 100, 144);
    check_tensor_conversion<mpx::Half>(shape, 0xfeed'0000'0000'0001, (1ull << 32) + 5, 100, 144);
    check_tensor_conversion<mpx::BFloat16>(shape, 99, 7, 0, 254);
    check_tensor_conversion<mpx::BFloat16>(shape, ~0ull, ~0ull, 0, 254);
  }
}

TEST_CASE("convert with RoundStochastic depends on the seed and the stream",
          "[numeric][rounding][stochastic][convert]") {
  auto source = mpx::Tensor<float>::uninitialized(mpx::Shape{4096});
  std::mt19937 engine(3);
  for (float& value : source.values()) value = 1.0f + static_cast<float>(engine() >> 9) * 0x1p-23f;
  const auto count_differing = [](const auto& a, const auto& b) {
    int differ = 0;
    for (std::int64_t i = 0; i < a.numel(); ++i) differ += mpx::bits_of(a[i]) != mpx::bits_of(b[i]);
    return differ;
  };
  const auto base = mpx::convert<mpx::BFloat16>(source, mpx::RoundStochastic{5, 0});
  CHECK(count_differing(base, mpx::convert<mpx::BFloat16>(source, mpx::RoundStochastic{5, 0})) == 0);
  // About a third of the elements differ (see the reproducibility test); demand at least a quarter.
  CHECK(count_differing(base, mpx::convert<mpx::BFloat16>(source, mpx::RoundStochastic{6, 0})) > 1024);
  CHECK(count_differing(base, mpx::convert<mpx::BFloat16>(source, mpx::RoundStochastic{5, 1})) > 1024);
}

TEST_CASE("round_into with RoundStochastic rejects a destination of another shape",
          "[numeric][rounding][stochastic][convert]") {
  const auto source = mpx::Tensor<float>(mpx::Shape{2, 3});
  auto destination = mpx::Tensor<Eigen::half>(mpx::Shape{3, 2});
  CHECK_THROWS_AS(mpx::round_into<mpx::Half>(source, destination, mpx::RoundStochastic{1, 2}),
                  mpx::shape_error);
}

}  // namespace MPX_UNITY_ID
}  // namespace
