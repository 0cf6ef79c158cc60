# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""Builds and runs one of the consumers' programs against the mpx package (CMakeDeps and
CMakeToolchain): tiny_mlp.cpp through mpx::mpx or, when mpx was made with_mpi=True,
data_parallel_check.cpp through mpx::mpi (which brings mpx::mpx); made with_onednn=True, the
program links mpx::onednn too, so that its GEMMs run on oneDNN."""
import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout


class MpxTestPackage(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeDeps"
    test_type = "explicit"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def _with_mpi(self):
        return bool(self.dependencies["mpx"].options.with_mpi)

    def _with_onednn(self):
        return bool(self.dependencies["mpx"].options.with_onednn)

    def generate(self):
        toolchain = CMakeToolchain(self)
        toolchain.cache_variables["MPX_TEST_MPI"] = self._with_mpi()
        toolchain.cache_variables["MPX_TEST_ONEDNN"] = self._with_onednn()
        toolchain.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            # tiny_mlp exits non-zero unless its training loss falls to a third; data_parallel_check
            # (one MPI process, started without mpirun) unless its loss halves.
            self.run(os.path.join(self.cpp.build.bindir, "check"), env="conanrun")
