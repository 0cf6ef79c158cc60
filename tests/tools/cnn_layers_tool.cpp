// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The convolutional layers' (Conv2d, MaxPool2d, AvgPool2d, GlobalAvgPool2d) forward and backward as mpx
// computes them, for tests/interop/ cnn_layers_vs_torch.py to repeat in PyTorch. For each case and precision
// it runs one forward and one backward of the layer on random inputs and writes
// <directory>/<case>.<precision>.safetensors: the input x, the weight and bias as the layer's compute copy
// read them, the upstream gradient dy, and mpx's y, dx, dweight, dbias, every tensor widened to fp32 in mpx's
// channels-last layouts; the metadata holds the layer's description as checkpoints carry it (`model`:
// torch.nn.Conv2d's arguments) and the precision's name.
//
// usage: cnn_layers_tool <directory>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <mpx/mpx.hpp>

namespace {

struct Output {
  std::vector<std::vector<float>> storage;  // owns the bytes of every tensor written
  std::vector<mpx::io::TensorToWrite> tensors;

  template <class T, class Device>
  void add(std::string name, const mpx::Tensor<T, Device>& tensor) {
    std::vector<float> values(static_cast<std::size_t>(tensor.numel()));
    for (std::int64_t i = 0; i < tensor.numel(); ++i)
      values[static_cast<std::size_t>(i)] = static_cast<float>(tensor[i]);
    std::vector<std::int64_t> shape;
    for (int d = 0; d < tensor.rank(); ++d) shape.push_back(tensor.shape()[d]);
    storage.push_back(std::move(values));
    tensors.push_back(
        {std::move(name), mpx::io::Dtype::F32, std::move(shape), std::as_bytes(std::span(storage.back()))});
  }
};

template <class T>
mpx::Tensor<T> random_tensor(const mpx::Shape& shape, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  mpx::Tensor<T> tensor(shape);
  for (std::int64_t i = 0; i < tensor.numel(); ++i) tensor[i] = static_cast<T>(uniform(rng));
  return tensor;
}

struct Conv2dCase {
  const char* name;
  std::int64_t batch, height, width, in_channels, out_channels;
  mpx::Size2d kernel;
  mpx::nn::Conv2dOptions options;
};

// Writes <directory>/<name>.<precision>.safetensors: `out`'s tensors, the layer's description and the
// precision.
template <class P, class Layer>
void save_case(const std::filesystem::path& directory, const std::string& name, const Output& out,
               const Layer& layer) {
  const std::map<std::string, std::string> metadata{
      {"model", mpx::io::model_json("Sequential",
                                    std::vector<mpx::nn::LayerDescription>{mpx::nn::describe_layer(layer)})},
      {"precision", std::string(P::name)}};
  mpx::io::save_safetensors(directory / (name + "." + std::string(P::name) + ".safetensors"), out.tensors,
                            metadata);
}

// A norm's gamma and beta set to values other than 1 and 0, which would leave their paths untested.
template <class Norm>
void set_gamma_beta(Norm& layer, std::int64_t channels, float gamma_step) {
  for (std::int64_t c = 0; c < channels; ++c) {
    layer.weight().master()[c] = 0.5f + gamma_step * static_cast<float>(c);
    layer.bias().master()[c] = 0.05f * static_cast<float>(c) - 0.2f;
  }
}

// One training forward and backward of a norm layer on x: adds x, gamma ("weight"), beta ("bias"),
// dy, y, dx, dweight and dbias to `out`.
template <class T, class Norm>
void add_norm_step(Output& out, Norm& layer, const mpx::Tensor<T>& x, std::mt19937_64& rng) {
  const mpx::Tensor<T>& y = layer.forward(x);
  const auto dy = random_tensor<T>(y.shape(), rng);
  layer.for_each_parameter([](const auto&, auto& parameter) { parameter.zero_grad(); });
  const mpx::Tensor<T>* dx = layer.backward(dy, true);
  out.add("x", x);
  out.add("weight", layer.weight().master());
  out.add("bias", layer.bias().master());
  out.add("dy", dy);
  out.add("y", y);
  out.add("dx", *dx);
  out.add("dweight", layer.weight().grad());
  out.add("dbias", layer.bias().grad());
}

template <class P>
void write_conv2d(const std::filesystem::path& directory, const Conv2dCase& c) {
  using T = mpx::compute_t<P>;
  std::mt19937_64 rng(2026);
  mpx::nn::Conv2d<P> layer(c.in_channels, c.out_channels, c.kernel, c.options);
  layer.initialize(1, 0);
  if (layer.bias() != nullptr) {  // a zero bias would leave its path untested
    auto& bias = layer.bias()->master();
    for (std::int64_t i = 0; i < bias.numel(); ++i) bias[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
    layer.bias()->refresh_compute_copy();
  }
  const auto x = random_tensor<T>(mpx::Shape{c.batch, c.height, c.width, c.in_channels}, rng);
  const mpx::Tensor<T>& y = layer.forward(x);
  const auto dy = random_tensor<T>(y.shape(), rng);
  layer.for_each_parameter([](const auto&, auto& parameter) { parameter.zero_grad(); });
  const mpx::Tensor<T>* dx = layer.backward(dy, true);

  Output out;
  out.add("x", x);
  out.add("weight", layer.weight().compute());
  if (layer.bias() != nullptr) out.add("bias", layer.bias()->compute());
  out.add("dy", dy);
  out.add("y", y);
  out.add("dx", *dx);
  out.add("dweight", layer.weight().grad());
  if (layer.bias() != nullptr) out.add("dbias", layer.bias()->grad());
  save_case<P>(directory, c.name, out, layer);
}

// A layer without parameters (pooling): x, dy, y, dx and the description.
template <class P, class Layer>
void write_parameter_free(const std::filesystem::path& directory, const std::string& name, Layer layer,
                          const mpx::Shape& input) {
  using T = mpx::compute_t<P>;
  std::mt19937_64 rng(2027);
  const auto x = random_tensor<T>(input, rng);
  const mpx::Tensor<T>& y = layer.forward(x);
  const auto dy = random_tensor<T>(y.shape(), rng);
  const mpx::Tensor<T>* dx = layer.backward(dy, true);
  Output out;
  out.add("x", x);
  out.add("dy", dy);
  out.add("y", y);
  out.add("dx", *dx);
  save_case<P>(directory, name, out, layer);
}

// BatchNorm2d: one training step (x, dy -> y, dx, dweight, dbias, the running statistics after it),
// then an evaluation forward of x_eval with the updated running statistics.
template <class P>
void write_batch_norm(const std::filesystem::path& directory) {
  using T = mpx::compute_t<P>;
  std::mt19937_64 rng(2028);
  mpx::nn::BatchNorm2d<P> layer(6, {.epsilon = 1e-3f, .momentum = 0.2});
  set_gamma_beta(layer, 6, 0.25f);
  auto x = random_tensor<T>(mpx::Shape{4, 5, 3, 6}, rng);
  for (std::int64_t i = 0; i < x.numel(); ++i)
    x[i] = static_cast<T>(static_cast<float>(x[i]) + 2.0f);  // a large mean
  Output out;
  add_norm_step(out, layer, x, rng);
  out.add("running_mean", layer.running_mean());
  out.add("running_var", layer.running_var());
  const auto x_eval = random_tensor<T>(mpx::Shape{2, 3, 3, 6}, rng);
  layer.set_training(false);
  out.add("x_eval", x_eval);
  out.add("y_eval", layer.forward(x_eval));
  save_case<P>(directory, "batch_norm", out, layer);
}

// GroupNorm: one forward and backward (x, dy -> y, dx, dweight, dbias).
template <class P>
void write_group_norm(const std::filesystem::path& directory) {
  std::mt19937_64 rng(2029);
  mpx::nn::GroupNorm<P> layer(3, 12, 1e-4f);
  set_gamma_beta(layer, 12, 0.125f);
  Output out;
  add_norm_step(out, layer, random_tensor<mpx::compute_t<P>>(mpx::Shape{3, 4, 5, 12}, rng), rng);
  save_case<P>(directory, "group_norm", out, layer);
}

template <class P>
void write_pooling(const std::filesystem::path& directory) {
  using L = mpx::nn::layers<P>;
  write_parameter_free<P>(directory, "max_pool_3x3_s2_p1", L::max_pool2d(3, {.stride = 2, .padding = 1}),
                          mpx::Shape{2, 9, 8, 5});
  write_parameter_free<P>(directory, "max_pool_2x2", L::max_pool2d(2), mpx::Shape{2, 8, 6, 3});
  write_parameter_free<P>(directory, "avg_pool_3x3_s2_p1", L::avg_pool2d(3, {.stride = 2, .padding = 1}),
                          mpx::Shape{2, 9, 8, 5});
  write_parameter_free<P>(directory, "avg_pool_3x2_s1_p1_exclude_pad",
                          L::avg_pool2d({3, 2}, {.stride = 1, .padding = 1, .count_include_pad = false}),
                          mpx::Shape{1, 6, 7, 4});
  write_parameter_free<P>(directory, "global_avg_pool", L::global_avg_pool2d(), mpx::Shape{3, 7, 7, 6});
  write_parameter_free<P>(directory, "silu", L::silu(), mpx::Shape{2, 5, 4, 6});
  write_parameter_free<P>(directory, "upsample_2x3", L::upsample({2, 3}), mpx::Shape{2, 4, 3, 5});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <directory>\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path directory = argv[1];
    std::filesystem::create_directories(directory);
    const Conv2dCase conv2d_cases[] = {
        {"conv3x3_same", 2, 9, 7, 3, 8, 3, {.padding = 1}},
        {"conv_stride2_dilation2_rect",
         2,
         11,
         10,
         4,
         6,
         {3, 2},
         {.stride = {2, 1}, .padding = {2, 1}, .dilation = {2, 1}}},
        {"conv_groups2_nobias", 1, 8, 8, 4, 6, 3, {.stride = 2, .padding = 1, .groups = 2, .bias = false}},
        {"conv_depthwise", 2, 7, 7, 6, 6, 3, {.padding = 1, .groups = 6}},
        {"conv1x1", 3, 5, 4, 16, 8, 1, {}},
    };
    for (const Conv2dCase& c : conv2d_cases) {
      write_conv2d<mpx::fp32>(directory, c);
      write_conv2d<mpx::bf16_mixed>(directory, c);
      write_conv2d<mpx::fp16_mixed>(directory, c);
    }
    write_group_norm<mpx::fp32>(directory);
    write_group_norm<mpx::bf16_mixed>(directory);
    write_group_norm<mpx::fp16_mixed>(directory);
    write_batch_norm<mpx::fp32>(directory);
    write_batch_norm<mpx::bf16_mixed>(directory);
    write_batch_norm<mpx::fp16_mixed>(directory);
    write_pooling<mpx::fp32>(directory);
    write_pooling<mpx::bf16_mixed>(directory);
    write_pooling<mpx::fp16_mixed>(directory);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
