// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// NCCL without MPI: one rank joins NCCL from a unique id it makes itself (dist::NcclBootstrap), as
// on a GPU machine that has NCCL but no MPI, and trains mpx::experiment::mlp3 (classifier in fp32)
// for a few steps in bf16_mixed and fp32 through dist::NcclGradientSync (buckets launched during
// backward, and all after it). Checks that it runs, that the weights, compute copies, optimizer
// state and losses are bit-identical to the same steps without a sync (one rank: the sum of one is
// itself and dividing by 1 is exact), and that the loss fell. Prints the NCCL it was compiled with
// and the one it runs with (version and file). Before looking for a device it checks that a rank
// outside [0, size) is refused. Links NCCL and the CUDA backend, not MPI. Exits 77 (skipped) without
// a CUDA device, 1 on a failure.
#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <mpx/cuda.hpp>
#include <mpx/dist/nccl_gradient_sync.cuh>
#include <mpx/experiment/models.hpp>

#include "dist_support.hpp"

#if MPX_HAS_MPI
#error "nccl_smoke_test.cu proves that NCCL needs no MPI: link mpx::nccl without mpx::mpi"
#endif  // MPX_HAS_MPI

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "nccl_smoke: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

std::string version_text(int code) {  // NCCL_VERSION_CODE since 2.9: major * 10000 + minor * 100 + patch
  return std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." +
         std::to_string(code % 100);
}

// The file the dynamic loader mapped libnccl from, as /proc/self/maps names it.
std::string loaded_nccl() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const std::size_t at = line.find('/');
    if (at != std::string::npos && line.find("libnccl", at) != std::string::npos) return line.substr(at);
  }
  return "(not found in /proc/self/maps)";
}

// Every byte a step may change, copied to the host: master weights, compute copies, optimizer state.
template <class Model>
std::vector<unsigned char> device_state(Model& model) {
  std::vector<unsigned char> out;
  const auto add = [&](const auto& tensor) {
    const auto host = mpx::to<mpx::Host>(tensor);
    const auto* bytes = reinterpret_cast<const unsigned char*>(host.data());
    out.insert(out.end(), bytes, bytes + host.size_bytes());
  };
  model.for_each_parameter([&](std::string_view, auto& p) {
    add(p.master());
    add(p.compute());
    for (int slot = 0; slot < p.state_slots; ++slot)
      if (p.has_state(slot)) add(p.state(slot));
  });
  return out;
}

struct Run {
  std::vector<double> losses;
  std::vector<unsigned char> state;
};

enum class Sync { none, overlapped, after_backward };

template <class P>
Run train(Sync mode, int steps) {
  const mpx::data::Dataset data = mpx_dist_test::make_dataset(1024, 5u);
  auto model =
      mpx::experiment::mlp3<P, mpx::fp32, mpx::Cuda>(mpx_dist_test::features, 64, 64, mpx_dist_test::classes);
  model.initialize(7);
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32, mpx::Cuda> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2});
  mpx::data::Batcher batcher(data, {.batch_size = 32, .seed = 3, .last_batch = mpx::data::LastBatch::Drop});
  Run run;
  mpx::Tensor<float> x;
  mpx::Tensor<std::int32_t> y;
  const auto train_with = [&](auto& trainer) {
    for (int s = 0; s < steps && batcher.next(x, y); ++s)
      run.losses.push_back(trainer.step(mpx::to<mpx::Cuda>(x), mpx::to<mpx::Cuda>(y)).loss);
  };
  if (mode == Sync::none) {
    mpx::Trainer trainer(model, loss, optimizer);
    train_with(trainer);
  } else {
    const mpx::dist::SyncOptions options{.bucket_bytes = 8192, .overlap = mode == Sync::overlapped};
    // [bootstrap]
    // One rank: nothing to share. With several, rank 0 makes the id and sends its bytes to the
    // others by the program's own means (a store, a file, a socket); each rank passes its own rank.
    mpx::dist::NcclBootstrap bootstrap{.rank = 0, .size = 1};
    mpx::cuda::check_nccl(ncclGetUniqueId(&bootstrap.id), "ncclGetUniqueId", bootstrap.rank);
    mpx::dist::NcclGradientSync sync(bootstrap, model, options);
    mpx::Trainer trainer(model, loss, optimizer, sync);
    // [bootstrap]
    check(sync.buckets().size() > 1, "the model's gradients span several buckets");
    train_with(trainer);
  }
  run.state = device_state(model);
  return run;
}

template <class P>
void run_case(const char* name) {
  constexpr int steps = 8;
  const Run alone = train<P>(Sync::none, steps);
  check(alone.losses.size() == steps, std::string(name) + ": trained without a sync");
  for (const Sync mode : {Sync::overlapped, Sync::after_backward}) {
    const std::string what = std::string(name) + (mode == Sync::overlapped ? " (buckets during backward)"
                                                                           : " (buckets after backward)");
    const Run synced = train<P>(mode, steps);
    check(synced.losses.size() == steps, what + ": trained through NcclGradientSync");
    check(synced.losses == alone.losses, what + ": same losses as without a sync, bit for bit");
    check(synced.state == alone.state,
          what + ": same weights and optimizer state as without a sync, bit for bit");
    if (synced.losses.size() == steps) {
      check(synced.losses.back() < synced.losses.front(), what + ": the loss fell");
      std::printf("nccl_smoke: %s: loss %.6f -> %.6f over %d steps, %zu state bytes %s\n", what.c_str(),
                  synced.losses.front(), synced.losses.back(), steps, synced.state.size(),
                  synced.state == alone.state ? "identical to no sync" : "DIFFERENT from no sync");
    }
  }
}

}  // namespace

int main() {
  int runtime_version = 0;
  mpx::cuda::check_nccl(ncclGetVersion(&runtime_version), "ncclGetVersion", 0);
  std::printf("nccl_smoke: NCCL %s at run time (%s); compiled against %s\n",
              version_text(runtime_version).c_str(), loaded_nccl().c_str(),
              version_text(NCCL_VERSION_CODE).c_str());

  // A rank outside the world is refused before NCCL or CUDA is called (no device needed).
  try {
    const mpx::cuda::NcclCommunicator refused(ncclUniqueId{}, 1, 1);
    check(false, "rank 1 of 1 was accepted");
  } catch (const mpx::invalid_argument& e) {
    check(std::string_view(e.what()).find("rank 1 of 1 ranks") != std::string_view::npos,
          std::string("the message names the rank and size: ") + e.what());
  }

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("nccl_smoke: no CUDA device present; skipping (exit code 77)\n");
    return failures == 0 ? 77 : 1;
  }
  MPX_CUDA_CHECK(cudaSetDevice(0));
  cudaDeviceProp properties{};
  MPX_CUDA_CHECK(cudaGetDeviceProperties(&properties, 0));
  std::printf("nccl_smoke: device 0 of %d: %s\n", devices, properties.name);
  try {
    run_case<mpx::bf16_mixed>("bf16_mixed");
    run_case<mpx::fp32>("fp32");
  } catch (const mpx::error& e) {
    check(false, std::string("threw: ") + e.what());
  }
  std::printf("nccl_smoke: %s\n", failures == 0 ? "passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
