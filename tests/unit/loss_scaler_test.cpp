// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx::LossScaler against an independent transcription of PyTorch's GradScaler update
// (aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp, _amp_update_scale_cpu_kernel), plus mpx's
// opt-in extensions (min/max scale, hysteresis), checkpoints and the static and no-op policies.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iomanip>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"

#include <mpx/train/loss_scaler.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using Catch::Matchers::Contains;
using Dynamic = mpx::LossScaler<mpx::DynamicLossScaling>;
using Static = mpx::LossScaler<mpx::StaticLossScaling>;
using None = mpx::LossScaler<mpx::NoLossScaling>;

constexpr float flt_max = std::numeric_limits<float>::max();
constexpr float inf = std::numeric_limits<float>::infinity();

std::uint32_t bits(float x) {
  return std::bit_cast<std::uint32_t>(x);
}

/// GradScaler's update as PyTorch's kernels (CPU and CUDA alike) write it: the scale is fp32, the
/// factors are doubles, and each product `float * double` is formed in double and stored into the
/// fp32 scale, `scale = float(double(scale) * factor)`. The growth is refused when the stored product
/// is not finite; the tracker resets on an overflow and on reaching growth_interval.
struct ReferenceGradScaler {
  float scale;
  double growth_factor;
  double backoff_factor;
  std::int32_t growth_interval;
  std::int32_t growth_tracker = 0;
  // mpx's counters, by their definitions.
  std::int64_t taken = 0;
  std::int64_t skipped = 0;
  std::int64_t backoffs = 0;
  std::int64_t growths = 0;          // growths applied (coverage)
  std::int64_t blocked_growths = 0;  // growths suppressed because the product was inf (coverage)

  void update(bool found_inf) {
    if (found_inf) {
      scale = static_cast<float>(static_cast<double>(scale) * backoff_factor);
      growth_tracker = 0;
      ++skipped;
      ++backoffs;
      return;
    }
    ++taken;
    const std::int32_t successful = growth_tracker + 1;
    if (successful == growth_interval) {
      const auto new_scale = static_cast<float>(static_cast<double>(scale) * growth_factor);
      if (std::isfinite(new_scale)) {
        scale = new_scale;
        ++growths;
      } else {
        ++blocked_growths;
      }
      growth_tracker = 0;
    } else {
      growth_tracker = successful;
    }
  }
};

/// A scripted run of steps (true = the step's gradients overflowed): random clean runs that cross
/// growth intervals, random runs of consecutive overflows, and a first, long overflow run that drives
/// a 2^16 scale deep into fp32's subnormal range (and the growths back out of it). On balance the
/// random part grows the scale, so a large one reaches FLT_MAX and meets the inf guard.
std::vector<bool> overflow_script() {
  std::vector<bool> script;
  std::mt19937 random(20260101u);
  std::uniform_int_distribution<int> clean_run(0, 120);
  std::uniform_int_distribution<int> overflow_run(1, 6);
  auto append = [&](bool overflow, int count) {
    script.insert(script.end(), static_cast<std::size_t>(count), overflow);
  };
  append(true, 158);  // from the default 2^16: 2^16 * 2^-158 = 2^-142, an fp32 subnormal
  while (script.size() < 2500) {
    append(false, clean_run(random));
    append(true, overflow_run(random));
  }
  append(false, 400);  // a long clean stretch: many consecutive growths
  while (script.size() < 6000) {
    append(false, clean_run(random) * 3);
    append(true, overflow_run(random));
  }
  return script;
}

/// Runs `scaler` and the reference over `script`, comparing every field after every step.
/// Returns the number of steps whose state differed (and reports the first).
template <class Scaler>
int count_mismatches(Scaler& scaler, ReferenceGradScaler& reference, const std::vector<bool>& script) {
  int mismatches = 0;
  for (std::size_t step = 0; step < script.size(); ++step) {
    scaler.update(script[step]);
    reference.update(script[step]);
    const mpx::LossScalerState& s = scaler.state();
    const bool same =
        bits(scaler.scale()) == bits(reference.scale) && bits(s.scale) == bits(reference.scale) &&
        s.growth_tracker == reference.growth_tracker && s.steps_taken == reference.taken &&
        s.steps_skipped == reference.skipped && s.backoffs == reference.backoffs && s.hysteresis_tracker == 0;
    if (!same && mismatches++ == 0) {
      UNSCOPED_INFO("first mismatch at step " << step << ": scale " << std::setprecision(9) << s.scale
                                              << " vs " << reference.scale << ", tracker " << s.growth_tracker
                                              << " vs " << reference.growth_tracker);
    }
  }
  return mismatches;
}

/// What mpx computed while it held the factors as `float`: both operands fp32, the product rounded
/// in fp32, `scale = scale * float(factor)`. It exists to show that the trajectory test below can
/// fail: for a factor fp32 cannot hold it leaves the reference's trajectory.
struct FloatFactorGradScaler {
  float scale;
  float growth_factor;
  float backoff_factor;
  std::int32_t growth_interval;
  std::int32_t growth_tracker = 0;

  void update(bool found_inf) {
    if (found_inf) {
      scale = scale * backoff_factor;
      growth_tracker = 0;
    } else if (++growth_tracker == growth_interval) {
      const float grown = scale * growth_factor;
      if (std::isfinite(grown)) scale = grown;
      growth_tracker = 0;
    }
  }
};

/// Integers in [lo, hi] from mt19937's raw output, whose sequence the standard fixes (the
/// distributions' algorithms are left to the library), so the scripts are the same everywhere.
class Draw {
 public:
  explicit Draw(std::uint32_t seed) : bits_(seed) {}
  int operator()(int lo, int hi) {
    return lo + static_cast<int>(bits_() % static_cast<std::uint32_t>(hi - lo + 1));
  }

 private:
  std::mt19937 bits_;
};

/// A script shaped like an fp16 run, whatever the factors: phases in which gradients overflow
/// whenever the scale is above a ceiling (so runs of consecutive overflows back it off below, and it
/// grows back up to the ceiling), with random bursts of 1..8 overflows; long clean phases in which
/// it grows for hundreds of steps (up to the inf guard with large factors); storms of bursts of up
/// to 20 overflows; and deep phases with the ceiling at 2^-60..2^-100 that push the scale toward the
/// subnormals. Nothing overflows below 2^-120, so the scale never reaches 0 (where every factor gives
/// 0 and the comparison would be vacuous). The decisions follow the scale of a reference run from
/// `start` and are recorded, so the scalers under test replay exactly the same steps.
std::vector<bool> adaptive_script(ReferenceGradScaler reference, std::size_t steps, std::uint32_t seed) {
  std::vector<bool> script;
  script.reserve(steps);
  Draw draw(seed);
  int burst_left = 0;
  bool first = true;  // the first phase is a long clean stretch: growth from the start
  while (script.size() < steps) {
    const int kind = first ? 12 : draw(0, 19);
    first = false;
    float ceiling = inf;
    int burst_odds = 60;  // a burst starts on 1 step in `burst_odds`
    int burst_max = 8;
    int length = draw(200, 1500);
    if (kind <= 11) {
      ceiling = std::ldexp(1.0f, draw(-20, 40));
    } else if (kind <= 15) {
      burst_odds = 0;  // a long clean stretch: 10..40 growths and more
      length = draw(100, 600) + draw(10, 40) * reference.growth_interval;
    } else if (kind <= 17) {
      burst_odds = 8;  // a storm of bursts
      burst_max = 20;
    } else if (kind == 18) {
      ceiling = std::ldexp(1.0f, draw(-140, -110));  // deep: toward and into the subnormals
      length = draw(100, 400);
    }
    for (int i = 0; i < length && script.size() < steps; ++i) {
      if (burst_left == 0 && burst_odds > 0 && draw(1, burst_odds) == 1) burst_left = draw(1, burst_max);
      bool overflow = reference.scale > ceiling;
      if (burst_left > 0) {
        overflow = true;
        --burst_left;
      }
      overflow = overflow && reference.scale > 0x1p-144f;
      script.push_back(overflow);
      reference.update(overflow);
    }
  }
  return script;
}

/// The longest run of consecutive overflows in `script`.
std::size_t longest_overflow_run(const std::vector<bool>& script) {
  std::size_t longest = 0;
  std::size_t run = 0;
  for (bool overflow : script) {
    run = overflow ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

using mpx::test::thrown_message;

/// A dynamic scaler's knobs for the trajectory tests, named for the report.
struct ScalerConfig {
  const char* name;
  float init_scale;
  double growth_factor;
  double backoff_factor;
  int growth_interval;
};

}  // namespace

TEST_CASE("LossScaler<Dynamic> follows GradScaler's scale and tracker trajectory bit for bit",
          "[train][loss_scaler]") {
  const std::vector<bool> script = overflow_script();
  REQUIRE(script.size() >= 5000);

  const ScalerConfig configs[] = {
      {"defaults' factors, interval 7", 65536.0f, 2.0, 0.5, 7},
      {"defaults' factors, interval 50", 65536.0f, 2.0, 0.5, 50},
      // FLT_MAX/2 grows to FLT_MAX once; the next growth would be inf and must be refused.
      {"init FLT_MAX/2, interval 7", flt_max / 2.0f, 2.0, 0.5, 7},
      // Factors whose products round in fp32 (and in the subnormal range, where rounding is coarse).
      {"awkward factors 1.7 / 0.6, interval 7", 3.0f, 1.7, 0.6, 7},
      {"awkward factors 1.37 / 0.77, interval 50", 1000.0f, 1.37, 0.77, 50},
  };
  for (const ScalerConfig& c : configs) {
    CAPTURE(c.name);
    mpx::DynamicLossScaling::Options options;
    options.init_scale = c.init_scale;
    options.growth_factor = c.growth_factor;
    options.backoff_factor = c.backoff_factor;
    options.growth_interval = c.growth_interval;
    Dynamic scaler(options);
    ReferenceGradScaler reference{c.init_scale, c.growth_factor, c.backoff_factor, c.growth_interval};
    CHECK(count_mismatches(scaler, reference, script) == 0);
    // The script must have exercised what it claims to.
    CHECK(reference.backoffs > 300);
    CHECK(scaler.state().steps_taken + scaler.state().steps_skipped ==
          static_cast<std::int64_t>(script.size()));
  }

  // Coverage of the two edge cases, on the references themselves.
  ReferenceGradScaler big{flt_max / 2.0f, 2.0, 0.5, 7};
  ReferenceGradScaler small{65536.0f, 2.0, 0.5, 7};
  bool reached_flt_max = false;
  bool reached_subnormal = false;
  for (bool overflow : script) {
    big.update(overflow);
    small.update(overflow);
    reached_flt_max = reached_flt_max || big.scale == flt_max;
    reached_subnormal =
        reached_subnormal || (small.scale > 0.0f && small.scale < std::numeric_limits<float>::min());
  }
  CHECK(reached_flt_max);
  CHECK(big.blocked_growths > 0);
  CHECK(reached_subnormal);
}

TEST_CASE(
    "LossScaler<Dynamic> with factors fp32 cannot hold (0.3, 1.1, 0.9) follows GradScaler's "
    "double-factor trajectory bit for bit, where float factors would not",
    "[train][loss_scaler]") {
  const ScalerConfig configs[] = {
      {"torch's factors 2 / 0.5, interval 3", 65536.0f, 2.0, 0.5, 3},
      {"growth 2, backoff 0.3, interval 5", 65536.0f, 2.0, 0.3, 5},
      {"growth 1.1, backoff 0.9, interval 3", 65536.0f, 1.1, 0.9, 3},
      {"growth 1.1, backoff 0.3, interval 10", 1024.0f, 1.1, 0.3, 10},
      {"growth 1.5, backoff 0.9, interval 50", 65536.0f, 1.5, 0.9, 50},
      {"growth 1.01, backoff 0.99, interval 4", 3.0f, 1.01, 0.99, 4},
      {"growth 3, backoff 0.7, interval 7", 1.0f, 3.0, 0.7, 7},
      {"growth 1.5, backoff 0.75 (both fp32 values), interval 20", 65536.0f, 1.5, 0.75, 20},
      {"growth 1.1, backoff 0.9, from just below FLT_MAX, interval 3", flt_max / 1.05f, 1.1, 0.9, 3},
  };
  constexpr std::size_t steps = 12000;
  std::int64_t blocked_growths = 0;
  bool reached_subnormal = false;
  std::uint32_t seed = 1;
  for (const ScalerConfig& c : configs) {
    CAPTURE(c.name);
    const ReferenceGradScaler start{c.init_scale, c.growth_factor, c.backoff_factor, c.growth_interval};
    const std::vector<bool> script = adaptive_script(start, steps, seed++);
    REQUIRE(script.size() == steps);

    mpx::DynamicLossScaling::Options options;
    options.init_scale = c.init_scale;
    options.growth_factor = c.growth_factor;
    options.backoff_factor = c.backoff_factor;
    options.growth_interval = c.growth_interval;
    Dynamic scaler(options);
    REQUIRE(scaler.state().growth_factor == c.growth_factor);  // held exactly, not rounded to fp32
    REQUIRE(scaler.state().backoff_factor == c.backoff_factor);

    // Every step: the same scale bits, tracker and counters as the reference.
    ReferenceGradScaler reference = start;
    CHECK(count_mismatches(scaler, reference, script) == 0);

    // The script exercised what it claims to: many growths and backoffs, runs of overflows.
    CHECK(reference.growths >= 100);
    CHECK(reference.backoffs >= 100);
    CHECK(longest_overflow_run(script) >= 8);
    blocked_growths += reference.blocked_growths;

    // The test can fail: the same steps with the factors held as float leave the reference's
    // trajectory exactly when a factor is not an fp32 value (and only then: the float model is
    // otherwise the same rule).
    const bool factors_are_floats =
        static_cast<double>(static_cast<float>(c.growth_factor)) == c.growth_factor &&
        static_cast<double>(static_cast<float>(c.backoff_factor)) == c.backoff_factor;
    FloatFactorGradScaler as_floats{c.init_scale, static_cast<float>(c.growth_factor),
                                    static_cast<float>(c.backoff_factor), c.growth_interval};
    ReferenceGradScaler replay = start;
    std::size_t first_divergence = script.size();
    for (std::size_t step = 0; step < script.size(); ++step) {
      as_floats.update(script[step]);
      replay.update(script[step]);
      reached_subnormal =
          reached_subnormal || (replay.scale > 0.0f && replay.scale < std::numeric_limits<float>::min());
      if (first_divergence == script.size() && bits(as_floats.scale) != bits(replay.scale)) {
        first_divergence = step;
      }
    }
    INFO("float-held factors first diverge at step " << first_divergence);
    if (factors_are_floats) {
      CHECK(first_divergence == script.size());
    } else {
      CHECK(first_divergence < script.size());
    }
  }
  CHECK(blocked_growths > 0);  // the inf guard was met with non-power-of-two factors too
  CHECK(reached_subnormal);
}

TEST_CASE("LossScaler<Dynamic> rounds once, as torch: 3 backed off by 0.3 is float(0.9), not 3 * 0.3f",
          "[train][loss_scaler]") {
  // In double, 3 * 0.3 = 0.8999999999999999, nearest float 0.89999998 (= 0.9f). With the factor
  // rounded to fp32 first, 3 * 0.3f = 0.90000004 exactly: one ulp above torch's result.
  mpx::DynamicLossScaling::Options options;
  options.init_scale = 3.0f;
  options.backoff_factor = 0.3;
  Dynamic scaler(options);
  scaler.update(true);
  CHECK(bits(scaler.scale()) == bits(static_cast<float>(3.0 * 0.3)));
  CHECK(bits(scaler.scale()) == bits(0.9f));
  CHECK(bits(3.0f * 0.3f) == bits(std::nextafter(0.9f, 1.0f)));
  CHECK(bits(scaler.scale()) != bits(3.0f * 0.3f));

  // And growth: 1.1 * 1.1 * ... stays on torch's trajectory for 100 growths.
  options.init_scale = 1.0f;
  options.growth_factor = 1.1;
  options.growth_interval = 1;
  Dynamic growing(options);
  float expected = 1.0f;
  float with_float_factor = 1.0f;
  bool same = true;
  bool float_factor_differs = false;
  for (int i = 0; i < 100; ++i) {
    growing.update(false);
    expected = static_cast<float>(static_cast<double>(expected) * 1.1);
    with_float_factor = with_float_factor * 1.1f;
    same = same && bits(growing.scale()) == bits(expected);
    float_factor_differs = float_factor_differs || bits(with_float_factor) != bits(expected);
  }
  CHECK(same);
  CHECK(float_factor_differs);
}

TEST_CASE("LossScaler<Dynamic> defaults are GradScaler's: 2^16, x2 every 2000 clean steps, x0.5 on overflow",
          "[train][loss_scaler]") {
  Dynamic scaler;
  CHECK(scaler.scale() == 65536.0f);
  CHECK(scaler.state().growth_factor == 2.0);
  CHECK(scaler.state().backoff_factor == 0.5);
  CHECK(scaler.state().growth_interval == 2000);
  CHECK(scaler.state().growth_tracker == 0);

  for (int i = 0; i < 1999; ++i) scaler.update(false);
  CHECK(scaler.scale() == 65536.0f);
  CHECK(scaler.state().growth_tracker == 1999);
  scaler.update(false);  // the 2000th clean step grows the scale
  CHECK(scaler.scale() == 131072.0f);
  CHECK(scaler.state().growth_tracker == 0);

  for (int i = 0; i < 10; ++i) scaler.update(false);
  scaler.update(true);  // an overflow halves the scale and forgets the clean steps
  CHECK(scaler.scale() == 65536.0f);
  CHECK(scaler.state().growth_tracker == 0);
  CHECK(scaler.state().steps_taken == 2010);
  CHECK(scaler.state().steps_skipped == 1);
  CHECK(scaler.state().backoffs == 1);
}

TEST_CASE("LossScaler::inverse_scale is the correctly rounded fp32 reciprocal, float(1.0 / double(scale))",
          "[train][loss_scaler]") {
  std::vector<float> scales = {1.0f,       3.0f,   7.0f,  0.3f,          65536.0f * 0.77f, 1.7f * 1.7f * 1.7f,
                               12345.678f, 1e-30f, 1e30f, flt_max / 4.0f};
  std::mt19937 random(7u);
  std::uniform_real_distribution<float> exponent(-100.0f, 100.0f);
  for (int i = 0; i < 200; ++i) scales.push_back(std::exp2(exponent(random)));
  for (float s : scales) {
    CAPTURE(s);
    mpx::LossScalerState state;
    state.scale = s;
    Dynamic scaler;
    scaler.load_state(state);
    const float inverse = scaler.inverse_scale();
    CHECK(bits(inverse) == bits(static_cast<float>(1.0 / static_cast<double>(s))));
    // Independently: no neighbouring float is closer to 1/s. x * s is exact in double (24 + 24 bits),
    // so |x * s - 1| ranks candidates x by their distance to 1/s exactly.
    const auto distance = [&](float x) {
      return std::fabs(static_cast<double>(x) * static_cast<double>(s) - 1.0);
    };
    CHECK(distance(inverse) <= distance(std::nextafter(inverse, inf)));
    CHECK(distance(inverse) <= distance(std::nextafter(inverse, 0.0f)));
  }
}

TEST_CASE("LossScaler<Dynamic> clamps to min_scale after a backoff and to max_scale after a growth",
          "[train][loss_scaler]") {
  SECTION("min_scale") {
    mpx::DynamicLossScaling::Options options;
    options.init_scale = 4096.0f;
    options.min_scale = 1000.0f;  // not a power of two: 512 must be clamped up to exactly 1000
    Dynamic scaler(options);
    scaler.update(true);
    CHECK(scaler.scale() == 2048.0f);
    scaler.update(true);
    CHECK(scaler.scale() == 1024.0f);
    scaler.update(true);
    CHECK(scaler.scale() == 1000.0f);
    scaler.update(true);
    CHECK(scaler.scale() == 1000.0f);
    CHECK(scaler.state().steps_skipped == 4);
  }
  SECTION("max_scale") {
    mpx::DynamicLossScaling::Options options;
    options.init_scale = 1024.0f;
    options.max_scale = 3000.0f;
    options.growth_interval = 2;
    Dynamic scaler(options);
    scaler.update(false);
    scaler.update(false);
    CHECK(scaler.scale() == 2048.0f);
    scaler.update(false);
    scaler.update(false);
    CHECK(scaler.scale() == 3000.0f);  // 4096 clamped
    scaler.update(false);
    scaler.update(false);
    CHECK(scaler.scale() == 3000.0f);
    CHECK(scaler.state().growth_tracker == 0);
    scaler.update(true);  // backing off from the ceiling is unaffected
    CHECK(scaler.scale() == 1500.0f);
  }
  SECTION("unset, the extensions change nothing: the scale still reaches FLT_MAX and the subnormals") {
    mpx::DynamicLossScaling::Options options;
    options.init_scale = flt_max / 2.0f;
    options.growth_interval = 1;
    Dynamic scaler(options);
    scaler.update(false);
    CHECK(scaler.scale() == flt_max);
    scaler.update(false);
    CHECK(scaler.scale() == flt_max);
    for (int i = 0; i < 260; ++i) scaler.update(true);
    CHECK(scaler.scale() == std::ldexp(flt_max, -260));  // exact: halving is exact down to 2^-149
    CHECK(scaler.scale() < std::numeric_limits<float>::min());
    CHECK(scaler.scale() > 0.0f);
  }
}

TEST_CASE("LossScaler<Dynamic> with hysteresis 3 backs off only on the 3rd consecutive overflow",
          "[train][loss_scaler]") {
  mpx::DynamicLossScaling::Options options;
  options.init_scale = 1024.0f;
  options.growth_interval = 4;
  options.hysteresis = 3;
  Dynamic scaler(options);

  struct Expect {
    bool overflow;
    float scale;
    std::int64_t growth_tracker;
    std::int64_t hysteresis_tracker;
  };
  const Expect script[] = {
      {false, 1024.0f, 1, 0},
      {true, 1024.0f, 0, 1},   // 1st overflow: skipped, no backoff, but the clean run is forgotten
      {true, 1024.0f, 0, 2},   // 2nd
      {false, 1024.0f, 1, 0},  // a clean step breaks the run
      {true, 1024.0f, 0, 1},
      {true, 1024.0f, 0, 2},
      {true, 512.0f, 0, 0},  // 3rd consecutive: back off, start counting again
      {true, 512.0f, 0, 1},
      {true, 512.0f, 0, 2},
      {true, 256.0f, 0, 0},  // 6th consecutive = 3rd of the new run
      {false, 256.0f, 1, 0},
      {false, 256.0f, 2, 0},
      {false, 256.0f, 3, 0},
      {false, 512.0f, 0, 0},  // growth is unaffected by hysteresis
      {true, 512.0f, 0, 1},
      {false, 512.0f, 1, 0},
      {true, 512.0f, 0, 1},
      {true, 512.0f, 0, 2},
      {false, 512.0f, 1, 0},
  };
  std::int64_t overflows = 0;
  int index = 0;
  for (const Expect& e : script) {
    CAPTURE(index++);
    scaler.update(e.overflow);
    overflows += e.overflow ? 1 : 0;
    CHECK(scaler.scale() == e.scale);
    CHECK(scaler.state().growth_tracker == e.growth_tracker);
    CHECK(scaler.state().hysteresis_tracker == e.hysteresis_tracker);
  }
  // Every overflowing step is skipped, whether or not it backed off.
  CHECK(scaler.state().steps_skipped == overflows);
  CHECK(scaler.state().backoffs == 2);
}

TEST_CASE("LossScaler state() / load_state() resumes a run identically", "[train][loss_scaler]") {
  const std::vector<bool> script = overflow_script();
  mpx::DynamicLossScaling::Options options;
  options.growth_interval = 7;
  options.growth_factor = 1.7;
  options.backoff_factor = 0.3;
  options.hysteresis = 2;
  options.min_scale = 1e-3f;

  Dynamic original(options);
  const std::size_t split = 1234;
  for (std::size_t i = 0; i < split; ++i) original.update(script[i]);
  const mpx::LossScalerState saved = original.state();
  REQUIRE(saved.growth_tracker > 0);  // a mid-interval checkpoint, so the tracker matters

  // A fresh scaler built from different options takes the factors and interval from the state.
  mpx::DynamicLossScaling::Options other = options;
  other.growth_factor = 2.0;
  other.backoff_factor = 0.5;
  other.growth_interval = 2000;
  Dynamic resumed(other);
  resumed.load_state(saved);
  CHECK(resumed.state() == saved);
  CHECK(bits(resumed.scale()) == bits(original.scale()));

  bool identical = true;
  for (std::size_t i = split; i < script.size(); ++i) {
    original.update(script[i]);
    resumed.update(script[i]);
    identical = identical && original.state() == resumed.state();
  }
  CHECK(identical);
  CHECK(original.state().steps_taken + original.state().steps_skipped ==
        static_cast<std::int64_t>(script.size()));
}

TEST_CASE("LossScaler::load_state resumes a scale that backed off all the way to 0", "[train][loss_scaler]") {
  // Enough consecutive overflows take GradScaler's scale to 0; that run must stay resumable.
  Dynamic scaler;
  int overflows = 0;
  while (scaler.scale() > 0.0f && overflows < 1000) {
    scaler.update(true);
    ++overflows;
  }
  REQUIRE(scaler.scale() == 0.0f);
  Dynamic resumed;
  resumed.load_state(scaler.state());
  CHECK(resumed.state() == scaler.state());
}

TEST_CASE("LossScaler::load_state rejects states no scaler could have produced, naming the field",
          "[train][loss_scaler]") {
  const std::vector<std::pair<std::function<void(mpx::LossScalerState&)>, std::string>> cases = {
      {[](auto& s) { s.scale = -2.0f; }, "scale = -2"},
      {[](auto& s) { s.scale = inf; }, "scale = inf"},
      {[](auto& s) { s.scale = std::numeric_limits<float>::quiet_NaN(); }, "scale = nan"},
      {[](auto& s) { s.growth_factor = 1.0; }, "growth_factor = 1"},
      {[](auto& s) { s.growth_factor = std::numeric_limits<double>::quiet_NaN(); }, "growth_factor = nan"},
      {[](auto& s) { s.backoff_factor = 1.0; }, "backoff_factor = 1"},
      {[](auto& s) { s.backoff_factor = 0.0; }, "backoff_factor = 0"},
      {[](auto& s) { s.growth_interval = 0; }, "growth_interval = 0"},
      {[](auto& s) { s.growth_tracker = -1; }, "growth_tracker = -1"},
      {[](auto& s) { s.growth_tracker = 2000; }, "growth_tracker = 2000"},  // == growth_interval
      {[](auto& s) { s.hysteresis_tracker = -1; }, "hysteresis_tracker = -1"},
      {[](auto& s) { s.steps_taken = -1; }, "steps_taken = -1"},
      {[](auto& s) { s.steps_skipped = -5; }, "steps_skipped = -5"},
      {[](auto& s) { s.backoffs = -1; }, "backoffs = -1"},
  };
  for (const auto& [corrupt, names] : cases) {
    CAPTURE(names);
    Dynamic scaler;
    scaler.update(true);
    const mpx::LossScalerState before = scaler.state();
    mpx::LossScalerState state = before;
    corrupt(state);
    CHECK_THAT(thrown_message([&] { scaler.load_state(state); }),
               Contains("mpx::LossScaler::load_state") && Contains(names));
    CHECK(scaler.state() == before);  // a rejected state leaves the scaler as it was
  }
  // The boundary values are accepted.
  mpx::LossScalerState edge;
  edge.scale = std::numeric_limits<float>::denorm_min();
  edge.growth_interval = 1;
  edge.growth_tracker = 0;
  Dynamic scaler;
  CHECK_NOTHROW(scaler.load_state(edge));
}

TEST_CASE("LossScaler<Static> never changes its scale but counts skipped steps", "[train][loss_scaler]") {
  Static scaler(mpx::StaticLossScaling::Options{1024.0f});
  const std::vector<bool> script = overflow_script();
  std::int64_t skipped = 0;
  bool constant = true;
  for (bool overflow : script) {
    scaler.update(overflow);
    skipped += overflow ? 1 : 0;
    constant = constant && scaler.scale() == 1024.0f;
  }
  CHECK(constant);
  CHECK(scaler.inverse_scale() == 1.0f / 1024.0f);
  CHECK(scaler.state().steps_skipped == skipped);
  CHECK(scaler.state().steps_taken == static_cast<std::int64_t>(script.size()) - skipped);
  CHECK(scaler.state().backoffs == 0);
  CHECK(scaler.state().growth_tracker == 0);
  CHECK(Static().scale() == 65536.0f);
}

TEST_CASE("LossScaler<None> has scale 1 whatever happens, and still counts skipped steps",
          "[train][loss_scaler]") {
  None scaler;
  CHECK(scaler.scale() == 1.0f);
  CHECK(scaler.inverse_scale() == 1.0f);
  for (int i = 0; i < 10; ++i) scaler.update(i % 3 == 0);
  CHECK(scaler.scale() == 1.0f);
  CHECK(scaler.state().steps_skipped == 4);
  CHECK(scaler.state().steps_taken == 6);
  CHECK(scaler.state().backoffs == 0);
  // Not even a loaded state can give it a scale: the policy does not scale the loss.
  mpx::LossScalerState state = scaler.state();
  state.scale = 8.0f;
  scaler.load_state(state);
  CHECK(scaler.scale() == 1.0f);
  CHECK(scaler.inverse_scale() == 1.0f);
  // The fp16 opt-in is the same scaler.
  mpx::LossScaler<mpx::AllowFp16Underflow<mpx::NoLossScaling>> opt_in;
  opt_in.update(true);
  CHECK(opt_in.scale() == 1.0f);
  CHECK(opt_in.state().steps_skipped == 1);
  STATIC_REQUIRE(noexcept(scaler.scale()));
  STATIC_REQUIRE(noexcept(scaler.update(true)));
}

TEST_CASE("LossScaler constructors validate their options and name the bad field", "[train][loss_scaler]") {
  const auto dynamic_with = [](auto change) {
    mpx::DynamicLossScaling::Options options;
    change(options);
    return thrown_message([&] { Dynamic scaler(options); });
  };
  CHECK_THAT(dynamic_with([](auto& o) { o.init_scale = 0.0f; }), Contains("init_scale = 0"));
  CHECK_THAT(dynamic_with([](auto& o) { o.growth_factor = 1.0; }), Contains("growth_factor = 1"));
  CHECK_THAT(dynamic_with([](auto& o) { o.backoff_factor = 1.5; }), Contains("backoff_factor = 1.5"));
  CHECK_THAT(dynamic_with([](auto& o) { o.growth_interval = 0; }), Contains("growth_interval = 0"));
  CHECK_THAT(dynamic_with([](auto& o) { o.hysteresis = 0; }), Contains("hysteresis = 0"));
  CHECK_THAT(dynamic_with([](auto& o) { o.max_scale = 1.0f; }), Contains("max_scale = 1"));
  CHECK_THAT(thrown_message([] { Static scaler(mpx::StaticLossScaling::Options{-1.0f}); }),
             Contains("mpx::StaticLossScaling::Options: scale = -1"));
  CHECK_NOTHROW(None(mpx::NoLossScaling::Options{}));
}

}  // namespace MPX_UNITY_ID
}  // namespace
