#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# The precision sweep: trains the Fashion-MNIST MLP (with LayerNorm) in eight precision
# configurations, prints the comparison table and draws loss curves, loss-scale trajectories and
# memory by role as PNGs. Extra arguments go to the example, e.g. `scripts/sweep.sh --epochs 2`;
# `--out DIR` picks where the CSV, JSON, Markdown and PNG files go (default build/default/precision_sweep).
set -euo pipefail
cd "$(dirname "$0")/.."

out=build/default/precision_sweep
arguments=("$@")
for ((i = 0; i + 1 < ${#arguments[@]}; i++)); do
  if [[ "${arguments[i]}" == "--out" ]]; then out="${arguments[i + 1]}"; fi
done

scripts/install-deps.sh gnuplot-nox
cmake --preset default
cmake --build --preset default --parallel "$(nproc)" --target example_precision_sweep
./build/default/examples/precision_sweep --out "$out" "$@"
gnuplot -e "dir='$out'" scripts/plot_sweep.gp
echo "pictures: $out/loss_curves.png $out/loss_scale.png $out/memory.png"
