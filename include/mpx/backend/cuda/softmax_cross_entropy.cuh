// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Softmax cross-entropy on the GPU, in fp32 whatever the logits' type (fp64 for double),
/// forward, backward and the batch mean in one kernel with one block per row (llm.c's fused
/// classifier; the block that finishes last adds the mean, see multi_tensor.cuh) over the rows
/// of logits of any rank >= 2 with an ignore index, the predicted class of each row (argmax) and the
/// accuracy count. The formulas are mpx::cpu::softmax_cross_entropy's.
///
/// Two forms of each: a device path for the training step (labels, loss sum and counters in device
/// memory, the gradient seed read on the device, no synchronisation, graph-capturable), and a
/// synchronous form with the CPU signature for evaluation (one synchronisation to read the result).

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/softmax_cross_entropy.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <unordered_map>

#include "mpx/backend/argmax_spec.hpp"
#include "mpx/backend/cross_entropy_spec.hpp"
#include "mpx/backend/cuda/device_array.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/cuda/multi_tensor.cuh"
#include "mpx/backend/cuda/reduce.cuh"
#include "mpx/error.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// *counted = the number of labels that are not ignore_index, in one block (integer sums do not
// depend on order). The gradient's scale needs it before any row's gradient is written.
template <class Label>
__global__ void count_targets_kernel(const Label* labels, std::int64_t rows, Label ignore_index,
                                     std::int32_t* counted) {
  int local = 0;
  for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) local += labels[i] != ignore_index ? 1 : 0;
  const int total = block_reduce(local, Plus{});
  if (threadIdx.x == 0) *counted = total;
}

// Rows up to which every block of the loss kernel counts the kept labels itself (a few loads per
// thread) instead of waiting for a one-block count kernel before it.
inline constexpr std::int64_t rows_counted_in_blocks = 4096;

// Where the loss kernel's last block adds the mean: *sum += double(mean of the row losses over the
// counted rows); `counter` (0 between launches) is null when no sum is asked for.
struct LossMean {
  unsigned int* counter;
  double* sum;
};

// The number of labels that are not ignore_index, summed by the calling block (every thread gets it;
// integer sums do not depend on order).
template <class Label>
__device__ std::int32_t count_kept(const Label* labels, std::int64_t rows, Label ignore_index) {
  int local = 0;
  for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) local += labels[i] != ignore_index ? 1 : 0;
  return block_reduce(local, Plus{});
}

// One block per row: max, sum of exponentials, log-sum-exp, the smoothed loss into row_losses[row]
// and, when dlogits is set, the gradient seed / counted * (softmax - target) rounded into T.
// A row labelled ignore_index has loss 0 and a zero gradient. Another label outside [0, classes)
// cannot throw here: its row's loss and gradient are NaN instead. The count of kept rows is
// *counted, or counted here by every block when `counted` is null; with a LossMean, the block that
// finishes last adds the mean of the row losses, summed in a fixed order, to *mean.sum (0 when no
// row is kept, as on the CPU): one kernel where the count, the rows and the mean took three.
template <class T, class Seed>
__global__ void softmax_cross_entropy_kernel(const T* logits, const std::int32_t* labels, std::int64_t rows,
                                             std::int64_t classes, accumulate_t<T> on_target,
                                             accumulate_t<T> off_target, Seed seed,
                                             const std::int32_t* counted, std::int32_t ignore_index,
                                             T* dlogits, accumulate_t<T>* row_losses, LossMean mean) {
  using Acc = accumulate_t<T>;
  const std::int32_t kept = counted != nullptr ? *counted : count_kept(labels, rows, ignore_index);
  const std::int64_t row = blockIdx.x;
  const T* z = logits + row * classes;
  T* dz = dlogits != nullptr ? dlogits + row * classes : nullptr;
  const std::int32_t label = labels[row];
  if (label == ignore_index) {  // the same for the whole block
    if (dz != nullptr) {
      for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) dz[c] = round_to<tag_of_t<T>>(Acc(0));
    }
    if (threadIdx.x == 0) row_losses[row] = 0;
  } else if (label < 0 || label >= classes) {  // the same for the whole block
    const Acc nan = std::numeric_limits<Acc>::quiet_NaN();
    if (dz != nullptr) {
      for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) dz[c] = round_to<tag_of_t<T>>(nan);
    }
    if (threadIdx.x == 0) row_losses[row] = nan;
  } else {
    // fmax as the CPU: a NaN logit does not become the maximum, but its exponential below is NaN.
    // The smoothing term, loss = log_sum_exp - on_target z[label] - sum over c != label of
    // off_target z[c], needs no maximum, so it is summed in the same pass.
    Acc local_max = -std::numeric_limits<Acc>::infinity();
    Acc local_off = 0;
    for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      const Acc value = static_cast<Acc>(z[c]);
      local_max = fmax(local_max, value);
      if (c != label) local_off += off_target * value;
    }
    const Acc max_logit = block_reduce(local_max, Fmax{});
    const Acc off_sum = block_reduce(local_off, Plus{});
    Acc local_sum = 0;
    for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      local_sum += std::exp(static_cast<Acc>(z[c]) - max_logit);
    }
    const Acc log_sum_exp = max_logit + std::log(block_reduce(local_sum, Plus{}));
    if (threadIdx.x == 0) row_losses[row] = (log_sum_exp - on_target * static_cast<Acc>(z[label])) - off_sum;

    if (dz != nullptr) {
      // This row is kept, so kept >= 1.
      const Acc grad_scale = static_cast<Acc>(seed.value()) / static_cast<Acc>(kept);
      for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
        const Acc p = std::exp(static_cast<Acc>(z[c]) - log_sum_exp);
        const Acc target = c == label ? on_target : off_target;
        dz[c] = round_to<tag_of_t<T>>((p - target) * grad_scale);
      }
    }
  }
  if (mean.counter == nullptr || !last_block_done(mean.counter)) return;  // uniform over the grid
  Acc local = 0;
  for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) local += __ldcg(row_losses + i);
  const Acc total = block_reduce(local, Plus{});
  if (threadIdx.x == 0) *mean.sum += static_cast<double>(kept == 0 ? Acc(0) : total / static_cast<Acc>(kept));
}

// mpx::cpu::detail::row_argmax on the device: the first largest value in the accumulate type, or the
// first NaN (torch.argmax's rule). NaN is the only value unequal to itself.
template <class T>
__device__ std::int32_t row_argmax(const T* z, std::int64_t classes) {
  using Acc = accumulate_t<T>;
  std::int64_t best = 0;
  Acc best_value = static_cast<Acc>(z[0]);
  if (best_value != best_value) return 0;
  for (std::int64_t c = 1; c < classes; ++c) {
    const Acc value = static_cast<Acc>(z[c]);
    if (value != value) return static_cast<std::int32_t>(c);
    if (value > best_value) {
      best = c;
      best_value = value;
    }
  }
  return static_cast<std::int32_t>(best);
}

// One thread per row (grid-stride): indices[row] = the row's predicted class.
template <class T>
__global__ void argmax_kernel(const T* logits, std::int64_t batch, std::int64_t classes,
                              std::int32_t* indices) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; row < batch;
       row += stride) {
    indices[row] = row_argmax(logits + row * classes, classes);
  }
}

// One thread per row (grid-stride): the predicted class as argmax_kernel picks it, compared with the
// label; the block's count is added to *correct with one integer atomic (integer sums do not depend
// on order).
template <class T>
__global__ void count_correct_kernel(const T* logits, const std::int32_t* labels, std::int64_t batch,
                                     std::int64_t classes, std::int64_t* correct) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  long long hit = 0;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; row < batch;
       row += stride) {
    if (row_argmax(logits + row * classes, classes) == labels[row]) ++hit;
  }
  const long long hits = block_reduce(hit, Plus{});
  if (threadIdx.x == 0 && hits != 0) {
    atomicAdd(reinterpret_cast<unsigned long long*>(correct), static_cast<unsigned long long>(hits));
  }
}

/// The CPU's argument checks, in its order, naming `where`; `label_count` < 0 when unknown (the
/// device path's labels are a bare device pointer).
template <Element T>
void check_softmax_cross_entropy(const char* where, const Tensor<T, Cuda>& logits, std::int64_t label_count,
                                 float smoothing, const Tensor<T, Cuda>* dlogits) {
  validate_softmax_cross_entropy(where, logits, label_count, smoothing, dlogits);
  if (logits.shape().rows() > std::numeric_limits<std::int32_t>::max()) {
    throw shape_error(mpx::detail::concat(where, ": ", logits.shape().rows(),
                                          " rows; one launch covers at most 2^31 - 1 (one block per row)"));
  }
}

// A counter of the loss kernel's "last block done" (0 between launches), kept per owner (the
// caller's row_losses) like `scratch`, so that a captured graph keeps its own; zeroed when made.
inline unsigned int* loss_block_counter(const void* owner) {
  thread_local std::unordered_map<const void*, DeviceArray<unsigned int>> counters;
  DeviceArray<unsigned int>& counter = counters[owner];
  if (counter.empty()) {
    static constexpr unsigned int zero[1] = {};
    counter = DeviceArray<unsigned int>(std::span<const unsigned int>(zero));
  }
  return counter.data();
}

// The device path with room for the count of non-ignored rows at `counted` (device memory; used
// only for more than rows_counted_in_blocks rows); see the public overloads below.
template <Element T, class Seed>
void queue_softmax_cross_entropy(const Tensor<T, Cuda>& logits, const std::int32_t* labels, float smoothing,
                                 Seed seed, Tensor<T, Cuda>* dlogits,
                                 Tensor<accumulate_t<T>, Cuda>& row_losses, std::int32_t* counted,
                                 double* loss_sum, std::int32_t ignore_index) {
  using Acc = accumulate_t<T>;
  const std::int64_t rows = logits.shape().rows();
  const std::int64_t classes = logits.shape().cols();
  if (!(row_losses.shape() == Shape{rows})) row_losses = Tensor<Acc, Cuda>::uninitialized(Shape{rows});
  if (rows == 0) return;  // no row: nothing to write, and a mean over no row adds 0
  const bool count_in_blocks = rows <= rows_counted_in_blocks;
  if (!count_in_blocks) {
    count_targets_kernel<<<1, final_reduce_threads, 0, stream()>>>(labels, rows, ignore_index, counted);
    MPX_CUDA_CHECK_LAUNCH("count_targets_kernel");
  }
  const LossMean mean{loss_sum != nullptr ? loss_block_counter(&row_losses) : nullptr, loss_sum};
  const Acc off_target = static_cast<Acc>(smoothing) / static_cast<Acc>(classes);
  const Acc on_target = static_cast<Acc>(1) - static_cast<Acc>(smoothing) + off_target;
  softmax_cross_entropy_kernel<<<static_cast<unsigned>(rows), row_threads(classes), 0, stream()>>>(
      logits.data(), labels, rows, classes, on_target, off_target, seed, count_in_blocks ? nullptr : counted,
      ignore_index, dlogits != nullptr ? dlogits->data() : nullptr, row_losses.data(), mean);
  MPX_CUDA_CHECK_LAUNCH("softmax_cross_entropy_kernel");
}

/// @brief Class labels as a device pointer: the caller's memory when it already is device memory,
/// else a device copy of the host labels (queued on the context's stream; the host labels must stay
/// alive until that copy has run, which a synchronising caller guarantees).
class DeviceLabels {
 public:
  /// Wraps or copies `labels`.
  explicit DeviceLabels(std::span<const std::int32_t> labels) {
    if (labels.empty()) return;
    if (is_device_pointer(labels.data())) {
      data_ = labels.data();
    } else {
      on_host_ = true;
      copy_ = DeviceArray<std::int32_t>(labels);
      data_ = copy_.data();
    }
  }
  /// The labels in device memory (null when there are none).
  [[nodiscard]] const std::int32_t* data() const noexcept { return data_; }
  /// Whether the caller's labels were host memory (and so could be checked on the host).
  [[nodiscard]] bool on_host() const noexcept { return on_host_; }

 private:
  DeviceArray<std::int32_t> copy_;
  const std::int32_t* data_ = nullptr;
  bool on_host_ = false;
};

}  // namespace detail

/// @brief The training step's softmax cross-entropy: PyTorch's label smoothing (target =
/// (1 - s) one_hot + s / classes) and ignore index, the mean over the counted rows *added* to
/// `*loss_sum`, and optionally the gradient, all queued on the context's stream with no
/// synchronisation.
///
/// @param logits       rank >= 2 in any element type, as its matrix view [rows, classes]; read as fp32
///                     (fp64 for double).
/// @param labels       device memory, one class index per row.
/// @param smoothing    label smoothing in [0, 1).
/// @param seed         dL/dloss: `seed.value()` is called on the device (the training step passes a
///                     `LossSeed`, train/loss_seed.hpp); the gradient is
///                     seed * (softmax - target) / counted.
/// @param dlogits      if not null, receives the gradient (same shape and type as logits).
/// @param row_losses   scratch in the accumulate type, given the shape [rows] here if it has another (so a
///                     loss can keep an empty tensor for it): each row's loss (left there after the
///                     call; 0 for ignored rows). It also names the device scratch (`detail::scratch`)
///                     for the count of rows whose label is not `ignore_index` and the counter of the
///                     kernel's last block: up to 4096 rows every block counts the labels itself, so
///                     the whole loss is one kernel (its last block adds the mean); beyond, a one-block
///                     kernel counts them first.
/// @param loss_sum     device memory (or null: no loss); the mean over the counted rows is added to it,
///                     reduced in a fixed order in the accumulate type and then converted to double; with no
///                     counted row it adds 0 (see mpx::cpu::softmax_cross_entropy for why).
/// @param ignore_index rows with this label add no loss and get a zero gradient.
///
/// A label outside [0, classes) other than `ignore_index` cannot be reported from the device: that
/// row's loss and gradient become NaN, so the mean is NaN and the training step skips the update as
/// non-finite. Non-finite logits likewise give a non-finite loss and gradient. Throws
/// `mpx::shape_error` / `mpx::invalid_argument` on the host, as the CPU version, for shapes and
/// smoothing.
template <Element T, class Seed>
void softmax_cross_entropy(const Tensor<T, Cuda>& logits, const std::int32_t* labels, float smoothing,
                           Seed seed, std::type_identity_t<Tensor<T, Cuda>>* dlogits,
                           Tensor<accumulate_t<T>, Cuda>& row_losses, double* loss_sum,
                           std::int32_t ignore_index = default_ignore_index) {
  constexpr const char* where = "mpx::cuda::softmax_cross_entropy";
  detail::check_softmax_cross_entropy(where, logits, -1, smoothing, dlogits);
  std::int32_t* counted = detail::scratch<std::int32_t>(&row_losses, 1);
  detail::queue_softmax_cross_entropy(logits, labels, smoothing, seed, dlogits, row_losses, counted, loss_sum,
                                      ignore_index);
}

/// @brief The training step's softmax cross-entropy with the labels as a span, which must view device
/// memory (the loss passes its `Tensor<std::int32_t, Cuda>` labels' data): the step never waits, so
/// it cannot copy host labels, and a CUDA graph replays from fixed addresses.
/// Otherwise as the pointer overload. Throws `mpx::shape_error` for a label count that is not the
/// number of rows and `mpx::invalid_argument` for host labels.
template <Element T, class Seed>
void softmax_cross_entropy(const Tensor<T, Cuda>& logits, std::span<const std::int32_t> labels,
                           float smoothing, Seed seed, std::type_identity_t<Tensor<T, Cuda>>* dlogits,
                           Tensor<accumulate_t<T>, Cuda>& row_losses, double* loss_sum,
                           std::int32_t ignore_index = default_ignore_index) {
  constexpr const char* where = "mpx::cuda::softmax_cross_entropy (training step)";
  detail::check_softmax_cross_entropy(where, logits, static_cast<std::int64_t>(labels.size()), smoothing,
                                      dlogits);
  if (!labels.empty() && !is_device_pointer(labels.data())) {
    throw invalid_argument(mpx::detail::concat(
        where, ": the ", labels.size(),
        " labels are in host memory, but a CUDA training step reads them from device memory; move them "
        "once with mpx::to<mpx::Cuda>(labels) (a Tensor<std::int32_t, mpx::Cuda>)"));
  }
  softmax_cross_entropy(logits, labels.data(), smoothing, seed, dlogits, row_losses, loss_sum, ignore_index);
}

/// @brief The training step's softmax cross-entropy with the labels as a device tensor (what
/// `nn::SoftmaxCrossEntropy` passes): their type says where they live, so no pointer query runs per
/// step. Otherwise as the pointer overload; throws `mpx::shape_error` for a label count that is not
/// the batch.
template <Element T, class Seed>
void softmax_cross_entropy(const Tensor<T, Cuda>& logits, const Tensor<std::int32_t, Cuda>& labels,
                           float smoothing, Seed seed, std::type_identity_t<Tensor<T, Cuda>>* dlogits,
                           Tensor<accumulate_t<T>, Cuda>& row_losses, double* loss_sum,
                           std::int32_t ignore_index = default_ignore_index) {
  constexpr const char* where = "mpx::cuda::softmax_cross_entropy (training step)";
  detail::check_softmax_cross_entropy(where, logits, labels.numel(), smoothing, dlogits);
  softmax_cross_entropy(logits, labels.data(), smoothing, seed, dlogits, row_losses, loss_sum, ignore_index);
}

/// @brief Adds to `*correct` (device memory) the number of rows whose predicted class (as `argmax`
/// picks it: the first largest logit, or the first NaN) is the label; `labels` is device memory. No
/// synchronisation.
template <Element T>
void count_correct(const Tensor<T, Cuda>& logits, const std::int32_t* labels, std::int64_t* correct) {
  validate_class_logits("mpx::cuda::count_correct", logits);
  const std::int64_t batch = logits.shape()[0];
  if (batch == 0) return;
  detail::count_correct_kernel<<<detail::elementwise_blocks(batch), detail::elementwise_threads, 0,
                                 detail::stream()>>>(logits.data(), labels, batch, logits.shape()[1],
                                                     correct);
  MPX_CUDA_CHECK_LAUNCH("count_correct_kernel");
}

/// @brief mpx::cpu::argmax on the GPU: `indices[row]` (device memory, [batch]) = the row's predicted
/// class, the first largest logit compared in the accumulate type or the first NaN, as `torch.argmax`.
/// Queued on the context's stream; no synchronisation.
template <FloatingElement T>
void argmax(const Tensor<T, Cuda>& logits, Tensor<std::int32_t, Cuda>& indices) {
  constexpr const char* where = "mpx::cuda::argmax";
  validate_class_logits(where, logits);
  const std::int64_t batch = logits.shape()[0];
  require_shape(where, "indices", indices.shape(), Shape{batch});
  if (batch == 0) return;
  detail::
      argmax_kernel<<<detail::elementwise_blocks(batch), detail::elementwise_threads, 0, detail::stream()>>>(
          logits.data(), batch, logits.shape()[1], indices.data());
  MPX_CUDA_CHECK_LAUNCH("argmax_kernel");
}

/// @brief mpx::cpu::softmax_cross_entropy's signature on the GPU, for evaluation: returns the mean
/// loss (one synchronisation) and writes the gradient into `dlogits` when it is not null.
///
/// `labels` may be host or device memory. Host labels are checked on the host and a label outside
/// [0, classes) other than `ignore_index` throws `mpx::invalid_argument` with the CPU's message;
/// device labels cannot be checked without a copy, and an invalid one makes the result NaN (see the
/// device path).
template <Element T>
accumulate_t<T> softmax_cross_entropy(const Tensor<T, Cuda>& logits, std::span<const std::int32_t> labels,
                                      float smoothing, float grad_seed,
                                      std::type_identity_t<Tensor<T, Cuda>>* dlogits,
                                      std::int32_t ignore_index = default_ignore_index) {
  using Acc = accumulate_t<T>;
  constexpr const char* where = "mpx::cuda::softmax_cross_entropy";
  detail::check_softmax_cross_entropy(where, logits, static_cast<std::int64_t>(labels.size()), smoothing,
                                      dlogits);
  const std::int64_t rows = logits.shape().rows();
  const std::int64_t classes = logits.shape().cols();
  const detail::DeviceLabels device_labels(labels);
  if (device_labels.on_host()) {
    for (std::size_t row = 0; row < labels.size(); ++row) {
      if (labels[row] != ignore_index && (labels[row] < 0 || labels[row] >= classes)) {
        throw invalid_argument(mpx::detail::concat(where, ": label ", labels[row], " at row ", row,
                                                   " is outside [0, ", classes,
                                                   ") and is not the ignore index ", ignore_index));
      }
    }
  }
  auto row_losses = Tensor<Acc, Cuda>::uninitialized(Shape{rows});
  DeviceArray<std::int32_t> counted(1);
  DeviceArray<double> loss_sum(1);
  MPX_CUDA_CHECK(cudaMemsetAsync(loss_sum.data(), 0, sizeof(double), detail::stream()));
  detail::queue_softmax_cross_entropy(logits, device_labels.data(), smoothing,
                                      detail::ConstantSeed{grad_seed}, dlogits, row_losses, counted.data(),
                                      loss_sum.data(), ignore_index);
  return static_cast<Acc>(loss_sum.download()[0]);
}

/// @brief mpx::cpu::count_correct's signature on the GPU: the number of rows whose predicted class
/// (see `argmax`) is the label. `labels` may be host or device memory; one synchronisation.
template <Element T>
std::int64_t count_correct(const Tensor<T, Cuda>& logits, std::span<const std::int32_t> labels) {
  if (logits.rank() != 2 || static_cast<std::int64_t>(labels.size()) != logits.shape()[0]) {
    throw shape_error(mpx::detail::concat("mpx::cuda::count_correct: ", labels.size(),
                                          " labels for logits of shape ", logits.shape(),
                                          "; expected [batch, classes] with one label per row"));
  }
  const detail::DeviceLabels device_labels(labels);
  DeviceArray<std::int64_t> correct(1);
  MPX_CUDA_CHECK(cudaMemsetAsync(correct.data(), 0, sizeof(std::int64_t), detail::stream()));
  count_correct(logits, device_labels.data(), correct.data());
  return correct.download()[0];
}

}  // namespace mpx::cuda
