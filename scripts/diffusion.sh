#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# The diffusion job: trains examples/diffusion.cpp's UNet (DDPM on Fashion-MNIST) in fp32, bf16 and
# fp16 on the CPU (on the GPU where there is one), draws samples from each with the same seeds, and
# prints the table (final loss, the Fréchet distance to test images in the ResNet classifier's
# feature space and its confident share, samples/s, activation memory, skipped steps, loss scale).
# The score's classifier is the ResNet of examples/resnet.cpp in fp32: trained here first (3 epochs)
# unless build/default/resnet.fp32.safetensors exists. Extra arguments go to the diffusion example,
# e.g. `scripts/diffusion.sh --precision bf16 --epochs 1`; the samples land in
# build/default/diffusion_samples.png, the per-epoch metrics in build/default/diffusion_metrics.csv.
set -euo pipefail
cd "$(dirname "$0")/.."

classifier=build/default/resnet.fp32.safetensors

cmake --preset default
cmake --build --preset default --parallel "$(nproc)" --target example_resnet example_diffusion
if [[ ! -f "$classifier" ]]; then
  echo "training the classifier the score needs ($classifier)"
  ./build/default/examples/resnet --precision fp32 --epochs 3 --save build/default/resnet \
    --csv build/default/resnet_classifier_metrics.csv
fi
./build/default/examples/diffusion --classifier "$classifier" --csv build/default/diffusion_metrics.csv \
  --png build/default/diffusion_samples.png "$@"
