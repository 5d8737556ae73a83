// cub_bench: NVIDIA CUB's twins of gpuprim's headline bench cases, timed
// exactly as host/benches/bench.rs times gpuprim's, so that the bench can
// print "x CUB" = CUB's median time / gpuprim's median time.
//
// Build (run.sh's `bench` mode does this on the GPU machine, with the CUDA
// toolkit's nvcc and the CUB/CCCL headers it ships; CUDA 13 / CCCL 3.x):
//
//     nvcc -O3 -std=c++17 -arch=native -o cub_bench host/benches/cub/cub_bench.cu
//
// Run (the bench does this after each group when given `--cub PATH` or
// GPUPRIM_CUB_BENCH=PATH, with the group's cases, types, sizes and plan):
//
//     cub_bench --cases sum_into,inclusive_scan,exclusive_scan,readback
//         --types i32,f32,f64 --sizes 10,11,12 --runs 100 --warmup 3
//         --rotate-bytes 268435456 --budget-s 3 --min-runs 20 [--readback-log2 20]
//
// (one command line).
//
// It prints one JSON document on stdout (versions, device, one result per
// case, type and size); progress and diagnostics go to stderr. Exit status
// 0 when every result was measured and checked ok, 1 when one was not
// (the document is printed either way), 2 for a bad command line.
// `cub_bench --data-digest --types ... --sizes ...` prints the input
// digests alone and touches no GPU (to compare the inputs with the bench's
// on a machine without one).
// Diagnostic: with CUB_BENCH_VALUE_BITS=f32 (or i32) in the environment,
// the by-key cases' 4-byte values are the bit patterns of that type's
// random data (so `--types i32` times CUB's integer reduce-by-key on the
// float values' bits). Their digests then differ from the bench's: run
// cub_bench alone. docs/tuning/by_key.md, "14 items at four blocks".
//
// Cases:
//   sum_into        cub::DeviceReduce::Sum into a device scalar
//   inclusive_scan  cub::DeviceScan::InclusiveSum
//   exclusive_scan  cub::DeviceScan::ExclusiveSum (initial value 0)
//   readback        DeviceReduce::Sum of 2^readback-log2 elements + a
//                   cudaMemcpyAsync of the result into pinned host memory +
//                   cudaStreamSynchronize, timed on the host
//                   (std::chrono::steady_clock): the twin of the bench's
//                   readback line, `Context::sum` returning the value.
// Temporary storage is queried and allocated once per case and size, before
// timing, and reused by every run (as gpuprim's context reuses its scratch).
// num_items is an `int` while n fits (CUB then uses 32-bit offsets, its
// usual and fastest configuration), else `int64_t`; `--num-items i64`
// forces `int64_t` (64-bit offsets) at every size.
//
// Method, the same as bench.rs (`time_runs_with`, `rotation`, `random_data`):
// * Inputs: random non-zero numbers from splitmix64, bit for bit the
//   bench's (chunks of 2^16 elements with their own generator, seed
//   SEED ^ (log2_n << 8) ^ type index), uploaded once; enough copies rotate
//   to exceed --rotate-bytes together (at most warmup + runs), run i reads
//   copy i % copies. Each result carries `input_digest` (sum over i of
//   bits(x_i) * (2i + 1) mod 2^64), which the bench compares with its own.
// * Warm-up runs are timed with plain events (start event, the call, stop
//   event); their median estimates the run count:
//   runs = min(--runs, max(--min-runs, budget / estimate)).
// * Each timed run holds the stream, as gpuprim's `Context::time_held`
//   does: a one-warp kernel whose thread 0 spins on a volatile flag in
//   mapped pinned host memory (200 ms timeout on %globaltimer, then it
//   writes a timed-out word and returns); then the start event, the CUB
//   call and the stop event are queued, the host sets the flag, waits for
//   the stop event and reads the elapsed time. The events bracket GPU
//   execution, not the host's submission. A run whose hold timed out is
//   run again unheld and the measurement says held=false.
// * median, min, p90 (sorted[clamp(ceil(0.9 n), 1, n) - 1]) and mean, in µs.
// * The output is poisoned (0xFF bytes) before timing; after timing the
//   last run's output is checked against a CPU reference in double:
//   integers exactly (wrapping int32), floats within the bench's
//   `float_bound`; scans at every element.
// Everything runs on one stream created with cudaStreamNonBlocking.

#include <cub/device/device_partition.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <cub/version.cuh>
#include <cuda/std/functional>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

// ---------------------------------------------------------------------------
// Errors and options
// ---------------------------------------------------------------------------

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw CudaError(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
}
#define CK(call) check_cuda((call), #call)

const uint64_t SEED = 0x6770757072696d00ull;  // "gpuprim\0", bench.rs's SEED
const uint64_t HOLD_TIMEOUT_NS = 200'000'000;  // gpuprim's HOLD_TIMEOUT

enum class Ty { I32 = 0, F32 = 1, F64 = 2 };  // bench.rs's `Ty` (`as u64`)
enum class Case { SumInto, InclusiveScan, ExclusiveScan, Readback, Data };

const char* ty_name(Ty t) { return t == Ty::I32 ? "i32" : t == Ty::F32 ? "f32" : "f64"; }

const char* case_name(Case c) {
  switch (c) {
    case Case::SumInto: return "sum_into";
    case Case::InclusiveScan: return "inclusive_scan";
    case Case::ExclusiveScan: return "exclusive_scan";
    case Case::Readback: return "readback";
    case Case::Data: return "data";
  }
  return "?";
}

// Whether `name` is a case with its own inputs (select, by-key,
// segmented); see "Cases with their own inputs" below.
bool known_data_case(const std::string& name);

struct Options {
  std::vector<Case> cases;
  std::vector<std::string> data_cases;  // names of cases with their own inputs
  std::vector<Ty> types;
  std::vector<unsigned> sizes;
  size_t runs = 100;
  size_t warmup = 3;
  size_t rotate_bytes = size_t(256) << 20;
  double budget_s = 3.0;
  size_t min_runs = 20;
  unsigned readback_log2 = 20;
  bool wide = false;  // --num-items i64
  bool digest_only = false;
};

const char* USAGE =
    "usage: cub_bench --cases LIST --types LIST --sizes LIST [--runs N] [--warmup N]\n"
    "                 [--rotate-bytes B] [--budget-s S] [--min-runs N] [--readback-log2 K]\n"
    "                 [--num-items auto|i64] [--data-digest]\n"
    "  cases: sum_into,inclusive_scan,exclusive_scan,readback; types: i32,f32,f64;\n"
    "  sizes: log2 sizes, comma-separated (a..b ranges too). See the header of cub_bench.cu.\n";

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

unsigned long long parse_num(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0) throw std::invalid_argument(flag + " " + v + ": expected a number");
  return x;
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--cases") {
      for (const auto& c : split(value())) {
        if (c == "sum_into") o.cases.push_back(Case::SumInto);
        else if (c == "inclusive_scan") o.cases.push_back(Case::InclusiveScan);
        else if (c == "exclusive_scan") o.cases.push_back(Case::ExclusiveScan);
        else if (c == "readback") o.cases.push_back(Case::Readback);
        else if (known_data_case(c)) o.data_cases.push_back(c);
        else throw std::invalid_argument("--cases: unknown case `" + c + "`");
      }
    } else if (a == "--types") {
      for (const auto& t : split(value())) {
        if (t == "i32") o.types.push_back(Ty::I32);
        else if (t == "f32") o.types.push_back(Ty::F32);
        else if (t == "f64") o.types.push_back(Ty::F64);
        else throw std::invalid_argument("--types: unknown type `" + t + "`");
      }
    } else if (a == "--sizes") {
      for (const auto& part : split(value())) {
        size_t dots = part.find("..");
        unsigned lo = unsigned(parse_num(a, part.substr(0, dots)));
        unsigned hi = dots == std::string::npos ? lo : unsigned(parse_num(a, part.substr(dots + 2)));
        if (lo > hi || hi > 31) throw std::invalid_argument("--sizes: ascending log2 sizes within 0..31");
        for (unsigned k = lo; k <= hi; ++k) o.sizes.push_back(k);
      }
      std::sort(o.sizes.begin(), o.sizes.end());
      o.sizes.erase(std::unique(o.sizes.begin(), o.sizes.end()), o.sizes.end());
    } else if (a == "--runs") {
      o.runs = parse_num(a, value());
      if (o.runs == 0) throw std::invalid_argument("--runs must be at least 1");
    } else if (a == "--warmup") {
      o.warmup = parse_num(a, value());
    } else if (a == "--rotate-bytes") {
      o.rotate_bytes = parse_num(a, value());
    } else if (a == "--budget-s") {
      std::string v = value();
      char* end = nullptr;
      o.budget_s = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.budget_s >= 0)) throw std::invalid_argument("--budget-s " + v);
    } else if (a == "--min-runs") {
      o.min_runs = parse_num(a, value());
    } else if (a == "--readback-log2") {
      o.readback_log2 = unsigned(parse_num(a, value()));
      if (o.readback_log2 > 31) throw std::invalid_argument("--readback-log2: at most 31");
    } else if (a == "--num-items") {
      std::string v = value();
      if (v != "auto" && v != "i64") throw std::invalid_argument("--num-items: auto or i64");
      o.wide = v == "i64";
    } else if (a == "--data-digest") {
      o.digest_only = true;
    } else if (a == "-h" || a == "--help") {
      std::fputs(USAGE, stdout);
      std::exit(0);
    } else {
      throw std::invalid_argument("unknown argument `" + a + "`");
    }
  }
  if (o.types.empty()) throw std::invalid_argument("--types: no types given");
  if (o.digest_only) {
    if (o.sizes.empty()) throw std::invalid_argument("--sizes: no sizes given");
    return o;
  }
  if (o.cases.empty() && o.data_cases.empty()) throw std::invalid_argument("--cases: no cases given");
  bool sized = !o.data_cases.empty() ||
               std::any_of(o.cases.begin(), o.cases.end(), [](Case c) { return c != Case::Readback; });
  if (sized && o.sizes.empty()) throw std::invalid_argument("--sizes: no sizes given");
  return o;
}

// ---------------------------------------------------------------------------
// Inputs: bench.rs's SplitMix64 and random_data, bit for bit
// ---------------------------------------------------------------------------

struct SplitMix64 {
  uint64_t s;
  explicit SplitMix64(uint64_t seed) : s(seed) {}
  uint64_t next() {
    s += 0x9E3779B97F4A7C15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double unit() { return double(next() >> 11) * (1.0 / double(uint64_t(1) << 53)); }
  // Magnitude uniform in [0.5, 1.5), random sign (the sign is drawn first).
  double signed_unit() {
    double sign = (next() & 1) == 0 ? 1.0 : -1.0;
    return sign * (0.5 + unit());
  }
};

size_t threads() {
  unsigned t = std::thread::hardware_concurrency();
  return std::min<size_t>(std::max<unsigned>(t, 1), 32);
}

// f(part) for part in [0, parts), on up to threads() threads.
template <class F>
void parallel_for(size_t parts, F f) {
  size_t nt = std::min(parts, threads());
  if (nt <= 1) {
    for (size_t p = 0; p < parts; ++p) f(p);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t t = 0; t < nt; ++t) {
    pool.emplace_back([&] {
      for (size_t p; (p = next.fetch_add(1)) < parts;) f(p);
    });
  }
  for (auto& th : pool) th.join();
}

template <class T>
struct Elem;

template <>
struct Elem<int32_t> {
  static constexpr Ty ty = Ty::I32;
  static constexpr bool exact = true;
  static constexpr double eps = 0.0;
  static int32_t random(SplitMix64& r) {
    for (;;) {
      int32_t v = int32_t(uint32_t(r.next()));  // `next() as i32`: the low 32 bits
      if (v != 0) return v;
    }
  }
  static uint64_t bits(int32_t x) { return uint32_t(x); }
};

template <>
struct Elem<float> {
  static constexpr Ty ty = Ty::F32;
  static constexpr bool exact = false;
  static constexpr double eps = 1.1920928955078125e-07;  // f32::EPSILON
  static float random(SplitMix64& r) { return float(r.signed_unit()); }
  static uint64_t bits(float x) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
  }
};

template <>
struct Elem<double> {
  static constexpr Ty ty = Ty::F64;
  static constexpr bool exact = false;
  static constexpr double eps = 2.220446049250313e-16;  // f64::EPSILON
  static double random(SplitMix64& r) { return r.signed_unit(); }
  static uint64_t bits(double x) {
    uint64_t b;
    std::memcpy(&b, &x, 8);
    return b;
  }
};

// bench.rs's seed for log2 size k of type T (`run_type`).
template <class T>
uint64_t seed_for(unsigned k) {
  return SEED ^ (uint64_t(k) << 8) ^ uint64_t(Elem<T>::ty);
}

// bench.rs's random_data: chunk c of 2^16 elements draws from
// SplitMix64(SplitMix64(seed ^ c * 0x2545F4914F6CDD1D).next()).
template <class T>
std::vector<T> random_data(size_t n, uint64_t seed) {
  const size_t CHUNK = size_t(1) << 16;
  std::vector<T> v(n);
  size_t chunks = (n + CHUNK - 1) / CHUNK;
  parallel_for(chunks, [&](size_t c) {
    SplitMix64 rng(SplitMix64(seed ^ (uint64_t(c) * 0x2545F4914F6CDD1Dull)).next());
    size_t end = std::min(n, (c + 1) * CHUNK);
    for (size_t i = c * CHUNK; i < end; ++i) v[i] = Elem<T>::random(rng);
  });
  return v;
}

// Sum over i of bits(x_i) * (2i + 1), mod 2^64: the inputs' fingerprint.
template <class T>
uint64_t digest(const std::vector<T>& v) {
  const size_t parts = std::max<size_t>(1, std::min<size_t>(threads(), v.size() >> 16));
  std::vector<uint64_t> partial(parts, 0);
  parallel_for(parts, [&](size_t p) {
    size_t lo = v.size() * p / parts, hi = v.size() * (p + 1) / parts;
    uint64_t h = 0;
    for (size_t i = lo; i < hi; ++i) h += Elem<T>::bits(v[i]) * (2 * uint64_t(i) + 1);
    partial[p] = h;
  });
  uint64_t h = 0;
  for (uint64_t x : partial) h += x;
  return h;
}

std::string hex(uint64_t x) {
  char b[19];
  std::snprintf(b, sizeof b, "%016llx", (unsigned long long)x);
  return b;
}

// ---------------------------------------------------------------------------
// References: bench.rs's F64Sum, float_bound and Expect
// ---------------------------------------------------------------------------

struct F64Sum {
  double sum = 0, comp = 0, abs = 0;
  void add(double x) {
    double t = sum + x;
    comp += std::fabs(sum) >= std::fabs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
    abs += std::fabs(x);
  }
  double value() const { return sum + comp; }
  // Append the sum `s` of later terms.
  void append(const F64Sum& s) {
    double a = abs;
    add(s.sum);
    add(s.comp);
    abs = a + s.abs;
  }
};

double float_bound(size_t n, double eps, double abs_sum) {
  double m = double(std::max<size_t>(n, 1));
  return eps * abs_sum * (2.0 * std::sqrt(m) + std::log2(m) + 16.0) + 2.2250738585072014e-308;
}

// "" when `got` is right, else what is wrong. Integers: `want` exactly;
// floats: within `bound` of `value`.
template <class T>
std::string verdict(T got, T want, double value, double bound) {
  char b[200];
  if constexpr (Elem<T>::exact) {
    if (got == want) return "";
    std::snprintf(b, sizeof b, "got %lld, want %lld", (long long)got, (long long)want);
    return b;
  }
  double g = double(got), off = std::fabs(g - value);
  if (off <= bound) return "";
  std::snprintf(b, sizeof b, "got %e, want %e \xc2\xb1 %.2e (off by %.2e)", g, value, bound, off);
  return b;
}

// Index ranges for the references: one part below 2^20 elements, else one
// per thread.
size_t ref_parts(size_t n) { return n < (size_t(1) << 20) ? 1 : threads(); }

struct SumRef {
  uint32_t exact = 0;  // wrapping int32 sum (integers)
  F64Sum f;            // compensated f64 sum (floats)
};

template <class T>
void add_to(SumRef& s, T x) {
  if constexpr (Elem<T>::exact) {
    s.exact += uint32_t(x);
  } else {
    s.f.add(double(x));
  }
}

template <class T>
SumRef sum_ref(const std::vector<T>& x) {
  size_t parts = ref_parts(x.size());
  std::vector<SumRef> p(parts);
  parallel_for(parts, [&](size_t j) {
    size_t lo = x.size() * j / parts, hi = x.size() * (j + 1) / parts;
    for (size_t i = lo; i < hi; ++i) add_to(p[j], x[i]);
  });
  SumRef r;
  for (const auto& q : p) {
    r.exact += q.exact;
    r.f.append(q.f);
  }
  return r;
}

template <class T>
std::string check_sum(const SumRef& r, size_t n, T got) {
  return verdict<T>(got, T(int32_t(r.exact)), r.f.value(), float_bound(n, Elem<T>::eps, r.f.abs));
}

// Every element of an inclusive or exclusive (init 0) scan of x.
template <class T>
std::string check_scan(const std::vector<T>& x, const std::vector<T>& got, bool inclusive) {
  const size_t n = x.size(), parts = ref_parts(n);
  auto lo = [&](size_t j) { return n * j / parts; };
  std::vector<SumRef> total(parts), start(parts);
  parallel_for(parts, [&](size_t j) {
    for (size_t i = lo(j); i < lo(j + 1); ++i) add_to(total[j], x[i]);
  });
  for (size_t j = 1; j < parts; ++j) {
    start[j] = start[j - 1];
    start[j].exact += total[j - 1].exact;
    start[j].f.append(total[j - 1].f);
  }
  std::vector<std::string> first(parts);
  parallel_for(parts, [&](size_t j) {
    SumRef s = start[j];
    for (size_t i = lo(j); i < lo(j + 1); ++i) {
      std::string e;
      if (inclusive) {
        add_to(s, x[i]);
        e = verdict<T>(got[i], T(int32_t(s.exact)), s.f.value(), float_bound(i + 1, Elem<T>::eps, s.f.abs));
      } else {
        e = verdict<T>(got[i], T(int32_t(s.exact)), s.f.value(), float_bound(i, Elem<T>::eps, s.f.abs));
        add_to(s, x[i]);
      }
      if (!e.empty()) {
        first[j] = "element " + std::to_string(i) + ": " + e;
        return;
      }
    }
  });
  for (const auto& e : first) {
    if (!e.empty()) return e;
  }
  return "";
}

// ---------------------------------------------------------------------------
// Timing: gpuprim's Context::time and Context::time_held
// ---------------------------------------------------------------------------

__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// gpuprim-kernels' timing::hold: thread 0 of block 0 spins until the host
// sets *flag, or gives up after timeout_ns and writes 1 to *timed_out.
__global__ void hold_kernel(const volatile unsigned* flag, unsigned long long timeout_ns, volatile unsigned* timed_out) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  unsigned long long start = globaltimer_ns();
  while (*flag == 0) {
    if (globaltimer_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

struct Gpu {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  volatile unsigned* words = nullptr;  // [flag, timed_out], mapped pinned host memory
  unsigned* dwords = nullptr;          // the same words as the device sees them

  Gpu() {
    CK(cudaSetDevice(0));
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CK(cudaEventCreate(&start));
    CK(cudaEventCreate(&stop));
    void* h = nullptr;
    CK(cudaHostAlloc(&h, 2 * sizeof(unsigned), cudaHostAllocMapped));
    words = static_cast<volatile unsigned*>(h);
    CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dwords), h, 0));
    // Load the hold kernel now, not inside the first timed run.
    set(0, 1);
    hold_kernel<<<1, 32, 0, stream>>>(dwords, HOLD_TIMEOUT_NS, dwords + 1);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(stream));
  }

  void set(int word, unsigned v) {
    words[word] = v;
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }

  double elapsed_us() {
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start, stop));
    return double(ms) * 1e3;
  }

  // Events around the work `f` queues (the host's submission included).
  template <class F>
  double time(F&& f) {
    CK(cudaEventRecord(start, stream));
    f();
    CK(cudaEventRecord(stop, stream));
    CK(cudaEventSynchronize(stop));
    return elapsed_us();
  }

  // Lets the hold kernel go on every path and, where the stream was not
  // waited for (an error), waits for it, as gpuprim's `Release` does.
  struct Release {
    Gpu& g;
    bool synchronized = false;
    ~Release() {
      g.set(0, 1);
      if (!synchronized) cudaStreamSynchronize(g.stream);
    }
  };

  // The work `f` queues, timed with the stream held behind hold_kernel;
  // false when the hold timed out (the time is then not valid).
  template <class F>
  bool time_held(F&& f, double& us) {
    set(0, 0);
    set(1, 0);
    hold_kernel<<<1, 32, 0, stream>>>(dwords, HOLD_TIMEOUT_NS, dwords + 1);
    CK(cudaGetLastError());
    Release release{*this};
    CK(cudaEventRecord(start, stream));
    f();
    CK(cudaEventRecord(stop, stream));
    set(0, 1);
    CK(cudaEventSynchronize(stop));
    release.synchronized = true;
    if (words[1] != 0) return false;
    us = elapsed_us();
    return true;
  }
};

struct Timing {
  bool held = true;
  size_t runs = 0, warmup = 0, copies = 0;
  double median = NAN, min = NAN, p90 = NAN, mean = NAN;
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  if (n == 0) return NAN;
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

// How each run is timed: GPU time with the stream held, or host wall clock
// around a call that waits for its result itself.
enum class Clock { Held, Host };

// bench.rs's time_runs_with: warm-up runs timed plainly size the run count,
// then every run is timed on its own; run(i) gets the run's index (warm-up
// runs first), to pick its input copy.
template <class Run>
Timing time_runs(Gpu& gpu, const Options& o, size_t copies, Clock clock, Run run) {
  Timing t;
  t.held = clock == Clock::Held;
  t.warmup = o.warmup;
  t.copies = copies;
  size_t index = 0;
  auto once = [&](size_t i, bool hold) -> double {
    if (clock == Clock::Host) {
      auto t0 = std::chrono::steady_clock::now();
      run(i);
      auto t1 = std::chrono::steady_clock::now();
      return std::chrono::duration<double, std::micro>(t1 - t0).count();
    }
    if (hold && t.held) {
      double us = 0;
      if (gpu.time_held([&] { run(i); }, us)) return us;
      t.held = false;  // and time this run again, unheld
    }
    return gpu.time([&] { run(i); });
  };
  std::vector<double> warm;
  for (size_t w = 0; w < o.warmup; ++w) warm.push_back(once(index++, false));
  size_t runs = o.runs;
  if (!warm.empty()) {
    double est = median_of(warm);
    double fit = o.budget_s * 1e6 / std::max(est, 1e-3);
    size_t fit_runs = fit >= 1e15 ? size_t(1e15) : size_t(fit);
    runs = std::min(runs, std::max(fit_runs, o.min_runs));
  }
  std::vector<double> samples;
  for (size_t r = 0; r < runs; ++r) samples.push_back(once(index++, true));
  std::sort(samples.begin(), samples.end());
  size_t n = samples.size();
  if (n == 0) throw std::runtime_error("no timed runs");
  t.runs = n;
  t.median = median_of(samples);
  t.min = samples[0];
  size_t p = size_t(std::ceil(double(n) * 0.9));
  t.p90 = samples[std::min(std::max<size_t>(p, 1), n) - 1];
  double s = 0;
  for (double x : samples) s += x;
  t.mean = s / double(n);
  return t;
}

// bench.rs's rotation: copies that together exceed rotate_bytes, no more
// than the runs can use.
size_t rotation(const Options& o, size_t bytes) {
  size_t uses = std::max<size_t>(o.warmup + o.runs, 1);
  size_t c = (o.rotate_bytes + std::max<size_t>(bytes, 1) - 1) / std::max<size_t>(bytes, 1);
  return std::min(std::max<size_t>(c, 1), uses);
}

// ---------------------------------------------------------------------------
// CUB
// ---------------------------------------------------------------------------

template <class T, class N>
cudaError_t cub_call(Case c, void* temp, size_t& temp_bytes, const T* in, T* out, N n, cudaStream_t s) {
  switch (c) {
    case Case::SumInto:
    case Case::Readback: return cub::DeviceReduce::Sum(temp, temp_bytes, in, out, n, s);
    case Case::InclusiveScan: return cub::DeviceScan::InclusiveSum(temp, temp_bytes, in, out, n, s);
    case Case::ExclusiveScan: return cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, n, s);
  }
  return cudaErrorInvalidValue;
}

bool narrow(const Options& o, size_t n) { return !o.wide && n <= size_t(INT_MAX); }

// The CUB call with num_items an `int` where n fits (32-bit offsets), else
// an `int64_t` (64-bit offsets).
template <class T>
void cub_run(const Options& o, Case c, void* temp, size_t& temp_bytes, const T* in, T* out, size_t n, cudaStream_t s) {
  cudaError_t e = narrow(o, n) ? cub_call<T, int>(c, temp, temp_bytes, in, out, int(n), s)
                               : cub_call<T, int64_t>(c, temp, temp_bytes, in, out, int64_t(n), s);
  check_cuda(e, case_name(c));
}

// Device memory freed on every path.
struct DevMem {
  void* p = nullptr;
  explicit DevMem(size_t bytes) {
    if (bytes) CK(cudaMalloc(&p, bytes));
  }
  ~DevMem() {
    if (p) cudaFree(p);
  }
  DevMem(const DevMem&) = delete;
  DevMem& operator=(const DevMem&) = delete;
  DevMem(DevMem&& o) noexcept : p(o.p) { o.p = nullptr; }
};

struct PinnedMem {
  void* p = nullptr;
  explicit PinnedMem(size_t bytes) { CK(cudaMallocHost(&p, bytes)); }
  ~PinnedMem() {
    if (p) cudaFreeHost(p);
  }
  PinnedMem(const PinnedMem&) = delete;
  PinnedMem& operator=(const PinnedMem&) = delete;
};

struct Result {
  Case c;
  Ty ty;
  unsigned log2_n;
  size_t n;
  Timing t;
  std::string check;  // "ok", "FAILED: ...", "ERROR: ..."
  std::string digest;
  size_t temp_bytes = 0;
  bool wide = false;
  std::string name;  // cases with their own inputs (Case::Data): the case's name
  const char* label() const { return c == Case::Data ? name.c_str() : case_name(c); }
};

// Uploaded inputs: `copies` device copies of the same data.
template <class T>
std::vector<DevMem> upload(const std::vector<T>& data, size_t copies) {
  size_t bytes = data.size() * sizeof(T);
  std::vector<DevMem> in;
  in.reserve(copies);
  for (size_t c = 0; c < copies; ++c) {
    in.emplace_back(bytes);
    if (c == 0) CK(cudaMemcpy(in[0].p, data.data(), bytes, cudaMemcpyHostToDevice));
    else CK(cudaMemcpy(in[c].p, in[0].p, bytes, cudaMemcpyDeviceToDevice));
  }
  // Both copies run on the legacy default stream, with which the bench's
  // non-blocking stream does not synchronize, and may still be running.
  CK(cudaDeviceSynchronize());
  return in;
}

// One stream-ordered case (sum_into or a scan) on the uploaded inputs.
template <class T>
Result measure(Gpu& gpu, const Options& o, Case c, unsigned k, const std::vector<T>& data, const std::vector<DevMem>& in,
               const std::string& dig, const SumRef* sum) {
  const size_t n = data.size();
  Result r{c, Elem<T>::ty, k, n, Timing{}, "", dig};
  r.t.warmup = o.warmup;
  r.t.copies = in.size();
  r.wide = !narrow(o, n);
  try {
    const size_t out_len = c == Case::SumInto ? 1 : n;
    DevMem out(out_len * sizeof(T));
    CK(cudaMemsetAsync(out.p, 0xFF, out_len * sizeof(T), gpu.stream));
    T* d_out = static_cast<T*>(out.p);
    cub_run<T>(o, c, nullptr, r.temp_bytes, static_cast<const T*>(in[0].p), d_out, n, gpu.stream);
    DevMem temp(r.temp_bytes);
    size_t temp_bytes = r.temp_bytes;
    r.t = time_runs(gpu, o, in.size(), Clock::Held, [&](size_t i) {
      cub_run<T>(o, c, temp.p, temp_bytes, static_cast<const T*>(in[i % in.size()].p), d_out, n, gpu.stream);
    });
    CK(cudaStreamSynchronize(gpu.stream));
    std::string e;
    if (c == Case::SumInto) {
      T got;
      CK(cudaMemcpy(&got, d_out, sizeof(T), cudaMemcpyDeviceToHost));
      e = check_sum<T>(*sum, n, got);
    } else {
      std::vector<T> got(n);
      CK(cudaMemcpy(got.data(), d_out, n * sizeof(T), cudaMemcpyDeviceToHost));
      e = check_scan<T>(data, got, c == Case::InclusiveScan);
    }
    r.check = e.empty() ? "ok" : "FAILED: " + e;
  } catch (const std::exception& ex) {
    r.check = std::string("ERROR: ") + ex.what();
  }
  return r;
}

// The readback twin: the sum of 2^k elements back on the host, host time.
template <class T>
Result measure_readback(Gpu& gpu, const Options& o, unsigned k) {
  const size_t n = size_t(1) << k;
  std::vector<T> data = random_data<T>(n, seed_for<T>(k));
  Result r{Case::Readback, Elem<T>::ty, k, n, Timing{}, "", hex(digest(data))};
  r.t.held = false;
  r.t.warmup = o.warmup;
  r.wide = !narrow(o, n);
  try {
    const size_t copies = rotation(o, n * sizeof(T));
    r.t.copies = copies;
    std::vector<DevMem> in = upload(data, copies);
    SumRef ref = sum_ref(data);
    DevMem out(sizeof(T));
    PinnedMem host(sizeof(T));
    T* d_out = static_cast<T*>(out.p);
    T* h_out = static_cast<T*>(host.p);
    cub_run<T>(o, Case::Readback, nullptr, r.temp_bytes, static_cast<const T*>(in[0].p), d_out, n, gpu.stream);
    DevMem temp(r.temp_bytes);
    size_t temp_bytes = r.temp_bytes;
    r.t = time_runs(gpu, o, copies, Clock::Host, [&](size_t i) {
      cub_run<T>(o, Case::Readback, temp.p, temp_bytes, static_cast<const T*>(in[i % copies].p), d_out, n,
                 gpu.stream);
      CK(cudaMemcpyAsync(h_out, d_out, sizeof(T), cudaMemcpyDeviceToHost, gpu.stream));
      CK(cudaStreamSynchronize(gpu.stream));
    });
    std::string e = check_sum<T>(ref, n, *h_out);
    r.check = e.empty() ? "ok" : "FAILED: " + e;
  } catch (const std::exception& ex) {
    r.check = std::string("ERROR: ") + ex.what();
  }
  return r;
}

void progress(const Result& r) {
  std::fprintf(stderr, "  cub %-14s %s 2^%-3u %10.4g us (%zu runs, %zu inputs%s) %s\n", r.label(), ty_name(r.ty),
               r.log2_n, r.t.median, r.t.runs, r.t.copies,
               r.c == Case::Readback ? ", host clock" : r.t.held ? "" : ", NOT held", r.check.c_str());
}

// Every stream-ordered case of o.cases for type T at every size.
template <class T>
void run_type(Gpu& gpu, const Options& o, std::vector<Result>& out) {
  std::vector<Case> cases;
  for (Case c : o.cases) {
    if (c != Case::Readback) cases.push_back(c);
  }
  if (cases.empty()) return;
  for (unsigned k : o.sizes) {
    const size_t n = size_t(1) << k;
    std::vector<T> data = random_data<T>(n, seed_for<T>(k));
    std::string dig = hex(digest(data));
    std::vector<DevMem> in;
    std::string upload_error;
    try {
      in = upload(data, rotation(o, n * sizeof(T)));
    } catch (const std::exception& ex) {
      upload_error = ex.what();
    }
    bool any_sum = std::find(cases.begin(), cases.end(), Case::SumInto) != cases.end();
    SumRef ref = any_sum && upload_error.empty() ? sum_ref(data) : SumRef{};
    for (Case c : cases) {
      Result r;
      if (upload_error.empty()) {
        r = measure<T>(gpu, o, c, k, data, in, dig, &ref);
      } else {
        r = Result{c, Elem<T>::ty, k, n, Timing{}, "ERROR: uploading the inputs: " + upload_error, dig};
      }
      progress(r);
      out.push_back(r);
    }
  }
}

// ---------------------------------------------------------------------------
// Cases with their own inputs: select, partition, unique, run-length
// encode, by-key scans and reductions, segmented reductions
// ---------------------------------------------------------------------------
//
// The bench's host/benches/cases/data.rs defines the inputs; this is the
// same, bit for bit. Names: PRIMITIVE/DISTRIBUTION, e.g. select_if/50%,
// reduce_by_key/run8, segmented_reduce/len512, segmented_reduce/mixed.
//   select_if, select_flagged, partition  /P%   values mix64(i ^ seed) % 2001,
//       predicate x < t with t = 20 P (+1 at P = 100): 0%, 50%, 100%;
//       flags[i] = x_i < t (uint8)
//   partition_three_way/thirds          first x < 667, second x < 1334
//   unique, run_length_encode, non_trivial_runs  /runL   the run values
//   unique_by_key, reduce_by_key (sum), inclusive_scan_by_key,
//       exclusive_scan_by_key (sum, init 0)  /runL   u64 keys, random values
//   segmented_reduce (sum), segmented_argmin(_flat), segmented_ranges (sum)
//       /lenL, /randL (lengths 0..=2L) or /mixed   random values,
//       u64 offsets (CSR; begin = offsets, end = offsets + 1)
// Counts: CUB writes them to an int64_t; run lengths and offsets are int.

enum class Prim {
  SelectIf,
  SelectFlagged,
  Partition,
  PartitionThreeWay,
  Unique,
  UniqueByKey,
  RunLengthEncode,
  NonTrivialRuns,
  ReduceByKey,
  InclusiveScanByKey,
  ExclusiveScanByKey,
  SegmentedReduce,
  SegmentedArgMin,
};
enum class Kind { Values, Flags, Runs, Segments };

struct DataSpec {
  std::string name;
  Prim prim;
  Kind kind;
  uint64_t param = 0;  // threshold (Flags), run length (Runs), segment length (Segments; 0: mixed)
  bool random = false;  // Segments: random lengths 0..=2 param (randL)
  uint32_t t1 = 0, t2 = 0;  // predicate thresholds (x < t1; three-way: x < t2 second)
};

bool parse_data_case(const std::string& name, DataSpec& d) {
  size_t slash = name.find('/');
  if (slash == std::string::npos) return false;
  std::string prim = name.substr(0, slash), dist = name.substr(slash + 1);
  d.name = name;
  auto number = [](const std::string& s, uint64_t& v) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 12) return false;
    v = std::strtoull(s.c_str(), nullptr, 10);
    return true;
  };
  uint64_t v = 0;
  if (prim == "select_if" || prim == "select_flagged" || prim == "partition") {
    if (dist.size() < 2 || dist.back() != '%' || !number(dist.substr(0, dist.size() - 1), v) || v > 100) return false;
    d.prim = prim == "select_if" ? Prim::SelectIf : prim == "partition" ? Prim::Partition : Prim::SelectFlagged;
    d.t1 = uint32_t(v * 20 + (v == 100 ? 1 : 0));
    d.kind = d.prim == Prim::SelectFlagged ? Kind::Flags : Kind::Values;
    d.param = d.prim == Prim::SelectFlagged ? d.t1 : 0;
    return true;
  }
  if (prim == "partition_three_way") {
    if (dist != "thirds") return false;
    d.prim = Prim::PartitionThreeWay;
    d.kind = Kind::Values;
    d.t1 = 667;
    d.t2 = 1334;
    return true;
  }
  const std::pair<const char*, Prim> runs[] = {
      {"unique", Prim::Unique},
      {"unique_by_key", Prim::UniqueByKey},
      {"run_length_encode", Prim::RunLengthEncode},
      {"non_trivial_runs", Prim::NonTrivialRuns},
      {"reduce_by_key", Prim::ReduceByKey},
      {"inclusive_scan_by_key", Prim::InclusiveScanByKey},
      {"exclusive_scan_by_key", Prim::ExclusiveScanByKey},
  };
  for (const auto& [p, e] : runs) {
    if (prim != p) continue;
    if (dist.rfind("run", 0) != 0 || !number(dist.substr(3), v) || v == 0) return false;
    d.prim = e;
    d.kind = Kind::Runs;
    d.param = v;
    return true;
  }
  // segmented_ranges: our sum over begin/end pairs (two views of the
  // offsets); CUB's begin and end iterators are the same call.
  // segmented_fixed(_flat, _short): our sum over a fixed length; CUB's
  // twin is its sum over the same segments' offsets.
  // segmented_argmin_ranges: our argmin over begin/end pairs; CUB's twin
  // is its argmin over the offsets.
  if (prim == "segmented_reduce" || prim == "segmented_argmin" || prim == "segmented_argmin_flat" ||
      prim == "segmented_argmin_ranges" || prim == "segmented_ranges" || prim == "segmented_fixed" ||
      prim == "segmented_fixed_flat" || prim == "segmented_fixed_short") {
    d.prim = prim.rfind("segmented_argmin", 0) == 0 ? Prim::SegmentedArgMin : Prim::SegmentedReduce;
    d.kind = Kind::Segments;
    if (dist == "mixed") {
      d.param = 0;
      return true;
    }
    if (dist.rfind("rand", 0) == 0) {
      if (!number(dist.substr(4), v) || v == 0) return false;
      d.param = v;
      d.random = true;
      return true;
    }
    if (dist.rfind("len", 0) != 0 || !number(dist.substr(3), v) || v == 0) return false;
    d.param = v;
    return true;
  }
  return false;
}

bool known_data_case(const std::string& name) {
  DataSpec d;
  return parse_data_case(name, d);
}

uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// data.rs's DataKey::seed.
uint64_t data_seed(const DataSpec& d, Ty ty, unsigned k) {
  uint64_t tag = 0, param = 0, t = 0;
  switch (d.kind) {
    case Kind::Values:
    case Kind::Flags: tag = 1, t = uint64_t(ty); break;
    case Kind::Runs: tag = 2, param = d.param; break;
    case Kind::Segments: tag = d.random ? 4 : 3, param = d.param; break;
  }
  return SEED ^ (uint64_t(k) << 8) ^ t ^ (tag << 32) ^ (param << 40);
}

// f(i) for i < n, on every core.
template <class X, class F>
std::vector<X> par_fill(size_t n, F f) {
  std::vector<X> v(n);
  const size_t parts = std::max<size_t>(1, std::min<size_t>(threads(), n >> 16));
  parallel_for(parts, [&](size_t p) {
    for (size_t i = n * p / parts; i < n * (p + 1) / parts; ++i) v[i] = f(i);
  });
  return v;
}

template <class X>
uint64_t digest_bits(const std::vector<X>& v) {
  uint64_t h = 0;
  for (size_t i = 0; i < v.size(); ++i) h += uint64_t(v[i]) * (2 * uint64_t(i) + 1);
  return h;
}

// data.rs's segment_offsets.
std::vector<uint64_t> segment_offsets(uint64_t len, bool random, size_t n_, uint64_t seed) {
  const uint64_t n = n_;
  std::vector<uint64_t> o;
  if (random) {
    o.push_back(0);
    uint64_t at = 0;
    for (uint64_t s = 0; at < n; ++s) {
      at = std::min(at + mix64(s ^ seed) % (2 * len + 1), n);
      o.push_back(at);
    }
    return o;
  }
  if (len != 0) {
    uint64_t segs = (n + len - 1) / len;
    for (uint64_t s = 0; s <= segs; ++s) o.push_back(std::min(s * len, n));
    return o;
  }
  o.push_back(0);
  uint64_t at = 0;
  for (uint64_t s = 0; at < n; ++s) {
    uint64_t h = mix64(s ^ seed);
    uint64_t e = (h & 255) % 17;
    at = std::min(at + 1 + (h >> 8) % (uint64_t(1) << e), n);
    o.push_back(at);
  }
  return o;
}

// A data set (data.rs's DataSet): the arrays of the spec's kind.
template <class T>
struct DataSet {
  std::vector<T> vals, runs;
  std::vector<uint8_t> flags;
  std::vector<uint64_t> keys, offsets;
  size_t bytes() const {
    return (vals.size() + runs.size()) * sizeof(T) + flags.size() + 8 * (keys.size() + offsets.size());
  }
};

template <class T>
DataSet<T> make_data(const DataSpec& d, unsigned k) {
  const size_t n = size_t(1) << k;
  const uint64_t seed = data_seed(d, Elem<T>::ty, k);
  DataSet<T> s;
  switch (d.kind) {
    case Kind::Values:
    case Kind::Flags:
      s.vals = par_fill<T>(n, [&](size_t i) { return T(uint32_t(mix64(uint64_t(i) ^ seed) % 2001)); });
      if (d.kind == Kind::Flags) {
        const double t = double(d.param);
        s.flags = par_fill<uint8_t>(n, [&](size_t i) { return uint8_t(double(s.vals[i]) < t ? 1 : 0); });
      }
      break;
    case Kind::Runs:
      s.keys = par_fill<uint64_t>(n, [&](size_t i) {
        uint64_t r = uint64_t(i) / d.param;
        return (mix64(r ^ seed) & ~uint64_t(1)) | (r & 1);
      });
      s.runs = par_fill<T>(n, [&](size_t i) {
        uint64_t r = uint64_t(i) / d.param;
        uint64_t h = mix64(r ^ seed ^ 1);
        return T(uint32_t(r % 2 == 0 ? h % 1000 : 1000 + h % 1001));
      });
      s.vals = random_data<T>(n, seed_for<T>(k));
      // Diagnostic: CUB_BENCH_VALUE_BITS=i32|f32 takes the 4-byte values'
      // bits from that type's random data (the digest then differs from
      // the bench's where the types differ, so run cub_bench alone).
      if (const char* vb = std::getenv("CUB_BENCH_VALUE_BITS"); vb && sizeof(T) == 4) {
        if (std::string(vb) == "f32") {
          std::vector<float> f = random_data<float>(n, seed_for<float>(k));
          std::memcpy(s.vals.data(), f.data(), n * 4);
        } else {
          std::vector<int32_t> f = random_data<int32_t>(n, seed_for<int32_t>(k));
          std::memcpy(s.vals.data(), f.data(), n * 4);
        }
      }
      break;
    case Kind::Segments:
      s.vals = random_data<T>(n, seed_for<T>(k));
      s.offsets = segment_offsets(d.param, d.random, n, seed);
      break;
  }
  return s;
}

// The arrays a case reads, in data.rs's order (`reads`), for its digest.
template <class T>
uint64_t data_digest(const DataSpec& d, const DataSet<T>& s) {
  std::vector<uint64_t> parts;
  switch (d.prim) {
    case Prim::SelectIf:
    case Prim::Partition:
    case Prim::PartitionThreeWay: parts = {digest(s.vals)}; break;
    case Prim::SelectFlagged: parts = {digest(s.vals), digest_bits(s.flags)}; break;
    case Prim::Unique:
    case Prim::RunLengthEncode:
    case Prim::NonTrivialRuns: parts = {digest(s.runs)}; break;
    case Prim::UniqueByKey:
    case Prim::ReduceByKey:
    case Prim::InclusiveScanByKey:
    case Prim::ExclusiveScanByKey: parts = {digest_bits(s.keys), digest(s.vals)}; break;
    case Prim::SegmentedReduce:
    case Prim::SegmentedArgMin: parts = {digest(s.vals), digest_bits(s.offsets)}; break;
  }
  uint64_t h = 0;
  for (size_t j = 0; j < parts.size(); ++j) h += parts[j] * (2 * uint64_t(j) + 1);
  return h;
}

template <class T>
struct LessThan {
  T t;
  __host__ __device__ bool operator()(const T& x) const { return x < t; }
};

// Device copies of the arrays a case reads, and its outputs.
template <class T>
struct DataDev {
  std::vector<DevMem> vals, flags, keys, runs, offsets;
};

template <class X>
std::vector<DevMem> upload_vec(const std::vector<X>& v, size_t copies) {
  return v.empty() ? std::vector<DevMem>{} : upload(v, copies);
}

template <class X>
std::vector<X> fetch(const void* p, size_t len) {
  std::vector<X> v(len);
  if (len) CK(cudaMemcpy(v.data(), p, len * sizeof(X), cudaMemcpyDeviceToHost));
  return v;
}

template <class X>
uint64_t bits_of(X x) {
  if constexpr (std::is_same_v<X, uint64_t> || std::is_same_v<X, int64_t> || std::is_same_v<X, int> ||
                std::is_same_v<X, uint8_t>) {
    return uint64_t(x);
  } else {
    return Elem<X>::bits(x);
  }
}

// "" when got[0..len) equals want bit for bit.
template <class X>
std::string same(const char* what, const std::vector<X>& got, const std::vector<X>& want) {
  if (got.size() != want.size()) {
    return std::string(what) + ": " + std::to_string(got.size()) + " elements, want " + std::to_string(want.size());
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (bits_of(got[i]) != bits_of(want[i])) {
      return std::string(what) + "[" + std::to_string(i) + "] has bits " + hex(bits_of(got[i])) + ", want " +
             hex(bits_of(want[i]));
    }
  }
  return "";
}

std::string count_check(const char* what, int64_t got, size_t want) {
  if (got == int64_t(want)) return "";
  return std::string(what) + " is " + std::to_string(got) + ", want " + std::to_string(want);
}

// Runs of equal consecutive elements of x: (start, length).
template <class X>
std::vector<std::pair<size_t, size_t>> runs_of(const std::vector<X>& x) {
  std::vector<std::pair<size_t, size_t>> r;
  for (size_t i = 0; i < x.size(); ++i) {
    if (i == 0 || !(x[i] == x[i - 1])) r.push_back({i, 0});
    r.back().second++;
  }
  return r;
}

// Sum of vals[lo..hi) against `got` (integers: wrapping int32, exactly).
template <class T>
std::string check_range_sum(const std::vector<T>& vals, size_t lo, size_t hi, T got) {
  SumRef s;
  for (size_t i = lo; i < hi; ++i) add_to(s, vals[i]);
  return check_sum<T>(s, hi - lo, got);
}

// One run of the case on input copy c (temp == nullptr: the size query).
template <class T, class N>
cudaError_t data_call(const DataSpec& d, void* temp, size_t& temp_bytes, const DataDev<T>& in, size_t c,
                      void* const* out, int64_t* count, N n, size_t segments, cudaStream_t st) {
  auto ptr = [&](const std::vector<DevMem>& v) { return v.empty() ? nullptr : v[c % v.size()].p; };
  const T* vals = static_cast<const T*>(ptr(in.vals));
  const T* runs = static_cast<const T*>(ptr(in.runs));
  const uint8_t* flags = static_cast<const uint8_t*>(ptr(in.flags));
  const uint64_t* keys = static_cast<const uint64_t*>(ptr(in.keys));
  const uint64_t* offsets = static_cast<const uint64_t*>(ptr(in.offsets));
  T* o0 = static_cast<T*>(out[0]);
  switch (d.prim) {
    case Prim::SelectIf:
      return cub::DeviceSelect::If(temp, temp_bytes, vals, o0, count, n, LessThan<T>{T(d.t1)}, st);
    case Prim::SelectFlagged:
      return cub::DeviceSelect::Flagged(temp, temp_bytes, vals, flags, o0, count, n, st);
    case Prim::Partition:
      return cub::DevicePartition::If(temp, temp_bytes, vals, o0, count, n, LessThan<T>{T(d.t1)}, st);
    case Prim::PartitionThreeWay:
      return cub::DevicePartition::If(temp, temp_bytes, vals, o0, static_cast<T*>(out[1]), static_cast<T*>(out[2]),
                                      count, n, LessThan<T>{T(d.t1)}, LessThan<T>{T(d.t2)}, st);
    case Prim::Unique: return cub::DeviceSelect::Unique(temp, temp_bytes, runs, o0, count, n, st);
    case Prim::UniqueByKey:
      return cub::DeviceSelect::UniqueByKey(temp, temp_bytes, keys, vals, static_cast<uint64_t*>(out[1]), o0, count,
                                            n, st);
    case Prim::RunLengthEncode:
      return cub::DeviceRunLengthEncode::Encode(temp, temp_bytes, runs, o0, static_cast<int*>(out[1]), count, n, st);
    case Prim::NonTrivialRuns:
      return cub::DeviceRunLengthEncode::NonTrivialRuns(temp, temp_bytes, runs, static_cast<int*>(out[1]),
                                                        static_cast<int*>(out[2]), count, n, st);
    case Prim::ReduceByKey:
      return cub::DeviceReduce::ReduceByKey(temp, temp_bytes, keys, static_cast<uint64_t*>(out[1]), vals, o0, count,
                                            ::cuda::std::plus<T>{}, n, st);
    case Prim::InclusiveScanByKey:
      return cub::DeviceScan::InclusiveSumByKey(temp, temp_bytes, keys, vals, o0, n, ::cuda::std::equal_to<>{}, st);
    case Prim::ExclusiveScanByKey:
      return cub::DeviceScan::ExclusiveSumByKey(temp, temp_bytes, keys, vals, o0, n, ::cuda::std::equal_to<>{}, st);
    case Prim::SegmentedReduce:
      return cub::DeviceSegmentedReduce::Sum(temp, temp_bytes, vals, o0, int(segments), offsets, offsets + 1, st);
    case Prim::SegmentedArgMin:
      return cub::DeviceSegmentedReduce::ArgMin(temp, temp_bytes, vals,
                                                static_cast<cub::KeyValuePair<int, T>*>(out[1]), int(segments),
                                                offsets, offsets + 1, st);
  }
  return cudaErrorInvalidValue;
}

template <class T>
void data_run(const Options& o, const DataSpec& d, void* temp, size_t& temp_bytes, const DataDev<T>& in, size_t c,
              void* const* out, int64_t* count, size_t n, size_t segments, cudaStream_t st) {
  cudaError_t e = narrow(o, n) ? data_call<T, int>(d, temp, temp_bytes, in, c, out, count, int(n), segments, st)
                               : data_call<T, int64_t>(d, temp, temp_bytes, in, c, out, count, int64_t(n), segments, st);
  check_cuda(e, d.name.c_str());
}

// The last run's outputs against the CPU reference: "" when right.
template <class T>
std::string data_check(const DataSpec& d, const DataSet<T>& s, void* const* out, const void* count_mem, size_t n) {
  int64_t count[2] = {0, 0};
  CK(cudaMemcpy(count, count_mem, sizeof count, cudaMemcpyDeviceToHost));
  std::string e;
  switch (d.prim) {
    case Prim::SelectIf:
    case Prim::SelectFlagged: {
      std::vector<T> want;
      for (size_t i = 0; i < n; ++i) {
        if (d.prim == Prim::SelectIf ? s.vals[i] < T(d.t1) : s.flags[i] != 0) want.push_back(s.vals[i]);
      }
      if (!(e = count_check("count", count[0], want.size())).empty()) return e;
      return same("output", fetch<T>(out[0], want.size()), want);
    }
    case Prim::Partition: {
      std::vector<T> want, rejected;
      for (size_t i = 0; i < n; ++i) (s.vals[i] < T(d.t1) ? want : rejected).push_back(s.vals[i]);
      if (!(e = count_check("count", count[0], want.size())).empty()) return e;
      want.insert(want.end(), rejected.rbegin(), rejected.rend());
      return same("output", fetch<T>(out[0], n), want);
    }
    case Prim::PartitionThreeWay: {
      std::vector<T> w[3];
      for (size_t i = 0; i < n; ++i) w[s.vals[i] < T(d.t1) ? 0 : s.vals[i] < T(d.t2) ? 1 : 2].push_back(s.vals[i]);
      if (!(e = count_check("first count", count[0], w[0].size())).empty()) return e;
      if (!(e = count_check("second count", count[1], w[1].size())).empty()) return e;
      const char* names[3] = {"first", "second", "rest"};
      for (int j = 0; j < 3; ++j) {
        if (!(e = same(names[j], fetch<T>(out[j], w[j].size()), w[j])).empty()) return e;
      }
      return "";
    }
    case Prim::Unique:
    case Prim::RunLengthEncode:
    case Prim::NonTrivialRuns: {
      auto r = runs_of(s.runs);
      std::vector<T> uniq;
      std::vector<int> a, b;
      for (auto [at, len] : r) {
        if (d.prim == Prim::NonTrivialRuns) {
          if (len > 1) a.push_back(int(at)), b.push_back(int(len));
        } else {
          uniq.push_back(s.runs[at]);
          b.push_back(int(len));
        }
      }
      if (d.prim == Prim::NonTrivialRuns) {
        if (!(e = count_check("runs", count[0], a.size())).empty()) return e;
        if (!(e = same("offsets", fetch<int>(out[1], a.size()), a)).empty()) return e;
        return same("lengths", fetch<int>(out[2], b.size()), b);
      }
      if (!(e = count_check("runs", count[0], uniq.size())).empty()) return e;
      if (!(e = same("unique", fetch<T>(out[0], uniq.size()), uniq)).empty()) return e;
      if (d.prim == Prim::RunLengthEncode) return same("counts", fetch<int>(out[1], b.size()), b);
      return "";
    }
    case Prim::UniqueByKey:
    case Prim::ReduceByKey: {
      auto r = runs_of(s.keys);
      std::vector<uint64_t> keys;
      std::vector<T> heads;
      for (auto [at, len] : r) keys.push_back(s.keys[at]), heads.push_back(s.vals[at]);
      if (!(e = count_check("runs", count[0], keys.size())).empty()) return e;
      if (!(e = same("keys", fetch<uint64_t>(out[1], keys.size()), keys)).empty()) return e;
      std::vector<T> got = fetch<T>(out[0], keys.size());
      if (d.prim == Prim::UniqueByKey) return same("values", got, heads);
      for (size_t j = 0; j < r.size(); ++j) {
        e = check_range_sum(s.vals, r[j].first, r[j].first + r[j].second, got[j]);
        if (!e.empty()) return "aggregate " + std::to_string(j) + ": " + e;
      }
      return "";
    }
    case Prim::InclusiveScanByKey:
    case Prim::ExclusiveScanByKey: {
      std::vector<T> got = fetch<T>(out[0], n);
      const bool inclusive = d.prim == Prim::InclusiveScanByKey;
      SumRef acc;
      size_t len = 0;
      for (size_t i = 0; i < n; ++i) {
        if (i == 0 || s.keys[i] != s.keys[i - 1]) acc = SumRef{}, len = 0;
        if (inclusive) add_to(acc, s.vals[i]), ++len;
        e = verdict<T>(got[i], T(int32_t(acc.exact)), acc.f.value(), float_bound(len, Elem<T>::eps, acc.f.abs));
        if (!e.empty()) return "element " + std::to_string(i) + ": " + e;
        if (!inclusive) add_to(acc, s.vals[i]), ++len;
      }
      return "";
    }
    case Prim::SegmentedReduce:
    case Prim::SegmentedArgMin: {
      const size_t segs = s.offsets.size() - 1;
      if (d.prim == Prim::SegmentedReduce) {
        std::vector<T> got = fetch<T>(out[0], segs);
        for (size_t j = 0; j < segs; ++j) {
          e = check_range_sum(s.vals, size_t(s.offsets[j]), size_t(s.offsets[j + 1]), got[j]);
          if (!e.empty()) return "segment " + std::to_string(j) + ": " + e;
        }
        return "";
      }
      // Any index of the minimum is accepted (ties), relative to the segment's start.
      auto got = fetch<cub::KeyValuePair<int, T>>(out[1], segs);
      for (size_t j = 0; j < segs; ++j) {
        size_t lo = size_t(s.offsets[j]), hi = size_t(s.offsets[j + 1]);
        // An empty segment (randL): CUB documents the pair {1, largest T}.
        if (lo == hi) {
          if (got[j].key != 1) return "segment " + std::to_string(j) + ": empty, key " + std::to_string(got[j].key);
          continue;
        }
        T m = s.vals[lo];
        for (size_t i = lo; i < hi; ++i) m = s.vals[i] < m ? s.vals[i] : m;
        size_t at = lo + size_t(got[j].key);
        if (got[j].key < 0 || at >= hi || bits_of(s.vals[at]) != bits_of(m) || bits_of(got[j].value) != bits_of(m)) {
          return "segment " + std::to_string(j) + ": argmin (" + std::to_string(got[j].key) + ", " +
                 std::to_string(double(got[j].value)) + "), want a position of " + std::to_string(double(m));
        }
      }
      return "";
    }
  }
  return "unknown case";
}

// One case with its own inputs at 2^k elements of T.
template <class T>
Result measure_data(Gpu& gpu, const Options& o, const DataSpec& d, const DataSet<T>& s, unsigned k) {
  const size_t n = size_t(1) << k;
  Result r{Case::Data, Elem<T>::ty, k, n, Timing{}, "", ""};
  r.name = d.name;
  r.t.warmup = o.warmup;
  r.wide = !narrow(o, n);
  try {
    r.digest = hex(data_digest(d, s));
    const size_t copies = rotation(o, s.bytes());
    r.t.copies = copies;
    DataDev<T> in;
    // Only the arrays the case reads go to the device.
    const bool runs = d.prim == Prim::Unique || d.prim == Prim::RunLengthEncode || d.prim == Prim::NonTrivialRuns;
    if (!runs) in.vals = upload_vec(s.vals, copies);
    if (runs) in.runs = upload_vec(s.runs, copies);
    in.flags = upload_vec(s.flags, copies);
    if (d.kind == Kind::Runs && !runs) in.keys = upload_vec(s.keys, copies);
    in.offsets = upload_vec(s.offsets, copies);
    const size_t segments = s.offsets.empty() ? 0 : s.offsets.size() - 1;
    // Outputs (poisoned): T[n] (one per segment for segmented cases), then
    // u64[n] or int[n] (one KeyValuePair per segment), then T[n].
    const size_t out_bytes[3] = {
        (d.kind == Kind::Segments ? std::max<size_t>(segments, 1) : n) * sizeof(T),
        d.kind == Kind::Segments ? std::max<size_t>(segments, 1) * sizeof(cub::KeyValuePair<int, T>)
                                 : n * sizeof(uint64_t),
        d.prim == Prim::PartitionThreeWay || d.prim == Prim::NonTrivialRuns ? n * sizeof(T) : 0};
    std::vector<DevMem> outs;
    for (size_t b : out_bytes) {
      outs.emplace_back(b);
      if (b) CK(cudaMemsetAsync(outs.back().p, 0xFF, b, gpu.stream));
    }
    DevMem count(2 * sizeof(int64_t));
    CK(cudaMemsetAsync(count.p, 0xFF, 2 * sizeof(int64_t), gpu.stream));
    void* out[3] = {outs[0].p, outs[1].p, outs[2].p};
    int64_t* d_count = static_cast<int64_t*>(count.p);
    data_run<T>(o, d, nullptr, r.temp_bytes, in, 0, out, d_count, n, segments, gpu.stream);
    DevMem temp(r.temp_bytes);
    size_t temp_bytes = r.temp_bytes;
    r.t = time_runs(gpu, o, copies, Clock::Held, [&](size_t i) {
      data_run<T>(o, d, temp.p, temp_bytes, in, i % copies, out, d_count, n, segments, gpu.stream);
    });
    CK(cudaStreamSynchronize(gpu.stream));
    std::string e = data_check<T>(d, s, out, count.p, n);
    r.check = e.empty() ? "ok" : "FAILED: " + e;
  } catch (const std::exception& ex) {
    r.check = std::string("ERROR: ") + ex.what();
  }
  return r;
}

// Every case with its own inputs at every size; a data set is made once
// per size for the cases that share it (same kind and parameter).
template <class T>
void run_data_type(Gpu& gpu, const Options& o, std::vector<Result>& out) {
  std::vector<DataSpec> specs;
  for (const auto& name : o.data_cases) {
    DataSpec d;
    parse_data_case(name, d);
    specs.push_back(d);
  }
  for (unsigned k : o.sizes) {
    std::vector<bool> done(specs.size(), false);
    for (size_t i = 0; i < specs.size(); ++i) {
      if (done[i]) continue;
      DataSet<T> s;
      std::string error;
      try {
        s = make_data<T>(specs[i], k);
      } catch (const std::exception& ex) {
        error = ex.what();
      }
      for (size_t j = i; j < specs.size(); ++j) {
        if (done[j] || specs[j].kind != specs[i].kind || specs[j].param != specs[i].param ||
            specs[j].random != specs[i].random)
          continue;
        done[j] = true;
        Result r;
        if (error.empty()) {
          r = measure_data<T>(gpu, o, specs[j], s, k);
        } else {
          r = Result{Case::Data, Elem<T>::ty, k, size_t(1) << k, Timing{}, "ERROR: making the inputs: " + error, ""};
          r.name = specs[j].name;
        }
        progress(r);
        out.push_back(r);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      o += '\\';
      o += char(ch);
    } else if (ch < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", ch);
      o += b;
    } else {
      o += char(ch);
    }
  }
  return o + "\"";
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

std::string result_json(const Result& r) {
  std::string s = "    {";
  s += "\"case\": " + json_str(r.label());
  s += ", \"type\": " + json_str(ty_name(r.ty));
  s += ", \"log2_n\": " + std::to_string(r.log2_n);
  s += ", \"n\": " + std::to_string(r.n);
  s += ", \"median_us\": " + json_num(r.t.median);
  s += ", \"min_us\": " + json_num(r.t.min);
  s += ", \"p90_us\": " + json_num(r.t.p90);
  s += ", \"mean_us\": " + json_num(r.t.mean);
  s += ", \"runs\": " + std::to_string(r.t.runs);
  s += ", \"warmup\": " + std::to_string(r.t.warmup);
  s += ", \"rotating_inputs\": " + std::to_string(r.t.copies);
  s += std::string(", \"held\": ") + (r.t.held ? "true" : "false");
  s += ", \"clock\": " + json_str(r.c == Case::Readback ? "host steady_clock" : "CUDA events");
  s += ", \"num_items\": " + json_str(r.wide ? "int64" : "int32");
  s += ", \"temp_bytes\": " + std::to_string(r.temp_bytes);
  s += ", \"input_digest\": " + json_str(r.digest);
  s += ", \"check\": " + json_str(r.check);
  return s + "}";
}

std::string cccl_version() {
#if defined(CCCL_MAJOR_VERSION) && defined(CCCL_MINOR_VERSION) && defined(CCCL_PATCH_VERSION)
  return std::to_string(CCCL_MAJOR_VERSION) + "." + std::to_string(CCCL_MINOR_VERSION) + "." +
         std::to_string(CCCL_PATCH_VERSION);
#else
  return std::to_string(CUB_VERSION / 100000) + "." + std::to_string(CUB_VERSION / 100 % 1000) + "." +
         std::to_string(CUB_VERSION % 100) + " (CUB's version; CCCL_*_VERSION not defined)";
#endif
}

template <class T>
void digests(const Options& o, std::string& s, bool& first) {
  for (unsigned k : o.sizes) {
    std::vector<T> data = random_data<T>(size_t(1) << k, seed_for<T>(k));
    s += first ? "\n" : ",\n";
    first = false;
    s += "    {\"type\": " + json_str(ty_name(Elem<T>::ty)) + ", \"log2_n\": " + std::to_string(k) +
         ", \"n\": " + std::to_string(size_t(1) << k) + ", \"input_digest\": " + json_str(hex(digest(data))) + "}";
  }
}

// The input digests of the cases with their own inputs (--data-digest).
template <class T>
void data_digests(const Options& o, std::string& s, bool& first) {
  for (unsigned k : o.sizes) {
    for (const auto& name : o.data_cases) {
      DataSpec d;
      parse_data_case(name, d);
      s += first ? "\n" : ",\n";
      first = false;
      s += "    {\"case\": " + json_str(name) + ", \"type\": " + json_str(ty_name(Elem<T>::ty)) +
           ", \"log2_n\": " + std::to_string(k) + ", \"n\": " + std::to_string(size_t(1) << k) +
           ", \"input_digest\": " + json_str(hex(data_digest(d, make_data<T>(d, k)))) + "}";
    }
  }
}

int real_main(int argc, char** argv) {
  Options o;
  try {
    o = parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cub_bench: %s\n%s", e.what(), USAGE);
    return 2;
  }
  if (o.digest_only) {
    std::string s = "{\n  \"results\": [";
    bool first = true;
    for (Ty t : o.types) {
      if (t == Ty::I32) digests<int32_t>(o, s, first);
      if (t == Ty::F32) digests<float>(o, s, first);
      if (t == Ty::F64) digests<double>(o, s, first);
    }
    for (Ty t : o.types) {
      if (t == Ty::I32) data_digests<int32_t>(o, s, first);
      if (t == Ty::F32) data_digests<float>(o, s, first);
      if (t == Ty::F64) data_digests<double>(o, s, first);
    }
    std::printf("%s\n  ]\n}\n", s.c_str());
    return 0;
  }

  Gpu gpu;
  int runtime = 0, driver = 0;
  CK(cudaRuntimeGetVersion(&runtime));
  CK(cudaDriverGetVersion(&driver));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::fprintf(stderr, "cub_bench: CUB %d (CCCL %s), CUDA runtime %d, driver %d, %s (sm_%d%d, %d SMs)\n", CUB_VERSION,
               cccl_version().c_str(), runtime, driver, prop.name, prop.major, prop.minor, prop.multiProcessorCount);

  std::vector<Result> results;
  for (Ty t : o.types) {
    if (t == Ty::I32) run_type<int32_t>(gpu, o, results);
    if (t == Ty::F32) run_type<float>(gpu, o, results);
    if (t == Ty::F64) run_type<double>(gpu, o, results);
  }
  for (Ty t : o.types) {
    if (t == Ty::I32) run_data_type<int32_t>(gpu, o, results);
    if (t == Ty::F32) run_data_type<float>(gpu, o, results);
    if (t == Ty::F64) run_data_type<double>(gpu, o, results);
  }
  if (std::find(o.cases.begin(), o.cases.end(), Case::Readback) != o.cases.end()) {
    for (Ty t : o.types) {
      Result r = t == Ty::I32   ? measure_readback<int32_t>(gpu, o, o.readback_log2)
                 : t == Ty::F32 ? measure_readback<float>(gpu, o, o.readback_log2)
                                : measure_readback<double>(gpu, o, o.readback_log2);
      progress(r);
      results.push_back(r);
    }
  }

  std::string s = "{\n";
  s += "  \"program\": \"cub_bench\",\n";
  s += "  \"cub_version\": " + std::to_string(CUB_VERSION) + ",\n";
  s += "  \"cccl_version\": " + json_str(cccl_version()) + ",\n";
  s += "  \"cuda_runtime\": " + std::to_string(runtime) + ",\n";
  s += "  \"driver\": " + std::to_string(driver) + ",\n";
  s += "  \"device\": " + json_str(prop.name) + ",\n";
  s += "  \"compute_capability\": " + json_str(std::to_string(prop.major) + "." + std::to_string(prop.minor)) + ",\n";
  s += "  \"multiprocessors\": " + std::to_string(prop.multiProcessorCount) + ",\n";
  s += "  \"runs\": " + std::to_string(o.runs) + ",\n";
  s += "  \"warmup\": " + std::to_string(o.warmup) + ",\n";
  s += "  \"budget_s\": " + json_num(o.budget_s) + ",\n";
  s += "  \"min_runs\": " + std::to_string(o.min_runs) + ",\n";
  s += "  \"rotate_bytes\": " + std::to_string(o.rotate_bytes) + ",\n";
  s += "  \"hold_timeout_ms\": " + std::to_string(HOLD_TIMEOUT_NS / 1000000) + ",\n";
  s += "  \"results\": [";
  for (size_t i = 0; i < results.size(); ++i) s += (i ? ",\n" : "\n") + result_json(results[i]);
  s += "\n  ]\n}\n";
  std::fputs(s.c_str(), stdout);
  std::fflush(stdout);
  bool ok = std::all_of(results.begin(), results.end(), [](const Result& r) { return r.check == "ok"; });
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return real_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cub_bench: error: %s\n", e.what());
    return 1;
  }
}
