#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# `conan create` of mpx with the Debian profile (no remote needed), in a Conan home of its own.
# Where the system has Open MPI (the `mpi` component's pkg-config module), the package is made
# with_mpi=True, and test_package builds and runs its mpx::mpi consumer (which brings mpx::mpx) in
# place of tiny_mlp: the `mpi` component is covered at the cost of one compile, as before.
# Usage: conan_create.sh <mpx source dir> <work dir> [conan executable]
# Exits 77 (skipped, for CTest) when Conan is not installed.
set -euo pipefail
source_dir=$1
work_dir=$2
conan=${3:-$(command -v conan || true)}
if [[ -z "$conan" || ! -x "$conan" ]]; then
  echo "conan is not installed; skipped (scripts/install-deps.sh installs it under build/tools/python)"
  exit 77
fi

# A fresh home per run: nothing cached by an earlier run can stand in for this package.
export CONAN_HOME="$work_dir/conan_home"
rm -rf "$CONAN_HOME"
options=(-c tools.cmake.cmaketoolchain:user_presets=)
if command -v ccache >/dev/null; then
  options+=(-c "tools.cmake.cmaketoolchain:extra_variables={'CMAKE_CXX_COMPILER_LAUNCHER': 'ccache'}")
fi
if pkg-config --exists ompi-cxx 2>/dev/null; then
  options+=(-o "&:with_mpi=True")
fi
# Likewise with_onednn=True where the system has oneDNN (Debian libdnnl-dev): the same program links
# mpx::onednn too.
if [[ -e /usr/include/oneapi/dnnl/dnnl.h ]]; then
  options+=(-o "&:with_onednn=True")
fi
cd "$source_dir"
"$conan" --version
"$conan" create . -pr:a conan/profiles/debian-12 "${options[@]}"
