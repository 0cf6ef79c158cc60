// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Runtime validation of the loss-scaling options. The defaults are PyTorch's
// torch.amp.GradScaler(init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000).
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"

#include <mpx/policy/loss_scaling.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using Dynamic = mpx::DynamicLossScaling::Options;
using Static = mpx::StaticLossScaling::Options;

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float quiet_nan = std::numeric_limits<float>::quiet_NaN();

using mpx::test::MessageContains;

/// One invalid setting: how to break the defaults, and the "field = value" the message must name.
struct InvalidDynamic {
  std::function<void(Dynamic&)> change;
  std::string names;
};

}  // namespace

TEST_CASE("DynamicLossScaling::Options defaults are GradScaler's and are valid", "[policy][loss_scaling]") {
  const Dynamic options;
  CHECK(options.init_scale == 65536.0f);
  CHECK(options.growth_factor == 2.0);  // double, as GradScaler's factors
  CHECK(options.backoff_factor == 0.5);
  CHECK(options.growth_interval == 2000);
  // The extensions are off at their defaults: no floor, no ceiling, back off on the first overflow.
  CHECK(options.min_scale == 0.0f);
  CHECK(options.max_scale == inf);
  CHECK(options.hysteresis == 1);
  CHECK_NOTHROW(options.validate());
}

TEST_CASE("DynamicLossScaling::Options::validate names each invalid field and its value",
          "[policy][loss_scaling]") {
  const std::vector<InvalidDynamic> cases = {
      {[](Dynamic& o) { o.init_scale = 0.0f; }, "init_scale = 0 "},
      {[](Dynamic& o) { o.init_scale = -1.0f; }, "init_scale = -1 "},
      {[](Dynamic& o) { o.init_scale = quiet_nan; }, "init_scale = nan "},
      {[](Dynamic& o) { o.init_scale = inf; }, "init_scale = inf "},
      {[](Dynamic& o) { o.growth_factor = 1.0; }, "growth_factor = 1 "},  // must grow
      {[](Dynamic& o) { o.growth_factor = 0.5; }, "growth_factor = 0.5 "},
      {[](Dynamic& o) { o.growth_factor = quiet_nan; }, "growth_factor = nan "},
      {[](Dynamic& o) { o.growth_factor = inf; }, "growth_factor = inf "},
      {[](Dynamic& o) { o.backoff_factor = 0.0; }, "backoff_factor = 0 "},
      {[](Dynamic& o) { o.backoff_factor = 1.0; }, "backoff_factor = 1 "},  // must shrink
      {[](Dynamic& o) { o.backoff_factor = 1.5; }, "backoff_factor = 1.5 "},
      {[](Dynamic& o) { o.backoff_factor = -0.5; }, "backoff_factor = -0.5 "},
      {[](Dynamic& o) { o.backoff_factor = quiet_nan; }, "backoff_factor = nan "},
      // Values are named exactly (shortest round-trip decimal), not to 6 digits: a factor 1 + 1e-10
      // would print as "1" and a double 1 - 2^-53 as "1".
      {[](Dynamic& o) { o.growth_factor = 1.0 - 0x1p-53; }, "growth_factor = 0.9999999999999999 "},
      {[](Dynamic& o) { o.backoff_factor = 1.0 + 1e-10; }, "backoff_factor = 1.0000000001 "},
      {[](Dynamic& o) { o.growth_interval = 0; }, "growth_interval = 0 "},
      {[](Dynamic& o) { o.growth_interval = -3; }, "growth_interval = -3 "},
      {[](Dynamic& o) { o.min_scale = -1.0f; }, "min_scale = -1 "},
      {[](Dynamic& o) { o.min_scale = 65537.0f; }, "min_scale = 65537 "},  // above init_scale
      {[](Dynamic& o) { o.min_scale = quiet_nan; }, "min_scale = nan "},
      {[](Dynamic& o) { o.max_scale = 65535.0f; }, "max_scale = 65535 "},  // below init_scale
      {[](Dynamic& o) { o.max_scale = quiet_nan; }, "max_scale = nan "},
      {[](Dynamic& o) { o.max_scale = 0.0f; }, "max_scale = 0 "},
      {[](Dynamic& o) { o.hysteresis = 0; }, "hysteresis = 0 "},
      {[](Dynamic& o) { o.hysteresis = -1; }, "hysteresis = -1 "},
  };
  for (const InvalidDynamic& invalid : cases) {
    CAPTURE(invalid.names);
    Dynamic options;
    invalid.change(options);
    CHECK_THROWS_MATCHES(
        options.validate(), mpx::invalid_argument,
        MessageContains({"mpx::DynamicLossScaling::Options: ", invalid.names, "is invalid; expected"}));
  }
}

TEST_CASE("DynamicLossScaling::Options::validate explains the valid range", "[policy][loss_scaling]") {
  Dynamic options;
  options.backoff_factor = 2.0;
  CHECK_THROWS_MATCHES(options.validate(), mpx::invalid_argument,
                       MessageContains({"backoff_factor", "(0, 1)"}));
  options = Dynamic{};
  options.min_scale = 1e9f;
  CHECK_THROWS_MATCHES(options.validate(), mpx::invalid_argument,
                       MessageContains({"min_scale", "0 <= min_scale <= init_scale"}));
  options = Dynamic{};
  options.growth_interval = 0;
  CHECK_THROWS_MATCHES(options.validate(), mpx::invalid_argument, MessageContains({"an integer >= 1"}));
  // invalid_argument is an mpx::error, so one handler can catch every mpx failure.
  CHECK_THROWS_AS(options.validate(), mpx::error);
}

TEST_CASE("DynamicLossScaling::Options::validate accepts the edges of each range", "[policy][loss_scaling]") {
  const std::vector<std::function<void(Dynamic&)>> edges = {
      [](Dynamic& o) { o.init_scale = 1.0f; },
      [](Dynamic& o) { o.init_scale = std::numeric_limits<float>::denorm_min(); },
      [](Dynamic& o) { o.init_scale = std::numeric_limits<float>::max(); },
      [](Dynamic& o) { o.growth_factor = 1.0001; },
      [](Dynamic& o) { o.backoff_factor = 0.999; },
      [](Dynamic& o) { o.backoff_factor = 1e-6; },
      // Factors are doubles: ones that differ from the bounds past fp32's precision are still valid
      // (as floats these would round to exactly 1 and be rejected).
      [](Dynamic& o) { o.growth_factor = 1.0 + 0x1p-40; },
      [](Dynamic& o) { o.backoff_factor = 1.0 - 0x1p-40; },
      [](Dynamic& o) { o.growth_interval = 1; },
      [](Dynamic& o) { o.min_scale = 65536.0f; },  // equal to init_scale
      [](Dynamic& o) { o.max_scale = 65536.0f; },  // equal to init_scale
      [](Dynamic& o) {
        o.min_scale = 1.0f;
        o.max_scale = 1048576.0f;
      },
      [](Dynamic& o) { o.hysteresis = 2; },
  };
  for (std::size_t i = 0; i < edges.size(); ++i) {
    CAPTURE(i);
    Dynamic options;
    edges[i](options);
    CHECK_NOTHROW(options.validate());
  }
}

TEST_CASE("StaticLossScaling::Options default to 2^16 and reject non-positive or non-finite scales",
          "[policy][loss_scaling]") {
  const Static defaults;
  CHECK(defaults.scale == 65536.0f);
  CHECK_NOTHROW(defaults.validate());
  CHECK_NOTHROW(Static{1.0f}.validate());
  CHECK_NOTHROW(Static{0.125f}.validate());

  const std::vector<std::pair<float, std::string>> invalid = {
      {0.0f, "scale = 0 "},        {-1.0f, "scale = -1 "}, {-0.0f, "scale = -0 "},
      {quiet_nan, "scale = nan "}, {inf, "scale = inf "},  {-inf, "scale = -inf "}};
  for (const auto& [scale, names] : invalid) {
    CAPTURE(names);
    CHECK_THROWS_MATCHES(
        Static{scale}.validate(), mpx::invalid_argument,
        MessageContains({"mpx::StaticLossScaling::Options: ", names, "expected a finite value > 0"}));
  }
}

TEST_CASE("NoLossScaling and the fp16 opt-in have nothing to validate", "[policy][loss_scaling]") {
  CHECK_NOTHROW(mpx::NoLossScaling::Options{}.validate());
  CHECK_NOTHROW(mpx::AllowFp16Underflow<mpx::NoLossScaling>::Options{}.validate());
}

}  // namespace MPX_UNITY_ID
}  // namespace
