#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Installs the Debian packages mpx builds, tests and trains with, plus any named as arguments (e.g.
# `scripts/install-deps.sh gnuplot-nox`), and Conan 2 (PyPI) into build/tools/conan; does nothing
# when all are present.
set -euo pipefail

packages=(
  cmake g++ make ccache clang-format   # toolchain
  libeigen3-dev libboost-dev           # Eigen 3.4 (CPU GEMM, half/bfloat16), Boost.Hana
  librandom123-dev                     # Philox counter-based random bits (host and device)
  catch2                               # tests (Catch2 2.13)
  zlib1g-dev dataset-fashion-mnist     # gzip'd IDX reader and the default dataset
  pkg-config doxygen python3-venv      # package tests (pkg-config consumer, Conan's venv) and API docs
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

# Conan 2 from PyPI, in a virtual environment inside the build folder (nothing outside the checkout
# is touched); the package.conan_create test finds it there.
conan_venv="$(cd "$(dirname "$0")/.." && pwd)/build/tools/conan"
if [[ ! -x "$conan_venv/bin/conan" ]]; then
  echo "mpx: installing Conan 2 into $conan_venv"
  python3 -m venv "$conan_venv"
  "$conan_venv/bin/pip" install --quiet --disable-pip-version-check "conan>=2.0,<3"
fi
