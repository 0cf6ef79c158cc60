// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief A diffusion model at work, on any device and in any precision: drawing samples with a
/// `TimeConditioned` noise predictor (`draw_samples`), and scoring them with a classifier
/// (`penultimate_features`, `score_samples`: the Fréchet distance to real images in the classifier's
/// feature space and its confident-class share; experiment/frechet.hpp says what they are and are
/// not).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpx/data/input_normalization.hpp"
#include "mpx/error.hpp"
#include "mpx/experiment/ddpm.hpp"
#include "mpx/experiment/frechet.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/tensor/convert.hpp"
#include "mpx/tensor/tensor.hpp"
#include "mpx/tensor/transfer.hpp"

namespace mpx::experiment {

namespace detail {
// {count, sample's extents...}: a batch of `count` samples of `sample`'s shape (rank at most 3).
inline Shape batch_of(std::int64_t count, const Shape& sample) {
  switch (sample.rank()) {
    case 1: return Shape{count, sample[0]};
    case 2: return Shape{count, sample[0], sample[1]};
    case 3: return Shape{count, sample[0], sample[1], sample[2]};
    default:
      throw shape_error(mpx::detail::concat("mpx::experiment: a sample of shape ", sample,
                                            " does not fit a batch (samples have rank 1 to 3)"));
  }
}
// The shape of one sample of a batch [N, ...].
inline Shape sample_of(const Shape& batch) {
  switch (batch.rank()) {
    case 2: return Shape{batch[1]};
    case 3: return Shape{batch[1], batch[2]};
    case 4: return Shape{batch[1], batch[2], batch[3]};
    default:
      throw shape_error(
          mpx::detail::concat("mpx::experiment: expected a batch [N, ...] of rank 2 to 4, received ", batch));
  }
}
}  // namespace detail

/// @brief `count` samples of shape `sample_shape` (one image, e.g. {28, 28, 1}) drawn by `schedule`'s
/// sampler from `model`, a noise predictor with `set_timesteps` (an `nn::TimeConditioned` model) on
/// any device: `DdpmSchedule::sample` on `batch` samples at a time, each step's x_t rounded into the
/// model's input type, the model run in evaluation mode, its estimate widened to fp32 on the host.
/// Returns [count, sample_shape...] on the host. The same seed gives the same samples for the same
/// weights, whatever `batch`.
/// @param model the noise predictor
/// @param schedule the diffusion's schedule
/// @param options the sampler and its seed
/// @param count samples to draw (at least 1)
/// @param sample_shape the shape of one sample
/// @param batch samples per forward (at least 1)
/// @throws mpx::invalid_argument for a count or batch below 1; mpx::shape_error when the model's
///         output is not the input's shape.
template <class Model>
Tensor<float, Host> draw_samples(Model& model, const DdpmSchedule& schedule, const SamplerOptions& options,
                                 std::int64_t count, const Shape& sample_shape, std::int64_t batch = 500) {
  using Device = typename Model::device_type;
  using In = typename Model::input_type;
  if (count < 1 || batch < 1) {
    throw invalid_argument(mpx::detail::concat("mpx::experiment::draw_samples: count = ", count,
                                               ", batch = ", batch, "; both must be at least 1"));
  }
  const std::int64_t size = sample_shape.numel();
  Tensor<float, Host> result(detail::batch_of(count, sample_shape));
  Tensor<In, Host> input;
  Tensor<In, Device> device_input;
  const nn::EvaluationMode evaluating(model);
  for (std::int64_t first = 0; first < count; first += batch) {
    const std::int64_t rows = std::min(batch, count - first);
    const Shape batch_shape = detail::batch_of(rows, sample_shape);
    nn::ensure_shape(input, batch_shape);
    std::vector<float> timesteps(static_cast<std::size_t>(rows));
    const std::vector<float> samples = schedule.sample(
        options, rows, size, first, [&](std::span<const float> x, std::int64_t t, std::span<float> eps) {
          for (std::size_t i = 0; i < x.size(); ++i) input.data()[i] = round_to<tag_of_t<In>>(x[i]);
          std::fill(timesteps.begin(), timesteps.end(), static_cast<float>(t));
          model.set_timesteps(timesteps);
          const auto& output = model.forward(to<Device>(input, device_input));
          require_shape("mpx::experiment::draw_samples", "the model's output", output.shape(), batch_shape);
          const auto& host = to<Host>(output);
          for (std::size_t i = 0; i < eps.size(); ++i) eps[i] = static_cast<float>(host.data()[i]);
        });
    std::copy(samples.begin(), samples.end(), result.data() + first * size);
  }
  model.forget_inputs();  // the layers kept pointers into this function's buffers
  return result;
}

namespace detail {
// Runs layers [0, Count) of `classifier` on `x`, each on the one before's output, returning the last
// one's output.
template <std::size_t Count, class Classifier, class Input>
const auto& forward_prefix(Classifier& classifier, const Input& x) {
  return [&]<std::size_t... I>(std::index_sequence<I...>)->decltype(auto) {
    const auto* current = &classifier.template layer<0>().forward(x);
    ((current = &classifier.template layer<I + 1>().forward(*current)), ...);
    return *current;
  }
  (std::make_index_sequence<Count - 1>{});
}
}  // namespace detail

/// @brief The features a classifier (a `Sequential` ending in its linear head, e.g.
/// `experiment::resnet`) computes just before its last layer, for `images` on the host (in the
/// classifier's input normalisation), in batches of `batch`, in evaluation mode: [N, features] in
/// fp32 on the host.
/// @param classifier the classifier
/// @param images [N, ...] as the classifier takes them (N at least 1)
/// @param batch images per forward (at least 1)
/// @throws mpx::invalid_argument for no images or a batch below 1.
template <class Classifier>
Tensor<float, Host> penultimate_features(Classifier& classifier, const Tensor<float, Host>& images,
                                         std::int64_t batch = 500) {
  using Device = typename Classifier::device_type;
  using In = typename Classifier::input_type;
  static_assert(Classifier::size >= 2, "mpx::experiment::penultimate_features: the classifier has one layer");
  const std::int64_t count = images.rank() >= 2 ? images.shape()[0] : 0;
  if (count < 1 || batch < 1) {
    throw invalid_argument(mpx::detail::concat("mpx::experiment::penultimate_features: images ",
                                               images.shape(), ", batch = ", batch,
                                               "; expected images [N >= 1, ...] and batch >= 1"));
  }
  const std::int64_t per_image = images.numel() / count;
  const nn::EvaluationMode evaluating(classifier);
  Tensor<float, Host> features;
  for (std::int64_t first = 0; first < count; first += batch) {
    const std::int64_t rows = std::min(batch, count - first);
    Tensor<In, Host> chunk(detail::batch_of(rows, detail::sample_of(images.shape())));
    for (std::int64_t i = 0; i < rows * per_image; ++i)
      chunk.data()[i] = round_to<tag_of_t<In>>(images.data()[first * per_image + i]);
    const auto& x = to<Device>(chunk);
    const auto& host = to<Host>(detail::forward_prefix<Classifier::size - 1>(classifier, x));
    const std::int64_t width = host.numel() / rows;
    if (first == 0) features = Tensor<float, Host>(Shape{count, width});
    for (std::int64_t i = 0; i < rows * width; ++i)
      features.data()[first * width + i] = static_cast<float>(host.data()[i]);
  }
  classifier.forget_inputs();
  return features;
}

/// @brief How generated samples score against real images in a classifier's feature space.
struct SampleQuality {
  double frechet_distance = 0.0;  ///< between Gaussian fits of the two feature sets (not FID)
  double confident_share = 0.0;   ///< generated samples whose most probable class reaches 0.9
};

/// @brief Scores `generated` against `real` (both images in [-1, 1], [N, ...], on the host) with
/// `classifier`, which takes images in `normalization` (a pixel p in [0, 1] as (p - mean) / std):
/// each image is mapped to p = (x + 1) / 2 and normalised; the Fréchet distance between the two
/// sets' penultimate features (`penultimate_features`), and the share of generated samples whose
/// class probabilities (the softmax, in double, of the last layer applied to those features) reach
/// 0.9 (`confident_share`).
/// @param classifier the classifier (a `Sequential` ending in its linear head)
/// @param normalization the classifier's input normalisation
/// @param generated samples in [-1, 1]
/// @param real real images in [-1, 1]
template <class Classifier>
SampleQuality score_samples(Classifier& classifier, const data::InputNormalization& normalization,
                            const Tensor<float, Host>& generated, const Tensor<float, Host>& real) {
  const auto as_classifier_input = [&](const Tensor<float, Host>& images) {
    Tensor<float, Host> out(images.shape());
    for (std::int64_t i = 0; i < images.numel(); ++i)
      out.data()[i] = normalization((static_cast<double>(images.data()[i]) + 1.0) / 2.0);
    return out;
  };
  const Tensor<float, Host> generated_features =
      penultimate_features(classifier, as_classifier_input(generated));
  SampleQuality quality;
  quality.frechet_distance =
      frechet_distance(feature_statistics(generated_features),
                       feature_statistics(penultimate_features(classifier, as_classifier_input(real))));
  // The head on the features already computed, then a softmax per row in double.
  using Device = typename Classifier::device_type;
  using Features =
      typename std::remove_cvref_t<decltype(classifier.template layer<Classifier::size - 1>())>::input_type;
  Tensor<Features, Host> head_input(generated_features.shape());
  for (std::int64_t i = 0; i < head_input.numel(); ++i)
    head_input.data()[i] = round_to<tag_of_t<Features>>(generated_features.data()[i]);
  const std::int64_t count = generated_features.shape()[0];
  Tensor<double, Host> probabilities;
  {
    const nn::EvaluationMode evaluating(classifier);
    const auto& device_input = to<Device>(head_input);
    const auto& logits = to<Host>(classifier.template layer<Classifier::size - 1>().forward(device_input));
    const std::int64_t classes = logits.numel() / count;
    probabilities = Tensor<double, Host>(Shape{count, classes});
    for (std::int64_t row = 0; row < count; ++row) {
      double largest = -HUGE_VAL, sum = 0.0;
      for (std::int64_t k = 0; k < classes; ++k)
        largest = std::max(largest, static_cast<double>(logits.data()[row * classes + k]));
      for (std::int64_t k = 0; k < classes; ++k) {
        const double e = std::exp(static_cast<double>(logits.data()[row * classes + k]) - largest);
        probabilities.data()[row * classes + k] = e;
        sum += e;
      }
      for (std::int64_t k = 0; k < classes; ++k) probabilities.data()[row * classes + k] /= sum;
    }
  }
  classifier.forget_inputs();
  quality.confident_share = confident_share(probabilities);
  return quality;
}

}  // namespace mpx::experiment
