// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What mpx's oneDNN kernels (onednn_bf16_matmul.hpp, onednn_conv2d.hpp) share: the version
/// check, status checks, whether this CPU has bf16 dot products, each thread's engine, stream and
/// scratchpad, and a primitive that runs with that scratchpad. Only with `MPX_HAS_ONEDNN` (oneDNN 2.x
/// with its OpenMP runtime, what cmake/mpxOnednnTarget.cmake accepts).
///
/// Every mpx primitive runs on one thread (`on_one_thread`, parallel.hpp), made and kept per thread,
/// with a scratchpad the caller provides (`dnnl_scratchpad_mode_user`): a library-managed scratchpad
/// is shared by every primitive of the process in oneDNN 2.x's default build, which primitives running
/// on several threads at once must not share.

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_config.h>
#include <oneapi/dnnl/dnnl_version.h>

#if DNNL_VERSION_MAJOR != 2 || DNNL_CPU_THREADING_RUNTIME != DNNL_RUNTIME_OMP
#error \
    "mpx's CPU kernels need oneDNN 2.x built with its OpenMP runtime (Debian 12's libdnnl-dev); configure with -DMPX_ENABLE_ONEDNN=OFF for Eigen's kernel"
#endif

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "mpx/error.hpp"

namespace mpx::cpu::detail::onednn {

inline void check(dnnl_status_t status, const char* call) {
  if (status != dnnl_success) {
    throw error(
        mpx::detail::concat("mpx::cpu: oneDNN's ", call, " failed with status ", static_cast<int>(status)));
  }
}

/// True when oneDNN runs bf16 matmuls and convolutions on native dot-product instructions here
/// (AVX512_BF16 or AMX; `DNNL_MAX_CPU_ISA` can lower what it uses). Elsewhere it would emulate them,
/// slower than widening to fp32.
inline bool has_native_bf16() {
  static const bool native = [] {
    const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);
    return (isa & bf16) == bf16;
  }();
  return native;
}

/// The engine and stream of the calling thread.
class ThreadContext {
 public:
  ThreadContext() {
    check(dnnl_engine_create(&engine_, dnnl_cpu, 0), "dnnl_engine_create");
    const dnnl_status_t status = dnnl_stream_create(&stream_, engine_, dnnl_stream_default_flags);
    if (status != dnnl_success) dnnl_engine_destroy(engine_);
    check(status, "dnnl_stream_create");
  }
  ~ThreadContext() {
    dnnl_stream_destroy(stream_);
    dnnl_engine_destroy(engine_);
  }
  ThreadContext(const ThreadContext&) = delete;
  ThreadContext& operator=(const ThreadContext&) = delete;

  [[nodiscard]] dnnl_engine_t engine() const noexcept { return engine_; }
  [[nodiscard]] dnnl_stream_t stream() const noexcept { return stream_; }

  /// A scratchpad of at least `bytes`, the thread's one (a primitive runs to its end before the next).
  void* scratchpad(std::size_t bytes) {
    if (scratchpad_.size() < bytes) scratchpad_.resize(bytes);
    return scratchpad_.data();
  }

 private:
  dnnl_engine_t engine_ = nullptr;
  dnnl_stream_t stream_ = nullptr;
  std::vector<std::uint8_t> scratchpad_;
};

using MemoryHandle = std::unique_ptr<dnnl_memory, decltype(&dnnl_memory_destroy)>;
using DescriptorHandle = std::unique_ptr<dnnl_primitive_desc, decltype(&dnnl_primitive_desc_destroy)>;

/// A memory object for `desc` on `engine` without a buffer: each run points it at its data.
inline MemoryHandle unbound_memory(const dnnl_memory_desc_t* desc, dnnl_engine_t engine) {
  dnnl_memory_t memory = nullptr;
  check(dnnl_memory_create(&memory, desc, engine, DNNL_MEMORY_NONE), "dnnl_memory_create");
  return MemoryHandle(memory, &dnnl_memory_destroy);
}

/// Points `memory` at `data` (oneDNN takes a non-const pointer for inputs too).
inline void attach(const MemoryHandle& memory, const void* data) {
  check(dnnl_memory_set_data_handle(memory.get(), const_cast<void*>(data)), "dnnl_memory_set_data_handle");
}

/// Primitive attributes asking for a user scratchpad, as every mpx primitive runs (file comment).
class UserScratchpadAttributes {
 public:
  UserScratchpadAttributes() {
    check(dnnl_primitive_attr_create(&attr_), "dnnl_primitive_attr_create");
    const dnnl_status_t status = dnnl_primitive_attr_set_scratchpad_mode(attr_, dnnl_scratchpad_mode_user);
    if (status != dnnl_success) dnnl_primitive_attr_destroy(attr_);
    check(status, "dnnl_primitive_attr_set_scratchpad_mode");
  }
  ~UserScratchpadAttributes() { dnnl_primitive_attr_destroy(attr_); }
  UserScratchpadAttributes(const UserScratchpadAttributes&) = delete;
  UserScratchpadAttributes& operator=(const UserScratchpadAttributes&) = delete;
  [[nodiscard]] const_dnnl_primitive_attr_t get() const noexcept { return attr_; }

 private:
  dnnl_primitive_attr_t attr_ = nullptr;
};

/// The descriptor of the primitive for operation `op` (a `dnnl_*_desc_t`), with a user scratchpad;
/// a null handle where oneDNN has no implementation for it (`dnnl_unimplemented`).
inline DescriptorHandle primitive_descriptor(const void* op, const ThreadContext& context,
                                             const_dnnl_primitive_desc_t hint = nullptr) {
  const UserScratchpadAttributes attr;
  dnnl_primitive_desc_t descriptor = nullptr;
  const dnnl_status_t status =
      dnnl_primitive_desc_create(&descriptor, op, attr.get(), context.engine(), hint);
  if (status == dnnl_unimplemented) return DescriptorHandle(nullptr, &dnnl_primitive_desc_destroy);
  check(status, "dnnl_primitive_desc_create");
  return DescriptorHandle(descriptor, &dnnl_primitive_desc_destroy);
}

/// The descriptor of a reorder from `from` to `to`, with a user scratchpad.
inline DescriptorHandle reorder_descriptor(const dnnl_memory_desc_t* from, const dnnl_memory_desc_t* to,
                                           const ThreadContext& context) {
  const UserScratchpadAttributes attr;
  dnnl_primitive_desc_t descriptor = nullptr;
  check(dnnl_reorder_primitive_desc_create(&descriptor, from, context.engine(), to, context.engine(),
                                           attr.get()),
        "dnnl_reorder_primitive_desc_create");
  return DescriptorHandle(descriptor, &dnnl_primitive_desc_destroy);
}

/// The name of the implementation oneDNN chose ("brgconv:avx512_core", "ref:any", ...).
inline const char* implementation_name(const_dnnl_primitive_desc_t descriptor) {
  const char* name = nullptr;
  check(dnnl_primitive_desc_query(descriptor, dnnl_query_impl_info_str, 0, &name),
        "dnnl_primitive_desc_query");
  return name != nullptr ? name : "";
}

/// A primitive and the memory objects of its arguments, run with the thread's scratchpad.
class Primitive {
 public:
  Primitive() = default;
  explicit Primitive(const_dnnl_primitive_desc_t descriptor, const ThreadContext& context) {
    dnnl_primitive_t primitive = nullptr;
    check(dnnl_primitive_create(&primitive, descriptor), "dnnl_primitive_create");
    primitive_.reset(primitive);
    const dnnl_memory_desc_t* scratchpad =
        dnnl_primitive_desc_query_md(descriptor, dnnl_query_scratchpad_md, 0);
    scratchpad_bytes_ = scratchpad != nullptr ? dnnl_memory_desc_get_size(scratchpad) : 0;
    if (scratchpad_bytes_ > 0) scratchpad_ = unbound_memory(scratchpad, context.engine());
  }

  /// Runs the primitive on `arguments` ({DNNL_ARG_*, memory bound to its data}) to its end.
  void run(ThreadContext& context, std::initializer_list<dnnl_exec_arg_t> arguments) const {
    dnnl_exec_arg_t args[8];
    int count = 0;
    for (const dnnl_exec_arg_t& argument : arguments) args[count++] = argument;
    if (scratchpad_ != nullptr) {
      attach(scratchpad_, context.scratchpad(scratchpad_bytes_));
      args[count++] = {DNNL_ARG_SCRATCHPAD, scratchpad_.get()};
    }
    check(dnnl_primitive_execute(primitive_.get(), context.stream(), count, args), "dnnl_primitive_execute");
    check(dnnl_stream_wait(context.stream()), "dnnl_stream_wait");
  }

  [[nodiscard]] explicit operator bool() const noexcept { return primitive_ != nullptr; }

 private:
  std::unique_ptr<dnnl_primitive, decltype(&dnnl_primitive_destroy)> primitive_{nullptr,
                                                                                &dnnl_primitive_destroy};
  std::size_t scratchpad_bytes_ = 0;
  MemoryHandle scratchpad_{nullptr, &dnnl_memory_destroy};
};

/// What a thread keeps between calls of one kind of primitive: its engine, stream and scratchpad,
/// and a `Primitive` per `Key` (made by `Primitive(key, context)` on first use: a training step's
/// few shapes). `ThreadPrimitives<Key, Primitive>::of_this_thread()` is the calling thread's;
/// `release()` frees it (none of its primitives may be running).
template <class Key, class Primitive>
class ThreadPrimitives {
 public:
  /// The calling thread's primitive for `key`, and the thread's context to run it with.
  static std::pair<Primitive*, ThreadContext*> of_this_thread(const Key& key) {
    std::unique_ptr<ThreadPrimitives>& cache = slot();
    if (cache == nullptr) cache = std::make_unique<ThreadPrimitives>();
    auto found = cache->primitives_.find(key);
    if (found == cache->primitives_.end()) {
      found = cache->primitives_.emplace(key, std::make_unique<Primitive>(key, cache->context_)).first;
    }
    return {found->second.get(), &cache->context_};
  }
  /// Frees the calling thread's primitives, engine, stream and scratchpad.
  static void release() noexcept { slot().reset(); }

 private:
  static std::unique_ptr<ThreadPrimitives>& slot() {
    thread_local std::unique_ptr<ThreadPrimitives> cache;
    return cache;
  }
  ThreadContext context_;  // declared first: destroyed after the primitives made with its engine
  std::map<Key, std::unique_ptr<Primitive>> primitives_;
};

}  // namespace mpx::cpu::detail::onednn
