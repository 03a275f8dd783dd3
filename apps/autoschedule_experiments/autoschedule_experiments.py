#!/usr/bin/env python3
"""Autoscheduler experiments: the hand schedules against Halide 14's stock autoschedulers on Spyre.

For each suite kernel (one modest shape) and each scheduler in {hand, Mullapudi2016, Adams2019,
Li2018}, compiles the kernel with its generator for -target=spyre (the stock schedulers via
`-p <plugin> -s <Name> auto_schedule=true machine_params=32,2097152,40`). If it compiles, simulates
it timing-only with spyre-run and records the simulated time; if it does not, records the Spyre
backend's first error line. Writes a CSV (the resume state), docs/autoscheduling.md and an SVG chart.

Usage: apps/autoschedule_experiments/autoschedule_experiments.py [--build build] [--fresh]
           [--kernels softmax,bmm] [--schedulers hand,Mullapudi2016] [--csv F] [--md F|''] [--svg F|'']
           [--check]
Points already in the CSV are skipped unless --fresh. --check exits non-zero unless every requested
point has a row and every hand row has a positive simulated time.
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import time

PLUGIN_DIR = "/usr/lib/x86_64-linux-gnu/halide14"
MACHINE_PARAMS = "32,2097152,40"
# name -> plugin library (None: the hand schedule)
SCHEDULERS = [
    ("hand", None),
    ("Mullapudi2016", "libautoschedule_mullapudi2016.so"),
    ("Adams2019", "libautoschedule_adams2019.so"),
    ("Li2018", "libautoschedule_li2018.so"),
]
# (kernel, generator, params, scalar params for spyre-run): one modest shape each.
KERNELS = [
    ("bmm", "bmm", "batch=2 m=128 n=128 k=128 dtype=float16", []),
    ("matmul_gelu", "matmul", "m=128 n=256 k=256 activation=gelu dtype=float16", []),
    ("softmax", "softmax", "cols=256 rows=256 dtype=float16", []),
    ("layernorm", "layernorm", "cols=256 rows=256 dtype=float16", ["eps=1e-5"]),
    ("rmsnorm", "rmsnorm", "cols=256 rows=256 dtype=float16", ["eps=1e-5"]),
    ("elementwise_add", "elementwise", "d0=256 d1=256 d2=1 op=add dtype=float16", []),
    ("reduce_sum", "reduce", "d0=256 d1=256 d2=1 op=sum axis=0 dtype=float16", []),
    ("transpose", "transpose", "x=256 y=256 dtype=float16", []),
    ("attention", "attention", "d=64 s=128 heads=2 causal=false dtype=float16", []),
]
FIELDS = ["kernel", "generator", "params", "scheduler", "status", "simulated_us", "compile_s", "error"]
COMMAND = "apps/autoschedule_experiments/autoschedule_experiments.py --build build"


def first_error(text):
    """The backend's first error line (Halide prints it after 'Unhandled exception:' or 'Error:')."""
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    for l in lines:
        for prefix in ("Unhandled exception:", "Error:"):
            if l.startswith(prefix):
                rest = l[len(prefix):].strip()
                if rest:
                    return rest
                nxt = lines[lines.index(l) + 1:]
                return nxt[0] if nxt else prefix
    for l in lines:
        if "Spyre:" in l or "rror" in l:
            return l
    return lines[-1] if lines else "failed without a message"


def compile_cmd(build, tmp, gen, params, scheduler, plugin, name):
    cmd = [os.path.join(build, "bin", "gen_" + gen), "-g", gen, "-o", tmp, "-e", "c_header", "-f", name,
           "-target=spyre"]
    if plugin:
        cmd += ["-p", os.path.join(PLUGIN_DIR, plugin), "-s", scheduler, "auto_schedule=true",
                "machine_params=" + MACHINE_PARAMS]
    return cmd + params.split()


def run_point(build, tmp, kernel, gen, params, scalars, scheduler, plugin, timeout):
    row = {"kernel": kernel, "generator": gen, "params": params, "scheduler": scheduler, "status": "",
           "simulated_us": "", "compile_s": "", "error": ""}
    name = "%s_%s" % (kernel, scheduler)
    t0 = time.time()
    try:
        p = subprocess.run(compile_cmd(build, tmp, gen, params, scheduler, plugin, name), capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        row.update(status="timeout", compile_s="%.1f" % (time.time() - t0),
                   error="compilation did not finish in %d s" % timeout)
        return row
    row["compile_s"] = "%.2f" % (time.time() - t0)
    program = os.path.join(tmp, name + ".spyre")
    if p.returncode != 0 or not os.path.exists(program):
        row.update(status="compile_error", error=first_error(p.stderr + "\n" + p.stdout))
        return row
    report = os.path.join(tmp, name + ".json")
    cmd = [os.path.join(build, "bin", "spyre-run"), program, "--timing-only", "--report", report]
    for s in scalars:
        cmd += ["--param", s]
    try:
        s = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        row.update(status="timeout", error="simulation did not finish in %d s" % timeout)
        return row
    if s.returncode != 0:
        row.update(status="sim_error", error=first_error(s.stderr + "\n" + s.stdout))
        return row
    with open(report) as f:
        row.update(status="ok", simulated_us="%.3f" % json.load(f)["simulated_us"])
    return row


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_csv(path, rows):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


def cell(row):
    if row is None:
        return "not run"
    if row["status"] == "ok":
        return "%.1f us" % float(row["simulated_us"])
    what = {"compile_error": "does not compile", "sim_error": "simulation fails", "timeout": "timeout"}
    err = row["error"].replace("|", "\\|")
    if len(err) > 180:
        err = err[:177] + "..."
    return "%s: %s" % (what.get(row["status"], row["status"]), err)


def write_md(path, rows, kernels, schedulers, csv_path, svg_path):
    by = {(r["kernel"], r["scheduler"]): r for r in rows}
    out = []
    o = out.append
    o("# Autoscheduling experiments")
    o("")
    o("Generated by `%s` (after building the generators and `spyre-run`;" % COMMAND)
    o("add `--fresh` to recompute every point, otherwise the points already in `%s` are kept)." %
      os.path.relpath(csv_path, os.path.dirname(os.path.abspath(path))))
    o("")
    o("## What is measured")
    o("")
    o("Each kernel of the suite, at one modest shape, is compiled for `-target=spyre` with its hand")
    o("schedule (`hand`) and with each of Halide 14's stock autoschedulers, loaded as plugins:")
    o("`-p %s/libautoschedule_<name>.so -s <Name> auto_schedule=true machine_params=%s`" % (PLUGIN_DIR, MACHINE_PARAMS))
    o("(32 cores, 2 MiB of scratchpad as the last-level cache, balance 40). With `auto_schedule=true`")
    o("the generators skip their hand schedules but keep the static shapes, give the autoschedulers")
    o("estimates equal to those shapes and attach the Spyre lowering pass. A kernel that compiles is")
    o("simulated by `spyre-run --timing-only` (the cycles of a functional run) and the table gives the")
    o("simulated time; one that does not gives the Spyre backend's first error, i.e. which Spyre rule")
    o("the CPU-shaped schedule breaks. Compile time is in the CSV.")
    o("")
    o("| kernel | shape | " + " | ".join(schedulers) + " |")
    o("|---|---|" + "---|" * len(schedulers))
    for k, gen, params, _ in kernels:
        o("| %s | `%s` | %s |" % (k, params, " | ".join(cell(by.get((k, s))) for s in schedulers)))
    o("")
    if svg_path:
        o("![simulated time per kernel and scheduler](%s)" % os.path.relpath(svg_path, os.path.dirname(os.path.abspath(path))))
        o("")
    o("## What is not done yet")
    o("")
    o("- **A legalization layer.** The stock autoschedulers produce CPU schedules: vectors of at most")
    o("  64 bytes (never a 128-byte stick), several parallel loops, parallel loops whose extent is not")
    o("  the core count, no scratchpad staging and no DMA stages. The Spyre backend rejects these with")
    o("  the errors above. A layer between the autoscheduler and the backend that widens or packs their")
    o("  vectors to sticks, keeps one core loop of extent 32, and adds staging, DMA and double buffering")
    o("  would let their loop structure be measured on the device; until then a failure here is the")
    o("  expected outcome, and its message says which rule is broken.")
    o("- **Our own Spyre autoscheduler.** A search over the Spyre scheduling vocabulary (the hand")
    o("  schedules' knobs: core split, tile sizes, residency, double buffering, layouts) driven by the")
    o("  simulator's timing model or a cost model trained on it (Adams2019 can be retrained with")
    o("  `retrain_cost_model`). The hand column is the baseline it has to match.")
    n_auto = sum(1 for r in rows if r["scheduler"] != "hand" and r["status"] == "ok")
    o("- Only one shape per kernel and fp16 only; no functional check of autoscheduled builds (%s; the" %
      ("none compiles yet" if n_auto == 0 else "%d compile here" % n_auto))
    o("  compiler tests check the hand builds against the host builds).")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


COLORS = {"hand": "#4c72b0", "Mullapudi2016": "#dd8452", "Adams2019": "#55a868", "Li2018": "#c44e52"}


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def write_svg(path, rows, kernels, schedulers):
    """Grouped bars, log scale: simulated us per kernel and scheduler; an x where there is no time."""
    by = {(r["kernel"], r["scheduler"]): r for r in rows}
    times = [float(r["simulated_us"]) for r in rows if r["status"] == "ok"]
    lo = 10 ** math.floor(math.log10(min(times))) if times else 1.0
    hi = 10 ** math.ceil(math.log10(max(times))) if times else 10.0
    if hi <= lo:
        hi = lo * 10
    bw, gap, left, top, ph = 14, 18, 70, 40, 260
    gw = bw * len(schedulers) + gap
    width = max(left + gw * len(kernels) + 20, 620)
    height = top + ph + 110
    y = lambda v: top + ph - ph * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">'
         % (width, height), '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="20" font-size="14">Simulated Spyre time per kernel and scheduler (log scale; '
         'x: no time, the reason is in autoscheduling.md)</text>' % 10]
    d = int(round(math.log10(lo)))
    while 10 ** d <= hi * 1.0001:
        yy = y(10 ** d)
        s.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (left, yy, width - 20, yy))
        s.append('<text x="%d" y="%.1f" text-anchor="end">%g us</text>' % (left - 4, yy + 4, 10 ** d))
        d += 1
    s.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (left, top, left, top + ph))
    for i, (k, _, _, _) in enumerate(kernels):
        x0 = left + gap / 2 + i * gw
        for j, sch in enumerate(schedulers):
            r = by.get((k, sch))
            x = x0 + j * bw
            if r and r["status"] == "ok":
                v = float(r["simulated_us"])
                s.append('<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %s: %.1f us</title></rect>'
                         % (x, y(v), bw - 2, top + ph - y(v), COLORS.get(sch, "#888"), esc(k), sch, v))
            else:
                why = esc(r["error"]) if r else "not run"
                s.append('<text x="%.1f" y="%d" fill="%s" text-anchor="middle" font-weight="bold">x<title>%s %s: %s</title></text>'
                         % (x + bw / 2 - 1, top + ph - 4, COLORS.get(sch, "#888"), esc(k), sch, why))
        s.append('<text transform="translate(%.1f,%d) rotate(35)">%s</text>' % (x0 + 4, top + ph + 14, esc(k)))
    for j, sch in enumerate(schedulers):
        lx = left + j * 130
        s.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>'
                 % (lx, height - 18, COLORS.get(sch, "#888"), lx + 14, height - 9, sch))
    s.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(s) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--csv", default=os.path.join(root, "docs", "autoscheduling.csv"))
    ap.add_argument("--md", default=os.path.join(root, "docs", "autoscheduling.md"), help="'' to skip")
    ap.add_argument("--svg", default=os.path.join(root, "docs", "autoscheduling.svg"), help="'' to skip")
    ap.add_argument("--kernels", default="", help="comma-separated subset of: " + ",".join(k[0] for k in KERNELS))
    ap.add_argument("--schedulers", default="", help="comma-separated subset of: " + ",".join(s[0] for s in SCHEDULERS))
    ap.add_argument("--timeout", type=int, default=600, help="seconds per compilation or simulation")
    ap.add_argument("--fresh", action="store_true", help="recompute every point (default: resume from the CSV)")
    ap.add_argument("--check", action="store_true", help="fail unless every point has a row and hand times are > 0")
    args = ap.parse_args()

    kernels = [k for k in KERNELS if not args.kernels or k[0] in args.kernels.split(",")]
    schedulers = [s for s in SCHEDULERS if not args.schedulers or s[0] in args.schedulers.split(",")]
    for given, known in ((args.kernels, KERNELS), (args.schedulers, SCHEDULERS)):
        unknown = set(filter(None, given.split(","))) - {k[0] for k in known}
        if unknown:
            ap.error("unknown: " + ", ".join(sorted(unknown)))
    rows = [] if args.fresh else read_csv(args.csv)
    done = {(r["kernel"], r["scheduler"]) for r in rows}
    points = [(k, s) for k in kernels for s in schedulers]
    with tempfile.TemporaryDirectory() as tmp:
        for i, ((kernel, gen, params, scalars), (sch, plugin)) in enumerate(points):
            tag = "[%d/%d] %-16s %-14s" % (i + 1, len(points), kernel, sch)
            if (kernel, sch) in done:
                print("%s skipped (in %s; --fresh recomputes)" % (tag, os.path.basename(args.csv)), flush=True)
                continue
            print("%s ..." % tag, end=" ", flush=True)
            row = run_point(args.build, tmp, kernel, gen, params, scalars, sch, plugin, args.timeout)
            print("%s (%ss) %s" % (row["status"], row["compile_s"],
                                   row["simulated_us"] + " us" if row["status"] == "ok" else row["error"][:100]),
                  flush=True)
            rows = [r for r in rows if (r["kernel"], r["scheduler"]) != (kernel, sch)] + [row]
            write_csv(args.csv, rows)  # after every point, so an interrupted run resumes
    order = {(k[0], s[0]): n for n, (k, s) in enumerate((k, s) for k in KERNELS for s in SCHEDULERS)}
    rows.sort(key=lambda r: order.get((r["kernel"], r["scheduler"]), len(order)))
    write_csv(args.csv, rows)
    names = [s[0] for s in schedulers]
    if args.md:
        write_md(args.md, rows, kernels, names, args.csv, args.svg)
    if args.svg:
        write_svg(args.svg, rows, kernels, names)
    print("wrote " + ", ".join(p for p in (args.csv, args.md, args.svg) if p))
    if args.check:
        by = {(r["kernel"], r["scheduler"]): r for r in rows}
        bad = ["%s/%s: no row" % (k[0], sch[0]) for k, sch in points if (k[0], sch[0]) not in by]
        bad += ["%s/hand: %s %s" % (k, by[(k, "hand")]["status"], by[(k, "hand")]["error"])
                for k, _, _, _ in kernels if (k, "hand") in by and "hand" in names
                and not (by[(k, "hand")]["status"] == "ok" and float(by[(k, "hand")]["simulated_us"]) > 0)]
        if bad:
            print("check FAILED:\n  " + "\n  ".join(bad), file=sys.stderr)
            return 1
        print("check passed: %d points, hand times positive" % len(points))
    return 0


if __name__ == "__main__":
    sys.exit(main())
