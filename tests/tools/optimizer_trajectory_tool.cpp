// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx's side of tests/interop/optimizers_vs_torch.py: runs `steps` updates of mpx::cpu::adamw_update
// or mpx::cpu::sgd_update on `size` random fp32 parameters (fp32 master weights, no compute copy)
// and writes what Python needs to replay them in torch.optim to a safetensors file:
//   initial              the parameters before the first update            [size]
//   grads                the gradient of every update, one row per update  [steps, size]
//   params.<t>           the parameters after update t, t in `snapshots`   [size]
//   exp_avg.<t>, exp_avg_sq.<t> (AdamW) or momentum.<t> (SGD): the state after update t
// The settings are echoed in the metadata as %a hex floats (exact).
//
// usage: optimizer_trajectory_tool <out.safetensors> optimizer=adamw|sgd [key=value...]
//   keys: size steps seed snapshots=1,10,100 lr beta1 beta2 eps weight_decay momentum dampening
//         nesterov=0|1 (unset keys take mpx's defaults: PyTorch's, but lr 0.01 for SGD)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <mpx/backend/cpu/optimizer.hpp>
#include <mpx/io/safetensors.hpp>
#include <mpx/numeric/random.hpp>

namespace {

using Params = mpx::Tensor<float, mpx::Host>;

struct Options {
  std::string optimizer;
  std::int64_t size = 1000;
  std::int64_t steps = 100;
  std::uint64_t seed = 1;
  std::vector<std::int64_t> snapshots{1, 10, 100};
  mpx::AdamWSettings adamw;
  mpx::SgdSettings sgd;
};

double parse_double(std::string_view key, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0')
    throw std::invalid_argument("bad value for " + std::string(key) + ": " + text);
  return value;
}

std::int64_t parse_int(std::string_view key, const std::string& text) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || value < 0)
    throw std::invalid_argument("bad value for " + std::string(key) + ": " + text);
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 2; i < argc; ++i) {
    const std::string argument = argv[i];
    const auto equals = argument.find('=');
    if (equals == std::string::npos) throw std::invalid_argument("expected key=value, got " + argument);
    const std::string key = argument.substr(0, equals);
    const std::string value = argument.substr(equals + 1);
    if (key == "optimizer") {
      o.optimizer = value;
    } else if (key == "size") {
      o.size = parse_int(key, value);
    } else if (key == "steps") {
      o.steps = parse_int(key, value);
    } else if (key == "seed") {
      o.seed = static_cast<std::uint64_t>(parse_int(key, value));
    } else if (key == "snapshots") {
      o.snapshots.clear();
      std::size_t begin = 0;
      while (begin <= value.size()) {
        const std::size_t comma = std::min(value.find(',', begin), value.size());
        o.snapshots.push_back(parse_int(key, value.substr(begin, comma - begin)));
        begin = comma + 1;
      }
    } else if (key == "lr") {
      o.adamw.lr = o.sgd.lr = parse_double(key, value);
    } else if (key == "beta1") {
      o.adamw.beta1 = parse_double(key, value);
    } else if (key == "beta2") {
      o.adamw.beta2 = parse_double(key, value);
    } else if (key == "eps") {
      o.adamw.epsilon = parse_double(key, value);
    } else if (key == "weight_decay") {
      o.adamw.weight_decay = o.sgd.weight_decay = parse_double(key, value);
    } else if (key == "momentum") {
      o.sgd.momentum = parse_double(key, value);
    } else if (key == "dampening") {
      o.sgd.dampening = parse_double(key, value);
    } else if (key == "nesterov") {
      o.sgd.nesterov = parse_int(key, value) != 0;
    } else {
      throw std::invalid_argument("unknown key " + key);
    }
  }
  if (o.optimizer != "adamw" && o.optimizer != "sgd")
    throw std::invalid_argument("optimizer must be adamw or sgd, got '" + o.optimizer + "'");
  if (o.size < 1 || o.steps < 1) throw std::invalid_argument("size and steps must be positive");
  return o;
}

std::string hex(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", value);
  return text;
}

// Parameters uniform on [-1, 1) from stream 0; the gradient of update t (from 1) from stream t, its
// sign and mantissa uniform on [-1, 1) scaled by 2^-k, k uniform in 0..23, so that updates see
// gradients from 1 down to the scale where AdamW's epsilon matters.
float initial_parameter(std::uint64_t seed, std::int64_t i) {
  return static_cast<float>(mpx::uniform_between(-1.0, 1.0, mpx::random_bits(seed, 0, 2 * i)));
}

float gradient(std::uint64_t seed, std::int64_t step, std::int64_t i) {
  const auto stream = static_cast<std::uint64_t>(step);
  const double u = mpx::uniform_between(-1.0, 1.0, mpx::random_bits(seed, stream, 2 * i));
  const int k = static_cast<int>(mpx::random_bits(seed, stream, 2 * i + 1) % 24);
  return static_cast<float>(std::ldexp(u, -k));
}

// Owns the bytes of every tensor written (the writer takes spans; moving a vector keeps its buffer).
struct Output {
  std::vector<std::vector<float>> storage;
  std::vector<mpx::io::TensorToWrite> tensors;

  void add(std::string name, std::vector<std::int64_t> shape, std::span<const float> values) {
    storage.emplace_back(values.begin(), values.end());
    tensors.push_back(
        {std::move(name), mpx::io::Dtype::F32, std::move(shape), std::as_bytes(std::span(storage.back()))});
  }
};

int run(const char* path, const Options& o) {
  Params params(mpx::Shape{o.size});
  for (std::int64_t i = 0; i < o.size; ++i) params[i] = initial_parameter(o.seed, i);
  Params grad(mpx::Shape{o.size});
  Params exp_avg(mpx::Shape{o.size});
  Params exp_avg_sq(mpx::Shape{o.size});
  Params& momentum = exp_avg;  // SGD's one buffer
  std::vector<float> grads;
  grads.reserve(static_cast<std::size_t>(o.size * o.steps));

  Output out;
  out.add("initial", {o.size}, params.values());
  Params* no_compute_copy = nullptr;
  for (std::int64_t t = 1; t <= o.steps; ++t) {
    for (std::int64_t i = 0; i < o.size; ++i) grad[i] = gradient(o.seed, t, i);
    grads.insert(grads.end(), grad.values().begin(), grad.values().end());
    if (o.optimizer == "adamw") {
      mpx::cpu::adamw_update(params, no_compute_copy, grad, exp_avg, exp_avg_sq, t, o.adamw);
    } else {
      mpx::cpu::sgd_update(params, no_compute_copy, grad, o.sgd.momentum != 0.0 ? &momentum : nullptr, t == 1,
                           o.sgd);
    }
    for (const std::int64_t snapshot : o.snapshots) {
      if (snapshot != t) continue;
      std::string suffix = ".";  // not "." + to_string(t): GCC 12 warns wrongly (-Wrestrict)
      suffix += std::to_string(t);
      out.add("params" + suffix, {o.size}, params.values());
      if (o.optimizer == "adamw") {
        out.add("exp_avg" + suffix, {o.size}, exp_avg.values());
        out.add("exp_avg_sq" + suffix, {o.size}, exp_avg_sq.values());
      } else if (o.sgd.momentum != 0.0) {
        out.add("momentum" + suffix, {o.size}, momentum.values());
      }
    }
  }
  out.add("grads", {o.steps, o.size}, grads);

  std::map<std::string, std::string> metadata{{"optimizer", o.optimizer},
                                              {"size", std::to_string(o.size)},
                                              {"steps", std::to_string(o.steps)},
                                              {"seed", std::to_string(o.seed)}};
  if (o.optimizer == "adamw") {
    metadata.insert({{"lr", hex(o.adamw.lr)},
                     {"beta1", hex(o.adamw.beta1)},
                     {"beta2", hex(o.adamw.beta2)},
                     {"eps", hex(o.adamw.epsilon)},
                     {"weight_decay", hex(o.adamw.weight_decay)}});
  } else {
    metadata.insert({{"lr", hex(o.sgd.lr)},
                     {"momentum", hex(o.sgd.momentum)},
                     {"dampening", hex(o.sgd.dampening)},
                     {"weight_decay", hex(o.sgd.weight_decay)},
                     {"nesterov", o.sgd.nesterov ? "1" : "0"}});
  }
  mpx::io::save_safetensors(path, out.tensors, metadata);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <out.safetensors> optimizer=adamw|sgd [key=value...]\n", argv[0]);
    return 2;
  }
  try {
    return run(argv[1], parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
