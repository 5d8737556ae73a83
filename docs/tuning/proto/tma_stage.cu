// Staging a select-style tile into shared memory, three ways, beside a
// copy: how fast can 2^28 i32 be read into 32 KiB tiles (one block a
// tile, 256 threads, 32 items a thread) and classified from shared memory?
//
//   ldg   8 x 16-byte loads a thread into registers, then shared stores
//         (gpuprim's stage_tile_loaded today);
//   bulk  one cp.async.bulk of the whole tile by thread 0, completed on an
//         mbarrier (Hopper's bulk copy: no registers, no L1 on the way);
//   bulk4 four cp.async.bulk of 8 KiB each.
//
// After the tile is in shared memory every thread counts its 32 items
// (warp-striped) above a threshold, and each warp stores its count (one
// word a warp; an atomic add to one counter instead serialised 262,144
// adds at 2^28 and hid the difference), so the tile must really arrive.
// Medians of 20 runs, CUDA events. Build: nvcc -O3 -std=c++17 -arch=sm_90a -o tma_stage tma_stage.cu
#include "proto_bench.cuh"
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>


constexpr int B = 256, ITEMS = 32, TILE = B * ITEMS;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ unsigned count_tile(const int* tile, int t) {
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    unsigned c = 0;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) c += tile[w * 32 * ITEMS + 32 * j + l] > t;
    return c;
}

__device__ __forceinline__ void finish(unsigned c, unsigned long long* out) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) c += __shfl_xor_sync(0xffffffffu, c, o);
    if (threadIdx.x % 32 == 0) out[blockIdx.x * (B / 32) + threadIdx.x / 32] = c;
}

__global__ void __launch_bounds__(B) stage_ldg(const int* in, int t, unsigned long long* out) {
    extern __shared__ __align__(16) int tile[];
    const int4* src = reinterpret_cast<const int4*>(in + (size_t)blockIdx.x * TILE);
    int4 v[ITEMS / 4];
#pragma unroll
    for (int k = 0; k < ITEMS / 4; ++k) v[k] = __ldg(src + k * B + threadIdx.x);
#pragma unroll
    for (int k = 0; k < ITEMS / 4; ++k) reinterpret_cast<int4*>(tile)[k * B + threadIdx.x] = v[k];
    __syncthreads();
    finish(count_tile(tile, t), out);
}

template <int PARTS>
__global__ void __launch_bounds__(B) stage_bulk(const int* in, int t, unsigned long long* out) {
    extern __shared__ __align__(16) int tile[];
    __shared__ __align__(8) unsigned long long bar;
    uint32_t b = smem_addr(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(1) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        constexpr uint32_t bytes = TILE * 4 / PARTS;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(TILE * 4) : "memory");
        const int* src = in + (size_t)blockIdx.x * TILE;
#pragma unroll
        for (int p = 0; p < PARTS; ++p) {
            asm volatile(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                    smem_addr(tile) + p * bytes),
                "l"(src + p * (bytes / 4)), "r"(bytes), "r"(b)
                : "memory");
        }
    }
    uint32_t done = 0;
    while (!done) {
        asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(b), "r"(0)
            : "memory");
    }
    finish(count_tile(tile, t), out);
}

__global__ void fill(int* p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned long long x = i * 0x9E3779B97F4A7C15ull;
        x ^= x >> 29; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 32;
        p[i] = (int)(x & 0x7fffffff);
    }
}

int main() {
    for (int lg : {24, 28}) {
        size_t n = size_t(1) << lg;
        int *in, *cp; unsigned long long* cnt;
        CK(cudaMalloc(&in, n * 4)); CK(cudaMalloc(&cp, n * 4)); CK(cudaMalloc(&cnt, n / TILE * (B / 32) * 8));
        fill<<<1024, 256>>>(in, n);
        CK(cudaDeviceSynchronize());
        int tiles = (int)(n / TILE), t = 1 << 30;  // about half above
        size_t smem = TILE * 4;
        CK(cudaFuncSetAttribute(stage_ldg, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        CK(cudaFuncSetAttribute(stage_bulk<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        CK(cudaFuncSetAttribute(stage_bulk<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        unsigned long long want = 0, got = 0;
        std::vector<int> h(n);
        CK(cudaMemcpy(h.data(), in, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; ++i) want += h[i] > t;
        float c = median_us([&] { copy4<<<132 * 8, 256>>>((const int4*)in, (int4*)cp, n / 4); });
        // Copy reads and writes n*4 each: the read-only equivalent is half its time.
        printf("2^%d copy %.1f us (%.0f GB/s read+write); a read of n at copy speed: %.1f us\n", lg, c,
               2.0 * n * 4 / c / 1e3, c / 2);
        auto run = [&](const char* name, auto kernel) {
            int per_sm = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, B, smem);
            float us = median_us([&] {
                kernel<<<tiles, B, smem>>>(in, t, cnt);
            });
            std::vector<unsigned long long> parts((size_t)tiles * (B / 32));
            CK(cudaMemcpy(parts.data(), cnt, parts.size() * 8, cudaMemcpyDeviceToHost));
            got = 0;
            for (auto x : parts) got += x;
            printf("2^%d %-6s %8.1f us  %6.0f GB/s read  %5.1f%% of copy-equivalent  %d blocks/SM  %s\n", lg, name, us,
                   n * 4 / us / 1e3, 100.0 * (c / 2) / us, per_sm, got == want ? "ok" : "WRONG");
            return 0;
        };
        run("ldg", stage_ldg);
        run("bulk", stage_bulk<1>);
        run("bulk4", stage_bulk<4>);
        CK(cudaGetLastError());
        cudaFree(in); cudaFree(cp); cudaFree(cnt);
    }
    return 0;
}
