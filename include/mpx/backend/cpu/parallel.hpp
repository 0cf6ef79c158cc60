// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief How the CPU kernels use the cores: fixed chunks of a range run on all OpenMP threads (when
/// OpenMP is on and there is more than one chunk), and reductions combined in chunk order, so that
/// results do not depend on the number of threads.

#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <mutex>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

/// `#pragma omp simd` where OpenMP is on, before loops of plain arithmetic: GCC's -O2 cost model
/// leaves them scalar otherwise.
#ifdef _OPENMP
#define MPX_DETAIL_OMP_SIMD _Pragma("omp simd")
#else
#define MPX_DETAIL_OMP_SIMD
#endif

namespace mpx::cpu {

/// @brief Elements per chunk: enough that handing a chunk to a thread costs little beside the work.
inline constexpr std::int64_t parallel_grain = std::int64_t{1} << 15;

/// @brief Rows of `length` elements per parallel chunk: about `parallel_grain` elements.
inline std::int64_t rows_per_chunk(std::int64_t length) {
  return std::max<std::int64_t>(1, parallel_grain / std::max<std::int64_t>(1, length));
}

/// @brief Runs body(begin, end) over [0, count) in chunks of `grain`, in parallel when there are
/// several. Bodies must touch disjoint elements.
template <class Body>
void parallel_for_chunks(std::int64_t count, std::int64_t grain, const Body& body) {
  const std::int64_t chunks = (count + grain - 1) / grain;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (chunks > 1)
#endif
  for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
    body(chunk * grain, std::min(count, (chunk + 1) * grain));
  }
}

/// @brief Sums partial(begin, end) over the chunks of [0, count), in chunk order whatever the
/// number of threads: the same inputs give the same bits on 1 core or 64.
template <class Value, class Partial>
Value parallel_sum_chunks(std::int64_t count, std::int64_t grain, const Partial& partial) {
  const std::int64_t chunks = (count + grain - 1) / grain;
  std::vector<Value> sums(static_cast<std::size_t>(chunks));
  parallel_for_chunks(count, grain, [&](std::int64_t begin, std::int64_t end) {
    sums[static_cast<std::size_t>(begin / grain)] = partial(begin, end);
  });
  Value total{};
  for (const Value& s : sums) total = total + s;
  return total;
}

namespace detail {

/// @brief The sum of term(i) for i in [0, count) in a fixed order that vectorises: term i goes to
/// lane i % 8, the lanes are added pairwise in a fixed tree. The same bits on any machine with the
/// same compiler flags, whatever the thread count.
template <class Term>
auto lane_sum(std::int64_t count, const Term& term) {
  using Value = decltype(term(std::int64_t{0}));
  constexpr int lanes = 8;
  Value partial[lanes] = {};
  std::int64_t i = 0;
  for (; i + lanes <= count; i += lanes) {
    MPX_DETAIL_OMP_SIMD
    for (int lane = 0; lane < lanes; ++lane) partial[lane] += term(i + lane);
  }
  for (int lane = 0; i < count; ++i, ++lane) partial[lane] += term(i);
  return ((partial[0] + partial[1]) + (partial[2] + partial[3])) +
         ((partial[4] + partial[5]) + (partial[6] + partial[7]));
}

/// @brief The largest of values[0 .. count), NaNs passed over (as `std::fmax` does; all NaN, or
/// count 0: -inf): one vector loop. The maximum does not depend on the order of comparisons.
template <class Value>
Value row_max(const Value* values, std::int64_t count) {
  Value largest = -std::numeric_limits<Value>::infinity();
#ifdef _OPENMP
#pragma omp simd reduction(max : largest)
#endif
  for (std::int64_t i = 0; i < count; ++i) largest = values[i] > largest ? values[i] : largest;
  return largest;
}

}  // namespace detail

/// @brief Runs `kernel()` with OpenMP's thread count set to 1, restored after: a library threaded
/// with OpenMP (oneDNN) otherwise threads a call made outside a parallel region itself (and its order
/// of sums would follow the thread count), and plans a primitive made inside one for every thread
/// there is. The count is an OpenMP setting of the calling task alone, so this is safe inside a
/// parallel region too.
template <class Kernel>
void on_one_thread(const Kernel& kernel) {
#ifdef _OPENMP
  const int threads = omp_get_max_threads();
  if (threads > 1) {
    omp_set_num_threads(1);
    try {
      kernel();
    } catch (...) {
      omp_set_num_threads(threads);
      throw;
    }
    omp_set_num_threads(threads);
    return;
  }
#endif
  kernel();
}

/// @brief Runs task(i) for every i in [0, count), each on one thread (`on_one_thread`), the tasks in
/// parallel. An exception must not leave an OpenMP region (that terminates the program): the first
/// one a task throws is kept, the other tasks still run, and it is thrown again after the region.
template <class Task>
void run_tasks(std::int64_t count, const Task& task) {
  std::exception_ptr failure;
  std::once_flag failed;
  parallel_for_chunks(count, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t index = begin; index < end; ++index) try {
        on_one_thread([&] { task(index); });
      } catch (...) {
        std::call_once(failed, [&] { failure = std::current_exception(); });
      }
  });
  if (failure) std::rethrow_exception(failure);
}

}  // namespace mpx::cpu
