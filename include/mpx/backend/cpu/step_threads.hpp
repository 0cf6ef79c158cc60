// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `cpu::StepThreads`: how many OpenMP threads each training step runs on, chosen by the
/// steps' measured times, so that a step beside a busy process does not wait at every parallel
/// region for a thread that has no core.
///
/// A CPU step runs hundreds of parallel regions, each ending when its slowest thread does. When
/// another process holds a core, the thread that shares it runs in the scheduler's time slices, and
/// every region waits for it: measured on 2 cores beside `yes`, the char-GPT's 2-thread step took
/// 1.1 to 3.0 times its 1-thread step, from run to run. Every CPU kernel gives the same bits on any
/// number of threads (parallel.hpp), so the count can change from one step to the next without
/// changing a result, and the fastest count can be found by trying.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace mpx::cpu {

/// @brief Chooses each step's thread count among OpenMP's count (`omp_get_max_threads()` when the
/// first step starts, what OMP_NUM_THREADS sets) and its halvings down to 1, by timing the steps.
///
/// Steps run on the current count; now and then `probe_steps` steps in a row run on the next count
/// down or up (a probe). When the probe's steps take less than `required_gain` times the mean of
/// the last `reference_steps` steps on the current count, its count becomes the current one. Means,
/// not medians: beside a busy process a step's time is bimodal (measured on 2 cores beside `yes`:
/// 2-thread steps of 65-70 or 200 ms from one step to the next, 1-thread steps of 60-63 ms), and
/// what the choice must minimise is the total. A probe that loses doubles the interval to the
/// next, from `first_probe_interval` up to `longest_probe_interval` steps, so that on an idle
/// machine probing costs little (three 1-thread steps every 256 of a 2-thread step that runs 1.9
/// times as fast: 1%), and a machine that becomes idle again is noticed within that many steps.
/// Steps of a different size (another batch shape) start the reference over: their times are not
/// comparable.
class StepThreads {
 public:
  /// @brief Steps whose mean a probe is compared with.
  static constexpr int reference_steps = 8;
  /// @brief Steps in a row that a probe runs on the other count.
  static constexpr int probe_steps = 3;
  /// @brief A probe wins when its steps' mean is less than this share of the reference mean.
  static constexpr double required_gain = 0.95;
  /// @brief Steps before the first probe, and after a probe that won.
  static constexpr std::int64_t first_probe_interval = 8;
  /// @brief The most steps between two probes.
  static constexpr std::int64_t longest_probe_interval = 256;

  /// @brief One step's thread count, set while it lives: OpenMP's count for the calling thread
  /// restored and the step's time recorded when it ends (not recorded when the step throws).
  class Scope {
   public:
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() {
      if (owner_ == nullptr) return;
      const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
      set_threads(restore_);
      if (std::uncaught_exceptions() == exceptions_) owner_->end_step(threads_, seconds);
    }

   private:
    friend class StepThreads;
    using Clock = std::chrono::steady_clock;
    Scope(StepThreads* owner, int threads, int restore)
        : owner_(owner), threads_(threads), restore_(restore), exceptions_(std::uncaught_exceptions()) {
      if (owner_ != nullptr) set_threads(threads);
      start_ = Clock::now();
    }
    StepThreads* owner_;  // null: the count is not being chosen
    int threads_;
    int restore_;
    int exceptions_;
    Clock::time_point start_;
  };

  /// @brief Starts a step of size `work` (any number that is the same for steps of the same shape):
  /// the returned scope holds the step's thread count (`begin_step`) until it ends, and then reports
  /// its time (`end_step`). With `adapt` false, or with one thread to begin with, the count is
  /// OpenMP's, untouched.
  [[nodiscard]] Scope step(std::int64_t work, bool adapt = true) {
    const int configured = max_threads();
    if (!adapt || configured <= 1) return Scope(nullptr, configured, configured);
    return Scope(this, begin_step(work, configured), configured);
  }

  /// @brief The thread count for the next step, of size `work`, when OpenMP's count is
  /// `configured`: the current count, or a probe's. (`step` calls it; public for tests.)
  [[nodiscard]] int begin_step(std::int64_t work, int configured) noexcept {
    if (configured != most_) restart(configured);  // OMP_NUM_THREADS changed, or the first step
    if (work != work_) {
      work_ = work;
      recorded_ = 0;
      probe_left_ = 0;
    }
    if (probe_left_ > 0) return probe_threads_;
    if (recorded_ < reference_steps || ++steps_since_probe_ < interval_) return current_;
    steps_since_probe_ = 0;
    // Down first, and after that alternately up and down where both exist.
    const bool can_go_down = current_ > 1, can_go_up = current_ < most_;
    probing_up_ = can_go_up && (!can_go_down || !probing_up_);
    probe_threads_ = probing_up_ ? std::min(most_, current_ * 2) : std::max(1, current_ / 2);
    probe_left_ = probe_steps;
    probe_seconds_ = 0.0;
    return probe_threads_;
  }

  /// @brief Records that a step begun by `begin_step` ran on `threads` for `seconds`: a reference
  /// step, or one of a probe's, the last of which decides. (`step`'s scope calls it; public for
  /// tests.)
  void end_step(int threads, double seconds) noexcept {
    if (probe_left_ == 0 || threads != probe_threads_) {
      if (threads != current_) return;  // a step begun before a restart
      times_[static_cast<std::size_t>(recorded_ % reference_steps)] = seconds;
      ++recorded_;
      return;
    }
    probe_seconds_ += seconds;
    if (--probe_left_ > 0) return;
    double reference = 0.0;
    for (const double t : times_) reference += t;
    if (probe_seconds_ / probe_steps < required_gain * reference / reference_steps) {
      current_ = threads;
      recorded_ = 0;
      interval_ = first_probe_interval;
    } else {
      interval_ = std::min(longest_probe_interval, interval_ * 2);
    }
  }

  /// @brief The count steps run on now (OpenMP's count until the first step).
  [[nodiscard]] int threads() const noexcept { return most_ == 0 ? max_threads() : current_; }

 private:
  static int max_threads() noexcept {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
  }
  static void set_threads([[maybe_unused]] int threads) noexcept {
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
  }

  void restart(int configured) noexcept {
    most_ = current_ = configured;
    recorded_ = 0;
    steps_since_probe_ = 0;
    interval_ = first_probe_interval;
    probe_left_ = 0;
  }

  int most_ = 0;     // the configured count: the largest tried
  int current_ = 0;  // the count steps run on
  std::int64_t work_ = -1;
  std::array<double, reference_steps> times_{};  // the last steps on current_, a ring
  std::int64_t recorded_ = 0;                    // steps recorded on current_ since it was chosen
  std::int64_t steps_since_probe_ = 0;
  std::int64_t interval_ = first_probe_interval;
  bool probing_up_ = true;  // the direction of the last probe
  int probe_threads_ = 0;   // the count of the probe under way
  int probe_left_ = 0;      // its steps still to run: none when no probe is under way
  double probe_seconds_ = 0.0;
};

}  // namespace mpx::cpu
