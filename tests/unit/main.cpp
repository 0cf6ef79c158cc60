// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The one translation unit that holds Catch2's main().
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
