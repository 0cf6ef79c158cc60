// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The diffusion schedule and samplers (mpx/experiment/ddpm.hpp): the linear and cosine schedules
// against their closed forms, the noised training batch against its formula and split across calls,
// the DDIM timesteps, both samplers driven by an exact noise oracle for a point mass (which they must
// return to), and the same samples for the same seed however they are chunked.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <span>
#include <vector>

#include <catch2/catch.hpp>

#include "mpx/experiment/ddpm.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::experiment::DdpmOptions;
using mpx::experiment::DdpmSchedule;
using mpx::experiment::NoiseSchedule;
using mpx::experiment::Sampler;
using mpx::experiment::SamplerOptions;

// A noise predictor that knows the data: every sample is `point`, so eps = (x_t - sqrt(abar_t)
// point) / sqrt(1 - abar_t) exactly (computed in double).
auto point_mass_oracle(const DdpmSchedule& schedule, const std::vector<float>& point) {
  return [&schedule, point](std::span<const float> x, std::int64_t t, std::span<float> eps) {
    const double keep = std::sqrt(schedule.alpha_bar(t)), spread = std::sqrt(1.0 - schedule.alpha_bar(t));
    for (std::size_t i = 0; i < x.size(); ++i) {
      eps[i] = static_cast<float>((double(x[i]) - keep * double(point[i % point.size()])) / spread);
    }
  };
}

}  // namespace

TEST_CASE("DDPM schedules: linear betas from beta_start to beta_end, cosine abar as its closed form",
          "[ddpm]") {
  const DdpmSchedule linear;
  CHECK(linear.beta(0) == 1e-4);
  CHECK(linear.beta(999) == Approx(0.02).epsilon(1e-15));
  CHECK(linear.beta(500) == Approx(1e-4 + (0.02 - 1e-4) * 500.0 / 999.0).epsilon(1e-15));
  double product = 1.0;
  for (std::int64_t t = 0; t < 1000; ++t) product *= 1.0 - linear.beta(t);
  CHECK(linear.alpha_bar(999) == Approx(product).epsilon(1e-12));
  CHECK(linear.alpha_bar(-1) == 1.0);

  const DdpmSchedule cosine({.timesteps = 200, .schedule = NoiseSchedule::Cosine});
  const auto abar = [](double fraction) {
    const double angle = (fraction + 0.008) / 1.008 * std::numbers::pi / 2;
    return std::cos(angle) * std::cos(angle);
  };
  // The betas telescope: abar_t = abar((t + 1) / T) / abar(0) wherever the cap did not bind.
  for (std::int64_t t = 0; t < 190; ++t) {
    INFO("t = " << t);
    CHECK(cosine.alpha_bar(t) == Approx(abar(double(t + 1) / 200.0) / abar(0.0)).epsilon(1e-10));
  }
  CHECK(cosine.beta(199) == 0.999);  // abar(1) = 0: capped

  CHECK_THROWS_WITH(DdpmSchedule({.timesteps = 1}), Catch::Contains("at least 2"));
  CHECK_THROWS_WITH(DdpmSchedule({.beta_start = 0.0}), Catch::Contains("beta_start = 0"));
}

TEST_CASE("noised_batch is sqrt(abar) x0 + sqrt(1 - abar) eps, and splits across calls", "[ddpm]") {
  const DdpmSchedule schedule({.timesteps = 100});
  constexpr std::int64_t size = 5, count = 6;
  std::vector<float> clean(size * count);
  for (std::size_t i = 0; i < clean.size(); ++i) clean[i] = static_cast<float>(std::sin(double(i)));
  mpx::experiment::NoisedBatch whole, first, second;
  schedule.noised_batch(clean, size, 9, 3, 0, whole);
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int32_t t = whole.timesteps[static_cast<std::size_t>(i)];
    CHECK(t >= 0);
    CHECK(t < 100);
    CHECK(whole.timestep_values[static_cast<std::size_t>(i)] == static_cast<float>(t));
    for (std::int64_t e = 0; e < size; ++e) {
      const auto at = static_cast<std::size_t>(i * size + e);
      const double expected = std::sqrt(schedule.alpha_bar(t)) * clean[at] +
                              std::sqrt(1.0 - schedule.alpha_bar(t)) * whole.noise[at];
      CHECK(whole.noisy[at] == static_cast<float>(expected));
    }
  }
  // Two ranks' halves of the global batch are the whole batch's halves.
  schedule.noised_batch(std::span(clean).first(3 * size), size, 9, 3, 0, first);
  schedule.noised_batch(std::span(clean).subspan(3 * size), size, 9, 3, 3, second);
  first.noisy.insert(first.noisy.end(), second.noisy.begin(), second.noisy.end());
  first.timesteps.insert(first.timesteps.end(), second.timesteps.begin(), second.timesteps.end());
  CHECK(first.noisy == whole.noisy);
  CHECK(first.timesteps == whole.timesteps);
  // Another step draws anew.
  mpx::experiment::NoisedBatch next;
  schedule.noised_batch(clean, size, 9, 4, 0, next);
  CHECK(next.noise != whole.noise);
  CHECK_THROWS_WITH(schedule.noised_batch(std::span(clean).first(7), size, 9, 3, 0, next),
                    Catch::Contains("7 values are not whole samples of 5"));
}

TEST_CASE("DDIM visits k T / S from the noisiest; DDPM every step", "[ddpm]") {
  const DdpmSchedule schedule;
  const auto ddim = schedule.sampling_timesteps({.sampler = Sampler::Ddim, .steps = 50});
  REQUIRE(ddim.size() == 50);
  CHECK(ddim.front() == 980);
  CHECK(ddim[1] == 960);
  CHECK(ddim.back() == 0);
  const auto ddpm = schedule.sampling_timesteps({.sampler = Sampler::Ddpm});
  REQUIRE(ddpm.size() == 1000);
  CHECK(ddpm.front() == 999);
  CHECK(ddpm.back() == 0);
  CHECK_THROWS_WITH(schedule.sampling_timesteps({.sampler = Sampler::Ddim, .steps = 0}),
                    Catch::Contains("[1, 1000]"));
}

TEST_CASE("Both samplers return an exact noise oracle's point mass", "[ddpm]") {
  const std::vector<float> point{-0.9f, -0.25f, 0.0f, 0.5f, 0.875f, 1.0f};
  for (const auto schedule_kind : {NoiseSchedule::Linear, NoiseSchedule::Cosine}) {
    const DdpmSchedule schedule({.timesteps = 200, .schedule = schedule_kind});
    for (const SamplerOptions& options :
         {SamplerOptions{.sampler = Sampler::Ddpm, .seed = 3},
          SamplerOptions{.sampler = Sampler::Ddim, .steps = 20},
          SamplerOptions{.sampler = Sampler::Ddim, .steps = 20, .eta = 1.0, .seed = 5},
          SamplerOptions{.sampler = Sampler::Ddpm, .clip = false, .seed = 4}}) {
      INFO(mpx::experiment::noise_schedule_name(schedule_kind)
           << (options.sampler == Sampler::Ddpm ? " DDPM" : " DDIM") << " eta " << options.eta);
      const std::vector<float> samples = schedule.sample(options, 4, static_cast<std::int64_t>(point.size()),
                                                         0, point_mass_oracle(schedule, point));
      for (std::size_t i = 0; i < samples.size(); ++i)
        CHECK(samples[i] == Approx(point[i % point.size()]).margin(1e-5));
    }
  }
}

TEST_CASE("With the exact noise predictor of Gaussian data, both samplers draw that Gaussian", "[ddpm]") {
  // x0 ~ N(m, s^2) per value: x_t ~ N(sqrt(abar) m, abar s^2 + 1 - abar), and the best noise
  // estimate is E[eps | x_t] = sqrt(1 - abar) (x_t - sqrt(abar) m) / (abar s^2 + 1 - abar). A sampler
  // with a wrong coefficient draws another mean or spread.
  constexpr double m = 0.3, s = 0.2;
  constexpr std::int64_t count = 4000;
  const DdpmSchedule schedule({.timesteps = 200, .schedule = NoiseSchedule::Cosine});
  const auto predictor = [&](std::span<const float> x, std::int64_t t, std::span<float> eps) {
    const double abar = schedule.alpha_bar(t);
    for (std::size_t i = 0; i < x.size(); ++i) {
      eps[i] = static_cast<float>(std::sqrt(1.0 - abar) * (double(x[i]) - std::sqrt(abar) * m) /
                                  (abar * s * s + 1.0 - abar));
    }
  };
  for (const SamplerOptions& options :
       {SamplerOptions{.sampler = Sampler::Ddpm, .clip = false, .seed = 1},
        SamplerOptions{.sampler = Sampler::Ddim, .steps = 50, .clip = false, .seed = 2},
        // At eta 1 DDIM is DDPM's posterior step, which with a fixed variance loses spread when it
        // jumps (the variance of x0 given x_t is left out): every step here.
        SamplerOptions{.sampler = Sampler::Ddim, .steps = 200, .eta = 1.0, .clip = false, .seed = 3}}) {
    INFO((options.sampler == Sampler::Ddpm ? "DDPM" : "DDIM") << " eta " << options.eta);
    const std::vector<float> samples = schedule.sample(options, count, 1, 0, predictor);
    double mean = 0.0, square = 0.0;
    for (const float v : samples) mean += v;
    mean /= count;
    for (const float v : samples) square += (v - mean) * (v - mean);
    const double spread = std::sqrt(square / (count - 1));
    CHECK(mean == Approx(m).margin(0.02));
    CHECK(spread == Approx(s).epsilon(0.08));
  }
}

TEST_CASE("One sampler step is its formula, with the documented noise", "[ddpm]") {
  const DdpmSchedule schedule({.timesteps = 100});
  const auto beta = [](std::int64_t t) { return 1e-4 + (0.02 - 1e-4) * double(t) / 99.0; };
  const auto abar = [&](std::int64_t t) {
    double product = 1.0;
    for (std::int64_t k = 0; k <= t; ++k) product *= 1.0 - beta(k);
    return product;
  };
  std::vector<float> x{0.3f, -1.2f, 2.0f}, eps{-0.4f, 0.9f, 0.05f};
  const std::int64_t t = 37;
  // DDPM at t = 37 (index 62 of the 100 visited).
  {
    SamplerOptions options{.sampler = Sampler::Ddpm, .seed = 12};
    const auto visited = schedule.sampling_timesteps(options);
    REQUIRE(visited[62] == t);
    std::vector<float> next = x;
    schedule.sampler_step(options, visited, 62, eps, 3, 4, next);
    for (std::size_t i = 0; i < 3; ++i) {
      const double x0 = std::clamp((x[i] - std::sqrt(1 - abar(t)) * eps[i]) / std::sqrt(abar(t)), -1.0, 1.0);
      const double mean = std::sqrt(abar(t - 1)) * beta(t) / (1 - abar(t)) * x0 +
                          std::sqrt(1 - beta(t)) * (1 - abar(t - 1)) / (1 - abar(t)) * x[i];
      const double sigma = std::sqrt((1 - abar(t - 1)) / (1 - abar(t)) * beta(t));
      const double z = mpx::normal_at(0.0, 1.0, 12, 63, 4 * 3 + i);  // sample 4: first_sample
      CHECK(next[i] == Approx(mean + sigma * z).epsilon(1e-6));
    }
  }
  // DDIM from t = 40 to 30 with eta 0.5 (10 steps: 90, 80, ..., 0; t = 40 at index 5).
  {
    SamplerOptions options{.sampler = Sampler::Ddim, .steps = 10, .eta = 0.5, .clip = false, .seed = 13};
    const auto visited = schedule.sampling_timesteps(options);
    REQUIRE(visited[5] == 40);
    std::vector<float> next = x;
    schedule.sampler_step(options, visited, 5, eps, 3, 0, next);
    for (std::size_t i = 0; i < 3; ++i) {
      const double x0 = (x[i] - std::sqrt(1 - abar(40)) * eps[i]) / std::sqrt(abar(40));
      const double sigma =
          0.5 * std::sqrt((1 - abar(30)) / (1 - abar(40))) * std::sqrt(1 - abar(40) / abar(30));
      const double z = mpx::normal_at(0.0, 1.0, 13, 6, i);
      const double expected =
          std::sqrt(abar(30)) * x0 + std::sqrt(1 - abar(30) - sigma * sigma) * eps[i] + sigma * z;
      CHECK(next[i] == Approx(expected).epsilon(1e-6));
    }
  }
}

TEST_CASE("The same seed draws the same samples, however they are chunked", "[ddpm]") {
  const DdpmSchedule schedule({.timesteps = 50});
  // A predictor that is no oracle, so the samples depend on every draw.
  const auto shrink = [](std::span<const float> x, std::int64_t, std::span<float> eps) {
    for (std::size_t i = 0; i < x.size(); ++i) eps[i] = 0.5f * x[i];
  };
  for (const SamplerOptions& options :
       {SamplerOptions{.sampler = Sampler::Ddpm, .seed = 8},
        SamplerOptions{.sampler = Sampler::Ddim, .steps = 10, .eta = 0.5, .seed = 8}}) {
    const auto all = schedule.sample(options, 5, 3, 0, shrink);
    auto part = schedule.sample(options, 2, 3, 0, shrink);
    const auto rest = schedule.sample(options, 3, 3, 2, shrink);
    part.insert(part.end(), rest.begin(), rest.end());
    CHECK(part == all);
    CHECK(schedule.sample(options, 5, 3, 0, shrink) == all);
    SamplerOptions other = options;
    other.seed = 9;
    CHECK(schedule.sample(other, 5, 3, 0, shrink) != all);
  }
}

}  // namespace MPX_UNITY_ID
}  // namespace
