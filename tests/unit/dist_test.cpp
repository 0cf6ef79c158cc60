// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The parts of data parallelism that need no MPI, in one process: the bucket plan and schedule, the
// fixed-order average, the model signature and its comparison, the batcher's shards, Sequential's per-layer
// backward report, and how mpx::Trainer calls a GradientSync. The multi-rank tests are in tests/mpi/.
#include <cstdint>
#include <limits>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/dist/bucket_schedule.hpp>
#include <mpx/dist/buckets.hpp>
#include <mpx/dist/model_signature.hpp>
#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using Catch::Matchers::Contains;

auto make_model(std::int64_t hidden = 8) {
  mpx::nn::Sequential model{mpx::nn::Linear<mpx::bf16_mixed, mpx::nn::Activation::ReLU>(4, hidden),
                            mpx::nn::Linear<mpx::bf16_mixed, mpx::nn::Activation::ReLU>(hidden, hidden),
                            mpx::nn::Linear<mpx::fp32>(hidden, 3)};
  model.initialize(1);
  return model;
}

}  // namespace

TEST_CASE("plan_buckets groups gradients last to first, up to the bucket size", "[dist]") {
  const std::vector<std::int64_t> sizes{100, 10, 40, 40, 5, 300};
  const auto buckets = mpx::dist::plan_buckets(sizes, 90);
  // 300 alone (larger than a bucket); 5 + 40 + 40 = 85; 10 (+100 would pass 90); 100.
  REQUIRE(buckets.size() == 4);
  CHECK(buckets[0].tensors == std::vector<std::size_t>{5});
  CHECK(buckets[1].tensors == std::vector<std::size_t>{4, 3, 2});
  CHECK(buckets[1].elements == 85);
  CHECK(buckets[2].tensors == std::vector<std::size_t>{1});
  CHECK(buckets[3].tensors == std::vector<std::size_t>{0});
  // Every gradient in exactly one bucket.
  std::multiset<std::size_t> seen;
  for (const auto& b : buckets) seen.insert(b.tensors.begin(), b.tensors.end());
  CHECK(seen == std::multiset<std::size_t>{0, 1, 2, 3, 4, 5});
  CHECK(mpx::dist::plan_buckets(sizes, 1 << 20).size() == 1);
  CHECK_THROWS_WITH(mpx::dist::plan_buckets(sizes, 0), Contains("bucket_elements = 0"));
  CHECK_THROWS_WITH((mpx::dist::SyncOptions{.bucket_bytes = std::int64_t{1} << 31}.validate()),
                    Contains("bucket_bytes = 2147483648"));
  CHECK_THROWS_WITH(
      (mpx::dist::SyncOptions{.timeout = std::chrono::milliseconds(-1)}.validate()),
      Contains("timeout = -1 ms is invalid; expected 0 to 31536000000 ms (a year); 0 waits forever"));
  // milliseconds::max() would overflow the deadline's clock: refused, with the way to wait forever.
  CHECK_THROWS_WITH((mpx::dist::SyncOptions{.timeout = std::chrono::milliseconds::max()}.validate()),
                    Contains("0 waits forever"));
  CHECK_NOTHROW((mpx::dist::SyncOptions{.timeout = mpx::dist::SyncOptions::max_timeout}.validate()));
  CHECK(mpx::dist::reduction_name(mpx::dist::Reduction::fixed_order_sharded) == "fixed_order_sharded");
}

TEST_CASE("BucketSchedule hands out buckets in order, once all their gradients are final", "[dist]") {
  // Gradients of 100, 10, 40, 40, 5, 300 elements: buckets {5}, {4, 3, 2}, {1}, {0} (as above).
  std::vector<mpx::Tensor<float>> storage;
  for (std::int64_t size : {100, 10, 40, 40, 5, 300}) storage.emplace_back(mpx::Shape{size});
  std::vector<mpx::Tensor<float>*> gradients;
  for (auto& tensor : storage) gradients.push_back(&tensor);
  mpx::dist::BucketSchedule<mpx::Tensor<float>> schedule(gradients, 90, "test sync");
  REQUIRE(schedule.buckets().size() == 4);
  CHECK(schedule.gradients() == gradients);
  const auto report = [&](std::initializer_list<std::size_t> indices) {
    std::vector<mpx::Tensor<float>*> final_gradients;
    for (std::size_t i : indices) final_gradients.push_back(gradients[i]);
    schedule.report(final_gradients);
  };
  const auto take_ready = [&] {
    std::vector<std::size_t> taken;
    while (schedule.next_ready()) taken.push_back(schedule.take_next());
    return taken;
  };

  for (int backward = 0; backward < 2; ++backward) {  // begin() resets everything
    schedule.begin();
    CHECK(take_ready().empty());
    report({2, 3});  // bucket 1 is still missing gradient 4, and bucket 0 comes first anyway
    CHECK(take_ready().empty());
    report({0});  // bucket 3 complete, but it waits for buckets 0 to 2
    CHECK(take_ready().empty());
    report({5});
    CHECK(take_ready() == std::vector<std::size_t>{0});
    report({4});
    CHECK(take_ready() == std::vector<std::size_t>{1});
    CHECK_FALSE(schedule.all_taken());
    report({1});
    CHECK(take_ready() == std::vector<std::size_t>{2, 3});
    CHECK(schedule.all_taken());
  }

  // After backward the rest go, ready or not.
  schedule.begin();
  report({5});
  std::vector<std::size_t> taken = take_ready();
  while (!schedule.all_taken()) taken.push_back(schedule.take_next());
  CHECK(taken == std::vector<std::size_t>{0, 1, 2, 3});

  schedule.begin();
  report({1});
  CHECK_THROWS_WITH(report({1}), Contains("test sync: gradient 1 was reported final twice in one backward"));
  mpx::Tensor<float> stranger(mpx::Shape{3});
  std::vector<mpx::Tensor<float>*> strangers{&stranger};
  CHECK_THROWS_WITH(schedule.report(strangers),
                    Contains("test sync: a gradient reported final is not one of"));

  CHECK_NOTHROW(schedule.require_same_gradients(gradients));
  CHECK_THROWS_WITH(schedule.require_same_gradients(strangers),
                    Contains("test sync: the trainer's 1 gradients are not the 6 this sync was built for"));
  std::vector<mpx::Tensor<float>*> reordered = gradients;
  std::swap(reordered[0], reordered[1]);
  CHECK_THROWS_WITH(schedule.require_same_gradients(reordered), Contains("are not the 6"));
}

TEST_CASE("average_in_rank_order sums in rank order then divides once, and propagates inf/NaN", "[dist]") {
  // 1 + 2^-24 + 2^-24: in rank order each tiny addend is lost (round to even); summed the other way
  // round they would add up to 2^-23 and survive. The order is the one written.
  const float tiny = 0x1p-24f;
  const std::vector<float> gathered{1.0f, 5.0f, tiny, 1.0f, tiny, std::numeric_limits<float>::infinity()};
  std::vector<float> out(2);
  mpx::dist::average_in_rank_order<float>(gathered, 3, out);
  CHECK(out[0] == 1.0f / 3.0f);
  CHECK(out[1] == std::numeric_limits<float>::infinity());
  CHECK(((1.0f + tiny) + tiny) / 3.0f == out[0]);
  CHECK_THROWS_AS(mpx::dist::average_in_rank_order<float>(std::span<const float>(gathered).first(5), 3, out),
                  mpx::shape_error);
}

TEST_CASE("model_signature tells models apart by names, shapes and element sizes", "[dist]") {
  auto a = make_model();
  auto b = make_model();
  auto c = make_model(9);
  const auto sa = mpx::dist::model_signature(a);
  CHECK(sa == mpx::dist::model_signature(b));
  CHECK(sa.parameters == 6);
  CHECK(sa.scalars == 4 * 8 + 8 + 8 * 8 + 8 + 8 * 3 + 3);
  CHECK_FALSE(sa == mpx::dist::model_signature(c));
  mpx::nn::Sequential fp32{mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::ReLU>(4, 8),
                           mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::ReLU>(8, 8),
                           mpx::nn::Linear<mpx::fp32>(8, 3)};
  // Same names and shapes; the master weights are fp32 in both, so only the compute type differs,
  // and ranks with different compute precisions still average fp32 gradients correctly.
  CHECK(mpx::dist::model_signature(fp32) == sa);
}

TEST_CASE("require_same_model names every rank whose signature differs from rank 0's", "[dist]") {
  auto a = make_model();
  auto wider = make_model(16);
  const mpx::dist::ModelSignature same = mpx::dist::model_signature(a);
  const mpx::dist::ModelSignature other = mpx::dist::model_signature(wider);
  const std::vector<mpx::dist::ModelSignature> agree{same, same, same};
  CHECK_NOTHROW(mpx::dist::require_same_model(agree, "here"));
  CHECK_NOTHROW(mpx::dist::require_same_model(std::span<const mpx::dist::ModelSignature>{}, "here"));
  const std::vector<mpx::dist::ModelSignature> disagree{same, other, same, other};
  try {
    mpx::dist::require_same_model(disagree, "here");
    FAIL("no exception");
  } catch (const mpx::invalid_argument& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Contains("here: the ranks hold different models: rank 0 has 6 parameter tensors of " +
                                 std::to_string(same.scalars) + " scalars"));
    CHECK_THAT(message, Contains("; rank 1 has 6 parameter tensors of " + std::to_string(other.scalars)));
    CHECK_THAT(message, Contains("; rank 3 has"));
    CHECK_THAT(message, !Contains("rank 2"));
  }
}

TEST_CASE("A sharded batcher deals disjoint slices of the global batch and counts global positions",
          "[dist][data]") {
  const std::int64_t n = 103;
  mpx::Tensor<float> images(mpx::Shape{n, 1});
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    images[i] = static_cast<float>(i);
    labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % 2);
  }
  const mpx::data::Dataset data(std::move(images), labels, 2);
  const std::int64_t world = 3, batch = 8;
  mpx::data::Batcher whole(
      data, {.batch_size = batch * world, .seed = 9, .last_batch = mpx::data::LastBatch::Drop});
  std::vector<mpx::data::Batcher> shards;
  for (std::int64_t r = 0; r < world; ++r) {
    shards.emplace_back(
        data,
        mpx::data::Batcher::Options{
            .batch_size = batch, .seed = 9, .last_batch = mpx::data::LastBatch::Drop, .shard = {r, world}});
  }
  CHECK(shards[0].batches_per_epoch() == n / (batch * world));
  mpx::Tensor<float> x, xs;
  mpx::Tensor<std::int32_t> y, ys;
  std::int64_t steps = 0;
  while (whole.next(x, y)) {
    ++steps;
    for (std::int64_t r = 0; r < world; ++r) {
      REQUIRE(shards[static_cast<std::size_t>(r)].next(xs, ys));
      REQUIRE(xs.shape() == mpx::Shape{batch, 1});
      // Rank r's slice is rows [r * batch, (r + 1) * batch) of the global batch.
      for (std::int64_t i = 0; i < batch; ++i) CHECK(xs[i] == x[r * batch + i]);
      CHECK(shards[static_cast<std::size_t>(r)].position() == whole.position());
    }
  }
  CHECK(steps == 4);  // 103 = 4 x 24 + 7: the remainder of 7 is dropped on every rank
  for (auto& shard : shards) CHECK_FALSE(shard.next(xs, ys));
  CHECK_THROWS_WITH(mpx::data::Batcher(data, {.batch_size = 8, .shard = {0, 2}}),
                    Contains("LastBatch::Drop"));
  CHECK_THROWS_WITH(
      mpx::data::Batcher(data, {.batch_size = 8, .last_batch = mpx::data::LastBatch::Drop, .shard = {2, 2}}),
      Contains("shard = {index 2, count 2}"));
}

TEST_CASE("Sequential's backward reports each layer, last first, after its backward ran", "[dist][nn]") {
  auto model = make_model();
  mpx::Tensor<float> x(mpx::Shape{5, 4});
  for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  const auto& y = model.forward(x);
  mpx::Tensor<float> dy(y.shape());
  for (std::int64_t i = 0; i < dy.numel(); ++i) dy[i] = 0.05f * static_cast<float>(i % 5) - 0.1f;
  std::vector<std::string> reported;
  std::vector<float> first_grad_seen;
  model.backward(dy, false, [&](auto& layer) {
    std::string names;
    layer.for_each_parameter([&](std::string_view name, auto& p) {
      names.append(name).append(" ");
      first_grad_seen.push_back(p.grad()[0]);
    });
    reported.push_back(names);
  });
  CHECK(reported == std::vector<std::string>{"weight bias ", "weight bias ", "weight bias "});
  // The values seen in the report are the final gradients: the same as a plain backward's.
  auto again = make_model();
  (void)again.forward(x);
  again.zero_grad();
  again.backward(dy);
  std::vector<float> plain;
  for (std::size_t layer = 3; layer-- > 0;) {
    std::size_t index = 0;
    again.for_each_parameter([&](std::string_view, auto& p) {
      if (index++ / 2 == layer) plain.push_back(p.grad()[0]);
    });
  }
  CHECK(first_grad_seen == plain);
}

namespace {
/// A GradientSync that records what the trainer hands it, and doubles every gradient in `finish`
/// (so the test can see that finish ran before the gradients were inspected and used).
class RecordingSync final : public mpx::GradientSync<mpx::Host, float> {
 public:
  std::vector<std::string> calls;
  std::set<const mpx::Tensor<float>*> reported;
  std::size_t finished_with = 0;
  double loss_sum_seen = 0.0;
  int rank() const override { return 0; }
  void begin_backward() override {
    calls.emplace_back("begin");
    reported.clear();
  }
  void gradients_final(GradientList gradients) override {
    calls.emplace_back("final");
    for (auto* g : gradients) CHECK(reported.insert(g).second);
  }
  void finish(GradientList gradients, mpx::StepScalars* scalars, std::span<float> amaxes) override {
    calls.emplace_back("finish");
    CHECK(amaxes.empty());  // no FP8 layers
    finished_with = gradients.size();
    for (auto* g : gradients) {
      CHECK(reported.count(g) == 1);  // every gradient was reported final first
      for (float& v : g->values()) v *= 2.0f;
    }
    loss_sum_seen = scalars->loss_sum;
  }
};
}  // namespace

TEST_CASE("Trainer calls its GradientSync around the last micro-batch's backward, before inspecting",
          "[dist][trainer]") {
  auto model = make_model();
  auto twin = make_model();
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss, twin_loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.1});
  mpx::optim::SGD twin_optimizer(twin, {.lr = 0.2});  // doubled gradients under SGD = doubled lr
  RecordingSync sync;
  mpx::Trainer trainer(model, loss, optimizer, sync);
  mpx::Trainer plain(twin, twin_loss, twin_optimizer);
  using Batch = decltype(trainer)::Batch;
  mpx::Tensor<float> x(mpx::Shape{6, 4});
  mpx::Tensor<std::int32_t> y(mpx::Shape{6});
  for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = 0.2f * static_cast<float>(i % 5) - 0.4f;
  for (std::int64_t i = 0; i < 6; ++i) y[i] = static_cast<std::int32_t>(i % 3);
  const auto x16 = mpx::convert<mpx::BFloat16>(x);
  const Batch batches[] = {{x16, y}, {x16, y}};
  const auto result = trainer.step(std::span<const Batch>(batches));
  // Three layers with parameters, reported once each, during the second micro-batch only.
  CHECK(sync.calls == std::vector<std::string>{"begin", "final", "final", "final", "finish"});
  CHECK(sync.finished_with == 6);
  CHECK(sync.loss_sum_seen == result.loss * 2.0);
  const auto twin_result = plain.step(
      std::span<const mpx::Trainer<decltype(twin), decltype(twin_loss), decltype(twin_optimizer)>::Batch>(
          batches));
  // The norm the trainer reports is the doubled gradient's: finish ran before the inspection.
  CHECK(result.grad_norm == Approx(2.0 * twin_result.grad_norm).epsilon(1e-6));
  std::vector<float> w, w_twin;
  model.for_each_parameter([&](std::string_view, auto& p) { w.push_back(p.master()[0]); });
  twin.for_each_parameter([&](std::string_view, auto& p) { w_twin.push_back(p.master()[0]); });
  CHECK(w == w_twin);
}

}  // namespace MPX_UNITY_ID
}  // namespace
