#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# The ResNet job: trains examples/resnet.cpp's small ResNet on Fashion-MNIST in fp32, tf32, fp16 and
# bf16 on the CPU, prints the comparison table (test accuracy, time per epoch, samples/s, activation
# memory, skipped steps, loss scale) and draws each precision's test accuracy per class from its
# confusion matrix. Extra arguments go to the example, e.g. `scripts/resnet.sh --epochs 1 --width 8`;
# `--csv PATH` and `--confusion PREFIX` move the per-epoch metrics and the confusion matrices
# (default build/default/resnet_metrics.csv and build/default/resnet_confusion.<precision>.csv).
set -euo pipefail
cd "$(dirname "$0")/.."

csv=build/default/resnet_metrics.csv
confusion=build/default/resnet_confusion
picture=build/default/resnet_per_class.png
arguments=("$@")
for ((i = 0; i + 1 < ${#arguments[@]}; i++)); do
  if [[ "${arguments[i]}" == "--csv" ]]; then csv="${arguments[i + 1]}"; fi
  if [[ "${arguments[i]}" == "--confusion" ]]; then confusion="${arguments[i + 1]}"; fi
done

scripts/install-deps.sh gnuplot-nox
cmake --preset default
cmake --build --preset default --parallel "$(nproc)" --target example_resnet
./build/default/examples/resnet --csv "$csv" --confusion "$confusion" "$@"
gnuplot -e "confusion='$confusion'; metrics='$csv'; out='$picture'" scripts/plot_resnet.gp
echo "picture: $picture"
