// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx::LossScaler against an independent transcription of PyTorch's GradScaler update
// (aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp, _amp_update_scale_cpu_kernel), plus mpx's
// opt-in extensions (min/max scale, hysteresis), checkpoints and the static and no-op policies.
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"

#include <mpx/train/loss_scaler.hpp>

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

/// GradScaler's update as PyTorch's CPU kernel writes it: the factors are doubles, the products are
/// formed in double and stored into the fp32 scale. (For fp32 factors this is the correctly rounded
/// fp32 product, since a product of two 24-bit significands is exact in double; mpx computes it in
/// fp32 directly, so agreement here is a real check of that equivalence, subnormals and overflow
/// included.)
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
      UNSCOPED_INFO("first mismatch at step " << step << ": scale " << s.scale << " vs " << reference.scale
                                              << ", tracker " << s.growth_tracker << " vs "
                                              << reference.growth_tracker);
    }
  }
  return mismatches;
}

using mpx::test::thrown_message;

}  // namespace

TEST_CASE("LossScaler<Dynamic> follows GradScaler's scale and tracker trajectory bit for bit",
          "[train][loss_scaler]") {
  const std::vector<bool> script = overflow_script();
  REQUIRE(script.size() >= 5000);

  struct Config {
    const char* name;
    float init_scale;
    float growth_factor;
    float backoff_factor;
    int growth_interval;
  };
  const Config configs[] = {
      {"defaults' factors, interval 7", 65536.0f, 2.0f, 0.5f, 7},
      {"defaults' factors, interval 50", 65536.0f, 2.0f, 0.5f, 50},
      // FLT_MAX/2 grows to FLT_MAX once; the next growth would be inf and must be refused.
      {"init FLT_MAX/2, interval 7", flt_max / 2.0f, 2.0f, 0.5f, 7},
      // Factors whose products round in fp32 (and in the subnormal range, where rounding is coarse).
      {"awkward factors 1.7 / 0.6, interval 7", 3.0f, 1.7f, 0.6f, 7},
      {"awkward factors 1.37 / 0.77, interval 50", 1000.0f, 1.37f, 0.77f, 50},
  };
  for (const Config& c : configs) {
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

TEST_CASE("LossScaler<Dynamic> defaults are GradScaler's: 2^16, x2 every 2000 clean steps, x0.5 on overflow",
          "[train][loss_scaler]") {
  Dynamic scaler;
  CHECK(scaler.scale() == 65536.0f);
  CHECK(scaler.state().growth_factor == 2.0f);
  CHECK(scaler.state().backoff_factor == 0.5f);
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
  options.growth_factor = 1.7f;
  options.backoff_factor = 0.3f;
  options.hysteresis = 2;
  options.min_scale = 1e-3f;

  Dynamic original(options);
  const std::size_t split = 1234;
  for (std::size_t i = 0; i < split; ++i) original.update(script[i]);
  const mpx::LossScalerState saved = original.state();
  REQUIRE(saved.growth_tracker > 0);  // a mid-interval checkpoint, so the tracker matters

  // A fresh scaler built from different options takes the factors and interval from the state.
  mpx::DynamicLossScaling::Options other = options;
  other.growth_factor = 2.0f;
  other.backoff_factor = 0.5f;
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
      {[](auto& s) { s.growth_factor = 1.0f; }, "growth_factor = 1"},
      {[](auto& s) { s.growth_factor = std::numeric_limits<float>::quiet_NaN(); }, "growth_factor = nan"},
      {[](auto& s) { s.backoff_factor = 1.0f; }, "backoff_factor = 1"},
      {[](auto& s) { s.backoff_factor = 0.0f; }, "backoff_factor = 0"},
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
  CHECK_THAT(dynamic_with([](auto& o) { o.growth_factor = 1.0f; }), Contains("growth_factor = 1"));
  CHECK_THAT(dynamic_with([](auto& o) { o.backoff_factor = 1.5f; }), Contains("backoff_factor = 1.5"));
  CHECK_THAT(dynamic_with([](auto& o) { o.growth_interval = 0; }), Contains("growth_interval = 0"));
  CHECK_THAT(dynamic_with([](auto& o) { o.hysteresis = 0; }), Contains("hysteresis = 0"));
  CHECK_THAT(dynamic_with([](auto& o) { o.max_scale = 1.0f; }), Contains("max_scale = 1"));
  CHECK_THAT(thrown_message([] { Static scaler(mpx::StaticLossScaling::Options{-1.0f}); }),
             Contains("mpx::StaticLossScaling::Options: scale = -1"));
  CHECK_NOTHROW(None(mpx::NoLossScaling::Options{}));
}
