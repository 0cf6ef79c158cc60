// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Training-step speed and memory on the CPU per precision (fp32, tf32, fp16, bf16), for the
// Fashion-MNIST MLP (784-512-256-10, batch 128) and a wide MLP (1024-4096-4096-10, batch 256):
// ms per step and samples/s (medians), the share of the step spent in its GEMMs (the same GEMMs
// timed alone), and the activation memory and peak of a step from the allocator. Before timing, each
// precision's first-step loss is checked against an fp64 run of the same model on the same batch.
//
// Usage: train_cpu [--json PATH] [--steps N]
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include "mpx/experiment/models.hpp"
#include "mpx/mpx.hpp"
#include "report.hpp"

namespace {

struct Workload {
  std::string name;
  std::array<std::int64_t, 4> widths;  // inputs, hidden1, hidden2, classes
  std::int64_t batch;
  int timed_steps;
};

struct Result {
  std::string workload, precision;
  double step_ms = 0, samples_per_second = 0, gemm_ms = 0, gemm_share = 0, ratio_to_fp32 = 0;
  std::int64_t activation_bytes = 0, peak_bytes = 0;
  double first_loss = 0, reference_loss = 0;
};

// Random inputs (never zero) and labels from a fixed seed, so every precision sees the same batch.
struct Batch {
  mpx::Tensor<float> inputs;
  mpx::Tensor<std::int32_t> labels;
};

Batch make_batch(const Workload& w) {
  Batch batch{mpx::Tensor<float>(mpx::Shape{w.batch, w.widths[0]}),
              mpx::Tensor<std::int32_t>(mpx::Shape{w.batch})};
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  for (float& v : batch.inputs.values()) v = normal(rng);
  for (auto& label : batch.labels.values()) label = std::int32_t(rng() % std::uint32_t(w.widths[3]));
  return batch;
}

// The first step's loss: what the reference check compares.
template <class P>
double first_step_loss(const Workload& w, const Batch& batch) {
  auto model = mpx::experiment::mlp3<P>(w.widths[0], w.widths[1], w.widths[2], w.widths[3]);
  model.initialize(5);
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  mpx::optim::AdamW optimizer(model, {});
  mpx::Trainer trainer(model, loss, optimizer);
  const auto inputs = mpx::convert<typename P::compute_type>(batch.inputs);
  return trainer.step(inputs, batch.labels).loss;
}

// The GEMMs of one step, timed alone: per layer the forward (bias and ReLU fused), the weight
// gradient (fp32 output, accumulating, bias gradient fused) and, past the first layer, dX.
template <class P>
double gemm_ms(const Workload& w, int repetitions) {
  using C = typename P::compute_type;
  using T = mpx::compute_t<P>;
  std::vector<double> samples;
  for (int r = 0; r < repetitions; ++r) {
    double total = 0;
    for (int layer = 0; layer < 3; ++layer) {
      const std::int64_t in = w.widths[std::size_t(layer)], out = w.widths[std::size_t(layer) + 1];
      auto x = mpx::convert<C>(make_batch({w.name, {in, 1, 1, 2}, w.batch, 0}).inputs);
      mpx::Tensor<T> weight(mpx::Shape{out, in}), bias(mpx::Shape{out}), y(mpx::Shape{w.batch, out}),
          dz(mpx::Shape{w.batch, out}), dx(mpx::Shape{w.batch, in});
      weight.fill(T(0.01f));
      dz.fill(T(0.001f));
      mpx::Tensor<float> dweight(mpx::Shape{out, in}), dbias(mpx::Shape{out});
      const auto forward = layer < 2 ? mpx::Epilogue::ReluBias : mpx::Epilogue::Bias;
      auto start = mpx::bench::Clock::now();
      mpx::cpu::gemm<C>(x, weight, y, {.transpose_b = mpx::Transpose::Yes, .epilogue = forward},
                        {.bias = &bias});
      mpx::cpu::gemm<C>(dz, x, dweight,
                        {.transpose_a = mpx::Transpose::Yes, .beta = 1.0f, .epilogue = mpx::Epilogue::BGradA},
                        {.bias_grad = &dbias});
      if (layer > 0) mpx::cpu::gemm<C>(dz, weight, dx, {});
      total += mpx::bench::elapsed_ms(start);
    }
    samples.push_back(total);
  }
  return mpx::bench::median(samples);
}

template <class P>
Result measure(const Workload& w, const Batch& batch, double reference_loss) {
  Result result{w.name, std::string(P::name)};
  result.reference_loss = reference_loss;
  result.first_loss = first_step_loss<P>(w, batch);
  // bf16 rounds activations to 8 significant bits: the mean loss of a fresh model moves by well
  // under 5% of its ~ln(classes) value; anything more is a wrong result, not rounding.
  if (!(std::abs(result.first_loss - reference_loss) <= 0.05 * reference_loss)) {
    std::fprintf(stderr, "train_cpu: %s %s first-step loss %.6f differs from the fp64 reference %.6f\n",
                 w.name.c_str(), result.precision.c_str(), result.first_loss, reference_loss);
    std::exit(EXIT_FAILURE);
  }

  auto model = mpx::experiment::mlp3<P>(w.widths[0], w.widths[1], w.widths[2], w.widths[3]);
  model.initialize(5);
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  mpx::optim::AdamW optimizer(model, {});
  mpx::Trainer trainer(model, loss, optimizer);
  const auto inputs = mpx::convert<typename P::compute_type>(batch.inputs);
  trainer.step(inputs, batch.labels);  // first step: allocates, and measures memory
  trainer.step(inputs, batch.labels);  // warm caches
  std::vector<double> samples;
  for (int s = 0; s < w.timed_steps; ++s) {
    const auto start = mpx::bench::Clock::now();
    trainer.step(inputs, batch.labels);
    samples.push_back(mpx::bench::elapsed_ms(start));
  }
  result.step_ms = mpx::bench::median(samples);
  result.samples_per_second = double(w.batch) / (result.step_ms * 1e-3);
  result.gemm_ms = gemm_ms<P>(w, std::max(3, w.timed_steps / 2));
  result.gemm_share = result.gemm_ms / result.step_ms;
  result.activation_bytes = trainer.first_step_memory().activations;
  result.peak_bytes = trainer.first_step_memory().peak;
  return result;
}

std::string to_json(const std::vector<Result>& results) {
  std::string out = "{\n  \"benchmark\": \"train_cpu\",\n  \"machine\": " + mpx::bench::machine_json() +
                    ",\n  \"statistic\": \"median\",\n  \"optimizer\": \"AdamW\",\n  \"results\": [\n";
  char line[512];
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    std::snprintf(
        line, sizeof line,
        "    {\"workload\": \"%s\", \"precision\": \"%s\", \"step_ms\": %.4f, \"samples_per_second\": %.1f, "
        "\"ratio_to_fp32\": %.4f, \"gemm_ms\": %.4f, \"gemm_share\": %.4f, \"activation_bytes\": %lld, "
        "\"peak_bytes\": %lld, \"first_loss\": %.6f, \"fp64_first_loss\": %.6f}%s\n",
        r.workload.c_str(), r.precision.c_str(), r.step_ms, r.samples_per_second, r.ratio_to_fp32, r.gemm_ms,
        r.gemm_share, static_cast<long long>(r.activation_bytes), static_cast<long long>(r.peak_bytes),
        r.first_loss, r.reference_loss, i + 1 < results.size() ? "," : "");
    out += line;
  }
  return out + "  ]\n}\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path = "train_cpu.json";
  int steps = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (arg == "--steps" && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "train_cpu: unknown argument '%s'; usage: train_cpu [--json PATH] [--steps N]\n",
                   argv[i]);
      return EXIT_FAILURE;
    }
  }
  const std::vector<Workload> workloads{
      {"fashion_mnist_mlp", {784, 512, 256, 10}, 128, steps > 0 ? steps : 60},
      {"wide_mlp", {1024, 4096, 4096, 10}, 256, steps > 0 ? steps : 8}};
  std::printf("training step on the CPU: %s\n\n", mpx::bench::machine_line().c_str());
  std::printf("%-18s %-11s %9s %10s %8s %8s %11s %10s %9s\n", "workload", "precision", "ms/step", "samples/s",
              "vs fp32", "GEMM %", "activations", "peak", "loss");
  std::vector<Result> results;
  for (const Workload& w : workloads) {
    const Batch batch = make_batch(w);
    const double reference = first_step_loss<mpx::fp64>(w, batch);
    const std::size_t first = results.size();
    boost::hana::for_each(
        boost::hana::tuple_t<mpx::fp32, mpx::tf32, mpx::fp16_mixed, mpx::bf16_mixed>, [&](auto type) {
          using P = typename decltype(type)::type;
          Result r = measure<P>(w, batch, reference);
          r.ratio_to_fp32 = results.size() > first ? results[first].step_ms / r.step_ms : 1.0;
          std::printf("%-18s %-11s %9.2f %10.0f %7.2fx %7.1f%% %8.2f MiB %6.2f MiB %9.5f\n",
                      r.workload.c_str(), r.precision.c_str(), r.step_ms, r.samples_per_second,
                      r.ratio_to_fp32, 100 * r.gemm_share, double(r.activation_bytes) / (1 << 20),
                      double(r.peak_bytes) / (1 << 20), r.first_loss);
          std::fflush(stdout);
          results.push_back(r);
        });
    for (std::size_t i = first + 2; i < results.size(); ++i) {
      std::printf(
          "  %s %s activations: %.1f%% below fp32 (bar: >= 45%%)\n", w.name.c_str(),
          results[i].precision.c_str(),
          100.0 * (1.0 - double(results[i].activation_bytes) / double(results[first].activation_bytes)));
    }
  }
  mpx::bench::write_json(json_path, to_json(results));
  return EXIT_SUCCESS;
}
