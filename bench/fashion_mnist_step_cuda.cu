// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// How many training steps per second does a small, launch-bound model reach, queued eagerly and
// replayed as one CUDA graph? The model is the Fashion-MNIST MLP of the examples
// (mpx::experiment::mlp3<P, P, Cuda>(784, 512, 256, 10), ReLU fused into the first two layers),
// softmax cross-entropy, AdamW (lr 1e-3, weight decay 1e-4) over fp32 master weights, batch 128, in
// fp32, tf32, fp16_mixed (dynamic loss scaling) and bf16_mixed. The batches are random (never
// zero) fp32 images and labels, a pool of --pool batches cycled through so that every step reads new
// data; each step rounds its batch to the compute type on the stream.
//
// Method: eager steps are queued with Trainer::queue_step (no host synchronisation) straight from
// the pool; graph steps copy the next batch and labels into the captured buffers
// (cudaMemcpyAsync / round_into on the stream) and replay the graph of the whole step
// (Trainer::capture_step / replay_step). Each is timed in groups of --steps-per-sample consecutive
// steps with CUDA events; the median group over --repetitions, divided by its size, is the step
// time. Peak memory is the allocator's peak over the case. Results as a table and JSON (--json PATH,
// default fashion_mnist_step_cuda.json) with the device, driver, CUDA and cuBLASLt versions.
//
// Bar (the issue's): the graph's steps/s >= 5x PyTorch eager's, per precision; bench/peers/compare.py
// takes it from this JSON and bench/peers/torch_fashion_mnist_step.py's, run in the same session.
//
// Before timing, each precision's first three losses on one batch are compared with the CPU
// backend's on the same initial weights (the later two follow AdamW updates); a mismatch exits 1.
//
// Usage: fashion_mnist_step_cuda [--json PATH] [--repetitions N] [--steps-per-sample N] [--pool N]
//                                [--quick]
// (--quick: 7 repetitions of 50 steps, for a session that must fit a time limit).
// Exits 77 with a message when no CUDA device is present.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <mpx/cuda.hpp>
#include <mpx/experiment/models.hpp>
#include <mpx/io/json.hpp>

#include "cuda_report.hpp"

namespace {

constexpr std::int64_t k_inputs = 784, k_hidden1 = 512, k_hidden2 = 256, k_classes = 10, k_batch = 128;
constexpr double k_lr = 1e-3;
constexpr double k_weight_decay = 1e-4;
constexpr std::uint64_t k_seed = 42;
constexpr int k_check_steps = 3;

struct Settings {
  int repetitions = 20;
  int steps_per_sample = 100;
  int pool = 16;
};

struct Result {
  std::string precision;
  double eager_ms = 0;
  mpx::bench::Timing eager_spread;  // min and max of the per-step times behind the median
  std::optional<double> graph_ms;
  mpx::bench::Timing graph_spread;
  std::string graph_error;
  std::int64_t peak_bytes = 0, peak_bytes_with_workspace = 0, skipped_while_timed = 0;
  double final_loss = 0;
  double gpu_losses[k_check_steps] = {}, cpu_losses[k_check_steps] = {}, check_tolerance = 0;
};

struct HostBatch {
  mpx::Tensor<float> inputs;
  mpx::Tensor<std::int32_t> labels;
};

HostBatch make_batch(std::uint32_t seed) {
  std::mt19937 rng(seed);
  HostBatch batch{mpx::bench::random_host_tensor<float>(mpx::Shape{k_batch, k_inputs}, rng),
                  mpx::Tensor<std::int32_t>(mpx::Shape{k_batch})};
  for (auto& label : batch.labels.values())
    label = static_cast<std::int32_t>(rng() % std::uint32_t{k_classes});
  return batch;
}

template <class P, class Device>
auto make_model() {
  auto model = mpx::experiment::mlp3<P, P, Device>(k_inputs, k_hidden1, k_hidden2, k_classes);
  model.initialize(k_seed);
  return model;
}

// The first losses of a fresh model on one batch, on the CPU and on the GPU, from the same weights.
template <class P>
void check_against_cpu(Result& r) {
  using Compute = typename P::compute_type;
  const HostBatch batch = make_batch(1);
  const auto inputs = mpx::convert<Compute>(batch.inputs);
  bool cpu_stepped[k_check_steps] = {};
  bool gpu_stepped[k_check_steps] = {};
  {
    auto model = make_model<P, mpx::Host>();
    mpx::nn::SoftmaxCrossEntropy<P> loss;
    mpx::optim::AdamW optimizer(model, {.lr = k_lr, .weight_decay = k_weight_decay});
    mpx::Trainer trainer(model, loss, optimizer);
    for (int s = 0; s < k_check_steps; ++s) {
      const auto result = trainer.step(inputs, batch.labels);
      r.cpu_losses[s] = result.loss;
      cpu_stepped[s] = result.stepped;
    }
  }
  {
    auto model = make_model<P, mpx::Cuda>();
    mpx::nn::SoftmaxCrossEntropy<P, mpx::Cuda> loss;
    mpx::optim::AdamW optimizer(model, {.lr = k_lr, .weight_decay = k_weight_decay});
    mpx::Trainer trainer(model, loss, optimizer);
    const auto device_inputs = mpx::to_device(inputs);
    const auto labels = mpx::to<mpx::Cuda>(batch.labels);
    for (int s = 0; s < k_check_steps; ++s) {
      const auto result = trainer.step(device_inputs, labels);
      r.gpu_losses[s] = result.loss;
      gpu_stepped[s] = result.stepped;
    }
  }
  r.check_tolerance = mpx::bench::check_tolerance<Compute>();
  for (int s = 0; s < k_check_steps; ++s) {
    const double error = std::abs(r.gpu_losses[s] - r.cpu_losses[s]) / std::abs(r.cpu_losses[s]);
    if (!mpx::bench::within(error, r.check_tolerance) || gpu_stepped[s] != cpu_stepped[s]) {
      std::fprintf(stderr,
                   "fashion_mnist_step_cuda: %s step %d: GPU loss %.7g (%s) vs CPU loss %.7g (%s); relative "
                   "difference %.3g, tolerance %.3g\n",
                   P::name.data(), s + 1, r.gpu_losses[s], gpu_stepped[s] ? "stepped" : "skipped",
                   r.cpu_losses[s], cpu_stepped[s] ? "stepped" : "skipped", error, r.check_tolerance);
      std::exit(EXIT_FAILURE);
    }
  }
}

template <class P>
Result run_case(const Settings& s) {
  using Compute = typename P::compute_type;
  using T = mpx::compute_t<P>;
  constexpr bool rounds_input = !std::is_same_v<T, float>;
  mpx::CudaContext& context = mpx::cuda_context();
  const cudaStream_t stream = context.stream();
  Result r;
  r.precision = std::string(P::name);
  check_against_cpu<P>(r);

  auto& stats = mpx::memory_stats<mpx::Cuda>();
  stats.reset_peak();
  {
    // The pool of batches, on the device before timing, as a data loader with prefetch leaves them.
    std::vector<mpx::Tensor<float, mpx::Cuda>> images;
    std::vector<mpx::Tensor<std::int32_t, mpx::Cuda>> labels;
    for (int i = 0; i < s.pool; ++i) {
      const HostBatch batch = make_batch(100 + static_cast<std::uint32_t>(i));
      images.push_back(mpx::to<mpx::Cuda>(batch.inputs));
      labels.push_back(mpx::to<mpx::Cuda>(batch.labels));
    }
    context.synchronize();  // the pool is on the device before anything is timed
    auto model = make_model<P, mpx::Cuda>();
    mpx::nn::SoftmaxCrossEntropy<P, mpx::Cuda> loss;
    mpx::optim::AdamW optimizer(model, {.lr = k_lr, .weight_decay = k_weight_decay});
    mpx::Trainer trainer(model, loss, optimizer);
    // The buffers a step reads (the graph reads these at every replay).
    auto inputs = mpx::Tensor<T, mpx::Cuda>::uninitialized(mpx::Shape{k_batch, k_inputs});
    auto step_labels = mpx::Tensor<std::int32_t, mpx::Cuda>::uninitialized(mpx::Shape{k_batch});
    const auto load = [&](int i, mpx::Tensor<T, mpx::Cuda>& into) {
      const auto& source = images[static_cast<std::size_t>(i)];
      if constexpr (rounds_input) {
        mpx::Backend<mpx::Cuda>::round_into<Compute>(source, into);
      } else {
        MPX_CUDA_CHECK(cudaMemcpyAsync(into.data(), source.data(), source.size_bytes(),
                                       cudaMemcpyDeviceToDevice, stream));
      }
    };
    int next = 0;
    const auto eager_steps = [&] {
      for (int i = 0; i < s.steps_per_sample; ++i, next = (next + 1) % s.pool) {
        const auto& batch_labels = labels[static_cast<std::size_t>(next)];
        if constexpr (rounds_input) {
          load(next, inputs);
          trainer.queue_step(inputs, batch_labels);
        } else {
          trainer.queue_step(images[static_cast<std::size_t>(next)], batch_labels);
        }
      }
    };
    const auto skipped = [&] { return trainer.scaler().state().steps_skipped; };

    eager_steps();  // the first step allocates every buffer; the rest warm up
    (void)trainer.read_result();
    std::int64_t skipped_before = skipped();
    r.eager_spread = mpx::bench::time_ms(eager_steps, stream, 0, s.repetitions).per(s.steps_per_sample);
    r.eager_ms = r.eager_spread.median;
    r.final_loss = trainer.read_result().loss;
    r.skipped_while_timed = skipped() - skipped_before;
    try {
      load(next, inputs);
      trainer.capture_step(inputs, step_labels);
      const auto graph_steps = [&] {
        for (int i = 0; i < s.steps_per_sample; ++i, next = (next + 1) % s.pool) {
          load(next, inputs);
          mpx::copy(step_labels, labels[static_cast<std::size_t>(next)]);
          trainer.replay_step();
        }
      };
      skipped_before = skipped();
      r.graph_spread = mpx::bench::time_ms(graph_steps, stream, 1, s.repetitions).per(s.steps_per_sample);
      r.graph_ms = r.graph_spread.median;
      r.final_loss = trainer.read_result().loss;
      r.skipped_while_timed += skipped() - skipped_before;
    } catch (const std::exception& e) {
      r.graph_error = e.what();
    }
    r.peak_bytes = stats.peak_bytes();
  }
  r.peak_bytes_with_workspace = r.peak_bytes + static_cast<std::int64_t>(context.workspace_bytes());
  if (!std::isfinite(r.final_loss)) {
    std::fprintf(stderr, "fashion_mnist_step_cuda: %s: the loss became %g while timing\n", P::name.data(),
                 r.final_loss);
    std::exit(EXIT_FAILURE);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path = "fashion_mnist_step_cuda.json";
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (arg == "--quick") {
      s.repetitions = 7;
      s.steps_per_sample = 50;
    } else if (arg == "--repetitions" && i + 1 < argc) {
      s.repetitions = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--steps-per-sample" && i + 1 < argc) {
      s.steps_per_sample = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--pool" && i + 1 < argc) {
      s.pool = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr,
                   "usage: fashion_mnist_step_cuda [--json PATH] [--repetitions N] [--steps-per-sample N] "
                   "[--pool N] [--quick]\n");
      return 2;
    }
  }
  if (!mpx::bench::cuda_device_present("fashion_mnist_step_cuda")) return mpx::bench::k_no_device_exit;
  try {
    mpx::CudaContext& context = mpx::cuda_context();
    mpx::bench::print_machine(context);
    std::printf("Fashion-MNIST MLP 784-512-256-10, batch 128, AdamW: steps/s eager and as a CUDA graph\n");
    std::printf("%-10s %10s %12s %10s %12s %8s %10s %8s\n", "precision", "eager ms", "eager step/s",
                "graph ms", "graph step/s", "x eager", "peak MiB", "loss");
    const std::vector<Result> results{run_case<mpx::fp32>(s), run_case<mpx::tf32>(s),
                                      run_case<mpx::fp16_mixed>(s), run_case<mpx::bf16_mixed>(s)};
    std::ostringstream json;
    json << "{\"benchmark\": \"fashion_mnist_step_cuda\", \"machine\": " << mpx::bench::machine_json()
         << ", \"device\": " << mpx::bench::device_json(context) << ", \"statistic\": \"median\""
         << ", \"model\": {\"widths\": [784, 512, 256, 10], \"activation\": \"ReLU (first two layers)\""
         << ", \"loss\": \"softmax cross-entropy\", \"optimizer\": \"AdamW\", \"lr\": " << k_lr
         << ", \"weight_decay\": " << k_weight_decay << ", \"batch\": " << k_batch << "}"
         << ", \"inputs\": \"pool of random fp32 batches on the device, rounded to the compute type each "
            "step\""
         << ", \"pool\": " << s.pool << ", \"repetitions\": " << s.repetitions
         << ", \"steps_per_sample\": " << s.steps_per_sample << ", \"cases\": [";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      char graph[32] = "-";
      char graph_rate[32] = "-";
      char speedup[32] = "-";
      if (r.graph_ms) {
        std::snprintf(graph, sizeof graph, "%.4f", *r.graph_ms);
        std::snprintf(graph_rate, sizeof graph_rate, "%.0f", 1e3 / *r.graph_ms);
        std::snprintf(speedup, sizeof speedup, "%.2f", r.eager_ms / *r.graph_ms);
      }
      std::printf("%-10s %10.4f %12.0f %10s %12s %8s %10.1f %8.4f%s\n", r.precision.c_str(), r.eager_ms,
                  1e3 / r.eager_ms, graph, graph_rate, speedup, static_cast<double>(r.peak_bytes) / (1 << 20),
                  r.final_loss, r.skipped_while_timed > 0 ? "  (steps skipped while timed)" : "");
      if (!r.graph_error.empty()) std::printf("  graph capture failed: %s\n", r.graph_error.c_str());
      json << (i == 0 ? "" : ", ") << "{\"precision\": " << mpx::io::json::quote(r.precision)
           << ", \"eager_step_ms\": " << r.eager_ms << ", \"eager_step_ms_range\": [" << r.eager_spread.min
           << ", " << r.eager_spread.max << "]"
           << ", \"eager_steps_per_second\": " << 1e3 / r.eager_ms
           << ", \"graph_step_ms\": " << (r.graph_ms ? std::to_string(*r.graph_ms) : "null")
           << ", \"graph_step_ms_range\": "
           << (r.graph_ms ? "[" + std::to_string(r.graph_spread.min) + ", " +
                                std::to_string(r.graph_spread.max) + "]"
                          : "null")
           << ", \"graph_steps_per_second\": " << (r.graph_ms ? std::to_string(1e3 / *r.graph_ms) : "null")
           << ", \"graph_error\": " << (r.graph_error.empty() ? "null" : mpx::io::json::quote(r.graph_error))
           << ", \"peak_bytes\": " << r.peak_bytes
           << ", \"peak_bytes_with_workspace\": " << r.peak_bytes_with_workspace
           << ", \"steps_skipped_while_timed\": " << r.skipped_while_timed
           << ", \"final_loss\": " << r.final_loss << ", \"check\": {\"gpu_losses\": [" << r.gpu_losses[0]
           << ", " << r.gpu_losses[1] << ", " << r.gpu_losses[2] << "], \"cpu_losses\": [" << r.cpu_losses[0]
           << ", " << r.cpu_losses[1] << ", " << r.cpu_losses[2]
           << "], \"relative_tolerance\": " << r.check_tolerance << "}}";
    }
    json << "]}\n";
    mpx::bench::write_json(json_path, json.str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fashion_mnist_step_cuda: %s\n", e.what());
    return 1;
  }
}
