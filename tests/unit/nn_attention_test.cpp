// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Self-attention on the CPU, causal (CausalSelfAttention) and bidirectional (SelfAttention): fp64
// gradients against central differences (alone and inside a pre-LN residual block), the
// fp32/bf16/fp16 forward against a naive fp64 reference within bounds derived below, the fp32/bf16
// gradients against the fp64 layer's, fp16 with q.k beyond fp16's range, the masked softmax of both
// masks against fp64 (key counts, fully masked rows), the causal property, a channels-last image
// against the same values as a sequence, and the batched GEMM against a loop of single GEMMs.
//
// Error bound of the mixed-precision forward (u = unit roundoff of the compute type: 2^-24 fp32,
// 2^-11 fp16, 2^-8 bf16; e = 2^-24, fp32's; first order, then a factor 1.25 for the higher-order
// terms). The reference runs in fp64 on the layer's own operands: the input x and the compute copies
// of the weights, so what it measures is the rounding inside the layer. Per element:
//   qkv      e_q  = u |q| + C e sum_i |x_i W_i|           (fp32 sums over C, one rounding)
//   scores   e_s  = a sum_i (e_qi |k_i| + |q_i| e_ki) + d e a sum_i |q_i k_i| + e |s|
//                   (a = 1/sqrt(d) rounded to float: the e |s| term)
//   softmax  e_p  = p_j (e_sj + sum_k p_k e_sk) + (T + 4) e p_j + u p_j   (fp32 math, P rounded)
//   P V      e_O  = sum_j (e_pj |v_j| + p_j e_vj) + T e sum_j p_j |v_j| + u |O|
//   proj     e_y  = sum_i e_Oi |W_i| + C e sum_i |O_i W_i| + u |y|.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "mpx/backend/cpu/attention.hpp"
#include "mpx/backend/cpu/backend.hpp"
#include "mpx/backend/cpu/gemm.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/nn/causal_self_attention.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/layer_norm.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/residual.hpp"
#include "mpx/nn/self_attention.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/tensor.hpp"

#include "../support/gradient_check.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

namespace nn = mpx::nn;
using mpx::Shape;
using mpx::Tensor;

template <class P>
using Attention = nn::CausalSelfAttention<P>;
using mpx::AttentionMask;

constexpr double k_fp32_roundoff = 0x1p-24;

template <class T>
double as_double(T value) {
  return mpx::test::widen(value);
}

/// The unit roundoff of a compute type.
template <class T>
constexpr double unit_roundoff() {
  if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
    return 0x1p-8;
  } else if constexpr (std::is_same_v<T, Eigen::half>) {
    return 0x1p-11;
  } else if constexpr (std::is_same_v<T, float>) {
    return 0x1p-24;
  } else {
    return 0x1p-53;
  }
}

/// The naive fp64 forward (loops: projections, scores, mask, softmax, weighted sum, projection) on
/// the layer's own operands, and the first-order bound on the layer's error from the file comment.
/// The mask is the layer's (keys 0..t, or all keys); an input [B, d1, ..., dk, C] is the sequence of
/// its d1 * ... * dk positions.
struct Reference {
  std::vector<double> y;      // [B, T, C]
  std::vector<double> bound;  // |layer - y| must not exceed this, per element
};

/// When `one_hot` is set, every row's softmax is taken to be one-hot within 1e-8 (the caller has
/// checked that the top score leads the next by far more than e_s), so e_p = 1e-8 + u p_j.
template <class Layer, class T>
Reference reference_forward(Layer& layer, const Tensor<T>& x, bool one_hot = false) {
  const double u = unit_roundoff<T>();
  const double e = k_fp32_roundoff;
  constexpr bool causal = Layer::mask == AttentionMask::Causal;
  const std::int64_t B = x.shape()[0], C = x.shape().cols(), S = x.numel() / (B * C);
  const std::int64_t H = layer.num_heads(), d = layer.head_dim();
  const auto& wqkv = layer.qkv().weight().compute();
  const auto& wproj = layer.proj().weight().compute();
  const auto* bqkv = layer.qkv().bias();
  const auto* bproj = layer.proj().bias();
  const double a = static_cast<double>(static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))));

  // qkv[b, t, o] and its error bound.
  std::vector<double> qkv(static_cast<std::size_t>(B * S * 3 * C)), e_qkv(qkv.size());
  for (std::int64_t r = 0; r < B * S; ++r) {
    for (std::int64_t o = 0; o < 3 * C; ++o) {
      double sum = bqkv != nullptr ? as_double(bqkv->compute()[o]) : 0.0;
      double terms = std::abs(sum);
      for (std::int64_t i = 0; i < C; ++i) {
        const double product = as_double(x[r * C + i]) * as_double(wqkv[o * C + i]);
        sum += product;
        terms += std::abs(product);
      }
      qkv[static_cast<std::size_t>(r * 3 * C + o)] = sum;
      e_qkv[static_cast<std::size_t>(r * 3 * C + o)] =
          u * std::abs(sum) + static_cast<double>(C + 1) * e * terms;
    }
  }
  const auto at = [&](const std::vector<double>& values, std::int64_t b, std::int64_t t, std::int64_t group,
                      std::int64_t h, std::int64_t i) {
    return values[static_cast<std::size_t>((b * S + t) * 3 * C + group * C + h * d + i)];
  };

  // O = softmax(mask(a q k^T)) v per head, merged to [B, T, C], with its error bound.
  std::vector<double> merged(static_cast<std::size_t>(B * S * C)), e_merged(merged.size());
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t h = 0; h < H; ++h) {
      for (std::int64_t t = 0; t < S; ++t) {
        const std::int64_t keys = causal ? t + 1 : S;  // the mask: keys 0..t, or every key
        std::vector<double> s(static_cast<std::size_t>(keys)), e_s(s.size()), p(s.size()), e_p(s.size());
        double max = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < keys; ++j) {
          double dot = 0, magnitude = 0, e_dot = 0;
          for (std::int64_t i = 0; i < d; ++i) {
            const double q = at(qkv, b, t, 0, h, i), k = at(qkv, b, j, 1, h, i);
            dot += q * k;
            magnitude += std::abs(q * k);
            e_dot += at(e_qkv, b, t, 0, h, i) * std::abs(k) + std::abs(q) * at(e_qkv, b, j, 1, h, i);
          }
          s[static_cast<std::size_t>(j)] = a * dot;
          e_s[static_cast<std::size_t>(j)] =
              a * e_dot + static_cast<double>(d) * e * a * magnitude + e * a * std::abs(dot);
          max = std::max(max, a * dot);
        }
        double sum = 0;
        for (std::int64_t j = 0; j < keys; ++j) sum += std::exp(s[static_cast<std::size_t>(j)] - max);
        double mean_e_s = 0;
        for (std::int64_t j = 0; j < keys; ++j) {
          p[static_cast<std::size_t>(j)] = std::exp(s[static_cast<std::size_t>(j)] - max) / sum;
          mean_e_s += p[static_cast<std::size_t>(j)] * e_s[static_cast<std::size_t>(j)];
        }
        for (std::int64_t j = 0; j < keys; ++j) {
          const double pj = p[static_cast<std::size_t>(j)];
          e_p[static_cast<std::size_t>(j)] = one_hot ? 1e-8 + u * pj
                                                     : pj * (e_s[static_cast<std::size_t>(j)] + mean_e_s) +
                                                           static_cast<double>(S + 4) * e * pj + u * pj;
        }
        for (std::int64_t i = 0; i < d; ++i) {
          double o = 0, e_o = 0, terms = 0;
          for (std::int64_t j = 0; j < keys; ++j) {
            const double v = at(qkv, b, j, 2, h, i);
            const double pj = p[static_cast<std::size_t>(j)];
            o += pj * v;
            terms += pj * std::abs(v);
            e_o += e_p[static_cast<std::size_t>(j)] * std::abs(v) + pj * at(e_qkv, b, j, 2, h, i);
          }
          const auto index = static_cast<std::size_t>((b * S + t) * C + h * d + i);
          merged[index] = o;
          e_merged[index] = e_o + static_cast<double>(S) * e * terms + u * std::abs(o);
        }
      }
    }
  }

  Reference out;
  out.y.resize(merged.size());
  out.bound.resize(merged.size());
  for (std::int64_t r = 0; r < B * S; ++r) {
    for (std::int64_t o = 0; o < C; ++o) {
      double sum = bproj != nullptr ? as_double(bproj->compute()[o]) : 0.0;
      double terms = std::abs(sum), e_y = 0;
      for (std::int64_t i = 0; i < C; ++i) {
        const double w = as_double(wproj[o * C + i]);
        sum += merged[static_cast<std::size_t>(r * C + i)] * w;
        terms += std::abs(merged[static_cast<std::size_t>(r * C + i)] * w);
        e_y += e_merged[static_cast<std::size_t>(r * C + i)] * std::abs(w);
      }
      out.y[static_cast<std::size_t>(r * C + o)] = sum;
      out.bound[static_cast<std::size_t>(r * C + o)] =
          1.25 * (e_y + static_cast<double>(C + 1) * e * terms + u * std::abs(sum));
    }
  }
  return out;
}

/// Every parameter uniform on [-bound, bound): with bound = 2 / sqrt(C) the scores are O(1), as in a
/// trained model, so the first-order error bound holds (its second-order terms are below 2% of it).
template <class Layer>
void randomize_scaled(Layer& layer, std::mt19937_64& rng, double bound) {
  std::uniform_real_distribution<double> distribution(-bound, bound);
  layer.for_each_parameter([&](const auto&, auto& parameter) {
    auto& master = parameter.master();
    for (std::int64_t i = 0; i < master.numel(); ++i) master[i] = static_cast<float>(distribution(rng));
    parameter.refresh_compute_copy();
  });
}

template <class T>
Tensor<T> random_input(const Shape& shape, std::mt19937_64& rng, double low = -1.0, double high = 1.0) {
  return mpx::test::uniform_tensor<T>(shape, rng, low, high);
}

/// The layer's output against the fp64 reference, element by element within the derived bound; the
/// bound must also be tight enough to mean something: below `max_u` units of roundoff of the largest
/// output. `input` is [batch, sequence, embed] or an image [batch, height, width, embed].
template <class P, AttentionMask Mask = AttentionMask::Causal>
void check_forward_against_reference(const Shape& input, std::int64_t heads, double max_u,
                                     std::uint64_t seed) {
  using T = mpx::compute_t<P>;
  const std::int64_t embed = input.cols();
  std::mt19937_64 rng(seed);
  nn::BasicSelfAttention<P, mpx::Host, Mask> layer(embed, heads);
  randomize_scaled(layer, rng, 2.0 / std::sqrt(static_cast<double>(embed)));
  const Tensor<T> x = random_input<T>(input, rng);
  const Tensor<T>& y = layer.forward(x);
  const Reference reference = reference_forward(layer, x);
  double largest = 0, largest_bound = 0, largest_error = 0;
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    INFO(P::name << " element " << i << ": layer " << as_double(y[i]) << ", reference "
                 << reference.y[static_cast<std::size_t>(i)] << ", bound "
                 << reference.bound[static_cast<std::size_t>(i)]);
    CHECK(std::abs(as_double(y[i]) - reference.y[static_cast<std::size_t>(i)]) <=
          reference.bound[static_cast<std::size_t>(i)]);
    largest = std::max(largest, std::abs(reference.y[static_cast<std::size_t>(i)]));
    largest_error =
        std::max(largest_error, std::abs(as_double(y[i]) - reference.y[static_cast<std::size_t>(i)]));
    largest_bound = std::max(largest_bound, reference.bound[static_cast<std::size_t>(i)]);
  }
  INFO(P::name << ": largest bound " << largest_bound << ", largest output " << largest << ", largest error "
               << largest_error);
  CHECK(largest_bound <= max_u * unit_roundoff<T>() * largest);
}

}  // namespace

TEST_CASE("CausalSelfAttention: dx and all four parameter gradients match finite differences in fp64",
          "[nn][attention][gradient]") {
  struct Case {
    std::int64_t batch, sequence, embed, heads;
    bool bias;
  };
  // Head sizes 8 and 12, sequences 1 and 7, batches 1 and 3; one case without biases.
  const Case cases[] = {{1, 7, 16, 2, true},
                        {3, 7, 24, 2, true},
                        {3, 1, 8, 1, true},
                        {1, 1, 36, 3, true},
                        {3, 7, 24, 3, false}};
  std::uint64_t seed = 4100;
  for (const Case& c : cases) {
    INFO("batch " << c.batch << ", sequence " << c.sequence << ", embed_dim " << c.embed << ", heads "
                  << c.heads << ", bias " << c.bias);
    std::mt19937_64 rng(seed++);
    Attention<mpx::fp64> layer(c.embed, c.heads, {.bias = c.bias});
    mpx::test::randomize_parameters(layer, rng);
    Tensor<double> x = random_input<double>(Shape{c.batch, c.sequence, c.embed}, rng);
    const Tensor<double> w = random_input<double>(Shape{c.batch, c.sequence, c.embed}, rng);
    mpx::test::check_layer_gradients(layer, x, w);
  }
}

TEST_CASE("CausalSelfAttention in a pre-LN residual block: gradients match finite differences in fp64",
          "[nn][attention][gradient]") {
  using L = nn::layers<mpx::fp64>;
  std::mt19937_64 rng(4200);
  nn::Residual block{nn::Sequential{L::layer_norm(12), L::causal_self_attention(12, 1)}};
  mpx::test::randomize_parameters(block, rng);
  Tensor<double> x = random_input<double>(Shape{2, 5, 12}, rng);
  const Tensor<double> w = random_input<double>(Shape{2, 5, 12}, rng);
  mpx::test::check_layer_gradients(block, x, w);
}

TEST_CASE(
    "CausalSelfAttention: fp32, bf16 and fp16 forwards lie within the derived bounds of an fp64 reference",
    "[nn][attention]") {
  // The bounds come to 18-26 u of the largest output in bf16 and fp16 (the roundings into the compute
  // type dominate) and about 1000-1800 u in fp32, where u = e and the worst-case fp32 sums (n e per
  // unit of magnitude) dominate; the bars below are 40 u and 4000 u. The errors measured are 0.5-2.3 u.
  check_forward_against_reference<mpx::fp32>(Shape{3, 7, 24}, 2, 4000, 4300);
  check_forward_against_reference<mpx::fp32>(Shape{2, 9, 16}, 2, 4000, 4301);
  check_forward_against_reference<mpx::bf16_mixed>(Shape{3, 7, 24}, 2, 40, 4302);
  check_forward_against_reference<mpx::bf16_mixed>(Shape{1, 13, 36}, 3, 40, 4303);
  check_forward_against_reference<mpx::fp16_mixed>(Shape{3, 7, 24}, 2, 40, 4304);
  check_forward_against_reference<mpx::fp16_mixed>(Shape{2, 5, 16}, 1, 40, 4305);
}

TEST_CASE("SelfAttention: dx and all four parameter gradients match finite differences in fp64",
          "[nn][attention][gradient]") {
  // Sequences 1 and 7, head sizes 8 and 12, an image [2, 3, 2, C] (6 pixels); one case without biases.
  struct Case {
    Shape input;
    std::int64_t heads;
    bool bias;
  };
  const Case cases[] = {{Shape{1, 7, 16}, 2, true},
                        {Shape{3, 7, 24}, 2, true},
                        {Shape{3, 1, 8}, 1, true},
                        {Shape{2, 3, 2, 24}, 3, true},
                        {Shape{3, 7, 24}, 3, false}};
  std::uint64_t seed = 4150;
  for (const Case& c : cases) {
    INFO("input " << c.input << ", heads " << c.heads << ", bias " << c.bias);
    std::mt19937_64 rng(seed++);
    nn::SelfAttention<mpx::fp64> layer(c.input.cols(), c.heads, {.bias = c.bias});
    mpx::test::randomize_parameters(layer, rng);
    Tensor<double> x = random_input<double>(c.input, rng);
    const Tensor<double> w = random_input<double>(c.input, rng);
    mpx::test::check_layer_gradients(layer, x, w);
  }
}

TEST_CASE("SelfAttention: fp32, bf16 and fp16 forwards lie within the derived bounds of an fp64 reference",
          "[nn][attention]") {
  // The bounds of the causal case's test above; every key now enters each row's softmax and sum.
  constexpr AttentionMask all = AttentionMask::Bidirectional;
  check_forward_against_reference<mpx::fp32, all>(Shape{3, 7, 24}, 2, 4000, 4310);
  check_forward_against_reference<mpx::fp32, all>(Shape{2, 3, 3, 16}, 2, 4000, 4311);
  check_forward_against_reference<mpx::bf16_mixed, all>(Shape{3, 7, 24}, 2, 40, 4312);
  check_forward_against_reference<mpx::bf16_mixed, all>(Shape{2, 4, 3, 36}, 3, 40, 4313);
  check_forward_against_reference<mpx::fp16_mixed, all>(Shape{3, 7, 24}, 2, 40, 4314);
}

namespace {

/// The fp32 gradients of a mixed-precision SelfAttention (weights, biases; dx in the compute type)
/// against those of an fp64 layer holding the same compute-copy weights, fed the same x and dy. The
/// backward rounds into the compute type at each GEMM operand it makes (dO, P, dS, dQ, dK, dV, the
/// qkv gradient, dx) and sums in fp32, so each gradient is off by a small multiple of u times the
/// largest of its tensor (cancellation rules out an element-wise relative bound): the bar is
/// `max_u` u max |g64|. Measured with these seeds: at most 4.3 u in fp32 (16 u allowed), 1.0 u
/// in bf16 (4 u allowed); a missing term of the softmax's backward errs by far more than either.
template <class P>
void check_gradients_near_fp64(const Shape& input, std::int64_t heads, double max_u, std::uint64_t seed) {
  using T = mpx::compute_t<P>;
  const std::int64_t embed = input.cols();
  std::mt19937_64 rng(seed);
  nn::SelfAttention<P> layer(embed, heads);
  randomize_scaled(layer, rng, 2.0 / std::sqrt(static_cast<double>(embed)));
  nn::SelfAttention<mpx::fp64> reference(embed, heads);
  std::vector<const Tensor<T>*> weights;
  layer.for_each_parameter([&](const auto&, auto& parameter) { weights.push_back(&parameter.compute()); });
  std::size_t index = 0;
  reference.for_each_parameter([&](const auto&, auto& parameter) {
    const Tensor<T>& from = *weights[index++];
    for (std::int64_t i = 0; i < from.numel(); ++i) parameter.master()[i] = as_double(from[i]);
    parameter.refresh_compute_copy();
  });
  const Tensor<T> x = random_input<T>(input, rng);
  const Tensor<T> dy = random_input<T>(input, rng);
  Tensor<double> x64(input), dy64(input);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    x64[i] = as_double(x[i]);
    dy64[i] = as_double(dy[i]);
  }
  layer.forward(x);
  const Tensor<T>& dx = *layer.backward(dy);
  reference.forward(x64);
  const Tensor<double>& dx64 = *reference.backward(dy64);
  const auto compare = [&](const std::string& what, const auto& got, const Tensor<double>& expected) {
    REQUIRE(got.shape() == expected.shape());
    double largest = 0, error = 0;
    for (std::int64_t i = 0; i < expected.numel(); ++i) {
      largest = std::max(largest, std::abs(expected[i]));
      error = std::max(error, std::abs(as_double(got[i]) - expected[i]));
    }
    INFO(P::name << " " << what << ": largest |error| " << error << " = "
                 << error / (unit_roundoff<T>() * largest) << " u of the largest |gradient| " << largest);
    CHECK(largest > 0);
    CHECK(error <= max_u * unit_roundoff<T>() * largest);
  };
  compare("dx", dx, dx64);
  std::vector<Tensor<double>> expected;
  std::vector<std::string> names;
  reference.for_each_parameter([&](std::string_view name, auto& parameter) {
    expected.push_back(parameter.grad().clone());
    names.emplace_back(name);
  });
  index = 0;
  layer.for_each_parameter([&](const auto&, auto& parameter) {
    compare(names[index], parameter.grad(), expected[index]);
    ++index;
  });
}

}  // namespace

TEST_CASE("SelfAttention in fp32 and bf16: input, weight and bias gradients lie near the fp64 layer's",
          "[nn][attention][gradient]") {
  check_gradients_near_fp64<mpx::fp32>(Shape{3, 7, 24}, 2, 16, 4320);
  check_gradients_near_fp64<mpx::fp32>(Shape{2, 3, 4, 16}, 2, 16, 4321);
  check_gradients_near_fp64<mpx::bf16_mixed>(Shape{3, 7, 24}, 2, 4, 4322);
  check_gradients_near_fp64<mpx::bf16_mixed>(Shape{2, 3, 4, 16}, 2, 4, 4323);
}

TEST_CASE("SelfAttention: a channels-last image [N, H, W, C] gives the bits of [N, H * W, C]",
          "[nn][attention]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  constexpr std::int64_t N = 2, H = 3, W = 4, C = 16;
  std::mt19937_64 rng(4330);
  nn::SelfAttention<P> image_layer(C, 2), sequence_layer(C, 2);  // the same weights (seed 0)
  const Tensor<T> image = random_input<T>(Shape{N, H, W, C}, rng);
  const Tensor<T> dy = random_input<T>(Shape{N, H, W, C}, rng);
  Tensor<T> sequence = image.clone(), dy_sequence = dy.clone();
  sequence.reshape(Shape{N, H * W, C});
  dy_sequence.reshape(Shape{N, H * W, C});
  const Tensor<T>& y_image = image_layer.forward(image);
  const Tensor<T>& y_sequence = sequence_layer.forward(sequence);
  CHECK(y_image.shape() == Shape{N, H, W, C});
  REQUIRE(y_sequence.shape() == Shape{N, H * W, C});
  CHECK(std::memcmp(y_image.data(), y_sequence.data(), y_image.size_bytes()) == 0);
  const Tensor<T>& dx_image = *image_layer.backward(dy);
  const Tensor<T>& dx_sequence = *sequence_layer.backward(dy_sequence);
  CHECK(dx_image.shape() == Shape{N, H, W, C});
  CHECK(std::memcmp(dx_image.data(), dx_sequence.data(), dx_image.size_bytes()) == 0);
  std::vector<const Tensor<float>*> grads;
  image_layer.for_each_parameter([&](const auto&, auto& parameter) { grads.push_back(&parameter.grad()); });
  std::size_t index = 0;
  sequence_layer.for_each_parameter([&](std::string_view name, auto& parameter) {
    INFO(name);
    const Tensor<float>& from_image = *grads[index++];
    CHECK(std::memcmp(from_image.data(), parameter.grad().data(), from_image.size_bytes()) == 0);
  });
  CHECK(index == 4);
  // The pixels do attend to each other: changing the last pixel of image 0 changes its first one.
  Tensor<T> changed = image.clone();
  for (std::int64_t i = 0; i < C; ++i) changed[(H * W - 1) * C + i] = T(static_cast<float>(i % 5) - 2.0f);
  const Tensor<T> before = y_image.clone();
  const Tensor<T>& after = image_layer.forward(changed);
  CHECK(std::memcmp(before.data(), after.data(), static_cast<std::size_t>(C) * sizeof(T)) != 0);
}

TEST_CASE(
    "CausalSelfAttention in fp16: q.k near and beyond fp16's maximum gives finite outputs that match fp64",
    "[nn][attention]") {
  using P = mpx::fp16_mixed;
  using T = mpx::compute_t<P>;
  constexpr std::int64_t B = 2, S = 7, C = 16, H = 2, d = 8;
  // q = k = a x with x of +-1 entries: q.k = 8 a^2 for a token with itself (6.0e4 and 7.0e4, beyond
  // fp16's 65504), and at most 6 a^2 for any other token, whose pattern differs in a sign.
  for (const double a : {86.625, 93.5}) {
    INFO("a = " << a << ", self q.k = " << 8 * a * a);
    std::mt19937_64 rng(4400);
    Attention<P> layer(C, H);
    mpx::test::randomize_parameters(layer, rng);
    auto& w = layer.qkv().weight().master();
    auto& bias = layer.qkv().bias()->master();
    for (std::int64_t o = 0; o < 2 * C; ++o) {  // the q and k rows: a times the identity
      for (std::int64_t i = 0; i < C; ++i) w[o * C + i] = (o % C == i) ? static_cast<float>(a) : 0.0f;
      bias[o] = 0.0f;
    }
    layer.qkv().weight().refresh_compute_copy();
    layer.qkv().bias()->refresh_compute_copy();
    // Each (batch, head) gets distinct +-1 patterns per position: position t's pattern is the bits of
    // 37 t + 11 b + 5 h (mod 256); distinct within a sequence, so the self score leads by >= 2 a^2.
    // The one-hot premise of the reference's bound: with distinct patterns the self score leads by at
    // least 2 a^2 / sqrt(8) > 5000, far beyond the scores' error (about u 8 a^2 / sqrt(8) < 20), so
    // every other probability is below exp(-5000) in the layer and in the reference.
    const auto pattern_of = [](std::int64_t b, std::int64_t t, std::int64_t h) {
      return (37 * t + 11 * b + 5 * h) % 256;
    };
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t h = 0; h < H; ++h) {
        for (std::int64_t t = 0; t < S; ++t) {
          for (std::int64_t j = 0; j < t; ++j) REQUIRE(pattern_of(b, t, h) != pattern_of(b, j, h));
        }
      }
    }
    Tensor<T> x(Shape{B, S, C});
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t t = 0; t < S; ++t) {
        for (std::int64_t h = 0; h < H; ++h) {
          const std::int64_t pattern = pattern_of(b, t, h);
          for (std::int64_t i = 0; i < d; ++i)
            x[(b * S + t) * C + h * d + i] = T(((pattern >> i) & 1) ? 1.0f : -1.0f);
        }
      }
    }
    const Tensor<T>& y = layer.forward(x);
    const Reference reference = reference_forward(layer, x, /*one_hot=*/true);
    for (std::int64_t i = 0; i < y.numel(); ++i) {
      INFO("element " << i << ": layer " << as_double(y[i]) << ", reference "
                      << reference.y[static_cast<std::size_t>(i)]);
      REQUIRE(std::isfinite(as_double(y[i])));
      CHECK(std::abs(as_double(y[i]) - reference.y[static_cast<std::size_t>(i)]) <=
            reference.bound[static_cast<std::size_t>(i)]);
    }
  }
}

TEST_CASE(
    "attention softmax, causal and bidirectional: fp64's values without key counts, with one per "
    "matrix and with one per two matrices (a sequence's length shared by its heads); a fully masked "
    "row gives zeros, never NaN, forward and backward",
    "[nn][attention]") {
  constexpr std::int64_t S = 6;
  constexpr std::int64_t M = 4;  // score matrices
  std::mt19937_64 rng(4500);
  for (const AttentionMask mask : {AttentionMask::Causal, AttentionMask::Bidirectional}) {
    for (const std::int64_t groups : {0, 4, 2}) {  // 0: no key counts
      for (const auto bf16 : {false, true}) {
        INFO((mask == AttentionMask::Causal ? "causal" : "bidirectional")
             << ", " << groups << " key counts" << (bf16 ? ", bf16 probabilities" : ", fp32 probabilities"));
        const Tensor<float> scores = random_input<float>(Shape{M, S, S}, rng, -30.0, 30.0);
        Tensor<std::int32_t> counts(Shape{std::max<std::int64_t>(groups, 1)});
        const std::int32_t given[M] = {6, 0, 2, 4};  // a full, an empty and two partial masks
        for (std::int64_t g = 0; g < groups; ++g) counts[g] = given[groups == 2 ? g + 1 : g];
        const Tensor<std::int32_t>* key_counts = groups > 0 ? &counts : nullptr;
        const auto run = [&](auto tag) {
          using T = decltype(tag);
          Tensor<T> probs(Shape{M, S, S});
          mpx::cpu::attention_softmax_forward(scores, probs, mask, key_counts);
          const Tensor<float> dprobs = random_input<float>(Shape{M, S, S}, rng);
          Tensor<T> dscores(Shape{M, S, S});
          mpx::cpu::attention_softmax_backward(probs, dprobs, dscores, mask, key_counts);
          for (std::int64_t r = 0; r < M * S; ++r) {
            const std::int64_t unmasked = mask == AttentionMask::Causal ? r % S + 1 : S;
            const std::int64_t allowed =
                groups > 0 ? std::min<std::int64_t>(unmasked, counts[r / S / (M / groups)]) : unmasked;
            double max = -std::numeric_limits<double>::infinity(), sum = 0;
            for (std::int64_t j = 0; j < allowed; ++j)
              max = std::max(max, static_cast<double>(scores[r * S + j]));
            for (std::int64_t j = 0; j < allowed; ++j)
              sum += std::exp(static_cast<double>(scores[r * S + j]) - max);
            double dot = 0;
            for (std::int64_t j = 0; j < allowed; ++j) {
              dot += as_double(probs[r * S + j]) * static_cast<double>(dprobs[r * S + j]);
            }
            for (std::int64_t j = 0; j < S; ++j) {
              INFO("row " << r << " (allowed keys " << allowed << "), key " << j);
              const double p = as_double(probs[r * S + j]);
              const double ds = as_double(dscores[r * S + j]);
              REQUIRE(std::isfinite(p));
              REQUIRE(std::isfinite(ds));
              if (j >= allowed) {
                CHECK(p == 0.0);
                CHECK(ds == 0.0);
                continue;
              }
              // fp32 math then one rounding into T: s - max is rounded (relative error e, so e |s - max|
              // in exp's result), exp and the division add a few e, the sum S e; then u for T.
              const double u = unit_roundoff<T>() + 16 * k_fp32_roundoff;
              const double shift = std::abs(static_cast<double>(scores[r * S + j]) - max);
              const double expected = std::exp(static_cast<double>(scores[r * S + j]) - max) / sum;
              CHECK(std::abs(p - expected) <= (u + (shift + S) * k_fp32_roundoff) * expected);
              const double expected_ds = p * (static_cast<double>(dprobs[r * S + j]) - dot);
              CHECK(std::abs(ds - expected_ds) <= u * (std::abs(expected_ds) + p * (std::abs(dot) + 1.0)));
            }
          }
        };
        if (bf16) {
          run(Eigen::bfloat16{});
        } else {
          run(float{});
        }
      }
    }
  }
}

TEST_CASE("attention softmax refuses key counts that do not divide the score matrices, naming both",
          "[nn][attention]") {
  const Tensor<float> scores(Shape{4 * 3, 3});  // 4 matrices of 3 x 3
  Tensor<float> probs(Shape{4 * 3, 3});
  for (const Shape& wrong : {Shape{3}, Shape{0}, Shape{2, 2}}) {
    const Tensor<std::int32_t> counts(wrong);
    INFO("key_counts " << wrong);
    CHECK_THROWS_WITH(
        mpx::cpu::attention_softmax_forward(scores, probs, AttentionMask::Bidirectional, &counts),
        Catch::Contains("mpx::cpu::attention_softmax_forward: key_counts must be [g] with g "
                        "dividing the 4 score matrices") &&
            Catch::Contains("received [" + std::to_string(wrong[0])));
  }
}

TEST_CASE("CausalSelfAttention: outputs at positions <= t do not depend on tokens after t",
          "[nn][attention]") {
  constexpr std::int64_t B = 2, S = 7, C = 16;
  std::mt19937_64 rng(4600);
  Attention<mpx::bf16_mixed> layer(C, 2);
  mpx::test::randomize_parameters(layer, rng);
  using T = mpx::compute_t<mpx::bf16_mixed>;
  const Tensor<T> x = random_input<T>(Shape{B, S, C}, rng);
  const Tensor<T> y = layer.forward(x).clone();
  for (std::int64_t t = 0; t + 1 < S; ++t) {
    Tensor<T> changed = x.clone();
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t later = t + 1; later < S; ++later) {
        for (std::int64_t i = 0; i < C; ++i)
          changed[(b * S + later) * C + i] = T(static_cast<float>(5 * rng() % 7) - 3.0f);
      }
    }
    const Tensor<T>& y_changed = layer.forward(changed);
    bool later_changed = false;
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t s = 0; s < S; ++s) {
        for (std::int64_t i = 0; i < C; ++i) {
          const std::int64_t index = (b * S + s) * C + i;
          if (s <= t) {
            INFO("t = " << t << ", batch " << b << ", position " << s << ", feature " << i);
            CHECK(std::memcmp(&y[index], &y_changed[index], sizeof(T)) == 0);
          } else {
            later_changed = later_changed || std::memcmp(&y[index], &y_changed[index], sizeof(T)) != 0;
          }
        }
      }
    }
    CHECK(later_changed);  // the change did reach the later positions
  }
}

TEST_CASE("batched cpu::gemm equals a loop of single GEMMs bit for bit", "[gemm][attention]") {
  struct Case {
    std::int64_t batch, m, n, k;
    bool ta, tb;
    float beta;
  };
  const Case cases[] = {{5, 7, 12, 9, false, true, 0.0f},   {6, 7, 7, 12, false, false, 0.0f},
                        {3, 9, 8, 7, true, false, 0.5f},    {4, 5, 6, 3, true, true, 1.0f},
                        {2, 64, 64, 64, false, true, 0.0f}, {1, 6, 5, 4, false, false, 0.0f}};
  std::mt19937_64 rng(4700);
  const auto run = [&](auto compute_tag, auto d_element) {
    using Compute = decltype(compute_tag);
    using S = mpx::storage_t<Compute>;
    using D = decltype(d_element);
    for (const Case& c : cases) {
      INFO(mpx::numeric_traits<Compute>::name
           << ", D in " << (std::is_same_v<D, float> ? "fp32" : "the compute type") << ": batch " << c.batch
           << ", m " << c.m << ", n " << c.n << ", k " << c.k << ", ta " << c.ta << ", tb " << c.tb
           << ", beta " << c.beta);
      const Shape a_one = c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k};
      const Shape b_one = c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n};
      const Tensor<S> a = random_input<S>(Shape{c.batch * a_one[0], a_one[1]}, rng);
      const Tensor<S> b = random_input<S>(Shape{c.batch * b_one[0], b_one[1]}, rng);
      const Tensor<D> c_in = random_input<D>(Shape{c.batch * c.m, c.n}, rng);
      const mpx::GemmConfig config{.transpose_a = c.ta ? mpx::Transpose::Yes : mpx::Transpose::No,
                                   .transpose_b = c.tb ? mpx::Transpose::Yes : mpx::Transpose::No,
                                   .alpha = 0.375f,
                                   .beta = c.beta,
                                   .batch_count = c.batch};
      Tensor<D> batched = c_in.clone();  // beta != 0 accumulates onto D's contents
      mpx::cpu::gemm<Compute>(a, b, batched, config);
      mpx::GemmConfig single = config;
      single.batch_count = 1;
      for (std::int64_t i = 0; i < c.batch; ++i) {
        Tensor<S> a_i(a_one), b_i(b_one);
        Tensor<D> d_i(Shape{c.m, c.n});
        std::copy_n(a.data() + i * a_i.numel(), a_i.numel(), a_i.data());
        std::copy_n(b.data() + i * b_i.numel(), b_i.numel(), b_i.data());
        std::copy_n(c_in.data() + i * d_i.numel(), d_i.numel(), d_i.data());
        mpx::cpu::gemm<Compute>(a_i, b_i, d_i, single);
        REQUIRE(std::memcmp(d_i.data(), batched.data() + i * d_i.numel(), d_i.size_bytes()) == 0);
      }
    }
  };
  run(mpx::BFloat16{}, float{});
  run(mpx::BFloat16{}, Eigen::bfloat16{});
  run(mpx::Half{}, Eigen::half{});
  run(mpx::Float{}, float{});
  run(mpx::Double{}, double{});
}

TEST_CASE("batched cpu::gemm refuses mismatched batches and fused epilogues, naming the values",
          "[gemm][attention]") {
  Tensor<float> a(Shape{12, 4}), b(Shape{12, 4}), d(Shape{12, 4});
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(
      mpx::cpu::gemm<mpx::Float>(a, b, d, {.transpose_b = mpx::Transpose::Yes, .batch_count = 5}),
      Contains("12 rows, not divisible by batch_count = 5"));
  Tensor<float> bias(Shape{4});
  CHECK_THROWS_WITH(
      mpx::cpu::gemm<mpx::Float>(
          a, b, d, {.transpose_b = mpx::Transpose::Yes, .epilogue = mpx::Epilogue::Bias, .batch_count = 3},
          {.bias = &bias}),
      Contains("epilogue bias with batch_count = 3"));
  CHECK_THROWS_WITH(mpx::cpu::gemm<mpx::Float>(a, b, d, {.batch_count = 0}),
                    Contains("batch_count must be at least 1"));
  Tensor<float> d_wrong(Shape{12, 3});
  CHECK_THROWS_WITH(
      mpx::cpu::gemm<mpx::Float>(a, b, d_wrong, {.transpose_b = mpx::Transpose::Yes, .batch_count = 3}),
      Contains("per matrix"));
}

TEST_CASE("CausalSelfAttention: names, description, factory and argument checks", "[nn][attention]") {
  using L = nn::layers<mpx::bf16_mixed>;
  auto layer = L::causal_self_attention(24, 3);
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  layer.for_each_parameter([&](std::string_view name, auto& parameter) {
    names.emplace_back(name);
    shapes.push_back(parameter.master().shape());
  });
  CHECK(names == std::vector<std::string>{"qkv.weight", "qkv.bias", "proj.weight", "proj.bias"});
  CHECK(shapes == std::vector<Shape>{Shape{72, 24}, Shape{72}, Shape{24, 24}, Shape{24}});
  CHECK(layer.head_dim() == 8);

  const nn::LayerDescription description = nn::describe_layer(layer);
  REQUIRE(description.size() == 5);
  CHECK(std::get<std::string>(description[0].value) == "CausalSelfAttention");
  CHECK(description[2].key == "embed_dim");
  CHECK(std::get<std::int64_t>(description[2].value) == 24);
  CHECK(description[3].key == "num_heads");
  CHECK(std::get<std::int64_t>(description[3].value) == 3);
  CHECK(description[4].key == "bias");
  CHECK(std::get<bool>(description[4].value));

  auto no_bias = L::causal_self_attention(8, 2, {.bias = false});
  int count = 0;
  no_bias.for_each_parameter([&](std::string_view, auto&) { ++count; });
  CHECK(count == 2);

  using Catch::Matchers::Contains;
  CHECK_THROWS_AS(L::causal_self_attention(10, 4), mpx::invalid_argument);
  CHECK_THROWS_WITH(L::causal_self_attention(10, 4), Contains("embed_dim = 10") && Contains("num_heads = 4"));
  CHECK_THROWS_WITH(L::causal_self_attention(8, 0), Contains("num_heads = 0"));

  using T = mpx::compute_t<mpx::bf16_mixed>;
  const Tensor<T> flat(Shape{4, 24});
  CHECK_THROWS_AS(layer.forward(flat), mpx::shape_error);
  const Tensor<T> narrow(Shape{2, 3, 16});
  CHECK_THROWS_WITH(layer.forward(narrow), Contains("[batch, sequence, 24]") && Contains("[2, 3, 16]"));
  auto fresh = L::causal_self_attention(8, 2);
  CHECK_THROWS_WITH(fresh.backward(Tensor<T>(Shape{1, 1, 8})), Contains("backward called before forward"));
}

TEST_CASE("SelfAttention: names, description, factory and shape errors naming the layer", "[nn][attention]") {
  using L = nn::layers<mpx::bf16_mixed>;
  auto layer = L::self_attention(24, 3);
  static_assert(std::is_same_v<decltype(layer), nn::SelfAttention<mpx::bf16_mixed>>);
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  layer.for_each_parameter([&](std::string_view name, auto& parameter) {
    names.emplace_back(name);
    shapes.push_back(parameter.master().shape());
  });
  CHECK(names == std::vector<std::string>{"qkv.weight", "qkv.bias", "proj.weight", "proj.bias"});
  CHECK(shapes == std::vector<Shape>{Shape{72, 24}, Shape{72}, Shape{24, 24}, Shape{24}});
  CHECK(layer.head_dim() == 8);

  const nn::LayerDescription description = nn::describe_layer(layer);
  REQUIRE(description.size() == 5);
  CHECK(std::get<std::string>(description[0].value) == "SelfAttention");
  CHECK(description[2].key == "embed_dim");
  CHECK(std::get<std::int64_t>(description[2].value) == 24);
  CHECK(description[3].key == "num_heads");
  CHECK(std::get<std::int64_t>(description[3].value) == 3);
  CHECK(description[4].key == "bias");
  CHECK(std::get<bool>(description[4].value));
  int count = 0;
  L::self_attention(8, 2, {.bias = false}).for_each_parameter([&](std::string_view, auto&) { ++count; });
  CHECK(count == 2);

  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(L::self_attention(10, 4), Contains("mpx::nn::SelfAttention") &&
                                                  Contains("embed_dim = 10") && Contains("num_heads = 4"));
  using T = mpx::compute_t<mpx::bf16_mixed>;
  const Tensor<T> flat(Shape{4, 24}), narrow_image(Shape{2, 3, 4, 16}), empty_image(Shape{2, 0, 4, 24});
  CHECK_THROWS_WITH(layer.forward(flat),
                    Contains("SelfAttention") && Contains("[batch, sequence, 24]") && Contains("[4, 24]"));
  CHECK_THROWS_AS(layer.forward(narrow_image), mpx::shape_error);
  CHECK_THROWS_WITH(layer.forward(narrow_image), Contains("SelfAttention") &&
                                                     Contains("[batch, d1, ..., dk, 24]") &&
                                                     Contains("[2, 3, 4, 16]"));
  CHECK_THROWS_WITH(layer.forward(empty_image), Contains("[2, 0, 4, 24]"));
  const Tensor<T> image(Shape{2, 3, 4, 24}), dy_as_sequence(Shape{2, 12, 24});
  layer.forward(image);
  CHECK_THROWS_WITH(layer.backward(dy_as_sequence),
                    Contains("SelfAttention") && Contains("[2, 12, 24]") && Contains("[2, 3, 4, 24]"));
}

}  // namespace MPX_UNITY_ID
}  // namespace
