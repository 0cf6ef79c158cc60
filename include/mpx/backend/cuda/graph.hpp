// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `cuda::Graph`: work captured from a stream once and replayed with one launch, which is
/// how a small, launch-bound training step stops paying the host's per-kernel cost.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error "mpx/backend/cuda/graph.hpp needs the CUDA backend: link mpx::cuda (which defines MPX_HAS_CUDA=1)"
#endif  // !MPX_HAS_CUDA

#include <utility>

#include <cuda_runtime_api.h>

#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/context.hpp"

namespace mpx::cuda {

/// @brief Captures the work queued on a stream for as long as it lives (RAII, as tiny-cuda-nn's
/// capture guard): the constructor begins the capture; `finish()` ends it and returns the graph;
/// a guard destroyed before `finish()` (the queuing code threw) ends the capture and discards it,
/// so the stream is never left capturing.
class StreamCapture {
 public:
  /// @brief Begins capturing `stream` (`cudaStreamCaptureModeThreadLocal`: other host threads may
  /// keep using CUDA meanwhile).
  explicit StreamCapture(cudaStream_t stream) : stream_(stream) {
    MPX_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  }
  StreamCapture(const StreamCapture&) = delete;
  StreamCapture& operator=(const StreamCapture&) = delete;
  ~StreamCapture() {
    if (!capturing_) return;
    cudaGraph_t partial = nullptr;
    (void)cudaStreamEndCapture(stream_, &partial);
    if (partial != nullptr) (void)cudaGraphDestroy(partial);
  }

  /// @brief Ends the capture; the caller owns the returned graph.
  [[nodiscard]] cudaGraph_t finish() {
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    MPX_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    return graph;
  }

 private:
  cudaStream_t stream_;
  bool capturing_ = true;
};

/// @brief An instantiated CUDA graph captured from a stream; move-only.
///
/// What is captured must not depend on host values that change between replays (kernel arguments
/// are frozen): mpx's training step reads everything that changes (loss scale, learning rate, update
/// count) from device memory for this reason.
class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  /// @brief Takes `other`'s graph; `other` is left empty.
  Graph(Graph&& other) noexcept
      : graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}
  /// @brief Destroys this graph and takes `other`'s.
  Graph& operator=(Graph&& other) noexcept {
    if (this != &other) {
      reset();
      graph_ = std::exchange(other.graph_, nullptr);
      exec_ = std::exchange(other.exec_, nullptr);
    }
    return *this;
  }
  ~Graph() { reset(); }

  /// @brief Replaces this graph with the work `queue()` puts on `stream` (nothing runs). If `queue`
  /// throws, the capture is ended and discarded and the exception propagates; the graph is empty.
  template <class Queue>
  void capture(cudaStream_t stream, Queue&& queue) {
    reset();
    StreamCapture capture(stream);
    std::forward<Queue>(queue)();
    graph_ = capture.finish();
    MPX_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  /// @brief `capture` on the stream of `cuda_context()`, where every mpx operation is queued.
  template <class Queue>
  void capture(Queue&& queue) {
    capture(cuda_context().stream(), std::forward<Queue>(queue));
  }

  /// @brief Queues one replay of the captured work on `stream`.
  void launch(cudaStream_t stream) const { MPX_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }
  /// @brief Queues one replay on the stream of `cuda_context()`.
  void launch() const { launch(cuda_context().stream()); }

  /// @brief Whether nothing has been captured.
  [[nodiscard]] bool empty() const noexcept { return exec_ == nullptr; }

  /// @brief The captured graph (null when empty), for inspection: its nodes (`cudaGraphGetNodes`)
  /// are the kernels, copies and memsets a replay runs. Owned by this object.
  [[nodiscard]] cudaGraph_t graph() const noexcept { return graph_; }

  /// @brief Destroys the captured graph (it becomes empty).
  void reset() noexcept {
    if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
    if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
    exec_ = nullptr;
    graph_ = nullptr;
  }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace mpx::cuda
