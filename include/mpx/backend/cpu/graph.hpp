// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `cpu::Graph`: the CPU's form of a captured step. The CPU runs operations as they are
/// called, so there is nothing to record: capturing keeps the callable that queues the step, and a
/// launch calls it. Code that captures and replays steps is then written once for every device,
/// with the same rule on both: what the step reads (its input buffers) must outlive the graph.

#include <functional>
#include <utility>

#include "mpx/error.hpp"

namespace mpx::cpu {

/// @brief A step kept for replay; move-only, like `cuda::Graph`.
class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  /// @brief Takes `other`'s step; `other` is left empty.
  Graph(Graph&&) noexcept = default;
  /// @brief Drops this step and takes `other`'s.
  Graph& operator=(Graph&&) noexcept = default;

  /// @brief Replaces this graph with `queue` (a copy of it; nothing runs). `queue` must hold what it
  /// reads by pointer or by value, never by reference to a local of the caller.
  template <class Queue>
  void capture(Queue&& queue) {
    step_ = std::function<void()>(std::forward<Queue>(queue));
  }

  /// @brief Runs the captured step once.
  void launch() const {
    if (!step_) throw error("mpx::cpu::Graph::launch: nothing was captured");
    step_();
  }

  /// @brief Whether nothing has been captured.
  [[nodiscard]] bool empty() const noexcept { return !step_; }

  /// @brief Drops the captured step.
  void reset() noexcept { step_ = nullptr; }

 private:
  std::function<void()> step_;
};

}  // namespace mpx::cpu
