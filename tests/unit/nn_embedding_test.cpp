// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Token and positional embeddings: gradients against central differences in fp64 (sequence 1 and 7,
// repeated and unused ids), the fixed accumulation order of the weight gradients (bit for bit
// against a plain loop, identical on a second run), errors for ids out of range and sequences too
// long, 16-bit forwards bit-exact to the rounded master rows, the normal initialisation, names and
// descriptions, and a Trainer fitting a tiny token model that needs both embeddings.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "mpx/io/model_json.hpp"
#include "mpx/nn/embedding.hpp"
#include "mpx/nn/layer_norm.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/linear.hpp"
#include "mpx/nn/loss.hpp"
#include "mpx/nn/positional_embedding.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/optim/adamw.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/train/trainer.hpp"

#include "../support/gradient_check.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

namespace nn = mpx::nn;
using namespace mpx::test;  // the gradient checks
using mpx::Shape;
using mpx::Tensor;

// Ids uniform on [0, used), so that rows used..num_embeddings-1 are never looked up.
Tensor<std::int32_t> random_ids(const Shape& shape, std::int32_t used, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::int32_t> pick(0, used - 1);
  Tensor<std::int32_t> ids(shape);
  for (std::int64_t i = 0; i < ids.numel(); ++i) ids[i] = pick(rng);
  return ids;
}

// Magnitudes 2^u, u uniform on [-16, 6), random signs, rounded into T: sums of these lose low bits
// at every step, so a change of summation order changes the result's bits.
template <class T>
Tensor<T> wide_range(const Shape& shape, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> exponent(-16.0, 6.0);
  std::bernoulli_distribution negative(0.5);
  Tensor<T> tensor(shape);
  for (std::int64_t i = 0; i < tensor.numel(); ++i) {
    const double magnitude = std::exp2(exponent(rng));
    tensor[i] = static_cast<T>(static_cast<float>(negative(rng) ? -magnitude : magnitude));
  }
  return tensor;
}

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T>
bool same_bits(const Tensor<T>& a, const Tensor<T>& b) {
  if (!(a.shape() == b.shape())) return false;
  return a.numel() == 0 || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// [..., features] -> [rows, features]: lets the tests hand a [batch, sequence, vocabulary] model
// output to SoftmaxCrossEntropy, which takes [rows, classes] (a copy; test scaffolding only).
template <class T>
class FlattenRows {
 public:
  using device_type = mpx::Host;
  using input_type = T;
  using output_type = T;
  static constexpr std::string_view kind = "FlattenRows";

  const Tensor<T>& forward(const Tensor<T>& x) {
    input_shape_ = x.shape();
    nn::ensure_shape(output_, Shape{x.shape().rows(), x.shape().cols()});
    std::memcpy(output_.data(), x.data(), x.size_bytes());
    return output_;
  }
  const Tensor<T>* backward(const Tensor<T>& dy, bool input_grad = true) {
    if (!input_grad) return nullptr;
    nn::ensure_shape(input_grad_, input_shape_);
    std::memcpy(input_grad_.data(), dy.data(), dy.size_bytes());
    return &input_grad_;
  }
  void initialize(std::uint64_t, std::uint64_t) {}
  void set_label(const std::string&) {}
  template <class F>
  void for_each_parameter(F&&) {}

 private:
  Shape input_shape_;
  Tensor<T> output_;
  Tensor<T> input_grad_;
};

// Checks every parameter gradient of `model` (whose input is token ids) against central differences
// of sum(w * model(ids)); then a second backward must double them.
template <class Model>
void check_parameter_gradients(Model& model, const Tensor<std::int32_t>& ids, const Tensor<double>& w) {
  auto objective = [&] { return dot(w, model.forward(ids)); };
  const double terms = abs_dot(w, model.forward(ids));
  model.zero_grad();
  model.forward(ids);
  CHECK(model.backward(w, true) == nullptr);  // ids have no gradient
  const std::vector<Tensor<double>> grads = gradients_of(model);
  std::size_t index = 0;
  model.for_each_parameter([&](std::string_view name, auto& parameter) {
    check_against_differences(std::string(name), parameter.master(), grads[index++], terms, objective);
  });
  model.forward(ids);
  model.backward(w);
  const std::vector<Tensor<double>> doubled = gradients_of(model);
  for (std::size_t p = 0; p < grads.size(); ++p) {
    for (std::int64_t i = 0; i < grads[p].numel(); ++i)
      CHECK(doubled[p][i] == Approx(2 * grads[p][i]).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("Embedding's weight gradient matches finite differences of the objective in every weight entry",
          "[nn][embedding][gradient]") {
  for (const std::int64_t sequence : {1, 7}) {
    CAPTURE(sequence);
    std::mt19937_64 rng(70 + static_cast<std::uint64_t>(sequence));
    // 6 rows, ids drawn from 0..3: 21 positions of 4 ids repeat; rows 4 and 5 are never used.
    nn::Embedding<mpx::fp64> embedding(6, 5);
    embedding.initialize(3, 0);
    nn::Sequential model{std::move(embedding)};
    const Tensor<std::int32_t> ids = random_ids(Shape{3, sequence}, 4, rng);
    const Tensor<double> w = uniform_tensor(Shape{3, sequence, 5}, rng, -1.0, 1.0);
    check_parameter_gradients(model, ids, w);

    // L = sum w * y is linear in the weight: dW[v] is exactly the sum of w over v's positions.
    model.zero_grad();
    model.forward(ids);
    model.backward(w);
    const auto& grad = model.layer<0>().weight().grad();
    for (std::int64_t v = 0; v < 6; ++v) {
      for (std::int64_t c = 0; c < 5; ++c) {
        double expected = 0;
        for (std::int64_t n = 0; n < ids.numel(); ++n)
          if (ids[n] == v) expected += w[n * 5 + c];
        CHECK(grad[v * 5 + c] == Approx(expected).epsilon(1e-15));
      }
    }
    for (std::int64_t i = 4 * 5; i < 6 * 5; ++i) CHECK(grad[i] == 0.0);  // unused rows
  }
}

TEST_CASE("Embedding, PositionalEmbedding, LayerNorm and Linear: every gradient matches finite differences",
          "[nn][embedding][positional][gradient]") {
  for (const std::int64_t sequence : {1, 7}) {
    CAPTURE(sequence);
    std::mt19937_64 rng(90 + static_cast<std::uint64_t>(sequence));
    using L = nn::layers<mpx::fp64>;
    nn::Sequential model{L::embedding(6, 5), L::positional_embedding(9, 5, {.init_std = 0.5}),
                         L::layer_norm(5), L::linear(5, 4)};
    model.initialize(13);
    randomize_parameters(model, rng);  // unit gamma and zero biases would hide paths
    const Tensor<std::int32_t> ids = random_ids(Shape{3, sequence}, 4, rng);
    const Tensor<double> w = uniform_tensor(Shape{3, sequence, 4}, rng, -1.0, 1.0);
    check_parameter_gradients(model, ids, w);
    // Positions past the sequence get no gradient.
    const auto& position_grad = model.layer<1>().weight().grad();
    for (std::int64_t i = sequence * 5; i < 9 * 5; ++i) CHECK(position_grad[i] == 0.0);
  }
}

TEST_CASE("PositionalEmbedding alone: dx and dW match finite differences in fp64",
          "[nn][positional][gradient]") {
  for (const std::int64_t sequence : {1, 7}) {
    CAPTURE(sequence);
    std::mt19937_64 rng(110 + static_cast<std::uint64_t>(sequence));
    nn::PositionalEmbedding<mpx::fp64> layer(8, 6);
    randomize_parameters(layer, rng);
    Tensor<double> x = uniform_tensor(Shape{2, sequence, 6}, rng, -1.0, 1.0);
    const Tensor<double> w = uniform_tensor(Shape{2, sequence, 6}, rng, -1.0, 1.0);
    check_layer_gradients(layer, x, w);
    // [sequence, dim] is one sequence.
    Tensor<double> single = uniform_tensor(Shape{sequence, 6}, rng, -1.0, 1.0);
    const Tensor<double> w_single = uniform_tensor(Shape{sequence, 6}, rng, -1.0, 1.0);
    check_layer_gradients(layer, single, w_single);
  }
}

TEST_CASE("Embedding's weight gradient sums repeated ids in position order, the same bits every run",
          "[nn][embedding][determinism]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  std::mt19937_64 rng(5);
  nn::Embedding<P> layer(3, 33);
  // 4096 positions over 3 ids: each row sums about 1365 terms, where the order changes the bits.
  const Tensor<std::int32_t> ids = random_ids(Shape{8, 512}, 3, rng);
  const Tensor<T> dy = wide_range<T>(Shape{8, 512, 33}, rng);

  // The contract: dW[id] += (dy[p1] + dy[p2]) + ... over the id's positions p1 < p2 < ... in fp32,
  // the sum finished before it is added.
  auto reference = [&](Tensor<float>& dw) {
    Tensor<float> sums(dw.shape());
    for (std::int64_t n = 0; n < ids.numel(); ++n)
      for (std::int64_t c = 0; c < 33; ++c) sums[ids[n] * 33 + c] += static_cast<float>(dy[n * 33 + c]);
    for (std::int64_t i = 0; i < dw.numel(); ++i) dw[i] += sums[i];
  };
  Tensor<float> expected(Shape{3, 33});
  reference(expected);
  // The order shows in the bits: summing the positions backwards gives other ones.
  Tensor<float> backwards(Shape{3, 33});
  for (std::int64_t n = ids.numel() - 1; n >= 0; --n)
    for (std::int64_t c = 0; c < 33; ++c) backwards[ids[n] * 33 + c] += static_cast<float>(dy[n * 33 + c]);
  REQUIRE_FALSE(same_bits(backwards, expected));

  layer.weight().zero_grad();
  layer.forward(ids);
  CHECK(layer.backward(dy) == nullptr);
  const Tensor<float> first = layer.weight().grad().clone();
  CHECK(same_bits(first, expected));

  layer.weight().zero_grad();
  layer.forward(ids);
  layer.backward(dy);
  CHECK(same_bits(layer.weight().grad(), first));

  // A second micro-batch adds its finished sum onto the gradient: the first's plus its own, exactly.
  layer.forward(ids);
  layer.backward(dy, false);
  reference(expected);
  CHECK(same_bits(layer.weight().grad(), expected));
  Tensor<float> twice(Shape{3, 33});
  for (std::int64_t i = 0; i < twice.numel(); ++i) twice[i] = first[i] + first[i];
  CHECK(same_bits(layer.weight().grad(), twice));
}

TEST_CASE("PositionalEmbedding adds in fp32 and rounds once; its gradient sums the batch in order",
          "[nn][positional][determinism]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  std::mt19937_64 rng(6);
  nn::PositionalEmbedding<P> layer(16, 10, {.init_std = 0.3});
  layer.initialize(4, 2);
  const Tensor<T> x = uniform_tensor<T>(Shape{64, 11, 10}, rng, -2.0, 2.0);
  const auto& y = layer.forward(x);
  REQUIRE(y.shape() == x.shape());
  const auto& w = layer.weight().master();
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(w[0])>, float>, "the table stays in fp32");
  for (std::int64_t b = 0; b < 64; ++b) {
    for (std::int64_t i = 0; i < 11 * 10; ++i) {
      const std::int64_t e = b * 110 + i;
      const T expected = mpx::round_to<mpx::BFloat16>(static_cast<float>(x[e]) + w[i]);
      INFO("element " << e);
      REQUIRE(same_bits(y[e], expected));
    }
  }

  const Tensor<T> dy = wide_range<T>(x.shape(), rng);
  layer.weight().zero_grad();
  const Tensor<T>* dx = layer.backward(dy);
  CHECK(dx == &dy);  // the identity: nothing copied
  Tensor<float> expected(Shape{16, 10});
  for (std::int64_t b = 0; b < 64; ++b)
    for (std::int64_t i = 0; i < 110; ++i) expected[i] += static_cast<float>(dy[b * 110 + i]);
  CHECK(same_bits(layer.weight().grad(), expected));
  CHECK(layer.backward(dy, false) == nullptr);
}

TEMPLATE_TEST_CASE("A 16-bit Embedding's forward gives the master rows rounded to nearest-even, bit for bit",
                   "[nn][embedding]", mpx::bf16_mixed, mpx::fp16_mixed) {
  using P = TestType;
  using Tag = typename P::compute_type;
  nn::Embedding<P> layer(11, 19, {.init_std = 0.7});
  layer.initialize(3, 1);
  std::mt19937_64 rng(8);
  const Tensor<std::int32_t> ids = random_ids(Shape{2, 7}, 11, rng);
  const auto& y = layer.forward(ids);
  REQUIRE(y.shape() == Shape{2, 7, 19});
  const auto& master = layer.weight().master();
  for (std::int64_t n = 0; n < 14; ++n) {
    for (std::int64_t c = 0; c < 19; ++c) {
      INFO("position " << n << " column " << c);
      REQUIRE(same_bits(y[n * 19 + c], mpx::round_to<Tag>(master[ids[n] * 19 + c])));
    }
  }
  // Rank 1 and rank 3 ids work too.
  Tensor<std::int32_t> flat = ids.clone();
  flat.reshape(Shape{14});
  CHECK(layer.forward(flat).shape() == Shape{14, 19});
  Tensor<std::int32_t> deep = ids.clone();
  deep.reshape(Shape{2, 1, 7});
  CHECK(layer.forward(deep).shape() == Shape{2, 1, 7, 19});
}

TEST_CASE("Embedding initialises N(0, init_std^2) from Philox, reproducibly per (seed, stream)",
          "[nn][embedding]") {
  nn::Embedding<mpx::fp32> a(256, 64, {.init_std = 0.02});
  nn::Embedding<mpx::fp32> b(256, 64, {.init_std = 0.02});
  a.initialize(9, 4);
  b.initialize(9, 4);
  CHECK(same_bits(a.weight().master(), b.weight().master()));
  b.initialize(9, 5);
  CHECK_FALSE(same_bits(a.weight().master(), b.weight().master()));

  // 16384 draws: the sample mean is within 4 standard errors (4 * 0.02 / 128) of 0 and the sample
  // standard deviation within 4 of its standard errors (about 0.02 / sqrt(2 * 16384)) of 0.02.
  const auto& w = a.weight().master();
  double sum = 0;
  double squares = 0;
  for (std::int64_t i = 0; i < w.numel(); ++i) {
    sum += w[i];
    squares += static_cast<double>(w[i]) * w[i];
  }
  const double n = static_cast<double>(w.numel());
  const double mean = sum / n;
  const double stddev = std::sqrt(squares / n - mean * mean);
  CHECK(std::abs(mean) < 4 * 0.02 / std::sqrt(n));
  CHECK(std::abs(stddev - 0.02) < 4 * 0.02 / std::sqrt(2 * n));
  // Element i is normal_at(0, 0.02, seed, 2 stream, i) rounded to fp32.
  CHECK(w[77] == static_cast<float>(mpx::normal_at(0.0, 0.02, 9, 8, 77)));
}

TEST_CASE("An id out of range throws, naming the layer, the id and its position", "[nn][embedding][errors]") {
  using L = nn::layers<mpx::bf16_mixed>;
  nn::Sequential model{L::embedding(5, 4), L::positional_embedding(8, 4)};
  Tensor<std::int32_t> ids(Shape{2, 3});
  ids[5] = 7;  // [1, 2]
  REQUIRE_THROWS_AS(model.forward(ids), mpx::invalid_argument);
  REQUIRE_THROWS_WITH(model.forward(ids), Catch::Contains("layers.0 (Embedding)") &&
                                              Catch::Contains("token id 7 at position [1, 2]") &&
                                              Catch::Contains("outside [0, 5)"));
  ids[5] = 0;
  ids[1] = -1;
  REQUIRE_THROWS_WITH(model.forward(ids),
                      Catch::Contains("token id -1 at position [0, 1]") && Catch::Contains("flat index 1"));
  ids[1] = 4;  // the last row is valid
  CHECK(model.forward(ids).shape() == Shape{2, 3, 4});

  // The backend itself checks as well, forward and backward.
  Tensor<float> weight(Shape{5, 4});
  Tensor<float> out(Shape{2, 3, 4});
  ids[2] = 5;
  REQUIRE_THROWS_WITH(mpx::cpu::embedding_forward(ids, weight, out),
                      Catch::Contains("mpx::cpu::embedding_forward") && Catch::Contains("token id 5"));
  mpx::cpu::EmbeddingWorkspace workspace;
  REQUIRE_THROWS_WITH(mpx::cpu::embedding_backward(ids, out, weight, workspace),
                      Catch::Contains("mpx::cpu::embedding_backward") && Catch::Contains("token id 5"));

  nn::Embedding<mpx::fp32> fresh(5, 4);
  Tensor<float> dy(Shape{2, 3, 4});
  REQUIRE_THROWS_WITH(fresh.backward(dy), Catch::Contains("backward called before forward"));
  REQUIRE_THROWS_AS(nn::Embedding<mpx::fp32>(0, 4), mpx::invalid_argument);
}

TEST_CASE("PositionalEmbedding refuses a sequence longer than its table, naming both lengths",
          "[nn][positional][errors]") {
  using L = nn::layers<mpx::fp32>;
  nn::Sequential model{L::embedding(5, 8), L::positional_embedding(4, 8)};
  Tensor<std::int32_t> ids(Shape{2, 5});
  REQUIRE_THROWS_AS(model.forward(ids), mpx::shape_error);
  REQUIRE_THROWS_WITH(model.forward(ids), Catch::Contains("layers.1 (PositionalEmbedding)") &&
                                              Catch::Contains("sequence length 5") &&
                                              Catch::Contains("max_positions = 4"));
  Tensor<std::int32_t> fits(Shape{2, 4});
  CHECK(model.forward(fits).shape() == Shape{2, 4, 8});

  nn::PositionalEmbedding<mpx::fp32> layer(4, 8);
  Tensor<float> narrow(Shape{2, 3, 7});
  REQUIRE_THROWS_WITH(layer.forward(narrow), Catch::Contains("[2, 3, 7]") && Catch::Contains("8"));
  Tensor<float> dy(Shape{2, 3, 8});
  REQUIRE_THROWS_WITH(layer.backward(dy), Catch::Contains("backward called before forward"));
}

TEST_CASE("Embeddings have PyTorch's parameter names, layouts and argument names", "[nn][embedding]") {
  using L = nn::layers<mpx::bf16_mixed>;
  nn::Sequential model{L::embedding(65, 16), L::positional_embedding(32, 16), L::layer_norm(16),
                       L::linear(16, 65)};
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  model.for_each_parameter([&](std::string_view name, auto& parameter) {
    names.emplace_back(name);
    shapes.push_back(parameter.shape());
  });
  CHECK(names == std::vector<std::string>{"layers.0.weight", "layers.1.weight", "layers.2.weight",
                                          "layers.2.bias", "layers.3.weight", "layers.3.bias"});
  CHECK(shapes[0] == Shape{65, 16});
  CHECK(shapes[1] == Shape{32, 16});
  const std::string json = mpx::io::model_json(model);
  CHECK_THAT(json, Catch::Contains(R"({"kind":"Embedding","precision":"bf16_mixed","num_embeddings":65,)"
                                   R"("embedding_dim":16})"));
  CHECK_THAT(json,
             Catch::Contains(R"({"kind":"PositionalEmbedding","precision":"bf16_mixed","max_positions":32,)"
                             R"("embedding_dim":16})"));
  // The two tables draw from different streams: were they the same, the positions (std 0.02) would
  // be the tokens (std 1) times 0.02.
  model.initialize(1);
  const float token = model.layer<0>().weight().master()[0];
  const float position = model.layer<1>().weight().master()[0];
  CHECK(std::abs(0.02 * token - position) > 1e-4);
}

TEMPLATE_TEST_CASE("A Trainer fits a token model whose next token depends on the position",
                   "[nn][embedding][positional][trainer]", mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed,
                   mpx::bf16_pure) {
  using P = TestType;
  using T = mpx::compute_t<P>;
  using L = nn::layers<P>;
  constexpr std::int64_t vocabulary = 6;
  constexpr std::int64_t width = 16;
  nn::Sequential model{L::embedding(vocabulary, width), L::positional_embedding(8, width, {.init_std = 0.5}),
                       L::layer_norm(width), L::linear(width, vocabulary), FlattenRows<T>{}};
  model.initialize(2);
  auto loss = L::softmax_cross_entropy();
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2});
  mpx::Trainer trainer(model, loss, optimizer);

  // The sequence 0 1 0 2 0 3 0 4, repeated: what follows a 0 is told only by its position.
  const std::int32_t pattern[] = {0, 1, 0, 2, 0, 3, 0, 4};
  Tensor<std::int32_t> ids(Shape{2, 8});
  Tensor<std::int32_t> targets(Shape{16});
  for (std::int64_t i = 0; i < 16; ++i) {
    ids[i] = pattern[i % 8];
    targets[i] = pattern[(i + 1) % 8];
  }
  const double first = trainer.step(ids, targets).loss;
  CHECK(first > 1.0);  // about ln 6 at the start
  double last = first;
  for (int i = 0; i < 300; ++i) last = trainer.step(ids, targets).loss;
  CAPTURE(first, last);
  CHECK(last < 0.05);

  // Evaluation: the model predicts the whole sequence.
  const auto& logits = model.forward(ids);
  for (std::int64_t row = 0; row < 16; ++row) {
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < vocabulary; ++c)
      if (static_cast<float>(logits[row * vocabulary + c]) >
          static_cast<float>(logits[row * vocabulary + best]))
        best = c;
    CHECK(best == targets[row]);
  }
}

TEST_CASE("The factory names the embeddings of a GPU model without the CUDA backend", "[nn][embedding]") {
  // layers<P, Cuda> is usable in CPU-only code (its signatures need no complete Backend<Cuda>).
  using L = nn::layers<mpx::fp32, mpx::Cuda>;
  static_assert(std::is_same_v<decltype(L::embedding(5, 3)), nn::Embedding<mpx::fp32, mpx::Cuda>>);
  static_assert(
      std::is_same_v<decltype(L::positional_embedding(5, 3)), nn::PositionalEmbedding<mpx::fp32, mpx::Cuda>>);
  static_assert(
      std::is_same_v<decltype(nn::layers<mpx::bf16_mixed>::embedding(5, 3)), nn::Embedding<mpx::bf16_mixed>>);
  SUCCEED();
}

}  // namespace MPX_UNITY_ID
}  // namespace
