#pragma once
// Hopper (sm_90a) instructions as inline PTX, so kernels need no CUDA headers under NVRTC:
// warpgroup MMA fences and groups, mbarriers (with transaction counts), the bulk tensor copy
// engine (TMA) in both directions, named barriers and setmaxnreg. Owns no policy: the families
// decide who waits on what.
#include "common/device.cuh"
#include "common/hopper_params.cuh"

namespace attn_k {

// --- wgmma groups ------------------------------------------------------------------------------
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/// Keeps the compiler from moving accesses of these registers across a wgmma issue or wait.
template <int N>
__device__ __forceinline__ void wg_fence_operand(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

/// Ordinary shared-memory writes (st.shared, cp.async) are generic-proxy writes; the tensor cores
/// and the copy engine read through the async proxy.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/// A 32-bit store to shared memory at a shared-space address (smem_addr's).
__device__ __forceinline__ void st_shared_u32(unsigned addr, unsigned value) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(value) : "memory");
}
/// *at += (a, b, c, d): four adjacent floats (16-byte aligned) added atomically in global memory
/// (sm_90's vector reduction), unordered against other threads' (the sum's rounding depends on
/// their order).
__device__ __forceinline__ void red_add_v4(float* at, float a, float b, float c, float d) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(at), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}

// --- registers ---------------------------------------------------------------------------------
template <int N>
__device__ __forceinline__ void wg_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void wg_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

// --- mbarriers ---------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
/// Makes the barriers' initialization visible to the copy engine (and the other threads, after
/// a block barrier).
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
/// One arrival that also announces `bytes` of copies still to land on this barrier's phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar),
               "r"(bytes)
               : "memory");
}
/// Waits until the barrier's phase with this parity has completed. A fresh barrier counts its
/// (never run) phase of parity 1 as completed, so a producer waits on empty slots with the
/// opposite parity of the consumers' wait on full ones, and its first round passes at once.
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// --- the bulk copy engine, untiled: `bytes` (a multiple of 16, both addresses 16-byte aligned) from
// global memory to this block's shared memory, counted on `bar`'s transactions when they land.
__device__ __forceinline__ void bulk_load(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// --- the bulk tensor copy engine (TMA) ----------------------------------------------------------

// The tensor maps (tensor_map, common/hopper_params.cuh) are kernel parameters: pass their addresses.
__device__ __forceinline__ void tma_prefetch(const tensor_map* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}
/// Copies the box at coordinates {c0 (innermost), c1, c2, c3} into shared memory at `dst`; the
/// bytes complete on `bar`. Coordinates past the tensor's end read as zeros.
__device__ __forceinline__ void tma_load_4d(unsigned dst, const tensor_map* map, unsigned bar, int c0, int c1,
                                            int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
/// Copies shared memory at `src` to the box at {c0, c1, c2, c3}; rows past the end are not
/// written. Completes asynchronously: see bulk_commit / bulk_wait_read.
__device__ __forceinline__ void tma_store_4d(const tensor_map* map, unsigned src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
/// The 5-d forms, for packed GQA's Q and O (kernels/hopper: {column, head in the group, row, K/V
/// head, batch}, so a box's rows come out in packed order).
__device__ __forceinline__ void tma_load_5d(unsigned dst, const tensor_map* map, unsigned bar, int c0, int c1,
                                            int c2, int c3, int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], "
      "[%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}
__device__ __forceinline__ void tma_store_5d(const tensor_map* map, unsigned src, int c0, int c1, int c2, int c3,
                                             int c4) {
  asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
/// Waits until this thread's committed stores have read their shared memory (not until they land).
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }

/// 16 bytes from shared memory.
__device__ __forceinline__ uint4 ld_shared_v4(unsigned addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}

/// Stores four 8x8 16-bit matrices: register i holds this thread's pair of matrix i (row lane / 4,
/// columns 2 (lane % 4) and + 1), lane l gives the 16-byte address of row l % 8 of matrix l / 8.
__device__ __forceinline__ void stmatrix_x4(unsigned addr, const unsigned (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]), "r"(r[1]),
               "r"(r[2]), "r"(r[3])
               : "memory");
}

// --- named barriers (id 0 is __syncthreads) ----------------------------------------------------
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace attn_k
