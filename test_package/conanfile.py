# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""Builds and runs one of the consumers' programs against the mpx package (CMakeDeps and
CMakeToolchain): tiny_mlp.cpp through mpx::mpx or, when mpx was made with_mpi=True,
data_parallel_check.cpp through mpx::mpi (which brings mpx::mpx)."""
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

    def generate(self):
        toolchain = CMakeToolchain(self)
        toolchain.cache_variables["MPX_TEST_MPI"] = self._with_mpi()
        toolchain.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            # tiny_mlp exits non-zero unless its training loss falls to a third; data_parallel_check
            # (one MPI process, started without mpirun) unless its loss halves.
            program = "data_parallel_check" if self._with_mpi() else "tiny_mlp"
            self.run(os.path.join(self.cpp.build.bindir, program), env="conanrun")
