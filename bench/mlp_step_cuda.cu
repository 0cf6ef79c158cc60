// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// How close does a whole mpx training step come to what its matmuls and its optimizer must cost,
// and how does it compare with strict fp32? The model is three Linear(4096, 4096) layers, ReLU fused
// into the first two (mpx::experiment::mlp3), softmax cross-entropy over 4096 classes, SGD with
// momentum 0.9 over fp32 master weights; batch 512 and 4096; fp32, tf32, fp16_mixed (dynamic loss
// scaling) and bf16_mixed. The batch arrives in fp32, as in the PyTorch peer, and is rounded to the
// compute type on the stream each step.
//
// Method: steps are queued with Trainer::queue_step (no host synchronisation) and timed in groups
// of --steps-per-sample consecutive steps with CUDA events; the median group over --repetitions,
// divided by the group size, is the step time. The same again replaying a CUDA graph of the step
// (Trainer::capture_step / replay_step). The floor of a step is its eight GEMMs (three forward,
// three dW in fp32, two dX) run alone as raw cublasLtMatmul calls, plus the optimizer's minimum
// bytes (read gradient, master and momentum, write master, momentum and the compute copy) at the
// device-to-device copy bandwidth measured here (cudaMemcpyAsync, bytes read + written). Peak memory
// is the allocator's peak over the case (model, optimizer, activations, batch), reported with and
// without cuBLASLt's workspace, which mpx allocates outside its tensors.
//
// Bars (the issue's; every ratio is reported, met or not): bf16 step <= 1.15 x its floor; bf16 >= 5x
// strict fp32 per batch. The PyTorch comparisons (>= 1.4x eager AMP at batch 512, >= 1.1x at 4096,
// >= 1.0x torch.compile, no more peak memory) are made by bench/peers/compare.py from this JSON and
// bench/peers/torch_mlp_step.py's, run in the same session.
//
// Before timing, each precision's first two losses on --check-rows rows are compared with the CPU
// backend's on the same initial weights and batch (the second loss follows an SGD update, so this
// checks forward, backward and optimizer); a mismatch exits 1.
//
// Usage: mlp_step_cuda [--json PATH] [--batches 512,4096] [--repetitions N] [--steps-per-sample N]
//                      [--check-rows N] [--quick]
// (--quick: 5 repetitions of 5 steps, 16 check rows, for a session that must fit a time limit).
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

constexpr std::int64_t k_width = 4096;
constexpr double k_lr = 0.01;
constexpr double k_momentum = 0.9;
constexpr std::uint64_t k_seed = 5;
constexpr double k_floor_bar = 1.15;
constexpr double k_fp32_speedup_bar = 5.0;

struct Settings {
  std::vector<std::int64_t> batches{512, 4096};
  int repetitions = 20;
  int steps_per_sample = 10;
  std::int64_t check_rows = 64;
};

struct Result {
  std::string precision;
  std::int64_t batch = 0;
  double step_ms = 0;
  mpx::bench::Timing step_spread;  // min and max of the per-step times behind the median
  std::optional<double> graph_step_ms;
  mpx::bench::Timing graph_spread;
  std::string graph_error;
  double gemm_ms = 0, optimizer_bytes = 0, optimizer_ms = 0, floor_ms = 0, ratio_to_floor = 0;
  std::int64_t peak_bytes = 0, peak_bytes_with_workspace = 0, first_step_peak = 0, activation_bytes = 0;
  std::int64_t skipped_while_timed = 0;
  double final_loss = 0;
  bool checked = false;
  double gpu_losses[2] = {0, 0}, cpu_losses[2] = {0, 0}, check_tolerance = 0;
};

// A batch in fp32 (never zero) and its labels, from a fixed seed.
struct HostBatch {
  mpx::Tensor<float> inputs;
  mpx::Tensor<std::int32_t> labels;
};

HostBatch make_batch(std::int64_t rows, std::uint32_t seed) {
  std::mt19937 rng(seed);
  HostBatch batch{mpx::bench::random_host_tensor<float>(mpx::Shape{rows, k_width}, rng),
                  mpx::Tensor<std::int32_t>(mpx::Shape{rows})};
  for (auto& label : batch.labels.values()) label = static_cast<std::int32_t>(rng() % std::uint32_t{k_width});
  return batch;
}

template <class P, class Device>
auto make_model() {
  auto model = mpx::experiment::mlp3<P, P, Device>(k_width, k_width, k_width, k_width);
  model.initialize(k_seed);
  return model;
}

// The first two losses of a fresh model on `batch`, on the CPU and on the GPU; same weights (the
// initialisation is the same on every device), same batch.
template <class P>
void check_against_cpu(const HostBatch& batch, Result& r) {
  using Compute = typename P::compute_type;
  const auto inputs = mpx::convert<Compute>(batch.inputs);
  bool cpu_stepped[2] = {false, false};
  bool gpu_stepped[2] = {false, false};
  {
    auto model = make_model<P, mpx::Host>();
    mpx::nn::SoftmaxCrossEntropy<P> loss;
    mpx::optim::SGD optimizer(model, {.lr = k_lr, .momentum = k_momentum});
    mpx::Trainer trainer(model, loss, optimizer);
    for (int s = 0; s < 2; ++s) {
      const auto result = trainer.step(inputs, batch.labels);
      r.cpu_losses[s] = result.loss;
      cpu_stepped[s] = result.stepped;
    }
  }
  {
    auto model = make_model<P, mpx::Cuda>();
    mpx::nn::SoftmaxCrossEntropy<P, mpx::Cuda> loss;
    mpx::optim::SGD optimizer(model, {.lr = k_lr, .momentum = k_momentum});
    mpx::Trainer trainer(model, loss, optimizer);
    const auto device_inputs = mpx::to_device(inputs);
    const auto labels = mpx::to<mpx::Cuda>(batch.labels);
    for (int s = 0; s < 2; ++s) {
      const auto result = trainer.step(device_inputs, labels);
      r.gpu_losses[s] = result.loss;
      gpu_stepped[s] = result.stepped;
    }
  }
  r.check_tolerance = mpx::bench::check_tolerance<Compute>();
  for (int s = 0; s < 2; ++s) {
    const double error = std::abs(r.gpu_losses[s] - r.cpu_losses[s]) / std::abs(r.cpu_losses[s]);
    if (!mpx::bench::within(error, r.check_tolerance) || gpu_stepped[s] != cpu_stepped[s]) {
      std::fprintf(
          stderr,
          "mlp_step_cuda: %s step %d on %lld rows: GPU loss %.7g (%s) vs CPU loss %.7g (%s); relative "
          "difference %.3g, tolerance %.3g\n",
          P::name.data(), s + 1, static_cast<long long>(batch.inputs.shape()[0]), r.gpu_losses[s],
          gpu_stepped[s] ? "stepped" : "skipped", r.cpu_losses[s], cpu_stepped[s] ? "stepped" : "skipped",
          error, r.check_tolerance);
      std::exit(EXIT_FAILURE);
    }
  }
}

// The step's GEMMs alone, as raw cuBLASLt calls on random operands, one set of buffers per layer:
// Y = X W^T for each layer, dW = dZ^T X (fp32) for each layer, dX = dZ W for the last two.
template <class P>
double gemm_floor_ms(std::int64_t batch, const Settings& s) {
  using Compute = typename P::compute_type;
  using T = mpx::compute_t<P>;
  mpx::CudaContext& context = mpx::cuda_context();
  std::mt19937 rng(17);
  const auto forward = mpx::bench::raw_matmul<Compute>(batch, k_width, k_width, false, true, context);
  const auto weight_grad =
      mpx::bench::raw_matmul<Compute, mpx::Float>(k_width, k_width, batch, true, false, context);
  const auto input_grad = mpx::bench::raw_matmul<Compute>(batch, k_width, k_width, false, false, context);
  struct Layer {
    mpx::Tensor<T, mpx::Cuda> x, w, y, dz, dx;
    mpx::Tensor<float, mpx::Cuda> dw;
  };
  std::vector<Layer> layers;
  for (int l = 0; l < 3; ++l) {
    layers.push_back({mpx::bench::random_device_tensor<T>(mpx::Shape{batch, k_width}, rng),
                      mpx::bench::random_device_tensor<T>(mpx::Shape{k_width, k_width}, rng, 0.03f),
                      mpx::Tensor<T, mpx::Cuda>::uninitialized(mpx::Shape{batch, k_width}),
                      mpx::bench::random_device_tensor<T>(mpx::Shape{batch, k_width}, rng, 1e-3f),
                      mpx::Tensor<T, mpx::Cuda>::uninitialized(mpx::Shape{batch, k_width}),
                      mpx::Tensor<float, mpx::Cuda>::uninitialized(mpx::Shape{k_width, k_width})});
  }
  const auto gemms = [&] {
    for (Layer& l : layers) forward.run(l.x.data(), l.w.data(), l.y.data());
    for (int i = 2; i >= 0; --i) {
      Layer& l = layers[static_cast<std::size_t>(i)];
      weight_grad.run(l.dz.data(), l.x.data(), l.dw.data());
      if (i > 0) input_grad.run(l.dz.data(), l.w.data(), l.dx.data());
    }
  };
  return mpx::bench::median_ms(gemms, context.stream(), 3, s.repetitions);
}

// Device-to-device copy bandwidth, counting bytes read plus bytes written, in bytes per ms.
double copy_bandwidth(int repetitions) {
  constexpr std::size_t bytes = std::size_t{1} << 30;
  void* source = nullptr;
  void* destination = nullptr;
  MPX_CUDA_CHECK(cudaMalloc(&source, bytes));
  MPX_CUDA_CHECK(cudaMalloc(&destination, bytes));
  MPX_CUDA_CHECK(cudaMemset(source, 1, bytes));
  const cudaStream_t stream = mpx::cuda_context().stream();
  const double ms = mpx::bench::median_ms(
      [&] { MPX_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice, stream)); },
      stream, 2, repetitions);
  MPX_CUDA_CHECK(cudaFree(source));
  MPX_CUDA_CHECK(cudaFree(destination));
  return 2.0 * static_cast<double>(bytes) / ms;
}

template <class P>
Result run_case(std::int64_t batch, const Settings& s, double bytes_per_ms, bool check) {
  using Compute = typename P::compute_type;
  using T = mpx::compute_t<P>;
  constexpr bool rounds_input = !std::is_same_v<T, float>;
  mpx::CudaContext& context = mpx::cuda_context();
  Result r;
  r.precision = std::string(P::name);
  r.batch = batch;
  r.checked = check;  // the check does not depend on the batch: once per precision
  if (check) check_against_cpu<P>(make_batch(s.check_rows, 3), r);

  r.gemm_ms = gemm_floor_ms<P>(batch, s);
  const double parameters = 3.0 * static_cast<double>(k_width * k_width + k_width);
  r.optimizer_bytes = parameters * (5.0 * sizeof(float) + (rounds_input ? sizeof(T) : 0.0));
  r.optimizer_ms = r.optimizer_bytes / bytes_per_ms;
  r.floor_ms = r.gemm_ms + r.optimizer_ms;

  auto& stats = mpx::memory_stats<mpx::Cuda>();
  stats.reset_peak();
  {
    auto model = make_model<P, mpx::Cuda>();
    mpx::nn::SoftmaxCrossEntropy<P, mpx::Cuda> loss;
    mpx::optim::SGD optimizer(model, {.lr = k_lr, .momentum = k_momentum});
    mpx::Trainer trainer(model, loss, optimizer);
    const HostBatch host = make_batch(batch, 4);
    const auto inputs32 = mpx::to_device(host.inputs);
    const auto labels = mpx::to<mpx::Cuda>(host.labels);
    // The batch arrives in fp32; the compute-type copy is refreshed on the stream (fp32 reads it).
    auto inputs = rounds_input ? mpx::Tensor<T, mpx::Cuda>::uninitialized(mpx::Shape{batch, k_width})
                               : mpx::Tensor<T, mpx::Cuda>();
    const mpx::Tensor<T, mpx::Cuda>* model_inputs_pointer = nullptr;
    if constexpr (rounds_input) {
      model_inputs_pointer = &inputs;
    } else {
      model_inputs_pointer = &inputs32;
    }
    const auto& model_inputs = *model_inputs_pointer;
    const auto refill = [&] {
      if constexpr (rounds_input) mpx::Backend<mpx::Cuda>::round_into<Compute>(inputs32, inputs);
    };
    const auto eager_steps = [&] {
      for (int i = 0; i < s.steps_per_sample; ++i) {
        refill();
        trainer.queue_step(model_inputs, labels);
      }
    };
    const auto skipped = [&] { return trainer.scaler().state().steps_skipped; };

    eager_steps();  // the first step allocates every buffer; the rest warm up
    (void)trainer.read_result();
    std::int64_t skipped_before = skipped();
    r.step_spread =
        mpx::bench::time_ms(eager_steps, context.stream(), 0, s.repetitions).per(s.steps_per_sample);
    r.step_ms = r.step_spread.median;
    const auto eager_result = trainer.read_result();
    r.skipped_while_timed = skipped() - skipped_before;
    r.final_loss = eager_result.loss;
    r.first_step_peak = trainer.first_step_memory().peak;
    r.activation_bytes = trainer.first_step_memory().activations;
    try {
      refill();
      trainer.capture_step(model_inputs, labels);
      const auto graph_steps = [&] {
        for (int i = 0; i < s.steps_per_sample; ++i) {
          refill();
          trainer.replay_step();
        }
      };
      skipped_before = skipped();
      r.graph_spread =
          mpx::bench::time_ms(graph_steps, context.stream(), 1, s.repetitions).per(s.steps_per_sample);
      r.graph_step_ms = r.graph_spread.median;
      (void)trainer.read_result();
      r.skipped_while_timed += skipped() - skipped_before;
    } catch (const std::exception& e) {
      r.graph_error = e.what();
    }
    r.peak_bytes = stats.peak_bytes();
  }
  r.peak_bytes_with_workspace = r.peak_bytes + static_cast<std::int64_t>(context.workspace_bytes());
  r.ratio_to_floor = r.step_ms / r.floor_ms;
  if (!std::isfinite(r.final_loss)) {
    std::fprintf(stderr, "mlp_step_cuda: %s batch %lld: the loss became %g while timing\n", P::name.data(),
                 static_cast<long long>(batch), r.final_loss);
    std::exit(EXIT_FAILURE);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path = "mlp_step_cuda.json";
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (arg == "--quick") {
      s.repetitions = 5;
      s.steps_per_sample = 5;
      s.check_rows = 16;
    } else if (arg == "--repetitions" && i + 1 < argc) {
      s.repetitions = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--steps-per-sample" && i + 1 < argc) {
      s.steps_per_sample = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--check-rows" && i + 1 < argc) {
      s.check_rows = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--batches" && i + 1 < argc) {
      s.batches.clear();
      std::stringstream list(argv[++i]);
      std::string item;
      while (std::getline(list, item, ',')) s.batches.push_back(std::stoll(item));
    } else {
      std::fprintf(stderr,
                   "usage: mlp_step_cuda [--json PATH] [--batches 512,4096] [--repetitions N] "
                   "[--steps-per-sample N] [--check-rows N] [--quick]\n");
      return 2;
    }
  }
  if (!mpx::bench::cuda_device_present("mlp_step_cuda")) return mpx::bench::k_no_device_exit;
  try {
    mpx::CudaContext& context = mpx::cuda_context();
    mpx::bench::print_machine(context);
    const double bytes_per_ms = copy_bandwidth(std::max(5, s.repetitions / 2));
    std::printf(
        "MLP 3 x Linear(4096) + ReLU, softmax cross-entropy, SGD momentum %.1f; copy bandwidth %.0f GB/s\n",
        k_momentum, bytes_per_ms * 1e-6);
    std::printf("%-10s %6s %9s %9s %9s %9s %9s %7s %10s %8s\n", "precision", "batch", "step ms", "graph ms",
                "GEMM ms", "optim ms", "floor ms", "/floor", "peak MiB", "loss");
    std::vector<Result> results;
    for (const std::int64_t batch : s.batches) {
      const bool first = batch == s.batches.front();
      results.push_back(run_case<mpx::fp32>(batch, s, bytes_per_ms, first));
      results.push_back(run_case<mpx::tf32>(batch, s, bytes_per_ms, first));
      results.push_back(run_case<mpx::fp16_mixed>(batch, s, bytes_per_ms, first));
      results.push_back(run_case<mpx::bf16_mixed>(batch, s, bytes_per_ms, first));
      for (auto it = results.end() - 4; it != results.end(); ++it) {
        const Result& r = *it;
        char graph[32] = "-";
        if (r.graph_step_ms) std::snprintf(graph, sizeof graph, "%.3f", *r.graph_step_ms);
        std::printf("%-10s %6lld %9.3f %9s %9.3f %9.3f %9.3f %7.3f %10.1f %8.4f%s\n", r.precision.c_str(),
                    static_cast<long long>(r.batch), r.step_ms, graph, r.gemm_ms, r.optimizer_ms, r.floor_ms,
                    r.ratio_to_floor, static_cast<double>(r.peak_bytes) / (1 << 20), r.final_loss,
                    r.skipped_while_timed > 0 ? "  (steps skipped while timed)" : "");
      }
    }

    bool all_met = true;
    std::ostringstream json;
    json << "{\"benchmark\": \"mlp_step_cuda\", \"machine\": " << mpx::bench::machine_json()
         << ", \"device\": " << mpx::bench::device_json(context) << ", \"statistic\": \"median\""
         << ", \"model\": {\"widths\": [4096, 4096, 4096, 4096], \"activation\": \"ReLU (first two layers)\""
         << ", \"loss\": \"softmax cross-entropy\", \"optimizer\": \"SGD\", \"lr\": " << k_lr
         << ", \"momentum\": " << k_momentum
         << ", \"init\": \"Kaiming-uniform (Xavier-uniform last), zero bias\"}"
         << ", \"inputs\": \"fp32 batch rounded to the compute type on the stream each step\""
         << ", \"repetitions\": " << s.repetitions << ", \"steps_per_sample\": " << s.steps_per_sample
         << ", \"copy_bandwidth_bytes_per_second\": " << bytes_per_ms * 1e3
         << ", \"floor_bar\": " << k_floor_bar << ", \"fp32_speedup_bar\": " << k_fp32_speedup_bar
         << ", \"cases\": [";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      const bool bar_applies = r.precision == "bf16_mixed";
      const bool met = r.ratio_to_floor <= k_floor_bar;
      if (bar_applies) all_met = all_met && met;
      json << (i == 0 ? "" : ", ") << "{\"precision\": " << mpx::io::json::quote(r.precision)
           << ", \"batch\": " << r.batch << ", \"step_ms\": " << r.step_ms << ", \"step_ms_range\": ["
           << r.step_spread.min << ", " << r.step_spread.max << "]"
           << ", \"steps_per_second\": " << 1e3 / r.step_ms
           << ", \"graph_step_ms\": " << (r.graph_step_ms ? std::to_string(*r.graph_step_ms) : "null")
           << ", \"graph_step_ms_range\": "
           << (r.graph_step_ms ? "[" + std::to_string(r.graph_spread.min) + ", " +
                                     std::to_string(r.graph_spread.max) + "]"
                               : "null")
           << ", \"graph_error\": " << (r.graph_error.empty() ? "null" : mpx::io::json::quote(r.graph_error))
           << ", \"gemm_ms\": " << r.gemm_ms << ", \"optimizer_bytes\": " << r.optimizer_bytes
           << ", \"optimizer_ms\": " << r.optimizer_ms << ", \"floor_ms\": " << r.floor_ms
           << ", \"ratio_to_floor\": " << r.ratio_to_floor
           << ", \"floor_bar_met\": " << (bar_applies ? (met ? "true" : "false") : "null")
           << ", \"peak_bytes\": " << r.peak_bytes
           << ", \"peak_bytes_with_workspace\": " << r.peak_bytes_with_workspace
           << ", \"first_step_peak_bytes\": " << r.first_step_peak
           << ", \"activation_bytes\": " << r.activation_bytes
           << ", \"steps_skipped_while_timed\": " << r.skipped_while_timed
           << ", \"final_loss\": " << r.final_loss << ", \"check\": ";
      if (r.checked) {
        json << "{\"rows\": " << s.check_rows << ", \"gpu_losses\": [" << r.gpu_losses[0] << ", "
             << r.gpu_losses[1] << "], \"cpu_losses\": [" << r.cpu_losses[0] << ", " << r.cpu_losses[1]
             << "], \"relative_tolerance\": " << r.check_tolerance << "}}";
      } else {
        json << "\"with the first batch\"}";
      }
    }
    json << "], \"speedup_bf16_over_fp32\": [";
    std::printf("\n");
    for (std::size_t b = 0; b < s.batches.size(); ++b) {
      const Result* fp32 = nullptr;
      const Result* bf16 = nullptr;
      for (const Result& r : results) {
        if (r.batch != s.batches[b]) continue;
        if (r.precision == "fp32") fp32 = &r;
        if (r.precision == "bf16_mixed") bf16 = &r;
      }
      const double speedup = fp32->step_ms / bf16->step_ms;
      const bool met = speedup >= k_fp32_speedup_bar;
      all_met = all_met && met;
      std::printf("batch %lld: bf16 step %.3fx its floor (bar <= %.2f), %.2fx strict fp32 (bar >= %.1f)\n",
                  static_cast<long long>(s.batches[b]), bf16->ratio_to_floor, k_floor_bar, speedup,
                  k_fp32_speedup_bar);
      json << (b == 0 ? "" : ", ") << "{\"batch\": " << s.batches[b] << ", \"ratio\": " << speedup
           << ", \"bar_met\": " << (met ? "true" : "false") << "}";
    }
    json << "], \"all_bars_met\": " << (all_met ? "true" : "false") << "}\n";
    mpx::bench::write_json(json_path, json.str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlp_step_cuda: %s\n", e.what());
    return 1;
  }
}
