// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Per-device live and peak byte counters, updated by every tensor allocation, so that
/// benchmarks and experiment records quote peak memory from the allocator itself.

#include <atomic>
#include <cstdint>

namespace mpx {

/// @brief Live and peak bytes held by mpx allocations on one device. Thread-safe.
class MemoryStats {
 public:
  /// @brief Records an allocation of `bytes` and raises the peak if needed.
  void on_allocate(std::int64_t bytes) noexcept {
    const std::int64_t live = live_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    allocations_.fetch_add(1, std::memory_order_relaxed);
    raise_peak(live);
  }

  /// @brief Records that `bytes` were released.
  void on_free(std::int64_t bytes) noexcept { live_.fetch_sub(bytes, std::memory_order_relaxed); }

  /// @brief Bytes currently allocated.
  [[nodiscard]] std::int64_t live_bytes() const noexcept { return live_.load(std::memory_order_relaxed); }
  /// @brief Highest `live_bytes()` since construction or the last `reset_peak()`.
  [[nodiscard]] std::int64_t peak_bytes() const noexcept { return peak_.load(std::memory_order_relaxed); }
  /// @brief Number of allocations since construction.
  [[nodiscard]] std::int64_t allocation_count() const noexcept {
    return allocations_.load(std::memory_order_relaxed);
  }
  /// @brief Starts a new measurement window: the peak becomes the current live bytes.
  void reset_peak() noexcept {
    peak_.store(live_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }

  /// @brief Raises the peak to at least `bytes` (to restore an outer window's peak).
  void raise_peak(std::int64_t bytes) noexcept {
    std::int64_t peak = peak_.load(std::memory_order_relaxed);
    while (bytes > peak && !peak_.compare_exchange_weak(peak, bytes, std::memory_order_relaxed)) {
    }
  }

 private:
  std::atomic<std::int64_t> live_{0};
  std::atomic<std::int64_t> peak_{0};
  std::atomic<std::int64_t> allocations_{0};
};

/// @brief Measures the peak of one scope (e.g. one training step) without disturbing the peak an
/// outer measurement is taking: on destruction the device's peak is at least what it was before.
class PeakWindow {
 public:
  /// @brief Starts a window over `stats`.
  explicit PeakWindow(MemoryStats& stats) noexcept
      : stats_(stats), outer_peak_(stats.peak_bytes()), live_at_start_(stats.live_bytes()) {
    stats_.reset_peak();
  }
  PeakWindow(const PeakWindow&) = delete;
  PeakWindow& operator=(const PeakWindow&) = delete;
  ~PeakWindow() { stats_.raise_peak(outer_peak_); }

  /// @brief Live bytes when the window opened.
  [[nodiscard]] std::int64_t live_at_start() const noexcept { return live_at_start_; }
  /// @brief Highest live bytes since the window opened.
  [[nodiscard]] std::int64_t peak() const noexcept { return stats_.peak_bytes(); }

 private:
  MemoryStats& stats_;
  std::int64_t outer_peak_;
  std::int64_t live_at_start_;
};

/// @brief The counters of device `Device` (one instance per program, shared by all translation units).
template <class Device>
MemoryStats& memory_stats() noexcept {
  static MemoryStats stats;
  return stats;
}

}  // namespace mpx
