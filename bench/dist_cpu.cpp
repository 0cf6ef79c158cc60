// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Data-parallel training speed on the CPU (mpx::dist over MPI): steps/s of a 784-1024-1024-10 MLP at
// a fixed global batch, split over however many ranks mpirun starts, and the share of communication
// that overlapping the gradient buckets with backward hides. Run it twice at the same global batch to
// compare 2 ranks x 1 thread with 1 rank x 2 threads:
//
//   OMP_NUM_THREADS=1 mpirun -np 2 dist_cpu --json bench/results/dist_cpu_2x1.json
//   OMP_NUM_THREADS=2 mpirun -np 1 --bind-to none dist_cpu --json bench/results/dist_cpu_1x2.json
//
// (--bind-to none: Open MPI binds a rank to one core by default, and its two threads would share it.)
//
// Per precision (fp32, bf16_mixed) it times steps with overlap off, on, and on with a progress
// thread, alternating, and reports medians: the step time, the time `finish` waited for
// communication after backward (with overlap: what was not hidden; without: all of it), and hidden
// share = 1 - waited(overlap) / waited(no overlap). Before timing it checks that the weights are
// bit-identical on every rank.
//
// Usage: dist_cpu [--json PATH] [--steps N] [--global-batch B]
//                 [--reduction fixed_order|fixed_order_sharded|mpi_allreduce]
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "mpx/dist/model_signature.hpp"
#include "mpx/dist/mpi_gradient_sync.hpp"
#include "mpx/dist/run.hpp"
#include "mpx/experiment/models.hpp"
#include "mpx/experiment/usage.hpp"
#include "mpx/mpx.hpp"
#include "report.hpp"

namespace {

struct Result {
  std::string precision;
  double step_ms = 0, step_ms_no_overlap = 0, step_ms_thread = 0;
  double wait_ms = 0, wait_ms_no_overlap = 0, wait_ms_thread = 0, hidden_share = 0, hidden_share_thread = 0;
  double steps_per_second = 0, steps_per_second_thread = 0;
};

template <class Model>
std::uint64_t weights_hash(Model& model) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  model.for_each_parameter([&](std::string_view, auto& p) {
    mpx::dist::detail::fnv1a(hash, p.master().data(), p.master().size_bytes());
  });
  return hash;
}

template <class P>
Result measure(const mpx::dist::Communicator& comm, std::int64_t global_batch, int steps,
               mpx::dist::Reduction reduction) {
  const std::int64_t batch = global_batch / comm.size();
  auto model = mpx::experiment::mlp3<P>(784, 1024, 1024, 10);
  model.initialize(1);
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.01, .momentum = 0.9});
  mpx::dist::MpiGradientSync overlapped(comm, model, {.reduction = reduction, .overlap = true});
  mpx::dist::MpiGradientSync serial(comm, model, {.reduction = reduction, .overlap = false});
  mpx::dist::MpiGradientSync threaded(comm, model,
                                      {.reduction = reduction, .overlap = true, .progress_thread = true});
  mpx::Trainer with_overlap(model, loss, optimizer, overlapped);
  mpx::Trainer without_overlap(model, loss, optimizer, serial);
  mpx::Trainer with_thread(model, loss, optimizer, threaded);
  // Random inputs (never zero), different on each rank, fixed by the seed.
  std::mt19937 random(17u + static_cast<unsigned>(comm.rank()));
  std::uniform_real_distribution<float> uniform(0.05f, 1.0f);
  mpx::Tensor<float> x(mpx::Shape{batch, 784});
  mpx::Tensor<std::int32_t> y(mpx::Shape{batch});
  for (float& v : x.values()) v = uniform(random);
  for (std::int64_t i = 0; i < batch; ++i) y[i] = static_cast<std::int32_t>(random() % 10);

  for (int s = 0; s < 3; ++s) (void)with_overlap.step(x, y);
  const std::uint64_t hash = weights_hash(model);
  for (std::uint64_t theirs : comm.all_gather(hash)) {
    if (theirs != hash) throw mpx::error("dist_cpu: the weights differ between ranks after warm-up");
  }
  std::vector<double> step_on, step_off, step_thread, wait_on, wait_off, wait_thread;
  for (int s = 0; s < steps; ++s) {
    comm.barrier();
    auto start = mpx::bench::Clock::now();
    (void)with_overlap.step(x, y);
    step_on.push_back(mpx::bench::elapsed_ms(start));
    wait_on.push_back(1e3 * overlapped.last_wait_seconds());
    comm.barrier();
    start = mpx::bench::Clock::now();
    (void)without_overlap.step(x, y);
    step_off.push_back(mpx::bench::elapsed_ms(start));
    wait_off.push_back(1e3 * serial.last_wait_seconds());
    comm.barrier();
    start = mpx::bench::Clock::now();
    (void)with_thread.step(x, y);
    step_thread.push_back(mpx::bench::elapsed_ms(start));
    wait_thread.push_back(1e3 * threaded.last_wait_seconds());
  }
  Result r;
  r.precision = std::string(P::name);
  r.step_ms = mpx::bench::median(step_on);
  r.step_ms_no_overlap = mpx::bench::median(step_off);
  r.wait_ms = mpx::bench::median(wait_on);
  r.wait_ms_no_overlap = mpx::bench::median(wait_off);
  r.step_ms_thread = mpx::bench::median(step_thread);
  r.wait_ms_thread = mpx::bench::median(wait_thread);
  r.hidden_share = r.wait_ms_no_overlap > 0 ? 1.0 - r.wait_ms / r.wait_ms_no_overlap : 0.0;
  r.hidden_share_thread = r.wait_ms_no_overlap > 0 ? 1.0 - r.wait_ms_thread / r.wait_ms_no_overlap : 0.0;
  r.steps_per_second = 1e3 / r.step_ms;
  r.steps_per_second_thread = 1e3 / r.step_ms_thread;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  int steps = 20;
  std::int64_t global_batch = 256;
  mpx::dist::Reduction reduction = mpx::dist::Reduction::fixed_order;
  const mpx::experiment::Usage usage("dist_cpu",
                                     "[--json PATH] [--steps N] [--global-batch B] [--reduction "
                                     "fixed_order|fixed_order_sharded|mpi_allreduce]");
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    const std::string value = usage.value_after(argc, argv, i);
    if (option == "--json") {
      json_path = value;
    } else if (option == "--steps") {
      steps = static_cast<int>(usage.number(option, value, 1, 100000));
    } else if (option == "--global-batch") {
      global_batch = static_cast<std::int64_t>(usage.number(option, value, 1, 1 << 20));
    } else if (option == "--reduction") {
      usage.require_one_of(option, value, {"fixed_order", "fixed_order_sharded", "mpi_allreduce"});
      for (const auto candidate :
           {mpx::dist::Reduction::fixed_order, mpx::dist::Reduction::fixed_order_sharded,
            mpx::dist::Reduction::mpi_allreduce}) {
        if (mpx::dist::reduction_name(candidate) == value) reduction = candidate;
      }
    } else {
      usage.fail("unknown option " + option);
    }
  }
  return mpx::dist::run(argc, argv, [&](mpx::dist::Communicator& comm) {
    if (global_batch % comm.size() != 0) {
      throw mpx::invalid_argument(mpx::detail::concat("dist_cpu: global batch ", global_batch,
                                                      " does not split over ", comm.size(), " ranks"));
    }
    const std::vector<Result> results{measure<mpx::fp32>(comm, global_batch, steps, reduction),
                                      measure<mpx::bf16_mixed>(comm, global_batch, steps, reduction)};
    if (comm.rank() != 0) return 0;
    std::printf("%s\n%d rank(s) x %d thread(s), global batch %lld, %s, medians of %d steps\n",
                mpx::bench::machine_line().c_str(), comm.size(), mpx::bench::openmp_threads(),
                static_cast<long long>(global_batch),
                std::string(mpx::dist::reduction_name(reduction)).c_str(), steps);
    std::printf("%-12s %8s %8s %10s %13s %7s | with a progress thread: %8s %10s %7s\n", "precision",
                "steps/s", "step ms", "waited ms", "no-overlap ms", "hidden", "steps/s", "waited ms",
                "hidden");
    std::string json = "{\n  \"benchmark\": \"dist_cpu\",\n  \"machine\": " + mpx::bench::machine_json() +
                       ",\n  \"ranks\": " + std::to_string(comm.size()) +
                       ",\n  \"threads_per_rank\": " + std::to_string(mpx::bench::openmp_threads()) +
                       ",\n  \"global_batch\": " + std::to_string(global_batch) + ",\n  \"reduction\": \"" +
                       std::string(mpx::dist::reduction_name(reduction)) + "\"" +
                       ",\n  \"model\": \"mlp 784-1024-1024-10\",\n  \"results\": [";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      std::printf("%-12s %8.2f %8.2f %10.3f %13.3f %6.0f%% | %32.2f %10.3f %6.0f%%\n", r.precision.c_str(),
                  r.steps_per_second, r.step_ms, r.wait_ms, r.wait_ms_no_overlap, 100.0 * r.hidden_share,
                  r.steps_per_second_thread, r.wait_ms_thread, 100.0 * r.hidden_share_thread);
      json += mpx::detail::concat(
          i == 0 ? "\n" : ",\n", "    {\"precision\": \"", r.precision,
          "\", \"steps_per_second\": ", r.steps_per_second, ", \"step_ms\": ", r.step_ms,
          ", \"step_ms_no_overlap\": ", r.step_ms_no_overlap, ", \"waited_ms\": ", r.wait_ms,
          ", \"waited_ms_no_overlap\": ", r.wait_ms_no_overlap, ", \"hidden_share\": ", r.hidden_share,
          ", \"progress_thread\": {\"steps_per_second\": ", r.steps_per_second_thread,
          ", \"step_ms\": ", r.step_ms_thread, ", \"waited_ms\": ", r.wait_ms_thread,
          ", \"hidden_share\": ", r.hidden_share_thread, "}}");
    }
    json += "\n  ]\n}\n";
    if (!json_path.empty()) mpx::bench::write_json(json_path, json);
    return 0;
  });
}
