// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief C = alpha op(A) op(B) for bf16 A and B and an fp32 C on oneDNN's matmul primitive, whose
/// bf16 dot products (AVX512_BF16, AMX) multiply exactly and add in fp32, on the calling thread.
/// Only with `MPX_HAS_ONEDNN` (onednn_runtime.hpp); gemm_kernel.hpp decides when it may be used
/// (bf16_exactness.hpp).

#include <cstdint>
#include <memory>

#include "mpx/backend/cpu/onednn_runtime.hpp"
#include "mpx/error.hpp"

namespace mpx::cpu::detail::onednn {

/// One tile's matmul: dst (fp32, row stride ldc) = alpha src (bf16) x weights (bf16), created once
/// per shape, strides, transposes and alpha on each thread. The scratchpad is the caller's (user
/// mode), so primitives the library's cache shares between threads never share one.
class Bf16Matmul {
 public:
  struct Key {
    std::int64_t m, n, k, lda, ldb, ldc;
    bool transpose_a, transpose_b;
    float alpha;
    auto operator<=>(const Key&) const = default;
  };

  Bf16Matmul(const Key& key, const ThreadContext& context) {
    try {
      create(key, context);
    } catch (const error& failure) {
      release();
      throw error(mpx::detail::concat(failure.what(), ", making the bf16 matmul of op(A) ", key.m, " x ",
                                      key.k, " (lda ", key.lda, key.transpose_a ? ", transposed" : "",
                                      ") by op(B) ", key.k, " x ", key.n, " (ldb ", key.ldb,
                                      key.transpose_b ? ", transposed" : "", ") into ldc ", key.ldc));
    } catch (...) {
      release();
      throw;
    }
  }
  ~Bf16Matmul() { release(); }
  Bf16Matmul(const Bf16Matmul&) = delete;
  Bf16Matmul& operator=(const Bf16Matmul&) = delete;

  void run(ThreadContext& context, const void* a, const void* b, float* c) {
    check(dnnl_memory_set_data_handle(a_, const_cast<void*>(a)), "dnnl_memory_set_data_handle");
    check(dnnl_memory_set_data_handle(b_, const_cast<void*>(b)), "dnnl_memory_set_data_handle");
    check(dnnl_memory_set_data_handle(c_, c), "dnnl_memory_set_data_handle");
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, a_}, {DNNL_ARG_WEIGHTS, b_}, {DNNL_ARG_DST, c_}, {0, nullptr}};
    int count = 3;
    if (scratchpad_ != nullptr) {
      check(dnnl_memory_set_data_handle(scratchpad_, context.scratchpad(scratchpad_bytes_)),
            "dnnl_memory_set_data_handle");
      args[count++] = {DNNL_ARG_SCRATCHPAD, scratchpad_};
    }
    check(dnnl_primitive_execute(primitive_, context.stream(), count, args),
          "dnnl_primitive_execute (bf16 matmul)");
    check(dnnl_stream_wait(context.stream()), "dnnl_stream_wait");
  }

 private:
  void create(const Key& key, const ThreadContext& context) {
    const auto strided = [](dnnl_memory_desc_t* desc, std::int64_t rows, std::int64_t cols,
                            dnnl_data_type_t type, std::int64_t row_stride, std::int64_t col_stride) {
      const dnnl_dims_t dims = {rows, cols};
      const dnnl_dims_t strides = {row_stride, col_stride};
      check(dnnl_memory_desc_init_by_strides(desc, 2, dims, type, strides),
            "dnnl_memory_desc_init_by_strides");
    };
    // op(A)[i][l] is A[i lda + l], or A[l lda + i] when transposed; op(B)[l][j] likewise.
    dnnl_memory_desc_t a_desc, b_desc, c_desc;
    strided(&a_desc, key.m, key.k, dnnl_bf16, key.transpose_a ? 1 : key.lda, key.transpose_a ? key.lda : 1);
    strided(&b_desc, key.k, key.n, dnnl_bf16, key.transpose_b ? 1 : key.ldb, key.transpose_b ? key.ldb : 1);
    strided(&c_desc, key.m, key.n, dnnl_f32, key.ldc, 1);
    dnnl_matmul_desc_t op;
    check(dnnl_matmul_desc_init(&op, &a_desc, &b_desc, nullptr, &c_desc), "dnnl_matmul_desc_init");

    dnnl_primitive_attr_t attr = nullptr;
    check(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
    const std::unique_ptr<dnnl_primitive_attr, decltype(&dnnl_primitive_attr_destroy)> attr_owner(
        attr, &dnnl_primitive_attr_destroy);
    check(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
          "dnnl_primitive_attr_set_scratchpad_mode");
    if (key.alpha != 1.0f) {
      check(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &key.alpha),
            "dnnl_primitive_attr_set_output_scales");
    }

    dnnl_primitive_desc_t descriptor = nullptr;
    check(dnnl_primitive_desc_create(&descriptor, &op, attr, context.engine(), nullptr),
          "dnnl_primitive_desc_create (bf16 matmul)");
    const std::unique_ptr<dnnl_primitive_desc, decltype(&dnnl_primitive_desc_destroy)> descriptor_owner(
        descriptor, &dnnl_primitive_desc_destroy);
    check(dnnl_primitive_create(&primitive_, descriptor), "dnnl_primitive_create");
    const dnnl_memory_desc_t* scratchpad_desc =
        dnnl_primitive_desc_query_md(descriptor, dnnl_query_scratchpad_md, 0);
    scratchpad_bytes_ = scratchpad_desc != nullptr ? dnnl_memory_desc_get_size(scratchpad_desc) : 0;

    const auto memory = [&](dnnl_memory_t* m, const dnnl_memory_desc_t* desc) {
      check(dnnl_memory_create(m, desc, context.engine(), DNNL_MEMORY_NONE), "dnnl_memory_create");
    };
    memory(&a_, &a_desc);
    memory(&b_, &b_desc);
    memory(&c_, &c_desc);
    if (scratchpad_bytes_ > 0) memory(&scratchpad_, scratchpad_desc);
  }
  void release() noexcept {
    for (dnnl_memory_t* m : {&a_, &b_, &c_, &scratchpad_}) {
      if (*m != nullptr) dnnl_memory_destroy(*m);
      *m = nullptr;
    }
    if (primitive_ != nullptr) dnnl_primitive_destroy(primitive_);
    primitive_ = nullptr;
  }

  dnnl_primitive_t primitive_ = nullptr;
  dnnl_memory_t a_ = nullptr, b_ = nullptr, c_ = nullptr, scratchpad_ = nullptr;
  std::size_t scratchpad_bytes_ = 0;
};

/// A thread's bf16 matmul primitives: one per tile shape, strides, transposes and alpha.
using ThreadMatmuls = ThreadPrimitives<Bf16Matmul::Key, Bf16Matmul>;

/// C = alpha op(A) op(B) on the calling thread (row-major, as `ProductView`).
inline void bf16_matmul(const Bf16Matmul::Key& key, const void* a, const void* b, float* c) {
  auto [matmul, context] = ThreadMatmuls::of_this_thread(key);
  matmul->run(*context, a, b, c);
}

/// Frees the calling thread's primitives, engine, stream and scratchpad (none may be running).
inline void release_bf16_matmuls() noexcept {
  ThreadMatmuls::release();
}

}  // namespace mpx::cpu::detail::onednn
