// Prototype, not part of the library: how fast can a segmented sum run
// when long segments are cut into chunks of C elements (a block each,
// the last block to finish a segment adds its chunks' partials) and
// short ones (below T elements) go a warp each? The work list is planned
// on the host here (a plan kernel would read the offsets once, as
// `segmented_bounds` does); only the work kernel is timed, beside CUB's
// DeviceSegmentedReduce::Sum on the same data, both with CUDA events,
// medians, the inputs rotated through >= 256 MiB as in the bench.
//
//   nvcc -O3 -std=c++17 -arch=native -o /tmp/proto segmented_chunks.cu
//   /tmp/proto            (prints one line per case and variant)
//   PROTO_ONLY="28 0 16384 1024" /tmp/proto   (one case: log2 n, segment
//                         length or 0 for mixed, C, T; variant b256u2 only,
//                         e.g. under ncu)
//
// Data as the bench's (host/benches/cases/data.rs): values mix64(i ^ seed)
// % 2001, mixed lengths 1 + (h >> 8) % 2^((h & 255) % 17), h = mix64(s ^ seed).
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));               \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

static uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Item {
  unsigned long long lo, hi;  // elements of the chunk
  unsigned seg, first, nk, pad;  // its segment, the segment's first item, chunks in the segment
};

template <int BLOCK>
__device__ unsigned block_sum(unsigned x) {
  using BR = cub::BlockReduce<unsigned, BLOCK>;
  __shared__ typename BR::TempStorage ts;
  return BR(ts).Sum(x);
}

// Blocks [0, n_big): one chunk each. Blocks past it: a short segment per
// warp.
template <int BLOCK, int U>
__global__ void __launch_bounds__(BLOCK) work(const unsigned* __restrict__ in, const Item* __restrict__ items,
                                              unsigned n_big, const unsigned* __restrict__ small, unsigned n_small,
                                              const unsigned long long* __restrict__ off, unsigned* __restrict__ out,
                                              unsigned* __restrict__ partial, unsigned* __restrict__ arrive) {
  constexpr int WARPS = BLOCK / 32;
  if (blockIdx.x >= n_big) {
    unsigned w = (blockIdx.x - n_big) * WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (w >= n_small) return;
    unsigned s = small[w];
    unsigned long long b = off[s], e = off[s + 1];
    unsigned acc = 0;
    unsigned long long i = b + lane;
    for (; i + 96 < e; i += 128) {
      unsigned x0 = __ldg(in + i), x1 = __ldg(in + i + 32), x2 = __ldg(in + i + 64), x3 = __ldg(in + i + 96);
      acc += x0 + x1 + x2 + x3;
    }
    for (; i < e; i += 32) acc += __ldg(in + i);
    for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) out[s] = acc;
    return;
  }
  Item it = items[blockIdx.x];
  unsigned long long lo = it.lo, hi = it.hi;
  unsigned long long a = (lo + 3) & ~3ull;
  if (a > hi) a = hi;
  unsigned long long z = hi & ~3ull;
  if (z < a) z = a;
  unsigned acc = 0;
  if (threadIdx.x < a - lo) acc += __ldg(in + lo + threadIdx.x);
  if (threadIdx.x < hi - z) acc += __ldg(in + z + threadIdx.x);
  const uint4* v = reinterpret_cast<const uint4*>(in + a);
  unsigned long long nv = (z - a) / 4, i = threadIdx.x;
  for (; i + (U - 1) * BLOCK < nv; i += U * BLOCK) {
    uint4 x[U];
#pragma unroll
    for (int u = 0; u < U; u++) x[u] = __ldg(v + i + u * BLOCK);
#pragma unroll
    for (int u = 0; u < U; u++) acc += x[u].x + x[u].y + x[u].z + x[u].w;
  }
  for (; i < nv; i += BLOCK) {
    uint4 x = __ldg(v + i);
    acc += x.x + x.y + x.z + x.w;
  }
  unsigned tot = block_sum<BLOCK>(acc);
  __shared__ unsigned last;
  if (threadIdx.x == 0) {
    if (it.nk == 1) {
      out[it.seg] = tot;
      last = 0;
    } else {
      partial[blockIdx.x] = tot;
      __threadfence();
      last = atomicAdd(arrive + it.seg, 1u) == it.nk - 1;
    }
  }
  __syncthreads();
  if (last && threadIdx.x < 32) {
    __threadfence();
    unsigned sum = 0;
    for (unsigned j = threadIdx.x; j < it.nk; j += 32) sum += ((volatile unsigned*)partial)[it.first + j];
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (threadIdx.x == 0) {
      out[it.seg] = sum;
      arrive[it.seg] = 0;
    }
  }
}

struct Plan {
  std::vector<Item> items;
  std::vector<unsigned> small;
};

static Plan plan(const std::vector<unsigned long long>& off, unsigned long long C, unsigned long long T) {
  Plan p;
  size_t segs = off.size() - 1;
  for (size_t s = 0; s < segs; s++) {
    unsigned long long b = off[s], e = off[s + 1], len = e - b;
    if (len < T) {
      p.small.push_back(unsigned(s));
      continue;
    }
    unsigned nk = len <= C ? 1 : unsigned((len + C - 1) / C);
    unsigned first = unsigned(p.items.size());
    for (unsigned k = 0; k < nk; k++) {
      Item it{};
      it.lo = nk == 1 ? b : b + k * C;
      it.hi = nk == 1 ? e : std::min(e, b + (k + 1) * C);
      it.seg = unsigned(s), it.first = first, it.nk = nk;
      p.items.push_back(it);
    }
  }
  return p;
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  const int RUNS = 15;
  CK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("proto on %s (%d SMs)\n", prop.name, prop.multiProcessorCount);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  struct Case {
    int log2;
    unsigned long long L;  // 0: mixed
  };
  // PROTO_ONLY="log2 L C T": that case and variant b256u2 only.
  const char* only = getenv("PROTO_ONLY");
  int o_log2 = -1;
  unsigned long long o_L = 0, o_C = 0, o_T = 0;
  if (only) sscanf(only, "%d %llu %llu %llu", &o_log2, &o_L, &o_C, &o_T);
  for (Case c : {Case{24, 0}, Case{28, 0}, Case{24, 1ull << 20}, Case{28, 1ull << 20}, Case{28, 512}, Case{24, 512}}) {
    if (only && (c.log2 != o_log2 || c.L != o_L)) continue;
    unsigned long long n = 1ull << c.log2;
    unsigned long long seed = 0x5EEDull ^ (unsigned long long)c.log2 << 8 ^ c.L << 40;
    std::vector<unsigned> h(n);
    for (unsigned long long i = 0; i < n; i++) h[i] = unsigned(mix64(i ^ seed) % 2001);
    std::vector<unsigned long long> off{0};
    for (unsigned long long s = 0, at = 0; at < n; s++) {
      unsigned long long len = c.L;
      if (!len) {
        uint64_t x = mix64(s ^ seed);
        len = 1 + (x >> 8) % (1ull << ((x & 255) % 17));
      }
      at = std::min(n, at + len);
      off.push_back(at);
    }
    size_t segs = off.size() - 1;
    std::vector<unsigned> ref(segs);
    for (size_t s = 0; s < segs; s++) {
      unsigned acc = 0;
      for (unsigned long long i = off[s]; i < off[s + 1]; i++) acc += h[i];
      ref[s] = acc;
    }
    int R = int(std::max(1ull, (256ull << 20) / (n * 4)));
    unsigned* d_in;
    unsigned long long* d_off;
    unsigned *d_out, *d_part, *d_arrive;
    CK(cudaMalloc(&d_in, n * 4 * R));
    for (int r = 0; r < R; r++) CK(cudaMemcpy(d_in + r * n, h.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&d_off, off.size() * 8));
    CK(cudaMemcpy(d_off, off.data(), off.size() * 8, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&d_out, segs * 4));
    CK(cudaMalloc(&d_arrive, segs * 4));
    CK(cudaMemset(d_arrive, 0, segs * 4));
    auto check = [&](const char* what) {
      std::vector<unsigned> got(segs);
      CK(cudaMemcpy(got.data(), d_out, segs * 4, cudaMemcpyDeviceToHost));
      size_t bad = 0;
      for (size_t s = 0; s < segs; s++) bad += got[s] != ref[s];
      if (bad) printf("  %s: %zu of %zu segments WRONG\n", what, bad, segs);
      return bad == 0;
    };
    char name[64];
    if (c.L)
      snprintf(name, sizeof name, "len%llu 2^%d", c.L, c.log2);
    else
      snprintf(name, sizeof name, "mixed 2^%d", c.log2);
    // CUB.
    size_t tb = 0;
    CK(cub::DeviceSegmentedReduce::Sum(nullptr, tb, d_in, d_out, int(segs), d_off, d_off + 1));
    void* d_t;
    CK(cudaMalloc(&d_t, tb));
    std::vector<float> ts;
    for (int k = 0; k < RUNS + 3; k++) {
      CK(cudaMemset(d_out, 0xAB, segs * 4));
      const unsigned* src = d_in + (k % R) * n;
      CK(cudaEventRecord(e0));
      CK(cub::DeviceSegmentedReduce::Sum(d_t, tb, src, d_out, int(segs), d_off, d_off + 1));
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (k >= 3) ts.push_back(ms * 1000);
    }
    float cub_us = median(ts);
    bool ok = check("cub");
    printf("%-16s segs %8zu  cub %9.1f us %s\n", name, segs, cub_us, ok ? "ok" : "BAD");
    CK(cudaFree(d_t));
    for (unsigned long long C : {8192ull, 16384ull, 32768ull, 65536ull}) {
      for (unsigned long long T : {0ull, 256ull, 1024ull}) {
        if (only && (C != o_C || T != o_T)) continue;
        Plan p = plan(off, C, T);
        Item* d_items;
        unsigned* d_small;
        CK(cudaMalloc(&d_items, std::max<size_t>(1, p.items.size()) * sizeof(Item)));
        CK(cudaMalloc(&d_small, std::max<size_t>(1, p.small.size()) * 4));
        CK(cudaMalloc(&d_part, std::max<size_t>(1, p.items.size()) * 4));
        CK(cudaMemcpy(d_items, p.items.data(), p.items.size() * sizeof(Item), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_small, p.small.data(), p.small.size() * 4, cudaMemcpyHostToDevice));
        auto run = [&](auto kernel, int block, const char* v) {
          unsigned warps = block / 32;
          unsigned grid = unsigned(p.items.size() + (p.small.size() + warps - 1) / warps);
          std::vector<float> tw;
          bool good = true;
          for (int k = 0; k < RUNS + 3; k++) {
            CK(cudaMemset(d_out, 0xAB, segs * 4));
            const unsigned* src = d_in + (k % R) * n;
            CK(cudaEventRecord(e0));
            kernel<<<grid, block>>>(src, d_items, unsigned(p.items.size()), d_small, unsigned(p.small.size()), d_off,
                                    d_out, d_part, d_arrive);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (k >= 3) tw.push_back(ms * 1000);
            if (k == 3) good = check(v);
          }
          float us = median(tw);
          printf("%-16s C %6llu T %5llu %-8s blocks %8u  %9.1f us  %6.0f GB/s  x cub %.2f %s\n", name, C, T, v, grid,
                 us, n * 4 / (us * 1e3), cub_us / us, good ? "ok" : "BAD");
        };
        if (only) {
          run(work<256, 2>, 256, "b256u2");
        } else {
          run(work<256, 4>, 256, "b256u4");
        }
        if (T == 256 && !only) {
          run(work<256, 2>, 256, "b256u2");
          run(work<512, 2>, 512, "b512u2");
          run(work<128, 4>, 128, "b128u4");
          run(work<256, 8>, 256, "b256u8");
        }
        CK(cudaFree(d_items));
        CK(cudaFree(d_small));
        CK(cudaFree(d_part));
      }
    }
    CK(cudaFree(d_in));
    CK(cudaFree(d_off));
    CK(cudaFree(d_out));
    CK(cudaFree(d_arrive));
  }
  return 0;
}
