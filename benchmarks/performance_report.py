#!/usr/bin/env python3
"""Writes docs/performance.md: simulated performance of the kernel suite on the
Spyre machine model, and the schedule ladders of bmm and softmax.

Every figure comes from this run: each kernel is compiled with its generator
for -target=spyre and simulated in timing-only mode by spyre-run (timing-only
and functional runs report identical cycles; the tests check it).

Usage: benchmarks/performance_report.py [--build build] [--out docs/performance.md]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# (title, generator, params, scalar params for spyre-run, target)
# target: ('pt', 0.85) = PT utilization >= 85%; ('dram', 0.85) = >= 85% of the roofline bound.
SUITE = [
    ("bmm fp16 (compute-bound)", "bmm", "batch=8 m=1024 n=4096 k=4096 dtype=float16", [], ("pt", 0.85)),
    ("bmm fp16 default", "bmm", "batch=8 m=512 n=512 k=512 dtype=float16", [], None),
    ("matmul+bias+gelu fp16", "matmul", "m=1024 n=4096 k=4096 activation=gelu dtype=float16", [], ("pt", 0.85)),
    ("softmax fp16, 8 MiB in", "softmax", "cols=1024 rows=4096 dtype=float16", [], ("dram", 0.85)),
    ("layernorm fp16, 8 MiB in", "layernorm", "cols=1024 rows=4096 dtype=float16", ["eps=1e-5"], ("dram", 0.85)),
    ("rmsnorm fp16, 8 MiB in", "rmsnorm", "cols=1024 rows=4096 dtype=float16", ["eps=1e-5"], ("dram", 0.85)),
    ("elementwise add fp16, 8 MiB per operand", "elementwise", "d0=1024 d1=4096 d2=1 op=add dtype=float16", [], ("dram", 0.85)),
    ("elementwise gelu fp16, 8 MiB in", "elementwise", "d0=1024 d1=4096 d2=1 op=gelu dtype=float16", [], ("dram", 0.85)),
    ("reduce sum axis 0 fp16, 8 MiB in", "reduce", "d0=1024 d1=4096 d2=1 op=sum axis=0 dtype=float16", [], ("dram", 0.85)),
    ("reduce max axis 2 fp16, 16 MiB in", "reduce", "d0=1024 d1=2048 d2=4 op=max axis=2 dtype=float16", [], ("dram", 0.85)),
    ("transpose fp16, 8 MiB (restickify)", "transpose", "x=2048 y=2048 dtype=float16", [], ("dram", 0.85)),
    ("attention fp16 s=1024 d=64 h=8", "attention", "d=64 s=1024 heads=8 causal=false dtype=float16", [], None),
    ("attention fp16 causal s=1024 d=64 h=8", "attention", "d=64 s=1024 heads=8 causal=true dtype=float16", [], None),
]

BMM_LADDER = [
    ("1 core, 8-row tiles", "max_cores=1 tile_m=8 resident_b=false double_buffer=false"),
    ("1 core, 64 x 64 tiles", "max_cores=1 resident_b=false double_buffer=false"),
    ("32 cores, planner's tiles, every tile re-reads A and B", "max_cores=32 resident_b=false double_buffer=false"),
    ("32 cores, planner's choice incl. a resident B slice", "max_cores=32 resident_b=true double_buffer=false"),
    ("32 cores, as above with double-buffered tiles (the default)", "max_cores=32 resident_b=true double_buffer=true"),
]
BMM_LADDER_SHAPE = "batch=8 m=512 n=512 k=512 dtype=float16"

SOFTMAX_LADDER = [
    ("1 core, 1-row tiles, stick-wide SFU ops", "max_cores=1 tile_rows=1 row_vectors=false double_buffer=false"),
    ("1 core, 32-row tiles, stick-wide SFU ops", "max_cores=1 tile_rows=32 row_vectors=false double_buffer=false"),
    ("32 cores, stick-wide SFU ops", "max_cores=32 row_vectors=false double_buffer=false"),
    ("32 cores, row-wide SFU ops", "max_cores=32 row_vectors=true double_buffer=false"),
    ("32 cores, row-wide SFU ops, double-buffered tiles", "max_cores=32 row_vectors=true double_buffer=true"),
]
SOFTMAX_LADDER_SHAPE = "cols=1024 rows=4096 dtype=float16"

NOT_SUPPORTED_STEPS = [
    ("best device layout", "the default already keeps the outermost (batch / row) dimension outermost, "
                           "torch-spyre's best for these kernels; set_device_layout can permute it"),
]


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True)


def simulate(build, tmp, gen, params, scalars, name):
    exe = os.path.join(build, "bin", "gen_" + gen)
    if not os.path.exists(exe):
        return None, "generator gen_%s not built" % gen
    try:
        run([exe, "-g", gen, "-o", tmp, "-e", "c_header", "-f", name, "-target=spyre"] + params.split())
        report = os.path.join(tmp, name + ".json")
        cmd = [os.path.join(build, "bin", "spyre-run"), os.path.join(tmp, name + ".spyre"), "--timing-only",
               "--report", report]
        for s in scalars:
            cmd += ["--param", s]
        run(cmd)
        with open(report) as f:
            return json.load(f), None
    except subprocess.CalledProcessError as e:
        msg = (e.stderr or e.stdout or "").strip().splitlines()
        return None, (msg[-1] if msg else "failed")[:200]


def status(r, target):
    if target is None or r is None:
        return ""
    kind, goal = target
    value = r["pt_utilization"] if kind == "pt" else r["roofline_bound_us"] / r["simulated_us"]
    what = "PT utilization" if kind == "pt" else "of DRAM roofline"
    return "%s (target >= %.0f%% %s)" % ("met" if value >= goal else "MISSED", goal * 100, what)


def explain_matmul_limits(out, results):
    """Why the large matmuls miss the PT-utilization target, from this run's figures."""
    r = results.get("bmm fp16 (compute-bound)")
    if not r:
        return
    gb = 1e9
    # batch=8 m=1024 n=4096 k=4096 fp16: each tensor once.
    once = (8 * 1024 * 4096 + 8 * 4096 * 4096 + 8 * 1024 * 4096) * 2
    once_us = once / (150 * gb) * 1e6
    moved = r["dram_read_bytes"] + r["dram_write_bytes"]
    out("")
    out("## Why the large matmuls miss 85% PT utilization")
    out("")
    out("For `bmm batch=8 m=1024 n=4096 k=4096` fp16 the PT bound is %.0f us (32 cores at the peak of "
        "MACHINE.md). Reading every tensor exactly once already takes %.0f us at 150 GB/s: the kernel "
        "sits at the ridge of the roofline, so 85%% needs each byte fetched once *and* DMA fully hidden "
        "behind the PT." % (r["compute_bound_us"], once_us))
    out("Where this compiler stands:")
    out("- each core's 2 MiB scratchpad holds an fp32 accumulator tile and K chunks of A and B; with no "
        "sharing between cores (the ring is not used by the compiler yet) the tiles re-read A and B: this run "
        "moved %.0f MB (%.1fx the minimum), %.0f us of DRAM time on its own;" % (moved / 1e6, moved / once,
                                                                           r["dram_bound_us"]))
    out("- double buffering (spyre::double_buffer) overlaps a core's DMA with its PT work, which brings the "
        "kernel to %.0f%% of its DRAM bound (simulated %.0f us, %.1f%% PT utilization): the traffic, not the "
        "overlap, is what remains." % (100 * r["roofline_bound_us"] / r["simulated_us"], r["simulated_us"],
                                        100 * r["pt_utilization"]))
    out("The planner (schedules/bmm_schedule.cpp) picks the tiles with the least estimated time under these "
        "constraints; the ladder below shows what each step buys on the default shape. Sharing B between "
        "the cores of a batch over the ring is the next step.")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="docs/performance.md")
    args = ap.parse_args()
    lines = []
    out = lines.append
    out("# Performance on the simulated Spyre")
    out("")
    out("Generated by `benchmarks/performance_report.py` (run it after `scripts/build.sh`; it")
    out("compiles each kernel with its generator for `-target=spyre` and simulates it in")
    out("timing-only mode with `spyre-run`). Machine model: `docs/timing-model.md`. Every figure")
    out("below is from the same run of the script.")
    out("")
    out("| kernel | shape | simulated | roofline bound | of bound | PT util | DRAM GB/s | bottleneck | target |")
    out("|---|---|---:|---:|---:|---:|---:|---|---|")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (title, gen, params, scalars, target) in enumerate(SUITE):
            r, err = simulate(args.build, tmp, gen, params, scalars, "k%d" % i)
            results[title] = r
            print("%-45s %s" % (title, "ok" if r else err), file=sys.stderr)
            if r is None:
                out("| %s | `%s` | - | - | - | - | - | - | not available: %s |" % (title, params, err))
                continue
            out("| %s | `%s` | %.1f us | %.1f us | %.0f%% | %.1f%% | %.1f | %s | %s |" % (
                title, params, r["simulated_us"], r["roofline_bound_us"],
                100 * r["roofline_bound_us"] / r["simulated_us"], 100 * r["pt_utilization"],
                r["achieved_dram_gbps"], r["bottleneck"], status(r, target)))
        explain_matmul_limits(out, results)
        for name, gen, shape, steps in (("bmm", "bmm", BMM_LADDER_SHAPE, BMM_LADDER),
                                        ("softmax", "softmax", SOFTMAX_LADDER_SHAPE, SOFTMAX_LADDER)):
            out("")
            out("## Schedule ladder: %s (`%s`)" % (name, shape))
            out("")
            out("Each step is a schedule you can compile: `build/bin/gen_%s -g %s -o DIR -e static_library "
                "-target=spyre %s <knobs>`." % (gen, gen, shape))
            out("")
            out("| step | knobs | simulated | speedup over step 1 | PT util | bottleneck |")
            out("|---|---|---:|---:|---:|---|")
            first = None
            for j, (step, knobs) in enumerate(steps):
                r, err = simulate(args.build, tmp, gen, shape + " " + knobs, [], "%s_ladder%d" % (name, j))
                print("%-45s %s" % (name + ": " + step, "ok" if r else err), file=sys.stderr)
                if r is None:
                    out("| %s | `%s` | - | - | - | %s |" % (step, knobs, err))
                    continue
                first = first or r["simulated_us"]
                out("| %s | `%s` | %.1f us | %.1fx | %.1f%% | %s |" % (
                    step, knobs, r["simulated_us"], first / r["simulated_us"], 100 * r["pt_utilization"],
                    r["bottleneck"]))
            for step, why in NOT_SUPPORTED_STEPS:
                out("| %s | - | - | - | - | %s |" % (step, why))
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s" % args.out, file=sys.stderr)


if __name__ == "__main__":
    main()
