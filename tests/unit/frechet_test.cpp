// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The Fréchet distance of Gaussian fits against closed forms, invariances and an independent fp64
// route (a Denman–Beavers square root of S_a S_b, as the FID reference's sqrtm), the feature
// statistics against hand computation, and the confident share.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <Eigen/Core>
#include <Eigen/LU>
#include <Eigen/QR>

#include <mpx/experiment/frechet.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::experiment::FeatureStatistics;

template <class Scalar>
mpx::Tensor<Scalar, mpx::Host> tensor_of(const Eigen::MatrixXd& rows) {
  mpx::Tensor<Scalar, mpx::Host> tensor(mpx::Shape{rows.rows(), rows.cols()});
  tensor.matrix() = rows.cast<Scalar>();
  return tensor;
}

// `count` samples of a Gaussian with a random mean (entries of size `spread`) and a random full
// covariance: x = mu + L z.
Eigen::MatrixXd gaussian_samples(std::mt19937& rng, std::int64_t count, std::int64_t dim, double spread) {
  std::normal_distribution<double> normal;
  Eigen::MatrixXd mixing(dim, dim);
  Eigen::VectorXd mean(dim);
  for (Eigen::Index i = 0; i < dim; ++i) {
    mean(i) = spread * normal(rng);
    for (Eigen::Index j = 0; j < dim; ++j) mixing(i, j) = normal(rng);
  }
  Eigen::MatrixXd samples(count, dim);
  for (Eigen::Index r = 0; r < count; ++r) {
    Eigen::VectorXd z(dim);
    for (Eigen::Index j = 0; j < dim; ++j) z(j) = normal(rng);
    samples.row(r) = (mean + mixing * z).transpose();
  }
  return samples;
}

// A random symmetric positive definite matrix: M M^T + floor I.
Eigen::MatrixXd random_spd(std::mt19937& rng, std::int64_t dim, double floor) {
  std::normal_distribution<double> normal;
  Eigen::MatrixXd m(dim, dim);
  for (Eigen::Index i = 0; i < dim; ++i)
    for (Eigen::Index j = 0; j < dim; ++j) m(i, j) = normal(rng);
  return m * m.transpose() + floor * Eigen::MatrixXd::Identity(dim, dim);
}

// The square root of a matrix with no eigenvalue on the closed negative real axis by the
// Denman–Beavers iteration: Y -> (Y + Z^-1) / 2, Z -> (Z + Y^-1) / 2 from Y = A, Z = I; Y -> A^(1/2).
// Uses neither symmetry nor an eigen-decomposition, so it checks frechet_distance's route.
Eigen::MatrixXd denman_beavers_sqrt(const Eigen::MatrixXd& a) {
  Eigen::MatrixXd y = a;
  Eigen::MatrixXd z = Eigen::MatrixXd::Identity(a.rows(), a.cols());
  for (int iteration = 0; iteration < 100; ++iteration) {
    const Eigen::MatrixXd next_y = 0.5 * (y + z.inverse());
    const Eigen::MatrixXd next_z = 0.5 * (z + y.inverse());
    const double change = (next_y - y).norm();
    y = next_y;
    z = next_z;
    if (change <= 1e-15 * y.norm()) break;
  }
  REQUIRE((y * y - a).norm() <= 1e-11 * a.norm());
  return y;
}

}  // namespace

TEST_CASE("feature_statistics gives the mean and unbiased covariance of a small set",
          "[experiment][frechet]") {
  // Rows (1, 2), (3, 6), (5, 4): mean (3, 4); centred (-2, -2), (0, 2), (2, 0); the sums of
  // products are 8, 4 / 4, 8, divided by count - 1 = 2.
  Eigen::MatrixXd rows(3, 2);
  rows << 1, 2, 3, 6, 5, 4;
  Eigen::Matrix2d covariance;
  covariance << 4, 2, 2, 4;
  for (const FeatureStatistics& statistics : {mpx::experiment::feature_statistics(tensor_of<double>(rows)),
                                              mpx::experiment::feature_statistics(tensor_of<float>(rows))}) {
    CHECK(statistics.count == 3);
    CHECK(statistics.dim() == 2);
    CHECK(statistics.mean == Eigen::Vector2d(3, 4));
    CHECK(statistics.covariance == covariance);
  }

  // In batches of 1, 0 and 2 rows: the same statistics.
  mpx::experiment::FeatureAccumulator accumulator;
  accumulator.add(tensor_of<double>(rows.topRows(1)));
  accumulator.add(mpx::Tensor<double, mpx::Host>(mpx::Shape{0, 2}));
  accumulator.add(tensor_of<double>(rows.bottomRows(2)));
  const FeatureStatistics batched = accumulator.statistics();
  CHECK(batched.count == 3);
  CHECK((batched.mean - Eigen::Vector2d(3, 4)).norm() <= 1e-15);
  CHECK((batched.covariance - covariance).norm() <= 1e-14);

  // A larger set far from the origin, in uneven batches, against the two-pass formula written out.
  std::mt19937 rng(11);
  Eigen::MatrixXd samples = gaussian_samples(rng, 103, 5, 1.0);
  samples.array() += 1000.0;  // a large mean: sum(x x^T) - n mu mu^T would lose 6 digits
  const Eigen::VectorXd mean = samples.colwise().mean().transpose();
  const Eigen::MatrixXd centred = samples.rowwise() - mean.transpose();
  const Eigen::MatrixXd expected = centred.transpose() * centred / 102.0;
  mpx::experiment::FeatureAccumulator uneven;
  for (const auto& [first, count] : {std::pair{0, 1}, {1, 40}, {41, 2}, {43, 60}}) {
    uneven.add(tensor_of<double>(samples.middleRows(first, count)));
  }
  const FeatureStatistics statistics = uneven.statistics();
  CHECK((statistics.mean - mean).norm() <= 1e-12 * mean.norm());
  CHECK((statistics.covariance - expected).norm() <= 1e-12 * expected.norm());
}

TEST_CASE("frechet_distance of a set with itself is 0, also with more features than samples",
          "[experiment][frechet]") {
  std::mt19937 rng(3);
  const FeatureStatistics full =
      mpx::experiment::feature_statistics(tensor_of<float>(gaussian_samples(rng, 200, 8, 3.0)));
  CHECK(std::abs(mpx::experiment::frechet_distance(full, full)) <= 1e-9 * 2.0 * full.covariance.trace());
  // 4 samples of 10 features: a covariance of rank 3 whose zero eigenvalues round to tiny negatives.
  const FeatureStatistics singular =
      mpx::experiment::feature_statistics(tensor_of<double>(gaussian_samples(rng, 4, 10, 3.0)));
  const double distance = mpx::experiment::frechet_distance(singular, singular);
  CHECK(std::isfinite(distance));
  CHECK(distance <= 1e-9 * 2.0 * singular.covariance.trace());
}

TEST_CASE("frechet_distance of diagonal Gaussians is the closed form", "[experiment][frechet]") {
  // sum (mu_a - mu_b)^2 + sum (sqrt(var_a) - sqrt(var_b))^2.
  FeatureStatistics a{Eigen::Vector3d(1.0, -2.0, 0.5), Eigen::Vector3d(4.0, 0.25, 9.0).asDiagonal(), 100};
  FeatureStatistics b{Eigen::Vector3d(0.0, 1.0, 0.5), Eigen::Vector3d(1.0, 2.25, 16.0).asDiagonal(), 50};
  // (1 + 9 + 0) + ((2 - 1)^2 + (0.5 - 1.5)^2 + (3 - 4)^2) = 13.
  CHECK(mpx::experiment::frechet_distance(a, b) == Approx(13.0).epsilon(1e-12));
  CHECK(mpx::experiment::frechet_distance(b, a) == Approx(13.0).epsilon(1e-12));
  // A zero variance (a constant feature) is a zero eigenvalue, not a NaN.
  a.covariance(1, 1) = 0.0;  // (2 - 1)^2 + (0 - 1.5)^2 + (3 - 4)^2 = 4.25
  CHECK(mpx::experiment::frechet_distance(a, b) == Approx(10.0 + 4.25).epsilon(1e-12));
}

TEST_CASE("frechet_distance is invariant under a rotation and a shift of both feature sets",
          "[experiment][frechet]") {
  std::mt19937 rng(5);
  const std::int64_t dim = 6;
  const Eigen::MatrixXd first = gaussian_samples(rng, 300, dim, 1.0);
  const Eigen::MatrixXd second = gaussian_samples(rng, 250, dim, 1.0);
  std::normal_distribution<double> normal;
  Eigen::MatrixXd random(dim, dim);
  Eigen::VectorXd shift(dim);
  for (Eigen::Index i = 0; i < dim; ++i) {
    shift(i) = 5.0 * normal(rng);
    for (Eigen::Index j = 0; j < dim; ++j) random(i, j) = normal(rng);
  }
  const Eigen::MatrixXd rotation = Eigen::HouseholderQR<Eigen::MatrixXd>(random).householderQ();
  REQUIRE((rotation.transpose() * rotation - Eigen::MatrixXd::Identity(dim, dim)).norm() <= 1e-13);

  const auto distance = [](const Eigen::MatrixXd& x, const Eigen::MatrixXd& y) {
    return mpx::experiment::frechet_distance(mpx::experiment::feature_statistics(tensor_of<double>(x)),
                                             mpx::experiment::feature_statistics(tensor_of<double>(y)));
  };
  const double original = distance(first, second);
  const Eigen::MatrixXd first_moved = (first * rotation.transpose()).rowwise() + shift.transpose();
  const Eigen::MatrixXd second_moved = (second * rotation.transpose()).rowwise() + shift.transpose();
  CHECK(original > 1.0);
  CHECK(distance(first_moved, second_moved) == Approx(original).epsilon(1e-9));
}

TEST_CASE("frechet_distance of non-commuting covariances matches sqrtm(S_a S_b) by Denman-Beavers",
          "[experiment][frechet]") {
  std::mt19937 rng(17);
  for (const std::int64_t dim : {2, 5, 12}) {
    INFO("dim " << dim);
    const Eigen::MatrixXd covariance_a = random_spd(rng, dim, 0.1);
    const Eigen::MatrixXd covariance_b = random_spd(rng, dim, 0.1);
    const Eigen::MatrixXd commutator = covariance_a * covariance_b - covariance_b * covariance_a;
    REQUIRE(commutator.norm() > 0.1 * covariance_a.norm() * covariance_b.norm());
    Eigen::VectorXd mean_a(dim), mean_b(dim);
    std::normal_distribution<double> normal;
    for (Eigen::Index i = 0; i < dim; ++i) {
      mean_a(i) = normal(rng);
      mean_b(i) = normal(rng);
    }
    const FeatureStatistics a{mean_a, covariance_a, 1000};
    const FeatureStatistics b{mean_b, covariance_b, 1000};
    const double expected = (mean_a - mean_b).squaredNorm() + covariance_a.trace() + covariance_b.trace() -
                            2.0 * denman_beavers_sqrt(covariance_a * covariance_b).trace();
    CHECK(mpx::experiment::frechet_distance(a, b) == Approx(expected).epsilon(1e-9));
    CHECK(mpx::experiment::frechet_distance(b, a) == Approx(expected).epsilon(1e-9));
  }
}

TEST_CASE("frechet_distance and feature_statistics reject bad input naming the values",
          "[experiment][frechet]") {
  const FeatureStatistics two{Eigen::Vector2d::Zero(), Eigen::Matrix2d::Identity(), 10};
  const FeatureStatistics three{Eigen::Vector3d::Zero(), Eigen::Matrix3d::Identity(), 10};
  CHECK_THROWS_MATCHES(mpx::experiment::frechet_distance(two, three), mpx::invalid_argument,
                       Catch::Message("mpx::experiment::frechet_distance: a has dim 2 and b has dim 3"));
  FeatureStatistics one_sample = three;
  one_sample.count = 1;
  CHECK_THROWS_MATCHES(
      mpx::experiment::frechet_distance(three, one_sample), mpx::invalid_argument,
      Catch::Message(
          "mpx::experiment::frechet_distance: b.count is 1; statistics need at least 2 feature vectors"));
  FeatureStatistics torn = two;
  torn.covariance = Eigen::Matrix3d::Identity();
  CHECK_THROWS_MATCHES(
      mpx::experiment::frechet_distance(torn, two), mpx::invalid_argument,
      Catch::Message("mpx::experiment::frechet_distance: a has a mean of 2 entries and a 3 x 3 covariance"));

  CHECK_THROWS_MATCHES(
      mpx::experiment::feature_statistics(mpx::Tensor<float, mpx::Host>(mpx::Shape{1, 4})),
      mpx::invalid_argument,
      Catch::Message("mpx::experiment::FeatureAccumulator::statistics: 1 feature vectors added; a "
                     "covariance needs at least 2"));
  CHECK_THROWS_MATCHES(
      mpx::experiment::feature_statistics(mpx::Tensor<float, mpx::Host>(mpx::Shape{4, 2, 2})),
      mpx::shape_error,
      Catch::Message("mpx::experiment::FeatureAccumulator::add: features have shape [4, 2, 2]; "
                     "expected [count, dim] with dim > 0"));
  mpx::experiment::FeatureAccumulator accumulator;
  accumulator.add(mpx::Tensor<double, mpx::Host>(mpx::Shape{3, 4}));
  CHECK_THROWS_MATCHES(accumulator.add(mpx::Tensor<double, mpx::Host>(mpx::Shape{3, 5})), mpx::shape_error,
                       Catch::Message("mpx::experiment::FeatureAccumulator::add: features have shape [3, 5]; "
                                      "earlier batches had dim 4"));
  CHECK(accumulator.count() == 3);
}

TEST_CASE("confident_share counts the rows whose largest probability reaches the threshold",
          "[experiment][frechet]") {
  Eigen::MatrixXd probabilities(5, 3);
  probabilities << 0.95, 0.03, 0.02,                       // confident
      0.05, 0.9, 0.05,                                     // exactly the threshold: confident
      0.5, 0.3, 0.2,                                       //
      0.05, 0.05, 0.8999999,                               // just below
      std::numeric_limits<double>::quiet_NaN(), 0.0, 1.0;  // NaN: not confident
  CHECK(mpx::experiment::confident_share(tensor_of<double>(probabilities)) == 2.0 / 5.0);
  CHECK(mpx::experiment::default_confidence_threshold == 0.9);
  CHECK(mpx::experiment::confident_share(tensor_of<double>(probabilities), 0.5) == 4.0 / 5.0);
  CHECK(mpx::experiment::confident_share(tensor_of<double>(probabilities), 0.96) == 0.0);
  // fp32 probabilities compare in fp32: 0.9f, below 0.9 as a double, reaches the threshold.
  CHECK(mpx::experiment::confident_share(tensor_of<float>(probabilities.topRows(2))) == 1.0);

  CHECK_THROWS_MATCHES(mpx::experiment::confident_share(tensor_of<double>(probabilities), 0.0),
                       mpx::invalid_argument,
                       Catch::Message("mpx::experiment::confident_share: threshold 0 is not in (0, 1]"));
  CHECK_THROWS_WITH(mpx::experiment::confident_share(tensor_of<double>(probabilities), 1.5),
                    Catch::Contains("threshold 1.5"));
  CHECK_THROWS_MATCHES(mpx::experiment::confident_share(mpx::Tensor<float, mpx::Host>(mpx::Shape{0, 10})),
                       mpx::shape_error,
                       Catch::Message("mpx::experiment::confident_share: probabilities have shape [0, 10]; "
                                      "expected [count, classes] with count, classes > 0"));
}

}  // namespace MPX_UNITY_ID
}  // namespace
