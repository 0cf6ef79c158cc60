// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The CPU-safe umbrella: everything in mpx that needs neither CUDA nor MPI, the experiment
/// tools included (sweeps, records, the example models, the char-GPT's sampling, evaluation). Two
/// more umbrellas add to it: <mpx/cuda.hpp> (the CUDA backend, from .cu files) and <mpx/dist.hpp>
/// (data parallel over MPI). `experiment/data_parallel_job.hpp`, which uses MPI and CUDA where the
/// program links them, is included on its own (docs/README.md lists what each header brings).

#include "mpx/config.hpp"
#include "mpx/error.hpp"
#include "mpx/log.hpp"

#include "mpx/numeric/accumulation.hpp"
#include "mpx/numeric/encoded.hpp"
#include "mpx/numeric/random.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/tags.hpp"
#include "mpx/numeric/traits.hpp"

#include "mpx/policy/fp8_scaling.hpp"
#include "mpx/policy/loss_scaling.hpp"
#include "mpx/policy/op_precision.hpp"
#include "mpx/policy/precision.hpp"

#include "mpx/tensor/convert.hpp"
#include "mpx/tensor/device.hpp"
#include "mpx/tensor/device_value.hpp"
#include "mpx/tensor/host_memory.hpp"
#include "mpx/tensor/memory_stats.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"
#include "mpx/tensor/transfer.hpp"

#include "mpx/backend/argmax_spec.hpp"
#include "mpx/backend/backend.hpp"
#include "mpx/backend/cpu/backend.hpp"
#include "mpx/backend/dropout_spec.hpp"
#include "mpx/backend/embedding_spec.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/backend/gradient_spec.hpp"
#include "mpx/backend/optimizer_settings.hpp"
#include "mpx/backend/update_control.hpp"

#include "mpx/data/batcher.hpp"
#include "mpx/data/dataset.hpp"
#include "mpx/data/fashion_mnist.hpp"
#include "mpx/data/idx.hpp"
#include "mpx/data/input_normalization.hpp"
#include "mpx/data/text_corpus.hpp"
#include "mpx/data/text_windows.hpp"

#include "mpx/nn/activation.hpp"
#include "mpx/nn/cast.hpp"
#include "mpx/nn/causal_self_attention.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/nn/dropout.hpp"
#include "mpx/nn/embedding.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_norm.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/linear.hpp"
#include "mpx/nn/loss.hpp"
#include "mpx/nn/parameter.hpp"
#include "mpx/nn/parameter_list.hpp"
#include "mpx/nn/positional_embedding.hpp"
#include "mpx/nn/predict.hpp"
#include "mpx/nn/residual.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/nn/step_key.hpp"
#include "mpx/nn/training_mode.hpp"

#include "mpx/optim/adamw.hpp"
#include "mpx/optim/optimizer_base.hpp"
#include "mpx/optim/sgd.hpp"

#include "mpx/train/loss_scaler.hpp"
#include "mpx/train/loss_seed.hpp"
#include "mpx/train/step_graph.hpp"
#include "mpx/train/step_scalars.hpp"
#include "mpx/train/trainer.hpp"
#include "mpx/train/training_state.hpp"

#include "mpx/io/atomic_file.hpp"
#include "mpx/io/checkpoint.hpp"
#include "mpx/io/description_differences.hpp"
#include "mpx/io/model_json.hpp"
#include "mpx/io/safetensors.hpp"

#include "mpx/experiment/char_gpt.hpp"
#include "mpx/experiment/classification.hpp"
#include "mpx/experiment/layer_precisions.hpp"
#include "mpx/experiment/models.hpp"
#include "mpx/experiment/progress.hpp"
#include "mpx/experiment/records.hpp"
#include "mpx/experiment/sweep.hpp"
#include "mpx/experiment/usage.hpp"
