#!/usr/bin/env bash
# gpuprim GPU bundle, built by `cargo xtask gpu-bundle` (@BUILT@).
#
# Run from the repository root on a machine with the NVIDIA driver; no Rust
# toolchain is needed. The source tree must be present at the root (nextest
# remaps the test archive onto it); the rest of target/ need not be.
#
#   ./target/gpu-bundle/run.sh [tests|consumer|sanitize|bench|all] [OUTDIR] [[--] EXTRA...]
#
#   tests     run the test archive with cargo-nextest, GPUPRIM_REQUIRE_GPU=1
#             (CUDA tests fail instead of skipping when CUDA is unusable), then
#             print how many tests ran or were skipped per backend.
#             EXTRA goes to nextest (e.g. a test-name filter).
#   consumer  ./consumer, ./user-ops, ./welford, ./count-above, ./fibonacci
#             (examples/consumer: gpuprim used as a dependency, built with
#             the MSRV, checks sums, scans, views and threads; the others:
#             operators, maps and types from a kernels crate of their own,
#             loaded with Context::load_kernels; welford also times its pass
#             beside sum_into), each against CPU references; fails unless
#             all ran on CUDA.
#   sanitize  compute-sanitizer memcheck, racecheck and synccheck, each
#             separately, on ./sanitize if bundled, else on ./demo --small.
#   bench     ./bench all --out OUTDIR --cub CUB_BENCH EXTRA..., where
#             CUB_BENCH is host/benches/cub/cub_bench.cu built here with nvcc
#             (PATH, else /usr/local/cuda/bin; log: OUTDIR/cub_build.log) so
#             that the bench times CUB's twins too (x CUB); without nvcc, or
#             if the build fails, the bench runs without CUB.
#             EXTRA after `all` picks groups and sizes, e.g.
#             `run.sh bench OUT -- select,by_key,segmented --sizes 24,28`
#             (the bench passes every case it runs that has a CUB twin,
#             the new primitives' included, to the CUB program).
#   all       tests, consumer, sanitize, bench (the default); EXTRA goes
#             to bench.
#
# OUTDIR (default: target/gpu-results) receives every log, backends.log and
# the benchmark's JSON/SVG files.
#
# The bundle: run.sh, tests.tar.zst (nextest's archive of the test
# binaries), and programs.tar.xz: cargo-nextest, bench, demo, sanitize,
# consumer and the other examples (one archive, so that the kernels every
# gpuprim program embeds are stored once). run.sh unpacks it into a
# temporary directory: `tar -xJf programs.tar.xz bench` to run one by
# hand.

set -uo pipefail

BUNDLE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BUNDLE/../.." && pwd)"

usage() {
  sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

MODE=all
case "${1:-}" in
  tests | consumer | sanitize | bench | all) MODE=$1; shift ;;
  -h | --help | help) usage; exit 0 ;;
  "" | --) ;;
  *) echo "run.sh: unknown mode '$1'" >&2; usage >&2; exit 2 ;;
esac
OUT="$ROOT/target/gpu-results"
if [ $# -gt 0 ] && [ "$1" != "--" ]; then OUT=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi
EXTRA=("$@")
mkdir -p "$OUT" || { echo "run.sh: cannot create $OUT" >&2; exit 1; }
OUT="$(cd "$OUT" && pwd)"

if [ ! -f "$ROOT/Cargo.toml" ]; then
  echo "run.sh: no Cargo.toml at $ROOT; the bundle must sit at <repo root>/target/gpu-bundle" >&2
  exit 1
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpuprim-bundle.XXXXXX")" || { echo "run.sh: mktemp failed" >&2; exit 1; }
trap 'rm -rf "$WORK"' EXIT

# Path of a bundled program: NAME as shipped, or NAME from programs.tar.xz
# (unpacked into $WORK on first use).
program() { # name
  local name=$1
  if [ -x "$BUNDLE/$name" ]; then echo "$BUNDLE/$name"; return 0; fi
  if [ -x "$WORK/$name" ]; then echo "$WORK/$name"; return 0; fi
  [ -f "$BUNDLE/programs.tar.xz" ] || return 1
  if [ ! -f "$WORK/.unpacked" ]; then
    if ! tar -xJf "$BUNDLE/programs.tar.xz" -C "$WORK" 2>/dev/null \
      && ! python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$BUNDLE/programs.tar.xz" "$WORK"; then
      echo "run.sh: cannot unpack $BUNDLE/programs.tar.xz (needs tar with xz, or python3)" >&2
      return 1
    fi
    touch "$WORK/.unpacked"
  fi
  [ -x "$WORK/$name" ] && echo "$WORK/$name"
}

verdict() { # name exit-code
  if [ "$2" -eq 0 ]; then echo "PASS"; else echo "FAIL(exit $2)"; fi
}

# Per-backend summary of a backends.log (lines `ran <backend> <test>` and
# `skip <backend> <test> <reason...>`); same format as `cargo xtask test`.
summarize() { # log
  LC_ALL=C awk -v logname="$1" '
    function add(b) { if (!(b in seen)) { seen[b] = 1; names[++nb] = b } }
    NF == 0 { next }
    NF < 3 || ($1 != "ran" && $1 != "skip") { bad++; next }
    $1 == "ran" { add($2); k = $2 SUBSEP $3; if (!(k in ran)) { ran[k] = 1; nran[$2]++ }; next }
    {
      add($2); k = $2 SUBSEP $3
      if (!(k in skip)) {
        r = ""; for (i = 4; i <= NF; i++) r = r (i > 4 ? " " : "") $i
        if (r == "") r = "no reason given"
        skip[k] = r
      }
    }
    END {
      for (k in skip) {
        if (k in ran) continue
        split(k, p, SUBSEP); b = p[1]; nsk[b]++
        rk = b SUBSEP skip[k]
        if (!(rk in rc)) { nr[b]++; rl[b, nr[b]] = skip[k] }
        rc[rk]++
      }
      print "backends (from " logname "):"
      if (nb == 0) print "  no backend lines logged (did the tests write to GPUPRIM_TEST_LOG?)"
      # order: emu, cuda, then the rest by name
      n = 0
      for (i = 1; i <= nb; i++) if (names[i] == "emu") ord[++n] = "emu"
      for (i = 1; i <= nb; i++) if (names[i] == "cuda") ord[++n] = "cuda"
      m = n
      for (i = 1; i <= nb; i++) if (names[i] != "emu" && names[i] != "cuda") ord[++n] = names[i]
      for (i = m + 2; i <= n; i++) { v = ord[i]; j = i - 1; while (j > m && ord[j] > v) { ord[j + 1] = ord[j]; j-- }; ord[j + 1] = v }
      for (i = 1; i <= n; i++) {
        b = ord[i]
        line = "  " b ": " (nran[b] + 0) " ran, " (nsk[b] + 0) " skipped"
        if (nr[b] == 1) line = line " (" rl[b, 1] ")"
        else if (nr[b] > 1) {
          for (x = 2; x <= nr[b]; x++) { v = rl[b, x]; y = x - 1; while (y >= 1 && rl[b, y] > v) { rl[b, y + 1] = rl[b, y]; y-- }; rl[b, y + 1] = v }
          s = ""
          for (x = 1; x <= nr[b]; x++) s = s (x > 1 ? "; " : "") rc[b SUBSEP rl[b, x]] "x " rl[b, x]
          line = line " (" s ")"
        }
        print line
      }
      if (bad > 0) print "  (" bad " unrecognised lines in the log)"
    }' "$1"
}

gpu_info() {
  if command -v nvidia-smi > /dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  else
    echo "gpu: nvidia-smi not found"
  fi
}

run_tests() {
  local log="$OUT/backends.log" rc nextest
  : > "$log"
  echo "== tests (output: $OUT/tests.txt)"
  if ! nextest=$(program cargo-nextest); then
    echo "tests: cargo-nextest is not in the bundle"
    return 1
  fi
  (
    cd "$ROOT" &&
      GPUPRIM_REQUIRE_GPU=1 GPUPRIM_TEST_LOG="$log" \
        "$nextest" nextest run \
        --archive-file "$BUNDLE/tests.tar.zst" \
        --workspace-remap "$ROOT" \
        --no-fail-fast "$@"
  ) 2>&1 | tee "$OUT/tests.txt"
  rc=${PIPESTATUS[0]}
  summarize "$log" | tee -a "$OUT/tests.txt"
  echo "tests: $(verdict tests "$rc")"
  return "$rc"
}

# The examples outside the workspace (gpuprim as a dependency: consumer;
# kernels crates of their own: user-ops, welford, count-above, fibonacci)
# must pick CUDA by themselves here: GPUPRIM_REQUIRE_GPU=1 makes them fail
# on the emulator,
# and each one's `<name>: backend:` line must say cuda.
run_consumer() {
  local rc=0 name log prog one
  for name in consumer user-ops welford count-above fibonacci; do
    log="$OUT/$name.txt"
    echo "== $name (output: $log)"
    if ! prog=$(program "$name"); then
      echo "$name: ./$name is not in the bundle"
      rc=1
      continue
    fi
    (
      cd "$ROOT" && GPUPRIM_REQUIRE_GPU=1 "$prog"
    ) 2>&1 | tee "$log"
    one=${PIPESTATUS[0]}
    if [ "$one" -eq 0 ] && ! grep -qx "$name: backend: cuda" "$log"; then
      echo "$name: it did not report the CUDA backend on this GPU machine"
      one=1
    fi
    echo "$name: $(verdict "$name" "$one")"
    [ "$one" -eq 0 ] || rc=$one
  done
  return "$rc"
}

find_sanitizer() {
  local d
  if command -v compute-sanitizer 2> /dev/null; then return 0; fi
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin /opt/cuda/bin \
    /usr/local/cuda/compute-sanitizer /opt/nvidia/compute-sanitizer; do
    if [ -x "$d/compute-sanitizer" ]; then echo "$d/compute-sanitizer"; return 0; fi
  done
  return 1
}

run_sanitize() {
  local san tool log trc summary prog rc=0
  local -a target
  echo "== sanitize"
  if ! san=$(find_sanitizer); then
    echo "sanitize: compute-sanitizer not found (PATH, /usr/local/cuda*/bin)"
    return 1
  fi
  if prog=$(program sanitize); then
    target=("$prog")
  elif prog=$(program demo); then
    target=("$prog" --small)
  else
    echo "sanitize: neither ./sanitize nor ./demo is in the bundle"
    return 1
  fi
  for tool in memcheck racecheck synccheck; do
    log="$OUT/sanitize-$tool.txt"
    (
      cd "$ROOT" &&
        GPUPRIM_REQUIRE_GPU=1 "$san" --tool "$tool" --error-exitcode 1 "${target[@]}"
    ) > "$log" 2>&1
    trc=$?
    summary=$(grep -E 'SUMMARY:' "$log" | tail -n 1 | sed -E 's/^=+ *//')
    if [ "$trc" -eq 0 ]; then
      echo "sanitize $tool: PASS (${summary:-no summary line}; log: $log)"
    else
      echo "sanitize $tool: FAIL (exit $trc; ${summary:-no summary line}; log: $log)"
      rc=1
    fi
  done
  return "$rc"
}

find_nvcc() {
  if command -v nvcc 2> /dev/null; then return 0; fi
  if [ -x /usr/local/cuda/bin/nvcc ]; then echo /usr/local/cuda/bin/nvcc; return 0; fi
  return 1
}

# Build the CUB comparison program into $WORK/cub_bench, saying what
# happened; when it cannot be built the bench runs without CUB.
build_cub() {
  local src="$ROOT/host/benches/cub/cub_bench.cu" log="$OUT/cub_build.log" nvcc
  local -a cmd
  : > "$log"
  if [ ! -f "$src" ]; then
    echo "bench: $src not found; running without CUB" | tee -a "$log"
    return 1
  fi
  if ! nvcc=$(find_nvcc); then
    echo "bench: nvcc not found (PATH, /usr/local/cuda/bin); running without CUB" | tee -a "$log"
    return 1
  fi
  cmd=("$nvcc" -O3 -std=c++17 -arch=native -o "$WORK/cub_bench" "$src")
  { "$nvcc" --version; echo "+ ${cmd[*]}"; } >> "$log" 2>&1
  echo "bench: building CUB's twins with $nvcc (log: $log)"
  if ! "${cmd[@]}" >> "$log" 2>&1 || [ ! -x "$WORK/cub_bench" ]; then
    rm -f "$WORK/cub_bench"
    echo "bench: building $src failed (last lines of $log below); running without CUB"
    tail -n 5 "$log" | sed 's/^/  /'
    return 1
  fi
  echo "bench: built $WORK/cub_bench"
}

run_bench() {
  local rc bench
  local -a cub=()
  echo "== bench (output: $OUT/bench.txt)"
  if ! bench=$(program bench); then
    echo "bench: ./bench is not in the bundle"
    return 1
  fi
  build_cub 2>&1 | tee "$OUT/bench.txt"
  if [ -x "$WORK/cub_bench" ]; then cub=(--cub "$WORK/cub_bench"); fi
  (
    cd "$ROOT" &&
      GPUPRIM_REQUIRE_GPU=1 "$bench" all --out "$OUT" ${cub[@]+"${cub[@]}"} "$@"
  ) 2>&1 | tee -a "$OUT/bench.txt"
  rc=${PIPESTATUS[0]}
  echo "bench: $(verdict bench "$rc")"
  return "$rc"
}

echo "run.sh $MODE: bundle $BUNDLE, repo $ROOT, output $OUT"
gpu_info | tee "$OUT/gpu.txt"

case "$MODE" in
  tests) run_tests ${EXTRA[@]+"${EXTRA[@]}"} ;;
  consumer) run_consumer ;;
  sanitize) run_sanitize ;;
  bench) run_bench ${EXTRA[@]+"${EXTRA[@]}"} ;;
  all)
    run_tests; t=$?
    run_consumer; c=$?
    run_sanitize; s=$?
    run_bench ${EXTRA[@]+"${EXTRA[@]}"}; b=$?
    echo "run.sh all: tests $(verdict tests $t), consumer $(verdict consumer $c), sanitize $(verdict sanitize $s), bench $(verdict bench $b); output in $OUT"
    [ "$t" -eq 0 ] && [ "$c" -eq 0 ] && [ "$s" -eq 0 ] && [ "$b" -eq 0 ]
    ;;
esac
