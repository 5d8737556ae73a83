#!/bin/bash
# One call's worth of H200 measurements that issue 11 still lacks, for the
# device machine (no Rust there). Prepare the bundle on the development
# machine first (from the repository root):
#
#   cargo +nightly-2026-05-20 bench -p gpuprim --bench bench --no-run
#   mkdir -p .device && xz -9 -T2 -c target/release/deps/bench-<hash> > .device/bench-M.xz
#   nvcc -O3 -std=c++17 -arch=sm_90 -I<prefix>/include/cccl -o .device/cub_bench host/benches/cub/cub_bench.cu
#   nvcc -O3 -std=c++17 -arch=sm_90 -o .device/plb docs/tuning/proto/pipelined_lookback.cu
#   nvcc -O3 -std=c++17 -arch=sm_90a -o .device/tma docs/tuning/proto/tma_stage.cu   (optional)
#   cp docs/tuning/proto/h200_status.sh .device/
#
# (nvcc and CCCL 3.0 from the nvidia-cuda-nvcc / -crt / -nvvm / -runtime /
# -cccl 13.0 wheels work on the development machine: sm_90 binaries run on
# the H100 and the H200 alike, and building CUB's twins there saves about
# two minutes of device time a call.) Then, on the device, carrying
# .device: `bash .device/h200_status.sh select` (about 250 s), then
# `bash .device/h200_status.sh by_key` (about 300 s).
#
# Off an H200 only the prototype runs, so a call that lands on an H100
# still returns something.
cd "$(dirname "$0")"
GROUP=${1:-select}
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "$GPU" | tee "$OUT/gpu.txt"
if [[ "$GPU" == *H200* ]]; then
  [ -x bench-M ] || { xz -dc bench-M.xz > bench-M && chmod +x bench-M; }
  export GPUPRIM_REQUIRE_GPU=1
  timeout 400 ./bench-M "$GROUP" --sizes 24,28 --types i32 --runs 10 --cub ./cub_bench --out "$OUT/$GROUP" > "$OUT/$GROUP.log" 2>&1
  echo "$GROUP rc $?"
  grep -E '2\^28' "$OUT/$GROUP.log" | tail -n 40
fi
if [ "$GROUP" = select ]; then
  timeout 90 ./plb > "$OUT/plb.log" 2>&1; echo "plb rc $?"; cat "$OUT/plb.log"
  # The bulk-copy staging prototype (tma_stage.cu, built with -arch=sm_90a), if carried.
  if [[ "$GPU" == *H200* ]] && [ -x tma ]; then timeout 60 ./tma > "$OUT/tma.log" 2>&1; cat "$OUT/tma.log"; fi
fi
