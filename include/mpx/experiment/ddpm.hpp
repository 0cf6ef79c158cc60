// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Denoising diffusion (DDPM, Ho et al. 2020) around a noise-predicting model: the noise
/// schedule (`DdpmSchedule`: linear or cosine), the training batches it makes from clean images
/// (`noised_batch`: x_t = sqrt(abar_t) x0 + sqrt(1 - abar_t) eps, with the timesteps and the noise,
/// which is the regression target), and the two samplers (`sample`: DDPM's ancestral steps, or DDIM
/// in fewer steps), each following diffusers' `DDPMScheduler` and `DDIMScheduler` with their
/// defaults. Every random draw is a pure function of (seed, step, sample index, element), so a batch
/// splits across data-parallel ranks and a sample set across chunks without changing a value.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numbers>
#include <span>
#include <string_view>
#include <vector>

#include "mpx/error.hpp"
#include "mpx/numeric/random.hpp"

namespace mpx::experiment {

/// @brief How the noise variances beta_t grow with t.
enum class NoiseSchedule {
  /// beta_t evenly spaced from `beta_start` to `beta_end` (Ho et al.; diffusers' "linear").
  Linear,
  /// abar(t) = cos^2(((t / T) + s) / (1 + s) * pi / 2), beta_t = min(1 - abar(t + 1) / abar(t),
  /// `max_beta`) (Nichol and Dhariwal 2021; diffusers' "squaredcos_cap_v2").
  Cosine,
};

/// @brief "linear" or "cosine".
[[nodiscard]] constexpr std::string_view noise_schedule_name(NoiseSchedule schedule) noexcept {
  return schedule == NoiseSchedule::Cosine ? "cosine" : "linear";
}

/// @brief A diffusion's settings; the defaults are DDPM's.
struct DdpmOptions {
  std::int64_t timesteps = 1000;                   ///< T: steps of the forward (noising) process
  NoiseSchedule schedule = NoiseSchedule::Linear;  ///< how beta_t grows
  double beta_start = 1e-4;                        ///< linear: beta of the first step
  double beta_end = 0.02;                          ///< linear: beta of the last step
  double cosine_offset = 0.008;                    ///< cosine: s, which keeps beta_0 from vanishing
  double max_beta = 0.999;                         ///< cosine: the cap on beta_t near t = T
};

/// @brief One training batch made from clean samples: the model's input x_t, its timesteps and the
/// noise it is to predict.
struct NoisedBatch {
  std::vector<float> noisy;             ///< x_t, as the clean samples are laid out
  std::vector<float> noise;             ///< eps ~ N(0, 1): the regression target
  std::vector<std::int32_t> timesteps;  ///< t of each sample, in [0, T)
  std::vector<float> timestep_values;   ///< the same as floats, for `TimeConditioned::set_timesteps`
};

/// @brief Which sampler `sample` runs.
enum class Sampler {
  Ddpm,  ///< ancestral sampling through every one of the T steps
  Ddim,  ///< DDIM (Song et al. 2021) through `steps` evenly spaced steps; deterministic at eta 0
};

/// @brief How to draw samples.
struct SamplerOptions {
  Sampler sampler = Sampler::Ddim;  ///< DDPM (all T steps) or DDIM
  std::int64_t steps = 50;          ///< DDIM: steps taken (T / steps apart, diffusers' "leading")
  double eta = 0.0;                 ///< DDIM: the share of DDPM's noise added back (0: none)
  bool clip = true;                 ///< clamp each step's estimate of x0 to [-1, 1] (both samplers)
  std::uint64_t seed = 0;           ///< the initial noise and every step's noise
};

/// @brief The noise schedule's constants, in double: beta_t, alpha_t = 1 - beta_t and
/// abar_t = alpha_0 ... alpha_t for t in [0, T).
class DdpmSchedule {
 public:
  /// @brief The schedule `options` describe.
  /// @throws mpx::invalid_argument naming the setting for T < 2, betas outside (0, 1) or a cosine
  ///         offset below 0.
  explicit DdpmSchedule(DdpmOptions options = {}) : options_(options) {
    const std::int64_t steps = options.timesteps;
    if (steps < 2) {
      throw invalid_argument(
          mpx::detail::concat("mpx::experiment::DdpmSchedule: timesteps must be at least 2, got ", steps));
    }
    betas_.resize(static_cast<std::size_t>(steps));
    if (options.schedule == NoiseSchedule::Linear) {
      if (!(options.beta_start > 0.0 && options.beta_end < 1.0 && options.beta_start <= options.beta_end)) {
        throw invalid_argument(mpx::detail::concat(
            "mpx::experiment::DdpmSchedule: the linear schedule needs 0 < beta_start ",
            "<= beta_end < 1, got beta_start = ", options.beta_start, ", beta_end = ", options.beta_end));
      }
      for (std::int64_t t = 0; t < steps; ++t) {
        betas_[static_cast<std::size_t>(t)] = options.beta_start + (options.beta_end - options.beta_start) *
                                                                       static_cast<double>(t) /
                                                                       static_cast<double>(steps - 1);
      }
    } else {
      if (!(options.cosine_offset >= 0.0 && options.max_beta > 0.0 && options.max_beta < 1.0)) {
        throw invalid_argument(
            mpx::detail::concat("mpx::experiment::DdpmSchedule: the cosine schedule needs cosine_offset ",
                                ">= 0 and 0 < max_beta < 1, got cosine_offset = ", options.cosine_offset,
                                ", max_beta = ", options.max_beta));
      }
      const auto abar = [&](double fraction) {
        const double angle =
            (fraction + options.cosine_offset) / (1.0 + options.cosine_offset) * std::numbers::pi / 2;
        return std::cos(angle) * std::cos(angle);
      };
      for (std::int64_t t = 0; t < steps; ++t) {
        const double now = abar(static_cast<double>(t) / static_cast<double>(steps));
        const double next = abar(static_cast<double>(t + 1) / static_cast<double>(steps));
        betas_[static_cast<std::size_t>(t)] = std::min(1.0 - next / now, options.max_beta);
      }
    }
    alpha_bars_.resize(betas_.size());
    double product = 1.0;
    for (std::size_t t = 0; t < betas_.size(); ++t) {
      product *= 1.0 - betas_[t];
      alpha_bars_[t] = product;
    }
  }

  /// @brief The settings.
  [[nodiscard]] const DdpmOptions& options() const noexcept { return options_; }
  /// @brief T.
  [[nodiscard]] std::int64_t timesteps() const noexcept { return options_.timesteps; }
  /// @brief beta_t.
  [[nodiscard]] double beta(std::int64_t t) const { return betas_.at(static_cast<std::size_t>(t)); }
  /// @brief abar_t = (1 - beta_0) ... (1 - beta_t); 1 for t = -1 (before the first step).
  [[nodiscard]] double alpha_bar(std::int64_t t) const {
    return t < 0 ? 1.0 : alpha_bars_.at(static_cast<std::size_t>(t));
  }

  /// @brief The training batch for clean samples `clean` (count samples of `sample_size` values
  /// each, in [-1, 1]) at training step `step`: sample i (the `first_sample + i`-th of the global
  /// batch, so that data-parallel ranks draw their shares of one global draw) gets
  /// t = floor(u T), u = uniform_from_bits(random_bits(seed, 2 step, global index)), and noise
  /// element e = normal_at(0, 1, seed, 2 step + 1, global index * sample_size + e); then
  /// x_t = sqrt(abar_t) x0 + sqrt(1 - abar_t) eps in double, rounded once to float.
  /// @param clean the clean samples, sample after sample
  /// @param sample_size values per sample
  /// @param seed the run's seed
  /// @param step the training step (each step draws anew)
  /// @param first_sample the global index of `clean`'s first sample
  /// @param batch the batch to fill (its vectors are resized)
  void noised_batch(std::span<const float> clean, std::int64_t sample_size, std::uint64_t seed,
                    std::uint64_t step, std::int64_t first_sample, NoisedBatch& batch) const {
    const std::int64_t count = checked_count("noised_batch", clean.size(), sample_size);
    batch.noisy.resize(clean.size());
    batch.noise.resize(clean.size());
    batch.timesteps.resize(static_cast<std::size_t>(count));
    batch.timestep_values.resize(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      const auto global = static_cast<std::uint64_t>(first_sample + i);
      const double u = uniform_from_bits(random_bits(seed, 2 * step, global));
      const auto t = std::min<std::int64_t>(static_cast<std::int64_t>(u * static_cast<double>(timesteps())),
                                            timesteps() - 1);
      batch.timesteps[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(t);
      batch.timestep_values[static_cast<std::size_t>(i)] = static_cast<float>(t);
      const double keep = std::sqrt(alpha_bar(t)), spread = std::sqrt(1.0 - alpha_bar(t));
      for (std::int64_t e = 0; e < sample_size; ++e) {
        const auto at = static_cast<std::size_t>(i * sample_size + e);
        const double eps = normal_at(0.0, 1.0, seed, 2 * step + 1, element_index(global, sample_size, e));
        batch.noise[at] = static_cast<float>(eps);
        batch.noisy[at] = static_cast<float>(keep * static_cast<double>(clean[at]) +
                                             spread * static_cast<double>(batch.noise[at]));
      }
    }
  }

  /// @brief The timesteps a sampler visits, from the noisiest: every t from T - 1 down to 0 for
  /// DDPM; for DDIM with S steps, k (T / S) for k = S - 1 down to 0 (diffusers' "leading" spacing).
  /// @param options the sampler
  /// @throws mpx::invalid_argument for DDIM steps outside [1, T].
  [[nodiscard]] std::vector<std::int64_t> sampling_timesteps(const SamplerOptions& options) const {
    std::vector<std::int64_t> visited;
    if (options.sampler == Sampler::Ddpm) {
      for (std::int64_t t = timesteps() - 1; t >= 0; --t) visited.push_back(t);
      return visited;
    }
    if (options.steps < 1 || options.steps > timesteps()) {
      throw invalid_argument(mpx::detail::concat("mpx::experiment::DdpmSchedule: DDIM steps must lie in [1, ",
                                                 timesteps(), "], got ", options.steps));
    }
    const std::int64_t ratio = timesteps() / options.steps;
    for (std::int64_t k = options.steps - 1; k >= 0; --k) visited.push_back(k * ratio);
    return visited;
  }

  /// @brief One sampler step for `count` samples at timestep t (the `index`-th visited, of
  /// `visited`), in place: x holds x_t and becomes the next x; eps is the model's noise estimate.
  /// With x0 = (x_t - sqrt(1 - abar_t) eps) / sqrt(abar_t), clamped to [-1, 1] under `clip`:
  /// - DDPM: x_{t-1} = c0 x0 + ct x_t + sigma z, c0 = sqrt(abar_{t-1}) beta_t / (1 - abar_t),
  ///   ct = sqrt(alpha_t) (1 - abar_{t-1}) / (1 - abar_t), sigma^2 = (1 - abar_{t-1}) / (1 - abar_t)
  ///   beta_t (diffusers' "fixed_small", floored at 1e-20), no noise at t = 0;
  /// - DDIM to the next visited t' (abar = 1 after the last): x_{t'} = sqrt(abar_t') x0 +
  ///   sqrt(1 - abar_t' - sigma^2) eps + sigma z, sigma = eta sqrt((1 - abar_t') / (1 - abar_t))
  ///   sqrt(1 - abar_t / abar_t').
  /// z element e of sample g (global index `first_sample + g`) is normal_at(0, 1, seed, 1 + index,
  /// g * sample_size + e). Coefficients in double, each value rounded once to float.
  /// @param options the sampler
  /// @param visited the sampler's timesteps (`sampling_timesteps(options)`)
  /// @param index the position of this step in `visited`
  /// @param eps the model's noise estimate at x_t
  /// @param sample_size values per sample
  /// @param first_sample the global index of the first sample held
  /// @param x x_t in, the next x out
  void sampler_step(const SamplerOptions& options, std::span<const std::int64_t> visited, std::size_t index,
                    std::span<const float> eps, std::int64_t sample_size, std::int64_t first_sample,
                    std::span<float> x) const {
    const std::int64_t count = checked_count("sampler_step", x.size(), sample_size);
    if (eps.size() != x.size()) {
      throw invalid_argument(mpx::detail::concat("mpx::experiment::DdpmSchedule::sampler_step: eps has ",
                                                 eps.size(), " values, x ", x.size(),
                                                 "; they must be as many"));
    }
    const std::int64_t t = visited[index];
    const double abar = alpha_bar(t);
    double x0_weight = 0.0, x_weight = 0.0, eps_weight = 0.0, sigma = 0.0;
    if (options.sampler == Sampler::Ddpm) {
      const double abar_prev = alpha_bar(t - 1), beta_t = beta(t);
      x0_weight = std::sqrt(abar_prev) * beta_t / (1.0 - abar);
      x_weight = std::sqrt(1.0 - beta_t) * (1.0 - abar_prev) / (1.0 - abar);
      sigma = t > 0 ? std::sqrt(std::max((1.0 - abar_prev) / (1.0 - abar) * beta_t, 1e-20)) : 0.0;
    } else {
      const double abar_next = index + 1 < visited.size() ? alpha_bar(visited[index + 1]) : 1.0;
      sigma = options.eta * std::sqrt((1.0 - abar_next) / (1.0 - abar)) * std::sqrt(1.0 - abar / abar_next);
      x0_weight = std::sqrt(abar_next);
      eps_weight = std::sqrt(std::max(1.0 - abar_next - sigma * sigma, 0.0));
    }
    const double keep = std::sqrt(abar), spread = std::sqrt(1.0 - abar);
    for (std::int64_t i = 0; i < count; ++i) {
      const auto global = static_cast<std::uint64_t>(first_sample + i);
      for (std::int64_t e = 0; e < sample_size; ++e) {
        const auto at = static_cast<std::size_t>(i * sample_size + e);
        const double x_t = x[at], noise_estimate = eps[at];
        double x0 = (x_t - spread * noise_estimate) / keep;
        if (options.clip) x0 = std::clamp(x0, -1.0, 1.0);
        double next = x0_weight * x0 + x_weight * x_t + eps_weight * noise_estimate;
        if (sigma > 0.0) {
          next += sigma * normal_at(0.0, 1.0, options.seed, 1 + index, element_index(global, sample_size, e));
        }
        x[at] = static_cast<float>(next);
      }
    }
  }

  /// @brief `count` samples of `sample_size` values (from sample `first_sample` of the seed's
  /// sequence): x_T element e of sample g = normal_at(0, 1, seed, 0, g * sample_size + e), then
  /// every step of the sampler, `predict_noise(x_t, t, eps)` filling eps for all samples at once.
  /// The same seed gives the same samples, however they are split into calls.
  /// @param options the sampler
  /// @param count samples to draw
  /// @param sample_size values per sample
  /// @param first_sample the global index of the first
  /// @param predict_noise the model: (x_t, t, eps out)
  [[nodiscard]] std::vector<float> sample(
      const SamplerOptions& options, std::int64_t count, std::int64_t sample_size, std::int64_t first_sample,
      const std::function<void(std::span<const float>, std::int64_t, std::span<float>)>& predict_noise)
      const {
    const std::vector<std::int64_t> visited = sampling_timesteps(options);
    std::vector<float> x(static_cast<std::size_t>(count * sample_size)), eps(x.size());
    for (std::int64_t i = 0; i < count; ++i) {
      const auto global = static_cast<std::uint64_t>(first_sample + i);
      for (std::int64_t e = 0; e < sample_size; ++e) {
        x[static_cast<std::size_t>(i * sample_size + e)] =
            static_cast<float>(normal_at(0.0, 1.0, options.seed, 0, element_index(global, sample_size, e)));
      }
    }
    for (std::size_t index = 0; index < visited.size(); ++index) {
      predict_noise(x, visited[index], eps);
      sampler_step(options, visited, index, eps, sample_size, first_sample, x);
    }
    return x;
  }

 private:
  // The random stream index of element e of the sample with global index `global`.
  static std::uint64_t element_index(std::uint64_t global, std::int64_t sample_size,
                                     std::int64_t e) noexcept {
    return global * static_cast<std::uint64_t>(sample_size) + static_cast<std::uint64_t>(e);
  }
  static std::int64_t checked_count(const char* what, std::size_t values, std::int64_t sample_size) {
    if (sample_size <= 0 || values % static_cast<std::size_t>(sample_size) != 0) {
      throw invalid_argument(mpx::detail::concat("mpx::experiment::DdpmSchedule::", what, ": ", values,
                                                 " values are not whole samples of ", sample_size));
    }
    return static_cast<std::int64_t>(values) / sample_size;
  }

  DdpmOptions options_;
  std::vector<double> betas_;
  std::vector<double> alpha_bars_;
};

}  // namespace mpx::experiment
