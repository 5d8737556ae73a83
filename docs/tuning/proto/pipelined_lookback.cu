// Does a single-pass kernel read as fast as a reduction once the next
// tile's loads are in flight while the current tile waits for its
// look-back?
//
// gpuprim's select kernels (one tile a block: ticket, staged loads, count,
// look-back, write) read 1 GiB at 2^28 in about 306 us on an H200 with
// nothing selected, where a reduction reads it in 235 us; on an H100 both
// stream at about the copy's speed. A tile's loads are in flight only
// while it stages; its ticket, its look-back and the block's exit and
// relaunch leave the multiprocessor's share of memory idle. The kernels
// below each count the items above a threshold (about half) and finding every
// tile's exclusive count by the decoupled look-back:
//
//   read    a persistent grid-stride count with no look-back (the floor);
//   once    one tile a block, as gpuprim's select: a ticket, 16-byte loads
//           into registers, shared stores, a barrier, the count from shared
//           memory (warp-striped), the tile's count published, warp 0 looks
//           back; run with 24 KiB of shared memory and with 39 KiB (five
//           blocks a multiprocessor, as the select kernels);
//   early   `once` with the count taken from the loaded registers and
//           published at the barrier that ends the staging (as gpuprim);
//   pipe    persistent blocks, two tile buffers: the next tile's ticket is
//           taken and its 16-byte cp.async copies issued before the current
//           tile is counted and looked back for;
//   pipe3   the same with three buffers (two tiles ahead);
//   split   two buffers, and while warp 0 looks back for the current tile
//           warps 1-7 copy, count and publish the next one;
//   ahead   split, and the ticket after the next taken while the next
//           tile's copies are in flight (that ticket is then held across
//           one look-back, so this may chain as `pipe` did: it measures
//           the atomic's round trip against that);
//   dec     warp 0 decoupled: warps 1-7 take tickets, copy (the next
//           tile in flight while the current is counted), count, publish
//           and queue each tile in a ring of 4; warp 0 looks back for the
//           queued tiles; only a full ring makes the workers wait.
//
// At 2^24 and 2^28 from memory (2^24 rotating through 16 copies); at 2^23
// hot, the 32 MiB input held in L2, so that the kernels' own costs show
// apart from the memory's.
//
// First run (H100, 2026-12-08, docs/tuning/select.md): the persistent
// `pipe` forms took twice `once`'s time, `pipe3` four to five times: a
// held tile's aggregate went out only after the look-back of the tile
// before it, so the waits chained. `split`, `ahead` and `dec` are answers;
// `early` is the baseline closest to gpuprim's kernel.
//
// Every tile's exclusive count is checked against the CPU. Medians of 20
// runs, CUDA events, the status words cleared in the timed region.
// Build: nvcc -O3 -std=c++17 -arch=native -o pipelined_lookback pipelined_lookback.cu
#include "proto_bench.cuh"
#include <cuda_runtime.h>
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <vector>

typedef unsigned long long u64;
constexpr int B = 256, WARPS = B / 32;
constexpr u64 AGG = 1ull << 62, INC = 2ull << 62, VAL = (1ull << 62) - 1;

__device__ __forceinline__ u64 ld_relaxed(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_relaxed(u64* p, u64 v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ unsigned count4(int4 v, int t) { return (v.x > t) + (v.y > t) + (v.z > t) + (v.w > t); }

// Warps 1-7 meet (warp 0 goes its own way).
__device__ __forceinline__ void workers_sync() { asm volatile("bar.sync 1, %0;" ::"n"(B - 32) : "memory"); }

// Warp 0: the sum of the values of tiles 0..tile-1, from their status words
// (a window of 32 a round, nearest first, stopping at the nearest inclusive).
__device__ __forceinline__ u64 look_back(const u64* status, int tile) {
    const int lane = threadIdx.x % 32;
    u64 excl = 0;
    int base = tile - 1;
    while (true) {
        const int idx = base - lane;
        u64 s = idx >= 0 ? ld_relaxed(status + idx) : INC;
        while (!__all_sync(0xffffffffu, s >> 62)) {
            __nanosleep(40);
            if (!(s >> 62)) s = ld_relaxed(status + idx);
        }
        const unsigned inc = __ballot_sync(0xffffffffu, (s >> 62) == 2);
        const int stop = inc ? __ffs(inc) - 1 : 31;
        excl += warp_sum(lane <= stop ? (s & VAL) : 0ull);
        if (inc) return excl;
        base -= 32;
    }
}

// Counting a staged tile: warp w's items are [w * 32 * I, (w + 1) * 32 * I),
// lane l takes every 32nd.
template <int I>
__device__ __forceinline__ unsigned count_staged(const int* tile, int t) {
    const int w = threadIdx.x / 32, l = threadIdx.x % 32;
    unsigned c = 0;
#pragma unroll
    for (int j = 0; j < I; ++j) c += tile[w * 32 * I + 32 * j + l] > t;
    return c;
}

// The tile's count from every thread's: publish, look back, record.
__device__ __forceinline__ void finish_tile(unsigned c, int tile, u64* status, u64* prefix, unsigned* warp_sums) {
    c = warp_sum(c);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = c;
    __syncthreads();
    if (threadIdx.x < 32) {
        u64 agg = 0;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) agg += warp_sums[w];
        if (tile == 0) {
            if (threadIdx.x == 0) { st_relaxed(status, INC | agg); prefix[0] = 0; }
        } else {
            if (threadIdx.x == 0) st_relaxed(status + tile, AGG | agg);
            const u64 excl = look_back(status, tile);
            if (threadIdx.x == 0) { st_relaxed(status + tile, INC | (excl + agg)); prefix[tile] = excl; }
        }
    }
}

__global__ void read_count(const int4* in, size_t n4, int t, u64* out) {
    unsigned c = 0;
    for (size_t i = blockIdx.x * (size_t)B + threadIdx.x; i < n4; i += (size_t)gridDim.x * B) {
        c += count4(__ldg(in + i), t);
    }
    c = warp_sum(c);
    if (threadIdx.x % 32 == 0) atomicAdd(out, (u64)c);
}

// One tile a block. EARLY: the count taken from the loaded registers, so
// that the tile's aggregate goes out at the one barrier that also ends the
// staging (as gpuprim's select publishes it); otherwise from the staged
// tile after a staging barrier of its own.
template <int I, bool EARLY>
__global__ void __launch_bounds__(B) once(const int* in, int t, u64* status, unsigned* ticket, u64* prefix) {
    extern __shared__ __align__(16) int tile_mem[];
    __shared__ unsigned warp_sums[WARPS];
    __shared__ int s_tile;
    if (threadIdx.x == 0) s_tile = (int)atomicAdd(ticket, 1u);
    __syncthreads();
    const int tile = s_tile;
    const int4* src = reinterpret_cast<const int4*>(in + (size_t)tile * B * I);
    int4 v[I / 4];
#pragma unroll
    for (int k = 0; k < I / 4; ++k) v[k] = __ldg(src + k * B + threadIdx.x);
    unsigned c = 0;
#pragma unroll
    for (int k = 0; k < I / 4; ++k) {
        reinterpret_cast<int4*>(tile_mem)[k * B + threadIdx.x] = v[k];
        if (EARLY) c += count4(v[k], t);
    }
    if (!EARLY) {
        __syncthreads();
        c = count_staged<I>(tile_mem, t);
    }
    finish_tile(c, tile, status, prefix, warp_sums);
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// Warps 1-7 issue a tile's 16-byte copies (thread 32 + k: chunks k,
// k + 224, ...), so that they can wait for all of them.
template <int CHUNKS>
__device__ __forceinline__ void workers_copy(int4* dst, const int4* src) {
    for (int c = threadIdx.x - 32; c < CHUNKS; c += B - 32) cp_async16(dst + c, src + c);
}

// Persistent blocks with BUFS tile buffers: tiles BUFS - 1 ahead are in
// flight while the current one is counted and looked back for.
template <int I, int BUFS>
__global__ void __launch_bounds__(B) pipe(const int* in, int t, int tiles, u64* status, unsigned* ticket, u64* prefix) {
    extern __shared__ __align__(16) int tile_mem[];
    __shared__ unsigned warp_sums[WARPS];
    __shared__ int s_tile[BUFS];
    constexpr int TILE = B * I;
    auto issue = [&](int tile, int buf) {
        if (tile < tiles) {
            const int4* src = reinterpret_cast<const int4*>(in + (size_t)tile * TILE);
            int4* dst = reinterpret_cast<int4*>(tile_mem + buf * TILE);
#pragma unroll
            for (int k = 0; k < I / 4; ++k) cp_async16(dst + k * B + threadIdx.x, src + k * B + threadIdx.x);
        }
        cp_commit();
    };
    // The first BUFS - 1 tiles.
    if (threadIdx.x == 0)
        for (int b = 0; b < BUFS - 1; ++b) s_tile[b] = (int)atomicAdd(ticket, 1u);
    __syncthreads();
    int held[BUFS];
#pragma unroll
    for (int b = 0; b < BUFS - 1; ++b) { held[b] = s_tile[b]; issue(held[b], b); }
    int k = 0;
    while (true) {
        const int cur = k % BUFS, ahead = (k + BUFS - 1) % BUFS;
        const int tile = held[0];
        if (tile >= tiles) break;
        if (threadIdx.x == 0) s_tile[ahead] = (int)atomicAdd(ticket, 1u);
        __syncthreads();
        // Shift the held tickets and take the new one.
#pragma unroll
        for (int b = 0; b < BUFS - 2; ++b) held[b] = held[b + 1];
        held[BUFS - 2] = s_tile[ahead];
        issue(held[BUFS - 2], ahead);
        cp_wait<BUFS - 1>();
        __syncthreads();
        finish_tile(count_staged<I>(tile_mem + cur * TILE, t), tile, status, prefix, warp_sums);
        ++k;
    }
    cp_wait<0>();
}

// Warps 1-7 count a staged tile in 16-byte chunks (thread 32 + k taking
// chunks k, k + 224, ...) and thread 32 publishes the tile's count
// (inclusive for tile 0) and returns it (0 elsewhere).
template <int CHUNKS>
__device__ __forceinline__ u64 workers_publish(const int4* staged, int t, int tile, u64* status, u64* prefix,
                                               unsigned* warp_sums) {
    unsigned c = 0;
    for (int k = threadIdx.x - 32; k < CHUNKS; k += B - 32) c += count4(staged[k], t);
    c = warp_sum(c);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = c;
    workers_sync();
    u64 agg = 0;
    if (threadIdx.x == 32) {
#pragma unroll
        for (int k = 1; k < WARPS; ++k) agg += warp_sums[k];
        st_relaxed(status + tile, (tile == 0 ? INC : AGG) | agg);
        if (tile == 0) prefix[0] = 0;
    }
    return agg;
}

// Persistent blocks, two buffers, the look-back off the count's path:
// while warp 0 looks back for the current tile, warps 1-7 (which alone
// issue the tile copies, so that they can wait for all of them) wait for
// the next tile, count it and publish its aggregate, so a tile's
// aggregate never waits for the look-back of the tile its block held
// before it (what holds `pipe` back).
template <int I, bool AHEAD>
__global__ void __launch_bounds__(B) pipe_split(const int* in, int t, int tiles, u64* status, unsigned* ticket, u64* prefix) {
    extern __shared__ __align__(16) int tile_mem[];
    __shared__ unsigned warp_sums[WARPS];
    __shared__ u64 s_agg[2];
    __shared__ int s_tile[3];
    constexpr int TILE = B * I, CHUNKS = TILE / 4;
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    // Warps 1-7 copy a tile into buffer `buf` and wait for it, then count
    // it and warp 1 publishes. With AHEAD, thread 32 takes the ticket after
    // this one meanwhile, into `slot`, so the next round starts without
    // the atomic's round trip.
    auto count_publish = [&](int tile, int buf, int slot) {
        const int4* src = reinterpret_cast<const int4*>(in + (size_t)tile * TILE);
        int4* dst = reinterpret_cast<int4*>(tile_mem + buf * TILE);
        workers_copy<CHUNKS>(dst, src);
        cp_commit();
        if (AHEAD && threadIdx.x == 32) s_tile[slot] = (int)atomicAdd(ticket, 1u);
        cp_wait<0>();
        workers_sync();
        const u64 agg = workers_publish<CHUNKS>(dst, t, tile, status, prefix, warp_sums);
        if (threadIdx.x == 32) s_agg[buf] = agg;
    };
    if (threadIdx.x == 0) s_tile[0] = (int)atomicAdd(ticket, 1u);
    __syncthreads();
    int cur = s_tile[0];
    if (cur >= tiles) return;
    if (w > 0) count_publish(cur, 0, 1);
    int k = 0;
    while (true) {
        const int buf = k & 1;
        if (!AHEAD && threadIdx.x == 0) s_tile[(k + 1) % 3] = (int)atomicAdd(ticket, 1u);
        __syncthreads();  // the ticket; the current tile's aggregate in s_agg
        const int next = s_tile[(k + 1) % 3];
        if (w == 0) {
            if (cur > 0) {
                const u64 agg = s_agg[buf];
                const u64 excl = look_back(status, cur);
                if (lane == 0) { st_relaxed(status + cur, INC | (excl + agg)); prefix[cur] = excl; }
            }
        } else if (next < tiles) {
            count_publish(next, buf ^ 1, (k + 2) % 3);
        }
        // (A write-out of the current tile would go here, by every warp.)
        __syncthreads();
        if (next >= tiles) break;
        cur = next;
        ++k;
    }
}

// Persistent blocks, warp 0 decoupled from the rest: warps 1-7 take
// tickets, copy (two buffers, the next tile's copies in flight while the
// current one is counted), count and publish each tile and queue it in a
// ring of D entries; warp 0 takes tiles off the ring and looks back for
// them. Only a full ring makes the workers wait for warp 0, and they
// publish a tile's aggregate before that wait, so no aggregate waits for a
// look-back and the loads need not stop for one.
template <int I, int D>
__global__ void __launch_bounds__(B) decoupled(const int* in, int t, int tiles, u64* status, unsigned* ticket, u64* prefix) {
    extern __shared__ __align__(16) int tile_mem[];
    __shared__ unsigned warp_sums[WARPS];
    __shared__ int s_next[2];
    __shared__ int ring_tile[D];
    __shared__ u64 ring_agg[D];
    __shared__ int produced, consumed;
    volatile int* vp = &produced;
    volatile int* vc = &consumed;
    constexpr int TILE = B * I, CHUNKS = TILE / 4;
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) { produced = 0; consumed = 0; }
    __syncthreads();
    if (w == 0) {
        for (int c = 0;; ++c) {
            while (*vp == c) __nanosleep(32);
            __threadfence_block();
            const int tile = ring_tile[c % D];
            const u64 agg = ring_agg[c % D];
            __syncwarp();
            if (tile < 0) break;
            if (tile > 0) {
                const u64 excl = look_back(status, tile);
                if (lane == 0) { st_relaxed(status + tile, INC | (excl + agg)); prefix[tile] = excl; }
            }
            __syncwarp();
            if (lane == 0) *vc = c + 1;
        }
        return;
    }
    int made = 0;  // thread 32's count of entries queued
    auto push = [&](int tile, u64 agg) {
        while (made - *vc >= D) __nanosleep(32);
        ring_tile[made % D] = tile;
        ring_agg[made % D] = agg;
        __threadfence_block();
        *vp = ++made;
    };
    auto issue = [&](int tile, int buf) {
        if (tile < tiles) {
            const int4* src = reinterpret_cast<const int4*>(in + (size_t)tile * TILE);
            int4* dst = reinterpret_cast<int4*>(tile_mem + buf * TILE);
            workers_copy<CHUNKS>(dst, src);
        }
        cp_commit();
    };
    if (threadIdx.x == 32) s_next[0] = (int)atomicAdd(ticket, 1u);
    workers_sync();
    int cur = s_next[0];
    if (cur < tiles) {
        issue(cur, 0);
        for (int i = 0;; ++i) {
            if (threadIdx.x == 32) s_next[(i + 1) & 1] = (int)atomicAdd(ticket, 1u);
            workers_sync();
            const int next = s_next[(i + 1) & 1];
            issue(next, (i + 1) & 1);
            cp_wait<1>();
            workers_sync();
            const int4* staged = reinterpret_cast<const int4*>(tile_mem + (i & 1) * TILE);
            const u64 agg = workers_publish<CHUNKS>(staged, t, cur, status, prefix, warp_sums);
            if (threadIdx.x == 32) push(cur, agg);
            if (next >= tiles) break;
            cur = next;
        }
        cp_wait<0>();
    }
    if (threadIdx.x == 32) push(-1, 0);
}

__global__ void fill(int* p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        u64 x = (i + 1) * 0x9E3779B97F4A7C15ull;
        x ^= x >> 29; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 32;
        p[i] = (int)(x & 0x7fffffff);
    }
}

int main() {
    // Line by line, so that a run cut by a time limit keeps what it printed.
    setvbuf(stdout, nullptr, _IOLBF, 0);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount;
    printf("%s, %d SMs\n", prop.name, sms);
    for (int lg : {23, 24, 28}) {
        const size_t n = size_t(1) << lg;
        // 2^24 rotates through 16 copies (1 GiB) so that L2 holds none;
        // 2^23 (32 MiB) is read hot, from L2: what the kernels cost when
        // memory is not what bounds them.
        const int copies = lg == 24 ? 16 : 1;
        int *in, *cp;
        u64 *status, *prefix, *cnt;
        unsigned* ticket;
        CK(cudaMalloc(&in, n * 4 * copies)); CK(cudaMalloc(&cp, n * 4));
        const int max_tiles = (int)(n / (B * 16)) + 1;
        CK(cudaMalloc(&status, max_tiles * 8)); CK(cudaMalloc(&prefix, max_tiles * 8));
        CK(cudaMalloc(&ticket, 4)); CK(cudaMalloc(&cnt, 8));
        fill<<<1024, 256>>>(in, n * copies);
        CK(cudaDeviceSynchronize());
        const int t = 1 << 30;  // about half above
        std::vector<int> h(n * copies);
        CK(cudaMemcpy(h.data(), in, n * 4 * copies, cudaMemcpyDeviceToHost));
        int rot = 0;
        auto next_in = [&] { rot = (rot + 1) % copies; return in + (size_t)rot * n; };
        float c = median_us([&] { copy4<<<sms * 8, 256>>>((const int4*)next_in(), (int4*)cp, n / 4); });
        printf("2^%d copy %.1f us (%.0f GB/s read+write); a read of n at copy speed: %.1f us\n", lg, c,
               2.0 * n * 4 / c / 1e3, c / 2);
        auto report = [&](const char* name, float us, int per_sm, bool ok) {
            printf("2^%d %-10s %8.1f us  %6.0f GB/s read  %5.1f%% of copy-equivalent  %d blocks/SM  %s\n", lg, name, us,
                   n * 4 / us / 1e3, 100.0 * (c / 2) / us, per_sm, ok ? "ok" : "WRONG");
        };
        {
            int per_sm = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, read_count, B, 0);
            float us = median_us([&] {
                cudaMemsetAsync(cnt, 0, 8);
                read_count<<<sms * per_sm, B>>>((const int4*)next_in(), n / 4, t, cnt);
            });
            u64 got = 0, want = 0;
            CK(cudaMemcpy(&got, cnt, 8, cudaMemcpyDeviceToHost));
            const int* hi = h.data() + (size_t)rot * n;
            for (size_t i = 0; i < n; ++i) want += hi[i] > t;
            report("read", us, per_sm, got == want);
        }
        // Checks every tile's exclusive count of the input last used.
        auto check = [&](int I, int tiles) {
            std::vector<u64> p(tiles);
            cudaMemcpy(p.data(), prefix, tiles * 8, cudaMemcpyDeviceToHost);
            const int* hi = h.data() + (size_t)rot * n;
            u64 run = 0;
            for (int k = 0; k < tiles; ++k) {
                if (p[k] != run) return false;
                for (int i = 0; i < B * I; ++i) run += hi[(size_t)k * B * I + i] > t;
            }
            return true;
        };
        auto run_once = [&](const char* name, auto kernel, int I, size_t smem) {
            const int tiles = (int)(n / (B * I));
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
            int per_sm = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, B, smem);
            float us = median_us([&] {
                cudaMemsetAsync(status, 0, tiles * 8);
                cudaMemsetAsync(ticket, 0, 4);
                kernel<<<tiles, B, smem>>>(next_in(), t, status, ticket, prefix);
            });
            report(name, us, per_sm, check(I, tiles));
        };
        auto run_pipe = [&](const char* name, auto kernel, int I, int bufs) {
            const int tiles = (int)(n / (B * I));
            const size_t smem = (size_t)bufs * B * I * 4;
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
            int per_sm = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, B, smem);
            float us = median_us([&] {
                cudaMemsetAsync(status, 0, tiles * 8);
                cudaMemsetAsync(ticket, 0, 4);
                kernel<<<sms * per_sm, B, smem>>>(next_in(), t, tiles, status, ticket, prefix);
            });
            report(name, us, per_sm, check(I, tiles));
        };
        run_once("once24", once<24, false>, 24, 24 * B * 4);
        run_once("once24/5", once<24, false>, 24, 39 * 1024);
        run_once("once32", once<32, false>, 32, 32 * B * 4);
        run_once("early24", once<24, true>, 24, 24 * B * 4);
        run_once("early24/5", once<24, true>, 24, 39 * 1024);
        run_once("early32/5", once<32, true>, 32, 39 * 1024);
        run_pipe("pipe16", pipe<16, 2>, 16, 2);
        run_pipe("pipe24", pipe<24, 2>, 24, 2);
        run_pipe("pipe32", pipe<32, 2>, 32, 2);
        run_pipe("pipe3x16", pipe<16, 3>, 16, 3);
        run_pipe("pipe3x24", pipe<24, 3>, 24, 3);
        run_pipe("split16", pipe_split<16, false>, 16, 2);
        run_pipe("split24", pipe_split<24, false>, 24, 2);
        run_pipe("split32", pipe_split<32, false>, 32, 2);
        run_pipe("ahead16", pipe_split<16, true>, 16, 2);
        run_pipe("ahead24", pipe_split<24, true>, 24, 2);
        run_pipe("ahead32", pipe_split<32, true>, 32, 2);
        run_pipe("dec16", decoupled<16, 4>, 16, 2);
        run_pipe("dec24", decoupled<24, 4>, 24, 2);
        run_pipe("dec32", decoupled<32, 4>, 32, 2);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        cudaFree(in); cudaFree(cp); cudaFree(status); cudaFree(prefix); cudaFree(ticket); cudaFree(cnt);
    }
    return 0;
}
