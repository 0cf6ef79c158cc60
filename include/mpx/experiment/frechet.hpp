// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Scores for generated samples, computed offline from a classifier of mpx's own: the Fréchet
/// distance between Gaussian fits of two feature sets (`FeatureStatistics`, `frechet_distance`) and
/// the share of samples the classifier is confident about (`confident_share`).
///
/// What the distance is: the squared 2-Wasserstein distance between the Gaussians whose mean and
/// covariance are those of the two sets of feature vectors,
/// `|mu_a - mu_b|^2 + tr(S_a) + tr(S_b) - 2 tr((S_a^(1/2) S_b S_a^(1/2))^(1/2))`, the formula of FID
/// (Heusel et al. 2017) with its reference implementation's unbiased covariance (numpy.cov).
/// What it is not: FID. FID uses the pool features (2048) of one particular Inception-v3 network; in
/// another feature space (here, typically the penultimate features of the Fashion-MNIST ResNet of
/// `experiment/resnet.hpp`) the numbers have another scale and are comparable only with numbers from
/// the same network, weights and number of samples, never with published FIDs. Like FID, the
/// estimate is biased upward for small sample counts: compare scores at equal counts.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <Eigen/Core>
// Eigen's Eigenvalues module (through LU and SVD) names variables D and J, short macros a program
// may define (tests/hygiene/user_macros.cpp checks that mpx's headers survive them): they are set
// aside while it is parsed and restored after.
#pragma push_macro("D")
#pragma push_macro("J")
#undef D
#undef J
#include <Eigen/Eigenvalues>
#pragma pop_macro("J")
#pragma pop_macro("D")

#include "mpx/error.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::experiment {

/// @brief Mean and covariance of a set of feature vectors, in double: a Gaussian fit of the set.
struct FeatureStatistics {
  Eigen::VectorXd mean;        ///< mean feature vector, `dim` entries
  Eigen::MatrixXd covariance;  ///< unbiased covariance (divided by `count - 1`), `dim` x `dim`
  std::int64_t count = 0;      ///< number of feature vectors the statistics describe

  /// @brief Length of a feature vector.
  [[nodiscard]] std::int64_t dim() const noexcept { return mean.size(); }
};

/// @brief Builds `FeatureStatistics` from feature vectors that arrive in batches (as a classifier's
/// features do), merging each batch's mean and centred sums by Chan, Golub and LeVeque's update, so
/// that the result does not depend on how the rows were batched beyond rounding, and no
/// catastrophic cancellation of `sum(x x^T) - n mu mu^T` arises.
class FeatureAccumulator {
 public:
  /// @brief Adds the rows of `features` `[rows, dim]`; every batch must have the same `dim`.
  /// Throws `mpx::shape_error` naming the shapes otherwise or when `features` is not of rank 2
  /// with `dim` > 0. A batch of 0 rows changes nothing.
  /// @tparam Scalar `float` or `double`
  /// @param features host feature matrix, one feature vector per row
  template <class Scalar>
  requires std::is_same_v<Scalar, float> || std::is_same_v<Scalar, double>
  void add(const Tensor<Scalar, Host>& features) {
    const Shape& shape = features.shape();
    if (shape.rank() != 2 || shape[1] < 1) {
      throw shape_error(mpx::detail::concat("mpx::experiment::FeatureAccumulator::add: features have shape ",
                                            shape, "; expected [count, dim] with dim > 0"));
    }
    if (count_ > 0 && shape[1] != mean_.size()) {
      throw shape_error(mpx::detail::concat("mpx::experiment::FeatureAccumulator::add: features have shape ",
                                            shape, "; earlier batches had dim ", mean_.size()));
    }
    const std::int64_t rows = shape[0];
    if (rows == 0) return;
    const Eigen::MatrixXd batch = features.matrix().template cast<double>();
    const Eigen::VectorXd batch_mean = batch.colwise().mean().transpose();
    const Eigen::MatrixXd centred = batch.rowwise() - batch_mean.transpose();
    Eigen::MatrixXd batch_sums = Eigen::MatrixXd::Zero(batch.cols(), batch.cols());
    batch_sums.selfadjointView<Eigen::Lower>().rankUpdate(centred.transpose());
    batch_sums = batch_sums.selfadjointView<Eigen::Lower>();
    if (count_ == 0) {
      mean_ = batch_mean;
      centred_sums_ = batch_sums;
      count_ = rows;
      return;
    }
    const double before = static_cast<double>(count_), added = static_cast<double>(rows);
    const double total = before + added;
    const Eigen::VectorXd delta = batch_mean - mean_;
    centred_sums_ += batch_sums + (before * added / total) * (delta * delta.transpose());
    mean_ += (added / total) * delta;
    count_ += rows;
  }

  /// @brief Number of feature vectors added so far.
  [[nodiscard]] std::int64_t count() const noexcept { return count_; }

  /// @brief The statistics of every row added; throws `mpx::invalid_argument` naming the count when
  /// fewer than 2 rows were added (an unbiased covariance needs 2).
  [[nodiscard]] FeatureStatistics statistics() const {
    if (count_ < 2) {
      throw invalid_argument(mpx::detail::concat("mpx::experiment::FeatureAccumulator::statistics: ", count_,
                                                 " feature vectors added; a covariance needs at least 2"));
    }
    return {mean_, centred_sums_ / static_cast<double>(count_ - 1), count_};
  }

 private:
  Eigen::VectorXd mean_;
  Eigen::MatrixXd centred_sums_;  // sum over rows of (x - mean)(x - mean)^T
  std::int64_t count_ = 0;
};

/// @brief Mean and unbiased covariance of the rows of `features` `[count, dim]`, as numpy's
/// `mean(axis=0)` and `cov(rowvar=False)` in double. Throws `mpx::shape_error` unless `features`
/// has rank 2 and `dim` > 0, `mpx::invalid_argument` naming the count when `count` < 2.
/// @tparam Scalar `float` or `double`
/// @param features host feature matrix, one feature vector per row
template <class Scalar>
requires std::is_same_v<Scalar, float> || std::is_same_v<Scalar, double>
[[nodiscard]] FeatureStatistics feature_statistics(const Tensor<Scalar, Host>& features) {
  FeatureAccumulator accumulator;
  accumulator.add(features);
  return accumulator.statistics();
}

namespace detail {
/// The eigen-decomposition of the symmetric matrix `matrix` (eigenvectors too when `options` says
/// so); throws `mpx::error` when it does not converge, which NaN or infinite features cause.
[[nodiscard]] inline Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> symmetric_eigen(
    const Eigen::MatrixXd& matrix, int options) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(matrix, options);
  if (solver.info() != Eigen::Success) {
    throw error(mpx::detail::concat("mpx::experiment::frechet_distance: the eigen-decomposition of a ",
                                    matrix.rows(), " x ", matrix.cols(),
                                    " matrix did not converge (are there NaN or infinite features?)"));
  }
  return solver;
}
}  // namespace detail

/// @brief The Fréchet distance between the Gaussian fits `a` and `b`:
/// `|mu_a - mu_b|^2 + tr(S_a) + tr(S_b) - 2 tr((S_a^(1/2) S_b S_a^(1/2))^(1/2))`.
///
/// Computed through two symmetric eigen-decompositions (`S_a^(1/2)`, then the symmetric
/// `S_a^(1/2) S_b S_a^(1/2)`, whose square root has the trace of `(S_a S_b)^(1/2)`), which stay real
/// where the reference implementation's general `sqrtm(S_a S_b)` may return complex values for
/// near-singular covariances (and drops their imaginary parts). The result is never negative
/// (rounding's tiny negatives become 0). Throws `mpx::invalid_argument` naming the values when the
/// dimensions differ, either count is below 2, or the sizes of mean and covariance disagree, and
/// `mpx::error` when an eigen-decomposition fails (NaN or infinite statistics).
/// @param a statistics of the first feature set (generated samples, say)
/// @param b statistics of the second (real images)
/// @return the distance, in squared feature units
[[nodiscard]] inline double frechet_distance(const FeatureStatistics& a, const FeatureStatistics& b) {
  for (const FeatureStatistics* side : {&a, &b}) {
    const char* name = side == &a ? "a" : "b";
    if (side->count < 2) {
      throw invalid_argument(mpx::detail::concat("mpx::experiment::frechet_distance: ", name, ".count is ",
                                                 side->count,
                                                 "; statistics need at least 2 feature vectors"));
    }
    if (side->dim() < 1 || side->covariance.rows() != side->dim() || side->covariance.cols() != side->dim()) {
      throw invalid_argument(mpx::detail::concat(
          "mpx::experiment::frechet_distance: ", name, " has a mean of ", side->dim(), " entries and a ",
          side->covariance.rows(), " x ", side->covariance.cols(), " covariance"));
    }
  }
  if (a.dim() != b.dim()) {
    throw invalid_argument(mpx::detail::concat("mpx::experiment::frechet_distance: a has dim ", a.dim(),
                                               " and b has dim ", b.dim()));
  }
  // Covariances are positive semi-definite, but rounding turns their zero eigenvalues (features
  // that are constant, or more features than samples) into tiny negatives, about -1e-16 times the
  // largest. They are clamped to 0 below, so that their square roots are 0 instead of NaN.
  const auto solver_a = detail::symmetric_eigen(a.covariance, Eigen::ComputeEigenvectors);
  const Eigen::VectorXd roots_a = solver_a.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  const Eigen::MatrixXd root_a =
      solver_a.eigenvectors() * roots_a.asDiagonal() * solver_a.eigenvectors().transpose();
  Eigen::MatrixXd product = root_a * b.covariance * root_a;
  product = (0.5 * (product + product.transpose())).eval();  // symmetric up to rounding: make it exactly so
  const double cross_trace =
      detail::symmetric_eigen(product, Eigen::EigenvaluesOnly).eigenvalues().cwiseMax(0.0).cwiseSqrt().sum();
  const double distance =
      (a.mean - b.mean).squaredNorm() + a.covariance.trace() + b.covariance.trace() - 2.0 * cross_trace;
  return std::max(distance, 0.0);  // >= 0 exactly; rounding may leave a tiny negative
}

/// @brief The default threshold of `confident_share`: a class probability of at least 0.9.
inline constexpr double default_confidence_threshold = 0.9;

/// @brief The fraction of rows of `probabilities` `[count, classes]` whose largest entry is at least
/// `threshold`: how many generated samples a classifier assigns to one class with confidence (a
/// rough stand-in for the "quality" half of the Inception score). The comparison is in `Scalar`
/// (`0.9f`, just below 0.9, reaches the threshold 0.9), and a row holding NaN is not confident. Throws
/// `mpx::shape_error` unless the shape is `[count, classes]` with count and classes > 0,
/// `mpx::invalid_argument` naming the threshold unless it is in (0, 1].
/// @tparam Scalar `float` or `double`
/// @param probabilities host class probabilities (softmax outputs), one row per sample
/// @param threshold     smallest largest-probability that counts as confident
template <class Scalar>
requires std::is_same_v<Scalar, float> || std::is_same_v<Scalar, double>
[[nodiscard]] double confident_share(const Tensor<Scalar, Host>& probabilities,
                                     double threshold = default_confidence_threshold) {
  const Shape& shape = probabilities.shape();
  if (shape.rank() != 2 || shape[0] < 1 || shape[1] < 1) {
    throw shape_error(mpx::detail::concat("mpx::experiment::confident_share: probabilities have shape ",
                                          shape, "; expected [count, classes] with count, classes > 0"));
  }
  if (!(threshold > 0.0 && threshold <= 1.0)) {
    throw invalid_argument(mpx::detail::concat("mpx::experiment::confident_share: threshold ",
                                               mpx::detail::exact_text(threshold), " is not in (0, 1]"));
  }
  const auto limit = static_cast<Scalar>(threshold);  // fp32 rows compare in fp32: 0.9f reaches 0.9
  const auto rows = probabilities.matrix();
  std::int64_t confident = 0;
  for (Eigen::Index i = 0; i < rows.rows(); ++i) {
    const auto row = rows.row(i);
    const bool has_nan = row.array().isNaN().any();
    if (!has_nan && row.maxCoeff() >= limit) ++confident;
  }
  return static_cast<double>(confident) / static_cast<double>(shape[0]);
}

}  // namespace mpx::experiment
