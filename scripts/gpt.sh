#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# The transformer job: trains the character-level GPT of examples/char_gpt.cpp on the text of Debian's
# `fortunes` package in fp32, bf16_mixed, fp16_mixed and bf16_pure (and the FP8 precisions
# fp8_hybrid_delayed and fp8_hybrid_current: on the CPU, and on a GPU of capability 8.9+), prints the
# comparison table (validation loss, bits per character, tokens/s, activation memory per token,
# skipped steps) and a sample of text from each model, and draws the FP8 runs' diagnostics. On the
# GPU when the build has CUDA and the machine a GPU.
# Extra arguments go to the example, e.g. `scripts/gpt.sh --precision bf16 --steps 2000`.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset default
cmake --build --preset default --parallel "$(nproc)" --target example_char_gpt
fp8_csv=build/default/char_gpt_fp8.csv
rm -f "$fp8_csv"
./build/default/examples/char_gpt --fp8-csv "$fp8_csv" "$@"
# The FP8 runs' diagnostics (amax, scale, saturated and flushed shares per layer and tensor) as PNGs.
if [[ -s "$fp8_csv" ]]; then
  scripts/install-deps.sh gnuplot-nox
  gnuplot -e "csv='$fp8_csv'; out='build/default/char_gpt_fp8'" scripts/plot_fp8.gp
  echo "FP8 diagnostics: build/default/char_gpt_fp8_<precision>.png"
fi
