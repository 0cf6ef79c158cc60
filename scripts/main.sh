#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# The main job: trains the Fashion-MNIST MLP in fp32, tf32, fp16 and bf16 (and in FP8 with delayed
# and with current scaling: on the CPU, and on a GPU of compute capability 8.9 or newer), prints the
# comparison table (test accuracy, time per epoch, activation memory, skipped steps, loss scale) and
# draws the FP8 runs' diagnostics (amax, scale, saturated and flushed shares per layer and tensor).
# It trains on the GPU when the build has CUDA and the machine a GPU (`--device auto`), else on the CPU.
# Extra arguments go to the example, e.g. `scripts/main.sh --precision bf16 --epochs 3 --device cpu`.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
if nvidia-smi -L > /dev/null 2>&1; then
  # It trains on this GPU: optimised host code even where scripts/test.sh configured the tree on a
  # machine without one (MPX_CUDA_CHECK_ONLY, docs/building.md).
  cmake --preset default -DMPX_CUDA_CHECK_ONLY=OFF
else
  cmake --preset default
fi
cmake --build --preset default --parallel "$(nproc)" --target example_fashion_mnist
fp8_csv=build/default/fashion_mnist_fp8.csv
rm -f "$fp8_csv"
./build/default/examples/fashion_mnist --csv build/default/fashion_mnist_metrics.csv --fp8-csv "$fp8_csv" "$@"
# The FP8 runs' diagnostics (amax, scale, saturated and flushed shares per layer and tensor) as PNGs.
if [[ -s "$fp8_csv" ]]; then
  scripts/install-deps.sh gnuplot-nox
  gnuplot -e "csv='$fp8_csv'; out='build/default/fashion_mnist_fp8'" scripts/plot_fp8.gp
  echo "FP8 diagnostics: build/default/fashion_mnist_fp8_<precision>.png"
fi
