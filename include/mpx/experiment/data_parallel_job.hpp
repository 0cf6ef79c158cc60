// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `experiment::DataParallelJob`: the data-parallel job a training program's process belongs
/// to, alone or one rank of N under `mpirun`, with what such a program does with it:
/// `experiment::run_job` (start alone or as a rank), `experiment::with_device` (resolve `--device`
/// once and give each rank its GPU) and `experiment::make_gradient_sync` (MPI on the CPU, NCCL on
/// GPUs, none alone). examples/fashion_mnist.cpp and examples/char_gpt.cpp are written on it;
/// docs/distributed.md explains the data parallelism.
///
/// MPI is used only in a build that links `mpx::mpi` (`MPX_HAS_MPI`), NCCL only in translation units
/// nvcc compiles in a build that links `mpx::nccl` (`MPX_HAS_NCCL`). Without MPI every job is a job
/// of one. A program written on it trains alone when started by hand and data-parallel when
/// `mpirun -np N` starts it, with no flag to keep in step with the launch command:
/// @code
/// int main(int argc, char** argv) {
///   using mpx::experiment::DataParallelJob;
///   return mpx::experiment::run_job(argc, argv, "train", [&](const DataParallelJob& job) {
///     mpx::experiment::with_device("auto", job, [&](auto device) {
///       train<decltype(device)>(job);  // a template on the device
///     });
///   });
/// }
///
/// // in train<Device>(job): the gradients averaged over the ranks, or a null sync when alone
/// const auto sync = mpx::experiment::make_gradient_sync<Device>(job, model);
/// mpx::Trainer trainer =
///     sync ? mpx::Trainer(model, loss, optimizer, *sync) : mpx::Trainer(model, loss, optimizer);
/// if (job.leader()) std::printf("test accuracy %.2f%%\n", 100 * accuracy);
/// @endcode

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "mpx/config.hpp"
#include "mpx/dist/buckets.hpp"
#include "mpx/error.hpp"
#include "mpx/policy/fp8_precision.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/device.hpp"
#include "mpx/train/gradient_sync.hpp"
#if MPX_HAS_CUDA
#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/context.hpp"
#endif  // MPX_HAS_CUDA
#if MPX_HAS_MPI
#include <bit>
#include <vector>

#include "mpx/dist/communicator.hpp"
#include "mpx/dist/environment.hpp"
#include "mpx/dist/mpi_gradient_sync.hpp"
#include "mpx/dist/run.hpp"
#if MPX_CUDA_COMPILER && MPX_HAS_NCCL
#include "mpx/dist/nccl_gradient_sync.cuh"
#endif  // MPX_CUDA_COMPILER && MPX_HAS_NCCL
#endif  // MPX_HAS_MPI

namespace mpx::experiment {

/// @brief The data-parallel job this process belongs to: rank 0 of 1, alone, unless `mpirun`
/// launched it in a build with MPI (`run_job` makes one of each). Rank 0 prints and writes files;
/// every rank computes the same results.
struct DataParallelJob {
  /// @brief The program's name, which begins the messages of the errors the job throws.
  std::string program;
  /// @brief This process's rank, 0 to `size - 1`.
  int rank = 0;
  /// @brief The number of ranks.
  int size = 1;
#if MPX_HAS_MPI
  /// @brief The ranks' communicator; null when alone.
  const dist::Communicator* comm = nullptr;
#endif  // MPX_HAS_MPI

  /// @brief Whether this is rank 0, the one that prints and writes.
  [[nodiscard]] bool leader() const noexcept {
    return rank == 0;
  }

  /// @brief The sum of every rank's `value`, added in rank order on every rank: the same bits
  /// everywhere (collective: every rank must call it).
  [[nodiscard]] double sum(double value) const {
#if MPX_HAS_MPI
    if (comm != nullptr) {
      double total = 0;
      for (const std::uint64_t bits : comm->all_gather(std::bit_cast<std::uint64_t>(value)))
        total += std::bit_cast<double>(bits);
      return total;
    }
#endif  // MPX_HAS_MPI
    return value;
  }

  /// @brief Throws `mpx::error` ("<program>: <what> differs between ranks: ...", naming the ranks
  /// and values) unless every rank computed the same `value`, bit for bit, as ranks holding the same
  /// weights do (collective).
  void require_same(std::string_view what, double value) const {
#if MPX_HAS_MPI
    if (comm == nullptr) return;
    const std::vector<std::uint64_t> all = comm->all_gather(std::bit_cast<std::uint64_t>(value));
    for (int r = 1; r < size; ++r) {
      if (all[std::size_t(r)] != all[0]) {
        throw error(mpx::detail::concat(program, ": ", what, " differs between ranks: rank 0 has ",
                                        std::bit_cast<double>(all[0]), ", rank ", r, " has ",
                                        std::bit_cast<double>(all[std::size_t(r)])));
      }
    }
#else
    static_cast<void>(what);
    static_cast<void>(value);
#endif  // MPX_HAS_MPI
  }

  /// @brief Waits for every rank (after rank 0 wrote a file the others may read).
  void barrier() const {
#if MPX_HAS_MPI
    if (comm != nullptr) comm->barrier();
#endif  // MPX_HAS_MPI
  }
};

/// @brief The gradient averaging of `job` for `model` on `Device`: `dist::MpiGradientSync` on the
/// CPU, `dist::NcclGradientSync` on GPUs, null when alone, with `options` (`dist::SyncOptions`:
/// e.g. `{.sync_batch_norm = true}`). Hand it to the `mpx::Trainer` constructor that takes one.
///
/// NCCL's sync is CUDA code: in a build with MPI, `make_gradient_sync<mpx::Cuda>` compiles only in a
/// translation unit nvcc compiles (in a C++ one it would be a second definition that cannot make
/// one, and the linker may keep either), and in a build without NCCL a job of more than one rank on
/// GPUs throws `mpx::error` saying so.
/// @tparam Device where the model lives (`mpx::Host` or `mpx::Cuda`).
/// @tparam Model the model (its `precision` gives the gradients' type).
template <class Device, class Model>
[[nodiscard]] auto make_gradient_sync([[maybe_unused]] const DataParallelJob& job,
                                      [[maybe_unused]] Model& model,
                                      [[maybe_unused]] const dist::SyncOptions& options = {}) {
  using Grad = accumulate_t<typename Model::precision>;
  std::unique_ptr<GradientSync<Device, Grad>> sync;
#if MPX_HAS_MPI
  if (job.comm != nullptr) {
    if constexpr (std::is_same_v<Device, Host>) {
      sync = std::make_unique<dist::MpiGradientSync<Grad>>(*job.comm, model, options);
    } else {
#if MPX_CUDA_COMPILER && MPX_HAS_NCCL
      sync = std::make_unique<dist::NcclGradientSync<Grad>>(*job.comm, model, options);
#elif MPX_CUDA_COMPILER
      throw error(mpx::detail::concat(
          job.program, ": data parallel on GPUs needs NCCL, which CMake did not find; use --device cpu"));
#else
      static_assert(
          !std::is_same_v<Device, Device>,
          "mpx::experiment::make_gradient_sync<mpx::Cuda>: call it from a translation unit that nvcc "
          "compiles (a .cu file), where NCCL's sync is available");
#endif  // MPX_CUDA_COMPILER && MPX_HAS_NCCL
    }
  }
#endif  // MPX_HAS_MPI
  return sync;
}

// [device]
/// @brief Resolves a `--device cpu|cuda|auto` option once and calls `train_on(mpx::Cuda{})` or
/// `train_on(mpx::Host{})`: the one place a program names a device. `auto` takes the GPU when
/// `mpx::cuda_device_count() > 0`. The ranks of a job on GPUs take one each (rank r: GPU r mod the
/// count), selected before mpx's first CUDA call. Rank 0 prints the choice ("device: cpu", "device:
/// cuda (<name>)"). `cuda` throws `mpx::error` when the build has no CUDA or the machine no GPU.
template <class TrainOn>
void with_device(std::string_view device, const DataParallelJob& job, TrainOn&& train_on) {
#if MPX_HAS_CUDA
  if (device == "cuda") require_cuda_device((job.program + " --device cuda").c_str());
  if (device == "cuda" || (device == "auto" && cuda_device_count() > 0)) {
    MPX_CUDA_CHECK(cudaSetDevice(job.rank % cuda_device_count()));  // before mpx's first CUDA call
    if (job.leader()) std::printf("device: cuda (%s)\n", cuda_context().properties().name);
    std::forward<TrainOn>(train_on)(Cuda{});
    return;
  }
  const char* why_not_cuda = " (no CUDA device found)";
#else
  if (device == "cuda") {
    throw error(
        "--device cuda: this build has no CUDA (CMake found no CUDA toolkit when it was configured); "
        "configure again with nvcc on PATH, or use --device cpu or auto");
  }
  const char* why_not_cuda = " (this build has no CUDA)";
#endif  // MPX_HAS_CUDA
  if (job.leader()) std::printf("device: cpu%s\n", device == "auto" ? why_not_cuda : "");
  std::forward<TrainOn>(train_on)(Host{});
}
// [device]

/// @brief Why the FP8 precisions do not train on `Device` in this process, or "" when they do: on
/// the CPU they always do; on a GPU their GEMMs need compute capability 8.9 or newer (Ada, Hopper,
/// Blackwell: `mpx::fp8_gemm_capable`), which the current CUDA device is asked for at run time.
template <class Device>
[[nodiscard]] std::string fp8_unavailable_reason() {
  if constexpr (std::is_same_v<Device, Host>) {
    return {};
  } else {
#if MPX_HAS_CUDA
    CudaContext& context = cuda_context();
    const cudaDeviceProp& properties = context.properties();
    if (fp8_gemm_capable(properties.major, properties.minor)) return {};
    return mpx::detail::concat("FP8 GEMMs need a GPU of compute capability 8.9 or newer; ", properties.name,
                               " (device ", context.device(), ") has ", properties.major, ".",
                               properties.minor);
#else
    return "this build has no CUDA";
#endif  // MPX_HAS_CUDA
  }
}

/// @brief Whether precision `P` trains on `Device` in this process, decided at run time: every
/// precision on the CPU; on a GPU every precision, the FP8 ones where the device runs FP8 GEMMs
/// (`fp8_unavailable_reason`), so that an "all" run leaves them out there, with a note.
template <class P, class Device>
[[nodiscard]] bool trains_on() {
  if constexpr (Fp8PrecisionPolicy<P>) {
    return fp8_unavailable_reason<Device>().empty();
  } else {
    return true;
  }
}

/// @brief Throws `mpx::invalid_argument` when a program's `--precision` value asks for FP8 (a value
/// starting "fp8") on a GPU that cannot run FP8 GEMMs, saying why (`fp8_unavailable_reason`);
/// `trains_on` leaves those precisions out of an "all" run there.
template <class Device>
void require_precision_on_device(const std::string& precision) {
  if (!precision.starts_with("fp8")) return;
  const std::string why = fp8_unavailable_reason<Device>();
  if (!why.empty()) throw invalid_argument("--precision " + precision + ": " + why + "; use --device cpu");
}

// [run]
/// @brief Runs `body(job)` as this process's part of a job and returns `main`'s exit code: 0, or 1
/// after an error.
///
/// Launched by `mpirun` in a build with MPI (`dist::launched_by_mpirun`, as a PyTorch script asks
/// whether torchrun set `RANK`), the process is one rank of a data-parallel job: `dist::run` starts
/// MPI, rank 0 prints "data parallel: N ranks (mpirun)", and an exception on any rank ends the whole
/// job with a message naming the rank. Started by hand, it is a job of one and never initialises
/// MPI; an `mpx::error` is printed as "<program>: <what>" on stderr.
template <class Body>
int run_job([[maybe_unused]] int& argc, [[maybe_unused]] char**& argv, std::string_view program,
            Body&& body) {
#if MPX_HAS_MPI
  if (dist::launched_by_mpirun()) {
    return dist::run(argc, argv, [&](dist::Communicator& comm) {
      if (comm.rank() == 0) std::printf("data parallel: %d ranks (mpirun)\n", comm.size());
      const DataParallelJob job{
          .program = std::string(program), .rank = comm.rank(), .size = comm.size(), .comm = &comm};
      body(job);
    });
  }
#endif  // MPX_HAS_MPI
  try {
    const DataParallelJob job{.program = std::string(program)};
    body(job);
  } catch (const error& e) {
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(), e.what());
    return 1;
  }
  return 0;
}
// [run]

}  // namespace mpx::experiment
