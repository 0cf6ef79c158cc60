// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// How many kernels the Fashion-MNIST MLP's training step (experiment/models.hpp: mlp3<P>(784, 512,
// 256, 10), softmax cross-entropy, AdamW, batch 128, inputs in the compute type) runs when it is
// replayed as a CUDA graph: `Trainer::capture_step`, then the captured graph's kernel nodes
// (cudaGraphGetNodes, cudaGraphNodeGetType), listed by name so that a GPU session shows which ones.
//
// Expected, from reading the code (bf16_mixed and fp32 alike; fp16 is the same list):
//    1  flag_nonfinite_after_kernel    the input check; its last block begins the step (BeginStep)
//  2-4  three cuBLASLt GEMMs            forward: ReLU+bias, ReLU+bias, bias epilogues
//    5  softmax_cross_entropy_kernel   loss and dlogits; counts the labels in every block (128 rows)
//                                       and its last block adds the mean to the step's loss sum
//  6-7  two cuBLASLt GEMMs              layer 3: dW with the BGRADB epilogue (db), dX
//    8  map_gradient_kernel            layer 2's ReLU backward
//  9-10 two cuBLASLt GEMMs              layer 2: dW + BGRADB, dX
//   11  map_gradient_kernel            layer 1's ReLU backward
//   12  one cuBLASLt GEMM               layer 1: dW + BGRADB (no dX: the model's input needs none)
//   13  unscale_and_inspect_kernel     finite check and norm of the 6 gradients; its last block sums
//                                       the norm and runs FinishStep (skip, clip, AdamW's bias
//                                       corrections, scaler update, update count)
//   14  adamw_update_kernel            all 6 parameters (one type combination) in one launch
// 14 kernels, down from 25 before the control kernels were folded (begin step, count targets, add
// the mean, sum partials, finish gradients and end step each had a kernel, and AdamW one per
// parameter: 6 control kernels and 5 extra optimizer launches). The issue's bar is 12; the two ReLU backward
// kernels are what is left above it: they go once the layer above computes dX with cuBLASLt's DRELU_BGRAD
// epilogue (a ReLU bit-mask saved by a RELU_AUX_BIAS forward), a change across Sequential and Linear that is
// not made yet. The test requires the count the code gives (a GEMM that cuBLASLt splits into more kernels, or
// that falls back to the unfused path, shows up here and in the list), and reports where it stands
// against 12. main() is in numeric_cuda_test.cu and skips (exit 77) without a device.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/cuda.hpp>
#include <mpx/experiment/models.hpp>

#include "support.hpp"

namespace {

constexpr std::int64_t batch = 128;
constexpr std::size_t expected_kernels = 14;
constexpr std::size_t issue_bar = 12;

// The kernel nodes of `graph`, by name (library kernels the runtime cannot name are listed as such).
std::vector<std::string> kernel_names(cudaGraph_t graph) {
  std::size_t count = 0;
  MPX_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  MPX_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::vector<std::string> names;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    MPX_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    std::string name = "(a kernel the runtime cannot name: a library's)";
    cudaKernelNodeParams params{};
    if (cudaGraphKernelNodeGetParams(node, &params) == cudaSuccess && params.func != nullptr) {
      const char* found = nullptr;
      if (cudaFuncGetName(&found, params.func) == cudaSuccess && found != nullptr) name = found;
    }
    (void)cudaGetLastError();  // a library kernel's failed lookup is not an error of the test
    names.push_back(name);
  }
  return names;
}

template <class P>
std::vector<std::string> step_kernels() {
  auto model = mpx::experiment::mlp3<P, P, mpx::Cuda>(784, 512, 256, 10);
  model.initialize(2026);
  mpx::nn::SoftmaxCrossEntropy<P, mpx::Cuda> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 1e-3, .weight_decay = 1e-4});
  mpx::Trainer trainer(model, loss, optimizer);
  using Input = typename decltype(model)::input_type;
  std::mt19937 rng(3);
  const auto inputs = mpx::to_device(mpx_test::random_host<Input>(mpx::Shape{batch, 784}, rng));
  mpx::Tensor<std::int32_t> host_labels(mpx::Shape{batch});
  for (std::int64_t i = 0; i < batch; ++i) host_labels[i] = static_cast<std::int32_t>(i % 10);
  const auto labels = mpx::to_device(host_labels);
  trainer.capture_step(inputs, labels);  // an eager step (every buffer exists), then the capture
  REQUIRE_FALSE(trainer.recorded_step().empty());
  auto names = kernel_names(trainer.recorded_step().graph());
  trainer.replay_step();  // the recording runs (an fp16 step may be skipped: its scale starts at 2^16)
  CHECK(trainer.read_result().step == 2);
  return names;
}

template <class P>
void check_step_kernels(const char* precision) {
  const auto names = step_kernels<P>();
  std::string list;
  for (const auto& name : names) list += "\n  " + name;
  INFO(precision << ": " << names.size() << " kernels per step" << list);
  WARN(precision << ": " << names.size() << " kernels per step (the issue's bar is " << issue_bar << ")"
                 << list);
  CHECK(names.size() <= expected_kernels);
  std::size_t ours = 0;  // mpx's own kernels: the 6 listed in the file comment
  for (const auto& name : names) {
    for (const char* kernel : {"flag_nonfinite_after_kernel", "softmax_cross_entropy_kernel",
                               "map_gradient_kernel", "unscale_and_inspect_kernel", "adamw_update_kernel"}) {
      if (name.find(kernel) != std::string::npos) ++ours;
    }
    CHECK(name.find("single_thread_kernel") == std::string::npos);  // no control kernel is left
    CHECK(name.find("sum_partials_kernel") == std::string::npos);
    CHECK(name.find("count_targets_kernel") == std::string::npos);
    CHECK(name.find("add_counted_mean_kernel") == std::string::npos);
  }
  CHECK(ours == 6);
}

}  // namespace

TEST_CASE("The Fashion-MNIST MLP's captured training step runs the kernels its code says, no control kernel",
          "[cuda][graph][kernels]") {
  SECTION("bf16_mixed") {
    check_step_kernels<mpx::bf16_mixed>("bf16_mixed");
  }
  SECTION("fp32") {
    check_step_kernels<mpx::fp32>("fp32");
  }
  SECTION("fp16_mixed, dynamic loss scaling") {
    check_step_kernels<mpx::fp16_mixed>("fp16_mixed");
  }
}
