#!/usr/bin/env python3
"""Markdown tables from a bench JSON file (bench-reduce.json, bench-scan.json, bench-select.json, ...).

    python3 tools/bench_tables.py OUT/bench-reduce.json --sizes 10..28:2
    python3 tools/bench_tables.py OUT/bench-scan.json --sizes 12,16,20,24,28 --us
    python3 tools/bench_tables.py OUT/bench-reduce.json --lecture --no-gbps
    python3 tools/bench_tables.py OUT/bench-select.json --sizes 24,28 --types i32
    python3 tools/bench_tables.py OUT/bench-reduce.json --no-gbps --us --sizes 10,20,24,28 \\
        --cases "sum/vectorized=last block (default)" sum/vectorized+relaunch=relaunch \\
        sum/vectorized+host=host sum/vectorized+atomic=atomic \\
        --us-title "Finishing strategies (vectorized kernel), median µs"

Unless --no-gbps: a header line, one GB/s table per element type (a row
per size; the copy rate, a column per case, and the default case -- reduce
`sum_into`, scan `inclusive_scan`, or --default -- as % of copy) and the
latency line, then the readback table (`Context::sum`, the value on the
host) when the file has one. Cases the bench compared with CUB (`--cub`:
`sum_into`, `inclusive_scan`, `exclusive_scan`) get a `× CUB` column each
(CUB's median / ours, timed the same way in the same run; above 1.00 we are
faster), in the GB/s and µs tables. --us adds one table of median µs (a row
per size and type, the copy first); --lecture adds the reduction lecture table (the
`sum/<kernel>+relaunch/b1024` cases at 2^26 i32, or --lecture-at, with step
and cumulative speedups).

Groups whose cases make their own inputs (select, by_key, segmented: their
measurements carry `copy_equiv_us`) get instead one table per primitive
(`select_if`, `reduce_by_key`, ...): a row per size, type and input
distribution with median µs, GB/s ((bytes read + bytes written) / median
time), the copy-equivalent % (a device copy moving as many bytes, timed in
the same run, over our time) and, with CUB, CUB's µs and × CUB.

Cases are given as NAME or NAME=LABEL, in column order. Without --cases:
reduce, the nine kernels at 256 threads and `sum_into`; scan, every case
(labels without `inclusive/`). A value timed with plain events instead of
the held stream (`"held": false`) is marked †; a measurement that failed or
disagreed with the CPU reference shows `-` (or its value marked !), with
its message listed under the table; so does a `× CUB` whose CUB result was
not ok. Standard library only.
"""
import argparse
import json
import math

# Reduction kernels in lecture order: name, column label, lecture-table label.
KERNELS = [
    ("interleaved", "1 interl.", "1 interleaved, divergent"),
    ("interleaved_strided", "2 strided", "2 interleaved, strided index"),
    ("sequential", "3 seq.", "3 sequential addressing"),
    ("first_add", "4 first add", "4 first add during load"),
    ("unrolled_warp", "5 warp", "5 unrolled last warp"),
    ("complete_unroll", "6 unroll", "6 complete unroll"),
    ("cascaded", "7 cascade", "7 cascaded (grid-stride)"),
    ("shuffle", "8 shuffle", "8 warp shuffle (ours)"),
    ("vectorized", "9 vector (default)", "9 vectorized (ours, default)"),
]
DEFAULT_CASE = {"reduce": "sum_into", "scan": "inclusive_scan"}
HELD, FAILED = "†", "!"


def sizes(spec):
    """'10..28:2' -> 10,12,...,28; '16,20,24' -> those; parts combine."""
    out = []
    for part in spec.split(","):
        rng, _, step = part.partition(":")
        lo, _, hi = rng.partition("..")
        out += range(int(lo), int(hi or lo) + 1, int(step or 1))
    return out


def num(v):
    """GB/s: three significant digits, whole numbers from 100 up."""
    return f"{v:.0f}" if v >= 100 else f"{v:#.3g}"


def us(v):
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 1000 else f"{v:.0f}"


class Table:
    """Looks up measurements and formats cells, collecting footnotes."""

    def __init__(self, data):
        self.m = {(x["case"], x["type"], x["log2_n"]): x for x in data["measurements"]}
        self.copy = {(x["type"], x["log2_n"]): x for x in data["copy"]}
        self.notes = {}
        self.held_told = False  # the † footnote is printed once

    def cell(self, x, field, fmt=num):
        if x is None:
            return ""
        ok = x["check"] == "ok"
        if not ok:
            self.notes.setdefault((x.get("case", "copy"), x["type"], x["check"]), []).append(x["log2_n"])
        if x[field] is None:
            return "-"
        mark = ("" if x.get("held", True) else HELD) + ("" if ok else FAILED)
        if not x.get("held", True):
            self.notes.setdefault(HELD, True)
        return fmt(x[field]) + mark

    def cub_cases(self, cases, types=None):
        """The cases among `cases` (names) that carry `x_cub` for one of `types`."""
        return [c for c in cases if any(k[0] == c and (types is None or k[1] in types) and "x_cub" in x
                                        for k, x in self.m.items())]

    def xcub(self, x):
        """A measurement's × CUB cell: blank without a CUB twin."""
        if x is None or "x_cub" not in x:
            return ""
        ok = x.get("cub_check", "ok") == "ok"
        if not ok:
            self.notes.setdefault((x.get("case", "readback"), x["type"], "CUB: " + x["cub_check"]), []).append(
                x.get("log2_n", (x.get("n") or 1).bit_length() - 1))
        v = x["x_cub"]  # cut, not rounded, to two decimals: 1.00 means at least 1
        return ("-" if v is None else f"{math.floor(v * 100 + 1e-9) / 100:.2f}") + ("" if ok else FAILED)

    def footnotes(self):
        lines = []
        if self.notes.pop(HELD, None) and not self.held_told:
            self.held_told = True
            lines.append(f"{HELD} timed with plain CUDA events around the call (the case waits for "
                         "the GPU, so the stream cannot be held): includes the host's launch cost.")
        for (case, ty, msg), ns in self.notes.items():
            at = f"2^{ns[0]}..2^{ns[-1]}" if len(ns) > 1 else f"2^{ns[0]}"
            lines.append(f"`{case}` {ty} at {at}: {msg}")
        self.notes = {}
        return "\n".join(f"- {l}" for l in lines)


def row(cells):
    return "| " + " | ".join(cells) + " |"


def gbps_tables(data, t, cases, types, ns, default):
    unit = "input bytes" if data["group"] == "reduce" else "bytes read + written"
    pct = any(c == default for c, _, _ in t.m)  # the % column, if that case was measured
    any_cub = False
    for ty in types:
        cub = t.cub_cases([c for c, _ in cases], [ty])
        head = (["n", "copy"] + [label for _, label in cases] + [f"`{default}` % of copy"] * pct
                + [f"`{c}` × CUB" for c in cub])
        print(f"\n#### {ty}: GB/s ({unit} / median time), copy counts read + write\n")
        print(row(head))
        print("|---" + "|---:" * (len(head) - 1) + "|")
        for k in ns:
            d = t.cell(t.m.get((default, ty, k)), "pct_of_copy", lambda v: f"{v:.0f}%")
            print(row([f"2^{k}", t.cell(t.copy.get((ty, k)), "gbps")]
                      + [t.cell(t.m.get((c, ty, k)), "gbps") for c, _ in cases] + [d] * pct
                      + [t.xcub(t.m.get((c, ty, k))) for c in cub]))
        any_cub |= bool(cub)
        notes = t.footnotes()
        if notes:
            print("\n" + notes)
    if any_cub:
        print("\n× CUB = CUB's median time / ours, both timed the same way in the same run "
              "(above 1.00: gpuprim is faster).")


def us_table(t, cases, types, ns, title):
    cub = t.cub_cases([c for c, _ in cases], types)
    head = ["n", "type", "copy"] + [label for _, label in cases] + [f"`{c}` × CUB" for c in cub]
    print(f"\n#### {title}\n")
    print(row(head))
    print("|---|---" + "|---:" * (len(head) - 2) + "|")
    for ty in types:
        for k in ns:
            print(row([f"2^{k}", ty, t.cell(t.copy.get((ty, k)), "median_us", us)]
                      + [t.cell(t.m.get((c, ty, k)), "median_us", us) for c, _ in cases]
                      + [t.xcub(t.m.get((c, ty, k))) for c in cub]))
    notes = t.footnotes()
    if notes:
        print("\n" + notes)


def lecture_table(t, k, ty, block):
    print(f"\n#### The lecture table: 2^{k} `{ty}`, {block} threads per block, "
          "partials finished by relaunching\n")
    print(row(["variant", "time (µs)", "GB/s", "step speedup", "cumulative"]))
    print("|---|---:|---:|---:|---:|")
    first = prev = None
    for name, _, label in KERNELS:
        x = t.m.get((f"sum/{name}+relaunch/b{block}", ty, k))
        if x is None or x["median_us"] is None:
            print(row([label, "-", "-", "-", "-"]))
            continue
        time = x["median_us"]
        step = f"{prev / time:.2f}x" if prev else "-"
        first, prev = first or time, time
        print(row([label, t.cell(x, "median_us", us), t.cell(x, "gbps"), step, f"{first / time:.2f}x"]))
    c = t.copy.get((ty, k))
    print(row(["device-to-device copy (read + write)", t.cell(c, "median_us", us), t.cell(c, "gbps"), "", ""]))
    notes = t.footnotes()
    if notes:
        print("\n" + notes)


def readback_table(data, t, types):
    """The readback line: `Context::sum` with the value on the host, host time."""
    rows = [r for r in data.get("readback", []) if r["type"] in types]
    if not rows:
        return
    cub = any("x_cub" in r for r in rows)
    what = "emulator wall clock" if data.get("emulator_timings") else "host time around the whole call"
    n = rows[0]["n"]
    print(f"\n#### Readback: `Context::sum` of 2^{n.bit_length() - 1}, the value on the host ({what}), median µs\n")
    head = ["type", "`sum` µs", "min", "p90"] + ["CUB µs", "× CUB"] * cub
    print(row(head))
    print("|---" + "|---:" * (len(head) - 1) + "|")
    for r in rows:
        x = dict(r, case="readback", held=True)  # host time, as the heading says: no † mark
        cells = [r["type"], t.cell(x, "median_us", us), t.cell(x, "min_us", us), t.cell(x, "p90_us", us)]
        if cub:
            c = r.get("cub_us")
            cells += ["" if "x_cub" not in r else "-" if c is None else us(c), t.xcub(x)]
        print(row(cells))
    if cub:
        print("\nCUB: `DeviceReduce::Sum`, a copy of the value into pinned host memory and a stream "
              "synchronize, timed on the host the same way.")
    notes = t.footnotes()
    if notes:
        print("\n" + notes)


def primitive_tables(data, t, cases, types, ns):
    """Groups whose cases make their own inputs (select, by_key, segmented):
    one table per primitive (the case name before `/`), a row per size,
    type and distribution, with the copy-equivalent % and × CUB."""
    prims = {}
    for c, label in cases:
        prims.setdefault(c.partition("/")[0], []).append((c, label))
    cub = any("x_cub" in x for x in t.m.values())
    for prim, cs in prims.items():
        head = ["n", "type", "input", "µs", "GB/s", "% of copy-eq."] + ["CUB µs", "× CUB"] * cub
        print(f"\n#### `{prim}`: median µs, GB/s ((bytes read + written) / median time), copy-equivalent %\n")
        print(row(head))
        print("|---|---|---" + "|---:" * (len(head) - 3) + "|")
        for k in ns:
            for ty in types:
                for c, label in cs:
                    x = t.m.get((c, ty, k))
                    if x is None:
                        continue
                    cells = [f"2^{k}", ty, label.removeprefix(f"`{prim}/").rstrip("`") if label.startswith("`") else label,
                             t.cell(x, "median_us", us), t.cell(x, "gbps"),
                             t.cell(x, "pct_of_copy", lambda v: f"{v:.0f}%")]
                    if cub:
                        c_us = x.get("cub_us")
                        cells += ["" if "x_cub" not in x else "-" if c_us is None else us(c_us), t.xcub(x)]
                    print(row(cells))
        notes = t.footnotes()
        if notes:
            print("\n" + notes)
    print("\nGB/s counts every input element read once and the output the call actually writes; the "
          "copy-equivalent is a device-to-device copy moving as many bytes (read + write), timed in the same "
          "run: % of copy-eq. = its median time / ours." + (" × CUB = CUB's median time / ours, both timed the "
                                                             "same way in the same run (above 1.00: gpuprim is "
                                                             "faster)." if cub else ""))


def cub_header(data):
    """One line on the CUB program of the file, if it ran."""
    c = data.get("cub")
    if not c:
        return
    if c.get("error"):
        print(f"\nCUB: no comparison in this file ({c['error']}).")
        return

    def cuda(v):
        return "?" if v is None else f"{v // 1000}.{v % 1000 // 10}"
    print(f"\nCUB twins timed in the same run by `cub_bench` (host/benches/cub/cub_bench.cu): CUB "
          f"{c.get('cccl_version', '?')} (CUB_VERSION {c.get('cub_version', '?')}), CUDA runtime "
          f"{cuda(c.get('cuda_runtime'))}, driver {cuda(c.get('driver'))}, on {c.get('device', '?')}.")


def header(data):
    if data.get("emulator_timings"):
        timing = "CPU emulator, not GPU timings"
    elif any("held" in x for x in data["measurements"]):
        timing = f"GPU time with the stream held behind a wait kernel unless marked {HELD}"
    else:  # written before commit cf4b312, which added the field
        timing = "the file does not say: stream held from commit 0f42724 on, plain events before"
    cut = [x["runs"] for x in data["measurements"] if 0 < x["runs"] < data["runs"]]
    cut = f", down to {min(cut)} where a point would pass 3 s" if cut else ""
    print(f"Measured on **{data['device']}** ({data['multiprocessors']} SMs), {data['date_utc']}, "
          f"{data['runs']} timed runs per point after {data['warmup']} warm-up{cut} (median; {timing}); "
          "GB/s = bytes the case must move / median time, 1 GB = 1e9 bytes.")


def latency(data):
    what = "on the emulator" if data.get("emulator_timings") else "GPU time"
    for lat in data.get("latency", []):
        host = lat.get("with_host_launch")
        line = (f"\nLatency: a whole `Context::{lat['case']}` of 2^{lat['n'].bit_length() - 1} "
                f"{lat['type']} (every launch it makes): median **{lat['median_us']:.2f} µs** {what} "
                f"(min {lat['min_us']:.2f}, p90 {lat['p90_us']:.2f})")
        if host:
            line += (f", **{host['median_us']:.2f} µs** with host launch cost "
                     f"(min {host['min_us']:.2f}, p90 {host['p90_us']:.2f})")
        print(line + f"; check {lat['check']}.")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("json", help="bench-reduce.json or bench-scan.json")
    p.add_argument("--sizes", help="log2 sizes: 10..28:2, 16,20,24 (default: all measured)")
    p.add_argument("--types", help="comma-separated element types (default: all in the file)")
    p.add_argument("--cases", nargs="+", metavar="NAME[=LABEL]", help="columns, in order")
    p.add_argument("--default", help="case shown as %% of copy (default: sum_into / inclusive_scan)")
    p.add_argument("--no-gbps", action="store_true", help="leave out the GB/s tables")
    p.add_argument("--us", action="store_true", help="add a table of median µs")
    p.add_argument("--us-title", default="Median µs", help="heading of the µs table")
    p.add_argument("--lecture", action="store_true", help="add the reduction lecture table")
    p.add_argument("--lecture-at", default="26,i32,1024", metavar="LOG2N,TYPE,BLOCK")
    a = p.parse_args()

    data = json.load(open(a.json, encoding="utf-8"))
    group = data["group"]
    t = Table(data)
    ns = sizes(a.sizes) if a.sizes else sorted({k for _, k in t.copy} | {k for _, _, k in t.m})
    types = a.types.split(",") if a.types else data["types"]
    if a.cases:
        cases = [(c.partition("=")[0], c.partition("=")[2] or f"`{c}`") for c in a.cases]
    else:
        if any("copy_equiv_us" in x for x in data["measurements"]):
            names = dict.fromkeys(c["name"] for c in data["cases"])
            cases = [(c, c.partition("/")[2] or c) for c in names]
        elif group == "reduce":
            cases = [(f"sum/{k}", label) for k, label, _ in KERNELS] + [("sum_into", "`sum_into`")]
        else:
            names = dict.fromkeys(c["name"] for c in data["cases"])
            cases = [(c, f"`{c.removeprefix('inclusive/')}`") for c in names]
        cases = [(c, label) for c, label in cases if any(c == m for m, _, _ in t.m)]

    own_inputs = any("copy_equiv_us" in x for x in data["measurements"])
    if not a.no_gbps and own_inputs:
        header(data)
        cub_header(data)
        primitive_tables(data, t, cases, types, ns)
    elif not a.no_gbps:
        header(data)
        cub_header(data)
        gbps_tables(data, t, cases, types, ns, a.default or DEFAULT_CASE[group])
        latency(data)
        readback_table(data, t, types)
    if a.us:
        us_table(t, cases, types, ns, a.us_title)
    if a.lecture:
        k, ty, block = a.lecture_at.split(",")
        lecture_table(t, int(k), ty, int(block))


if __name__ == "__main__":
    main()
