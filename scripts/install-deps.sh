#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Installs the Debian packages mpx builds, tests and trains with, plus any named as arguments (e.g.
# `scripts/install-deps.sh gnuplot-nox`), and the Python tools of the tests (Conan 2, safetensors)
# and, where nvcc is, the cuDNN frontend's headers into build/tools/python; does nothing when all are
# present.
set -euo pipefail

packages=(
  cmake g++ make ccache clang-format   # toolchain
  libeigen3-dev libboost-dev           # Eigen 3.4 (CPU GEMM, half/bfloat16), Boost.Hana
  librandom123-dev                     # Philox counter-based random bits (host and device)
  libdnnl-dev                          # oneDNN: the CPU GEMM's fp32 kernel (mpx::onednn; Eigen without it)
  catch2                               # tests (Catch2 2.13)
  zlib1g-dev dataset-fashion-mnist     # gzip'd IDX reader and the default dataset
  fortunes                             # the text corpus of the character-level GPT (docs/data.md)
  wordnet-base                         # WordNet 3.0: glosses and supersenses of the encoder (docs/encoder.md)
  pkg-config doxygen python3-venv      # package tests (pkg-config consumer, the tools' venv) and API docs
  clang libclang-rt-dev                # libFuzzer targets (tests/fuzz)
  libopenmpi-dev openmpi-bin           # data parallel over MPI (include/mpx/dist, tests/mpi)
  "$@"                                 # what the calling script needs besides
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "mpx: installing missing Debian packages: ${missing[*]}"
  sudo_cmd=()
  if [[ "$(id -u)" -ne 0 ]]; then
    sudo_cmd=(sudo)
  fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python tools of the tests, from PyPI into a virtual environment inside the build folder (nothing
# outside the checkout is touched): Conan 2 for package.conan_create; numpy, safetensors and ml_dtypes
# (bfloat16) for the safetensors interop test. Without network those tests are skipped and say why.
tools_venv="$(cd "$(dirname "$0")/.." && pwd)/build/tools/python"
tools_present() {
  [[ -x "$tools_venv/bin/conan" ]] && "$tools_venv/bin/python" -c "import numpy, safetensors, ml_dtypes" 2> /dev/null
}
if ! tools_present; then
  echo "mpx: installing conan, numpy, safetensors and ml_dtypes into $tools_venv"
  { python3 -m venv "$tools_venv" &&
    "$tools_venv/bin/pip" install --quiet --disable-pip-version-check "conan>=2.0,<3" numpy safetensors ml_dtypes; } ||
    echo "mpx: could not install the Python tools; the Conan and interop tests will be skipped"
fi

# The cuDNN frontend's C++ headers (GPU convolutions and fused attention: include/mpx/backend/cuda/
# conv2d.cuh and fused_attention.cuh), from PyPI's nvidia-cudnn-frontend wheel into the same
# environment (its site-packages/include), where CMake looks
# for them (MPX_CUDNN_FRONTEND_INCLUDE_DIR). Only where nvcc is: the CUDA build alone needs them, and
# configuring it fails, saying what to install, without them. --no-deps: the wheel's Python
# dependencies (the CUTLASS DSL, ~0.5 GB) serve its Python API, not its headers.
cudnn_frontend_version=1.32.0
if command -v "${CUDACXX:-nvcc}" > /dev/null 2>&1 && [[ -x "$tools_venv/bin/python" ]] &&
  [[ "$("$tools_venv/bin/python" -c 'import importlib.metadata as m; print(m.version("nvidia-cudnn-frontend"))' 2> /dev/null)" != "$cudnn_frontend_version" ]]; then
  echo "mpx: installing the cuDNN frontend's headers (nvidia-cudnn-frontend $cudnn_frontend_version) into $tools_venv"
  "$tools_venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    "nvidia-cudnn-frontend==$cudnn_frontend_version" ||
    echo "mpx: could not install nvidia-cudnn-frontend; configuring the CUDA build will say what is missing"
fi

# PyTorch for the parity tests against it (interop.char_gpt_parity, interop.torch_rebuild,
# interop.optimizers_vs_torch), only when asked (scripts/test.sh sets MPX_INSTALL_TORCH=1): PyPI's
# wheel brings several GB of CUDA libraries even for CPU use. Without it those tests skip and say why.
if [[ "${MPX_INSTALL_TORCH:-0}" == 1 && -x "$tools_venv/bin/python" ]] &&
  ! "$tools_venv/bin/python" -c "import torch" 2> /dev/null; then
  echo "mpx: installing torch into $tools_venv (for the parity tests against PyTorch)"
  timeout 1800 "$tools_venv/bin/pip" install --quiet --disable-pip-version-check torch ||
    echo "mpx: could not install torch; the parity tests against PyTorch will be skipped"
fi
# torchao beside it: its MX and NVFP4 quantizers are the references of interop.block_scaling_vs_references
# (a small wheel; pinned, so that the reference does not move under the test).
torchao_version=0.18.0
if [[ "${MPX_INSTALL_TORCH:-0}" == 1 && -x "$tools_venv/bin/python" ]] &&
  "$tools_venv/bin/python" -c "import torch" 2> /dev/null &&
  [[ "$("$tools_venv/bin/python" -c 'import importlib.metadata as m; print(m.version("torchao"))' 2> /dev/null)" != "$torchao_version" ]]; then
  echo "mpx: installing torchao $torchao_version into $tools_venv (references of the block-scaling test)"
  "$tools_venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "torchao==$torchao_version" ||
    echo "mpx: could not install torchao; the block-scaling test against it will be skipped"
fi
