#!/usr/bin/env python3
"""CUB as a yardstick: time PyTorch's scan (torch.cumsum, which runs CUB's
DeviceScan) and reduction (torch.sum) next to a device-to-device copy, the
same way `cargo xtask bench` times ours: CUDA events, the median of many
runs, inputs rotated so they do not sit in L2, random data. Like our
`Context::time_held`, each timed call is queued behind GPU work (here
`torch.cuda._sleep`, a spin of about 50 µs), so the events bracket GPU
execution, not the host's launch cost.

Run on the GPU machine (PyTorch installed there): python3 tools/cub_reference.py
Prints one line per measurement; nothing here is part of the library.
"""
import statistics

import torch

ROTATE_BYTES = 256 << 20


def median_us(fn, inputs, runs=100, warmup=5):
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(warmup + runs):
        x = inputs[i % len(inputs)]
        torch.cuda._sleep(100_000)
        start.record()
        fn(x)
        stop.record()
        stop.synchronize()
        if i >= warmup:
            times.append(start.elapsed_time(stop) * 1e3)
    return statistics.median(times)


def rotating(n, dtype):
    size = n * torch.tensor([], dtype=dtype).element_size()
    copies = max(1, -(-ROTATE_BYTES // size))
    copies = min(copies, 8) if size >= (64 << 20) else copies
    if dtype.is_floating_point:
        base = torch.rand(n, device="cuda", dtype=dtype)
    else:
        base = torch.randint(-1000, 1000, (n,), device="cuda", dtype=dtype)
    return [base.clone() for _ in range(copies)]


def main():
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for dtype in (torch.int32, torch.float32, torch.float64):
        for k in (16, 20, 24, 28):
            n = 1 << k
            xs = rotating(n, dtype)
            out = torch.empty_like(xs[0])
            size = xs[0].element_size()
            t_copy = median_us(lambda x: out.copy_(x), xs)
            t_scan = median_us(lambda x: torch.cumsum(x, 0, dtype=dtype, out=out), xs)
            t_sum = median_us(lambda x: torch.sum(x, dtype=dtype), xs)
            copy_gbs = 2 * n * size / t_copy / 1e3
            scan_gbs = 2 * n * size / t_scan / 1e3
            sum_gbs = n * size / t_sum / 1e3
            print(
                f"{str(dtype):14} 2^{k:<2} copy {t_copy:9.2f} us {copy_gbs:8.1f} GB/s | "
                f"cumsum {t_scan:9.2f} us {scan_gbs:8.1f} GB/s {100 * scan_gbs / copy_gbs:5.1f}% | "
                f"sum {t_sum:9.2f} us {sum_gbs:8.1f} GB/s {100 * sum_gbs / copy_gbs:5.1f}%"
            )
            del xs


if __name__ == "__main__":
    main()
