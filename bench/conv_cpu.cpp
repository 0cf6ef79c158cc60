// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// How fast is nn::Conv2d on the CPU (patch gathers feeding mpx::cpu::gemm) against PyTorch's
// convolutions (oneDNN's direct kernels, channels_last), per precision, on the shapes of a small
// ResNet for 28 x 28 images and of an ImageNet ResNet's first stage?
//
// For each case and precision: 3 warm-up passes, then --repetitions timed forwards and as many timed
// backwards (input and weight gradients; each after its own forward, outside the timing); medians in
// ms and GFLOP/s (2 multiply-adds per term: forward K N M, backward twice that). Before timing, the
// forward's first output element is checked against a direct sum in fp64 on the same operands.
// PyTorch runs the same cases in a child process with the same threads (bench/peers/torch_conv.py;
// `--torch PYTHON`, skipped, saying so, without it): fp32, and autocast bf16 / fp16 from fp32 weights.
//
// Usage: conv_cpu [--json PATH] [--repetitions N] [--torch PYTHON]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <mpx/mpx.hpp>

#include "report.hpp"

namespace {

struct Case {
  const char* name;
  std::int64_t batch, height, width, in_channels, out_channels, kernel, stride, padding;

  [[nodiscard]] double multiply_adds() const {
    const std::int64_t oh = (height + 2 * padding - kernel) / stride + 1;
    const std::int64_t ow = (width + 2 * padding - kernel) / stride + 1;
    return double(batch) * double(oh * ow) * double(out_channels) * double(kernel * kernel * in_channels);
  }
  [[nodiscard]] std::string spec() const {
    char text[160];
    std::snprintf(text, sizeof text, "%s:%lld:%lld:%lld:%lld:%lld:%lld:%lld:%lld", name, (long long)batch,
                  (long long)height, (long long)width, (long long)in_channels, (long long)out_channels,
                  (long long)kernel, (long long)stride, (long long)padding);
    return text;
  }
};

// A ResNet for 28 x 28 images (widths 32, 64, 128) at batch 128, and an ImageNet ResNet's first
// stage (56 x 56 x 64) at batch 16.
const Case k_cases[] = {
    {"stem_1to32_28x28", 128, 28, 28, 1, 32, 3, 1, 1},
    {"block_32_28x28", 128, 28, 28, 32, 32, 3, 1, 1},
    {"down_32to64_28to14", 128, 28, 28, 32, 64, 3, 2, 1},
    {"block_64_14x14", 128, 14, 14, 64, 64, 3, 1, 1},
    {"shortcut_1x1_32to64_s2", 128, 28, 28, 32, 64, 1, 2, 0},
    {"block_128_7x7", 128, 7, 7, 128, 128, 3, 1, 1},
    {"imagenet_64_56x56", 16, 56, 56, 64, 64, 3, 1, 1},
};

struct Timing {
  double forward_ms = 0, backward_ms = 0;
};

template <class P>
Timing time_case(const Case& c, int repetitions) {
  using T = mpx::compute_t<P>;
  mpx::nn::Conv2d<P> layer(c.in_channels, c.out_channels, c.kernel,
                           {.stride = c.stride, .padding = c.padding, .bias = false});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(0.1f, 1.0f);  // random, never zero
  mpx::Tensor<T> x(mpx::Shape{c.batch, c.height, c.width, c.in_channels});
  for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = T(rng() % 2 ? uniform(rng) : -uniform(rng));
  const mpx::Tensor<T>& y0 = layer.forward(x);
  // The first output element against a direct fp64 sum (padding skipped) on the same operands.
  double expected = 0;
  for (std::int64_t kh = 0; kh < c.kernel; ++kh)
    for (std::int64_t kw = 0; kw < c.kernel; ++kw) {
      const std::int64_t h = kh - c.padding, w = kw - c.padding;
      if (h < 0 || w < 0) continue;
      for (std::int64_t ch = 0; ch < c.in_channels; ++ch)
        expected += double(float(x[(h * c.width + w) * c.in_channels + ch])) *
                    double(float(layer.weight().compute()[(kh * c.kernel + kw) * c.in_channels + ch]));
    }
  if (std::abs(double(float(y0[0])) - expected) > 1e-2 * (1 + std::abs(expected))) {
    std::fprintf(stderr, "conv_cpu: %s in %s: y[0] = %g, expected %g\n", c.name, P::name.data(),
                 double(float(y0[0])), expected);
    std::exit(1);
  }
  mpx::Tensor<T> dy(y0.shape());
  for (std::int64_t i = 0; i < dy.numel(); ++i) dy[i] = T(rng() % 2 ? uniform(rng) : -uniform(rng));
  std::vector<double> forward, backward;
  for (int r = 0; r < 3 + repetitions; ++r) {
    const auto start = mpx::bench::Clock::now();
    layer.forward(x);
    const double f = mpx::bench::elapsed_ms(start);
    const auto middle = mpx::bench::Clock::now();
    layer.backward(dy, true);
    const double b = mpx::bench::elapsed_ms(middle);
    if (r >= 3) {
      forward.push_back(f);
      backward.push_back(b);
    }
  }
  return {mpx::bench::median(forward), mpx::bench::median(backward)};
}

// PyTorch's medians from the peer: json["cases"][name][precision].
mpx::io::json::Value torch_times(const std::string& python, int repetitions) {
  std::string cases;
  for (const Case& c : k_cases) cases += (cases.empty() ? "" : ",") + c.spec();
  const std::string command = python + " " + MPX_BENCH_PEERS_DIR + "/torch_conv.py --cases " + cases +
                              " --threads " + std::to_string(mpx::bench::openmp_threads()) +
                              " --repetitions " + std::to_string(repetitions);
  std::FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  if (pipe != nullptr) {
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    if (pclose(pipe) != 0) output.clear();
  }
  if (output.empty()) {
    std::fprintf(stderr, "conv_cpu: the PyTorch peer (%s) gave no result\n", command.c_str());
    return {};
  }
  return mpx::io::json::parse(output, "torch_conv.py's output");
}

double torch_ms(const mpx::io::json::Value& torch, const char* name, const char* precision,
                const char* which) {
  const auto* cases = torch.find("cases");
  const auto* entry = cases ? cases->find(name) : nullptr;
  const auto* times = entry ? entry->find(precision) : nullptr;
  const auto* value = times ? times->find(which) : nullptr;
  return value ? std::atof(value->text.c_str()) : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path, python;
  int repetitions = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (arg == "--repetitions" && i + 1 < argc) {
      repetitions = std::atoi(argv[++i]);
    } else if (arg == "--torch" && i + 1 < argc) {
      python = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--json PATH] [--repetitions N] [--torch PYTHON]\n", argv[0]);
      return 2;
    }
  }
  std::printf("%s\n", mpx::bench::machine_line().c_str());
  const mpx::io::json::Value torch =
      python.empty() ? mpx::io::json::Value{} : torch_times(python, repetitions);
  if (python.empty()) std::printf("(no --torch PYTHON: PyTorch peer not run)\n");
  std::printf("%-26s %-11s %9s %9s %8s %9s %9s %8s %8s\n", "case", "precision", "fwd ms", "bwd ms", "GFLOP/s",
              "torch fwd", "torch bwd", "vs torch", "vs fp32");
  std::string rows;
  for (const Case& c : k_cases) {
    double fp32_total = 0;
    const auto report = [&](const char* precision, const Timing& t) {
      const double total = t.forward_ms + t.backward_ms;
      if (fp32_total == 0) fp32_total = total;
      const double gflops = 6 * c.multiply_adds() / (total * 1e6);
      const double tf = torch_ms(torch, c.name, precision, "forward_ms");
      const double tb = torch_ms(torch, c.name, precision, "backward_ms");
      const double vs_torch = tf + tb > 0 ? (tf + tb) / total : 0.0;
      std::printf("%-26s %-11s %9.3f %9.3f %8.1f %9.3f %9.3f %8.2f %8.2f\n", c.name, precision, t.forward_ms,
                  t.backward_ms, gflops, tf, tb, vs_torch, fp32_total / total);
      char line[512];
      std::snprintf(
          line, sizeof line,
          "%s    {\"case\": \"%s\", \"precision\": \"%s\", \"forward_ms\": %.4f, \"backward_ms\": %.4f, "
          "\"gflops\": %.2f, \"torch_forward_ms\": %.4f, \"torch_backward_ms\": %.4f, "
          "\"ratio_to_torch\": %.4f, \"ratio_to_fp32\": %.4f}",
          rows.empty() ? "" : ",\n", c.name, precision, t.forward_ms, t.backward_ms, gflops, tf, tb, vs_torch,
          fp32_total / total);
      rows += line;
    };
    report("fp32", time_case<mpx::fp32>(c, repetitions));
    report("bf16_mixed", time_case<mpx::bf16_mixed>(c, repetitions));
    report("fp16_mixed", time_case<mpx::fp16_mixed>(c, repetitions));
  }
  if (!json_path.empty()) {
    const auto* version = torch.find("torch");
    mpx::bench::write_json(json_path,
                           "{\n  \"benchmark\": \"conv_cpu\",\n  \"machine\": " + mpx::bench::machine_json() +
                               ",\n  \"torch\": \"" + (version ? version->text : std::string("not run")) +
                               "\",\n  \"results\": [\n" + rows + "\n  ]\n}\n");
  }
  return 0;
}
