#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# The encoder job: pretrains examples/encoder.cpp's BERT-style encoder with masked-language modelling
# on WordNet's glosses and the fortunes, fine-tunes it to tell each gloss's supersense (45 classes), and trains the
# same classifier from scratch and a bag-of-words baseline, in fp32, bf16 and fp16; prints the table
# (masked-LM loss, test accuracies, the time of 50 pretraining steps and its speed-up, peak and
# activation memory, skipped steps, loss scale). Extra arguments go to the example, e.g.
# `scripts/encoder.sh --precision bf16`, or `--finetune-lr 5e-4,1e-3,2e-3` for the precision x
# learning-rate sweep; the per-epoch metrics land in build/default/encoder_metrics.csv, the pretrained
# weights in build/default/encoder_mlm.<precision>.safetensors.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh >/dev/null
cmake --preset default >/dev/null
cmake --build --preset default --parallel "$(nproc)" --target example_encoder
./build/default/examples/encoder --csv build/default/encoder_metrics.csv --pretrained build/default/encoder_mlm "$@"
