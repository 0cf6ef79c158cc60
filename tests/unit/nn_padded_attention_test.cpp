// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Attention over padded sequences (nn::PaddedSelfAttention inside nn::PaddedSequences), the
// encoder's key-padding mask: each sequence's real positions compute what the sequence alone
// computes, the padding gets no gradient, a sequence of length 0 gives finite values, the gradients
// match finite differences, and every misuse is an error that names it. The token types the model
// hands its TokenTypeEmbedding layers, likewise.

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "mpx/backend/cpu/backend.hpp"
#include "mpx/error.hpp"
#include "mpx/io/weights.hpp"
#include "mpx/nn/first_token.hpp"
#include "mpx/nn/gather_tokens.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/padded_sequences.hpp"
#include "mpx/nn/residual.hpp"
#include "mpx/nn/self_attention.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/nn/token_type_embedding.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/tensor.hpp"

#include "../support/error_matchers.hpp"
#include "../support/gradient_check.hpp"
#include "../support/temp_dir.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace nn = mpx::nn;
using mpx::Shape;
using mpx::Tensor;
using L64 = nn::layers<mpx::fp64>;

// A pre-LN encoder block: x + attention(LayerNorm(x)), padded or not.
auto padded_block(std::int64_t width, std::int64_t heads) {
  return nn::Residual{nn::Sequential{L64::layer_norm(width), L64::padded_self_attention(width, heads)}};
}
auto plain_block(std::int64_t width, std::int64_t heads) {
  return nn::Residual{nn::Sequential{L64::layer_norm(width), L64::self_attention(width, heads)}};
}

// Copies every parameter of `from` into `to`, in their common order (the same names).
template <class From, class To>
void copy_parameters(From& from, To& to) {
  std::vector<const Tensor<double>*> masters;
  std::vector<std::string> names;
  from.for_each_parameter([&](std::string_view name, auto& parameter) {
    masters.push_back(&parameter.master());
    names.emplace_back(name);
  });
  std::size_t index = 0;
  to.for_each_parameter([&](std::string_view name, auto& parameter) {
    REQUIRE(index < masters.size());
    CHECK(name == names[index]);
    for (std::int64_t i = 0; i < parameter.master().numel(); ++i)
      parameter.master()[i] = (*masters[index])[i];
    parameter.refresh_compute_copy();
    ++index;
  });
  REQUIRE(index == masters.size());
}

template <class Model>
std::vector<Tensor<double>> gradients(Model& model) {
  std::vector<Tensor<double>> out;
  model.for_each_parameter(
      [&](std::string_view, auto& parameter) { out.push_back(parameter.grad().clone()); });
  return out;
}

TEST_CASE(
    "PaddedSelfAttention: each sequence's real positions compute what the sequence alone computes, "
    "the padding gets no gradient, and a sequence of length 0 stays finite (fp64)",
    "[nn][attention][padding]") {
  constexpr std::int64_t B = 4, T = 6, C = 12, H = 2;
  const std::vector<std::int32_t> lengths = {6, 3, 1, 0};
  std::mt19937_64 rng(4700);
  nn::PaddedSequences model{padded_block(C, H)};
  mpx::test::randomize_parameters(model, rng);
  auto alone = plain_block(C, H);
  copy_parameters(model, alone);

  const Tensor<double> x = mpx::test::uniform_tensor<double>(Shape{B, T, C}, rng, -1.0, 1.0);
  Tensor<double> dy = mpx::test::uniform_tensor<double>(Shape{B, T, C}, rng, -1.0, 1.0);
  for (std::int64_t b = 0; b < B; ++b) {  // the loss ignores the padding
    for (std::int64_t t = lengths[static_cast<std::size_t>(b)]; t < T; ++t) {
      for (std::int64_t i = 0; i < C; ++i) dy[(b * T + t) * C + i] = 0.0;
    }
  }
  model.zero_grad();
  model.set_lengths(lengths);
  const Tensor<double> y = model.forward(x).clone();
  const Tensor<double> dx = model.backward(dy, true)->clone();
  const std::vector<Tensor<double>> batch_gradients = gradients(model);

  mpx::test::zero_gradients(alone);
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t n = lengths[static_cast<std::size_t>(b)];
    INFO("sequence " << b << ", length " << n);
    for (std::int64_t t = 0; t < T; ++t) {
      for (std::int64_t i = 0; i < C; ++i) {
        const std::int64_t index = (b * T + t) * C + i;
        REQUIRE(std::isfinite(y[index]));
        REQUIRE(std::isfinite(dx[index]));
        if (t >= n) CHECK(dx[index] == 0.0);  // a padded position gets no gradient, exactly
      }
    }
    if (n == 0) continue;
    Tensor<double> x_alone(Shape{1, n, C}), dy_alone(Shape{1, n, C});
    for (std::int64_t i = 0; i < n * C; ++i) {
      x_alone[i] = x[b * T * C + i];
      dy_alone[i] = dy[b * T * C + i];
    }
    const Tensor<double>& y_alone = alone.forward(x_alone);
    const Tensor<double>& dx_alone = *alone.backward(dy_alone, true);
    for (std::int64_t i = 0; i < n * C; ++i) {
      CHECK(y[b * T * C + i] == Approx(y_alone[i]).epsilon(1e-12).margin(1e-13));
      CHECK(dx[b * T * C + i] == Approx(dx_alone[i]).epsilon(1e-11).margin(1e-12));
    }
  }
  // The batch's gradients are the sum of the sequences' (the alone block accumulated them).
  const std::vector<Tensor<double>> summed = gradients(alone);
  REQUIRE(summed.size() == batch_gradients.size());
  for (std::size_t p = 0; p < summed.size(); ++p) {
    for (std::int64_t i = 0; i < summed[p].numel(); ++i) {
      INFO("parameter " << p << ", element " << i);
      CHECK(batch_gradients[p][i] == Approx(summed[p][i]).epsilon(1e-10).margin(1e-12));
    }
  }
}

TEST_CASE("PaddedSelfAttention in a padded encoder block: gradients match finite differences in fp64",
          "[nn][attention][padding][gradient]") {
  std::mt19937_64 rng(4701);
  nn::PaddedSequences model{padded_block(12, 3)};
  mpx::test::randomize_parameters(model, rng);
  const std::vector<std::int32_t> lengths = {5, 2, 0};
  model.set_lengths(lengths);
  Tensor<double> x = mpx::test::uniform_tensor<double>(Shape{3, 5, 12}, rng, -1.0, 1.0);
  const Tensor<double> w = mpx::test::uniform_tensor<double>(Shape{3, 5, 12}, rng, -1.0, 1.0);
  mpx::test::check_layer_gradients(model, x, w);
}

TEST_CASE("PaddedSelfAttention in bf16 and fp16: a batch with a sequence of length 0 stays finite",
          "[nn][attention][padding]") {
  const auto run = [](auto policy) {
    using P = decltype(policy);
    using L = nn::layers<P>;
    using T = mpx::compute_t<P>;
    std::mt19937_64 rng(4702);
    nn::PaddedSequences model{
        nn::Residual{nn::Sequential{L::layer_norm(16), L::padded_self_attention(16, 2)}}};
    const std::vector<std::int32_t> lengths = {0, 4, 7};
    model.set_lengths(lengths);
    const Tensor<T> x = mpx::test::uniform_tensor<T>(Shape{3, 7, 16}, rng, -1.0, 1.0);
    const Tensor<T> dy = mpx::test::uniform_tensor<T>(Shape{3, 7, 16}, rng, -1.0, 1.0);
    const Tensor<T>& y = model.forward(x);
    for (std::int64_t i = 0; i < y.numel(); ++i) REQUIRE(std::isfinite(static_cast<float>(y[i])));
    const Tensor<T>& dx = *model.backward(dy, true);
    for (std::int64_t i = 0; i < dx.numel(); ++i) REQUIRE(std::isfinite(static_cast<float>(dx[i])));
  };
  run(mpx::bf16_mixed{});
  run(mpx::fp16_mixed{});
}

TEST_CASE("PaddedSequences and PaddedSelfAttention: names, descriptions and every misuse named",
          "[nn][attention][padding]") {
  using Padded = nn::PaddedSelfAttention<mpx::fp64>;
  STATIC_REQUIRE(Padded::kind == "PaddedSelfAttention");
  STATIC_REQUIRE(Padded::padding == nn::KeyPadding::ByLength);
  STATIC_REQUIRE(nn::SelfAttention<mpx::fp64>::padding == nn::KeyPadding::None);

  nn::PaddedSequences model{padded_block(8, 2)};
  auto plain = plain_block(8, 2);
  std::vector<std::string> names, plain_names;
  model.for_each_parameter([&](std::string_view name, auto&) { names.emplace_back(name); });
  plain.for_each_parameter([&](std::string_view name, auto&) { plain_names.emplace_back(name); });
  CHECK(names == plain_names);  // the lengths are an input: the weights keep the body's names
  std::int64_t plain_count = 0;
  plain.for_each_parameter(
      [&](std::string_view, auto& parameter) { plain_count += parameter.master().numel(); });
  CHECK(model.parameter_count() == plain_count);

  const Tensor<double> x(Shape{2, 4, 8});
  CHECK_THROWS_WITH(model.forward(x), Catch::Contains("set_lengths(...) must come before forward"));
  const std::vector<std::int32_t> negative = {3, -1};
  CHECK_THROWS_AS(model.set_lengths(negative), mpx::invalid_argument);
  CHECK_THROWS_WITH(model.set_lengths(negative), Catch::Contains("sequence 1 has length -1"));
  const std::vector<std::int32_t> three = {1, 2, 3};
  model.set_lengths(three);
  CHECK_THROWS_AS(model.forward(x), mpx::shape_error);
  CHECK_THROWS_WITH(model.forward(x), Catch::Contains("3 lengths set"));
  const std::vector<std::int32_t> too_long = {4, 5};
  model.set_lengths(too_long);
  CHECK_THROWS_WITH(model.forward(x),
                    Catch::Contains("a sequence of length 5 in a batch padded to 4 positions"));

  // Outside a PaddedSequences model the layer has no lengths, and says where they come from.
  Padded alone(8, 2);
  CHECK_THROWS_WITH(alone.forward(x),
                    Catch::Contains("no sequence lengths") && Catch::Contains("nn::PaddedSequences model"));
  // A body without a padded attention has nothing to read the lengths.
  CHECK_THROWS_AS(nn::PaddedSequences{nn::Sequential{L64::linear(8, 8)}}, mpx::invalid_argument);
  CHECK_THROWS_WITH(nn::PaddedSequences{nn::Sequential{L64::linear(8, 8)}},
                    Catch::Contains("has no PaddedSelfAttention layer"));
}

TEST_CASE("PaddedSequences saves and loads its weights as its body does, and names a split batch",
          "[nn][attention][padding]") {
  std::mt19937_64 rng(4707);
  nn::PaddedSequences model{padded_block(8, 2)};
  mpx::test::randomize_parameters(model, rng);
  const mpx::test::TempDir dir("mpx_padded_sequences");
  mpx::io::save_weights(model, dir / "padded.safetensors");
  nn::PaddedSequences loaded{padded_block(8, 2)};
  mpx::io::load_weights(loaded, dir / "padded.safetensors");
  const std::vector<std::int32_t> lengths = {3, 1};
  model.set_lengths(lengths);
  loaded.set_lengths(lengths);
  const Tensor<double> x = mpx::test::uniform_tensor<double>(Shape{2, 3, 8}, rng, -1.0, 1.0);
  const Tensor<double> y = model.forward(x).clone();
  const Tensor<double>& y_loaded = loaded.forward(x);
  for (std::int64_t i = 0; i < y.numel(); ++i) REQUIRE(y_loaded[i] == y[i]);
  // The lengths belong to the whole batch: half of it (a micro-batch) is refused with the reason.
  const Tensor<double> half(Shape{1, 3, 8});
  CHECK_THROWS_WITH(model.forward(half), Catch::Contains("not split across micro-batches"));
}

TEST_CASE("FirstToken: position 0 of each sequence forward, dy there and zeros elsewhere backward",
          "[nn][padding]") {
  std::mt19937_64 rng(4703);
  nn::FirstToken<mpx::bf16_mixed> layer;
  using T = mpx::compute_t<mpx::bf16_mixed>;
  const Tensor<T> x = mpx::test::uniform_tensor<T>(Shape{3, 5, 4}, rng, -1.0, 1.0);
  const Tensor<T>& y = layer.forward(x);
  REQUIRE(y.shape() == Shape{3, 4});
  for (std::int64_t n = 0; n < 3; ++n) {
    for (std::int64_t c = 0; c < 4; ++c) CHECK(y[n * 4 + c] == x[n * 5 * 4 + c]);
  }
  const Tensor<T> dy = mpx::test::uniform_tensor<T>(Shape{3, 4}, rng, -1.0, 1.0);
  const Tensor<T>& dx = *layer.backward(dy, true);
  REQUIRE(dx.shape() == x.shape());
  for (std::int64_t i = 0; i < dx.numel(); ++i) {
    const std::int64_t n = i / 20, t = (i / 4) % 5, c = i % 4;
    CHECK(dx[i] == (t == 0 ? dy[n * 4 + c] : T(0)));
  }
  CHECK(layer.backward(dy, false) == nullptr);
  const Tensor<T> empty(Shape{3, 0, 4}), rows(Shape{3, 4});
  CHECK_THROWS_WITH(layer.forward(empty), Catch::Contains("expected sequences [batch, sequence, features]"));
  CHECK_THROWS_AS(layer.forward(rows), mpx::shape_error);
  STATIC_REQUIRE(nn::FirstToken<mpx::fp32>::kind == "FirstToken");
}

TEST_CASE("gather_rows and its backward: the rows asked for, zeros elsewhere; every misuse named",
          "[nn][padding]") {
  std::mt19937_64 rng(4705);
  const Tensor<float> x = mpx::test::uniform_tensor<float>(Shape{2, 3, 4}, rng, -1.0, 1.0);  // 6 rows
  Tensor<std::int32_t> rows(Shape{3});
  rows[0] = 5;
  rows[1] = 0;
  rows[2] = 2;
  Tensor<float> y(Shape{3, 4});
  mpx::cpu::gather_rows(x, rows, y);
  for (std::int64_t m = 0; m < 3; ++m) {
    for (std::int64_t c = 0; c < 4; ++c) CHECK(y[m * 4 + c] == x[rows[m] * 4 + c]);
  }
  Tensor<float> dx(Shape{2, 3, 4});
  dx.fill(7.0f);  // written whole
  mpx::cpu::gather_rows_backward(y, rows, dx);
  for (std::int64_t r = 0; r < 6; ++r) {
    const std::int64_t m = r == 5 ? 0 : r == 0 ? 1 : r == 2 ? 2 : -1;
    for (std::int64_t c = 0; c < 4; ++c) CHECK(dx[r * 4 + c] == (m < 0 ? 0.0f : y[m * 4 + c]));
  }
  rows[2] = 6;
  CHECK_THROWS_WITH(mpx::cpu::gather_rows(x, rows, y),
                    Catch::Contains("mpx::cpu::gather_rows: row index 2 is 6, outside [0, 6)"));
  rows[2] = -1;
  CHECK_THROWS_AS(mpx::cpu::gather_rows_backward(y, rows, dx), mpx::invalid_argument);
  Tensor<float> wrong(Shape{3, 5});
  CHECK_THROWS_AS(mpx::cpu::gather_rows(x, rows, wrong), mpx::shape_error);
}

TEST_CASE(
    "GatherTokens in a masked-LM model: the chosen tokens forward, gradients match finite "
    "differences in fp64, misuse named",
    "[nn][attention][padding][gradient]") {
  std::mt19937_64 rng(4706);
  nn::PaddedSequences model{nn::Sequential{padded_block(8, 2), L64::gather_tokens(), L64::linear(8, 5)}};
  mpx::test::randomize_parameters(model, rng);
  const std::vector<std::int32_t> lengths = {4, 2, 3};
  const std::vector<std::int32_t> rows = {1, 5, 8, 11, 0};  // rows n T + t of [3, 4] tokens, any order
  model.set_lengths(lengths);
  model.select_tokens(rows);
  Tensor<double> x = mpx::test::uniform_tensor<double>(Shape{3, 4, 8}, rng, -1.0, 1.0);
  REQUIRE(model.forward(x).shape() == Shape{5, 5});
  const Tensor<double> w = mpx::test::uniform_tensor<double>(Shape{5, 5}, rng, -1.0, 1.0);
  mpx::test::check_layer_gradients(model, x, w);

  const std::vector<std::int32_t> repeated = {1, 5, 1}, negative = {-2};
  CHECK_THROWS_WITH(model.select_tokens(repeated), Catch::Contains("token row 1 is chosen twice"));
  CHECK_THROWS_WITH(model.select_tokens(negative), Catch::Contains("token row -2 is negative"));
  const std::vector<std::int32_t> beyond = {12};
  model.select_tokens(beyond);
  CHECK_THROWS_WITH(model.forward(x), Catch::Contains("row index 0 is 12, outside [0, 12)"));
  nn::GatherTokens<mpx::fp64> alone;
  CHECK_THROWS_WITH(alone.forward(x), Catch::Contains("no tokens chosen"));
  STATIC_REQUIRE(nn::GatherTokens<mpx::fp64>::kind == "GatherTokens");
}

TEST_CASE("A padded encoder's [CLS] classifier: gradients match finite differences in fp64",
          "[nn][attention][padding][gradient]") {
  std::mt19937_64 rng(4704);
  nn::PaddedSequences model{
      nn::Sequential{padded_block(8, 2), L64::layer_norm(8), L64::first_token(), L64::linear(8, 3)}};
  mpx::test::randomize_parameters(model, rng);
  const std::vector<std::int32_t> lengths = {4, 1, 3};
  model.set_lengths(lengths);
  Tensor<double> x = mpx::test::uniform_tensor<double>(Shape{3, 4, 8}, rng, -1.0, 1.0);
  const Tensor<double> w = mpx::test::uniform_tensor<double>(Shape{3, 3}, rng, -1.0, 1.0);
  mpx::test::check_layer_gradients(model, x, w);
}

TEST_CASE("TokenTypeEmbedding adds each token's type row (type 0 until types are set); every misuse named",
          "[nn][embedding][padding]") {
  nn::PaddedSequences model{
      nn::Sequential{L64::token_type_embedding(3, 2), L64::padded_self_attention(2, 1)}};
  auto& types = model.body().layer<0>();
  CHECK(types.describe().size() == 2);
  for (std::int64_t i = 0; i < 6; ++i)
    types.weight().master()[i] = double(10 * (i / 2) + i % 2);  // row r: 10r, 10r+1
  types.weight().refresh_compute_copy();
  const std::vector<std::int32_t> lengths = {2, 1};
  model.set_lengths(lengths);
  Tensor<double> x(Shape{2, 2, 2});
  for (std::int64_t i = 0; i < 8; ++i) x[i] = 0.5 * double(i);
  const auto expect_rows = [&](const std::vector<std::int32_t>& rows) {
    const Tensor<double>& y = types.forward(x);
    for (std::int64_t token = 0; token < 4; ++token) {
      for (std::int64_t c = 0; c < 2; ++c) {
        INFO("token " << token << ", feature " << c);
        CHECK(y[2 * token + c] == x[2 * token + c] + double(10 * rows[std::size_t(token)] + c));
      }
    }
  };
  model.forward(x);  // binds nothing new: the types are read by the layer itself
  expect_rows({0, 0, 0, 0});
  const std::vector<std::int32_t> set = {2, 1, 0, 2};
  model.set_token_types(set);
  model.forward(x);
  expect_rows(set);
  // Backward: dW[type] sums dy over that type's tokens, dx is dy.
  Tensor<double> dy(Shape{2, 2, 2});
  for (std::int64_t i = 0; i < 8; ++i) dy[i] = double(i + 1);
  model.zero_grad();
  types.forward(x);
  const Tensor<double>* dx = types.backward(dy);
  REQUIRE(dx == &dy);
  const auto& dw = types.weight().grad();
  CHECK(dw[0] == 5.0);  // token 2
  CHECK(dw[1] == 6.0);
  CHECK(dw[2] == 3.0);  // token 1
  CHECK(dw[3] == 4.0);
  CHECK(dw[4] == 1.0 + 7.0);  // tokens 0 and 3
  CHECK(dw[5] == 2.0 + 8.0);
  model.set_token_types({});
  model.forward(x);
  expect_rows({0, 0, 0, 0});

  const std::vector<std::int32_t> too_few = {1, 1, 1}, too_large = {0, 3, 0, 0}, negative = {0, -1};
  model.set_token_types(too_few);
  CHECK_THROWS_MATCHES(model.forward(x), mpx::shape_error,
                       mpx::test::MessageContains({"3 token types set for x [2, 2, 2] (4 tokens"}));
  model.set_token_types(too_large);
  CHECK_THROWS_MATCHES(model.forward(x), mpx::invalid_argument,
                       mpx::test::MessageContains({"token id 3 at position [0, 1]", "outside [0, 3)"}));
  CHECK_THROWS_MATCHES(model.set_token_types(negative), mpx::invalid_argument,
                       mpx::test::MessageContains({"token 1 has type -1"}));
  nn::PaddedSequences untyped{nn::Sequential{L64::padded_self_attention(2, 1)}};
  CHECK_THROWS_MATCHES(untyped.set_token_types(set), mpx::invalid_argument,
                       mpx::test::MessageContains({"no TokenTypeEmbedding layer"}));
  CHECK_THROWS_AS(L64::token_type_embedding(0, 2), mpx::invalid_argument);
}

TEST_CASE("An encoder with token types: gradients match finite differences in fp64",
          "[nn][embedding][padding][gradient]") {
  std::mt19937_64 rng(4705);
  nn::PaddedSequences model{nn::Sequential{L64::token_type_embedding(2, 8), padded_block(8, 2),
                                           L64::first_token(), L64::linear(8, 3)}};
  mpx::test::randomize_parameters(model, rng);
  const std::vector<std::int32_t> lengths = {4, 2, 3}, types = {0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0};
  model.set_lengths(lengths);
  model.set_token_types(types);
  Tensor<double> x = mpx::test::uniform_tensor<double>(Shape{3, 4, 8}, rng, -1.0, 1.0);
  const Tensor<double> w = mpx::test::uniform_tensor<double>(Shape{3, 3}, rng, -1.0, 1.0);
  mpx::test::check_layer_gradients(model, x, w);
}

}  // namespace MPX_UNITY_ID
}  // namespace
