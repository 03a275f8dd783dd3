"""Fidelity harness: the simulated device's kernel times against real Spyre card timings.

For every row of a hardware timing CSV (/work/shared/hw/spyre_hw_timings_*.csv: id, op, shape,
dtype, cores, variant, time_us, metric_note, source) that row_mapping.map_row() maps onto a project
kernel, compiles that kernel with its generator (`build/bin/gen_<g> -g <g> -e c_header
-target=spyre params...`, which writes <g>.spyre), simulates it timing-only (`build/bin/spyre-run
PROG --timing-only --report r.json`) and compares the simulated time with the card's. Rows it cannot
map are listed with the reason.

Assumes a finished build (--build, default build): bin/gen_*, bin/spyre-run, bin/spyre-info and
lib/*.so. Only the standard library is used (Python 3.11). Run from the repository root:

Usage:
  python3 -m benchmarks.fidelity.fidelity --csv PATH [--build build] [--out DIR] [--jobs N]
      [--machine-set k=v,...] [--only CLASS[,CLASS...]] [--holdout FRAC] [--md PATH]

  --machine-set  machine overrides for the simulation (SPYRE_MACHINE_SET of spyre-run and spyre-info,
                 docs/machine.md); programs are compiled without them, so a calibration loop
                 re-simulates the cached programs without recompiling. Without it an inherited
                 SPYRE_MACHINE_SET applies to the simulation only.
  --only         op classes to run (the `op_class` column of rows.csv), comma-separated
  --holdout      fraction of row groups held out of calibration (default 0.3): a group's split is a
                 hash of op and shape, so it is the same for every run and every CSV
  --md           also write the markdown report (docs/fidelity.md is its intended place)

Caches (benchmarks/spyre_bench/kernel_runs.py; rerunning is quick): DIR/programs/<key>/ holds each compiled program, keyed by the generator
binary and build/lib/*.so (mtime, size), its GeneratorParams and the compile-time machine
description; DIR/sim_cache.json holds the simulation results, keyed by the program's sha256, the
effective machine (the output of spyre-info in the simulation's environment), spyre-run and
build/lib/*.so (mtime, size) and the run-time scalars. Compile failures are recorded per row with
the compiler's first error line and cached like programs.

Outputs: DIR/rows.csv (one line per CSV row), DIR/summary.txt (also printed): per op class
error statistics of sim/hw on all mapped rows and on the best-of-group rows (the fastest row of a
group of rows with the same op, shape, dtype, cores and mapped algorithm: the card's best plan),
each for the fit and held-out splits; the single-resource target groups with PASS/FAIL; the rows
whose card time is below our roofline bound (the bound must stay a bound).
"""
import argparse
import csv
import hashlib
import math
import os
import re
import sys
import time

from benchmarks.fidelity.row_mapping import LARGE_BYTES, ROW_REDUCTIONS, map_row
from benchmarks.spyre_bench import kernel_runs, machine
from benchmarks.spyre_bench.kernel_runs import Harness, run_kernels
from benchmarks.spyre_bench.progress import log
from benchmarks.spyre_bench.stats import median, percentile, rms, spearman
from benchmarks.spyre_bench.tables import fmt, render_md, render_text, write_csv

# The single-resource target groups: (name, predicate on a result row). Targets: median |sim/hw - 1| <= 10%,
# 90th percentile <= 20%.
TARGETS = [
    ("(a) matmul on 1-2 cores", lambda r: r["op_class"] == "matmul" and r["cores"] <= 2),
    ("(b) add, gelu, row reductions, transposes on 32 cores, >= 8 MiB moved",
     lambda r: (r["op_class"] in {"add", "gelu", "transpose"} | ROW_REDUCTIONS) and r["cores"] == 32
     and r["alg_bytes"] >= LARGE_BYTES),
    ("(c) gelu and softmax on 1-2 cores", lambda r: r["op_class"] in {"gelu", "softmax"} and r["cores"] <= 2),
]
TARGET_MEDIAN, TARGET_P90 = 0.10, 0.20
ROW_FIELDS = ["id", "op", "shape", "op_class", "cores", "status", "hw_us", "sim_us", "sim_over_hw", "bound_us",
              "hw_below_bound", "sim_dram_bytes", "alg_bytes", "hw_model_bytes", "macs", "bottleneck",
              "active_cores", "generator", "params", "knobs", "variant_ignored", "group", "best_of_group", "split",
              "notes"]


# ---------------------------------------------------------------------------------------------
# Rows: mapping, groups, the hold-out split


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def holdout_of(row, frac):
    """Whether the row's group is held out: a hash of op and shape below frac (deterministic)."""
    h = int.from_bytes(hashlib.sha256((row["op"] + "|" + row["shape"]).encode()).digest()[:8], "big")
    return h / 2.0 ** 64 < frac


def group_key(row, mapping):
    """Rows of one plan sweep: same op, shape, dtype, cores and mapped algorithm."""
    return "|".join((row["op"], row["shape"], row["dtype"], row["cores"], mapping.shape_key()))


def hw_time(row):
    try:
        return float(row["time_us"])
    except ValueError:
        return float("nan")


def best_of_groups(rows, mappings):
    """Ids of the fastest mapped row of each group (the card's best plan of that group)."""
    best = {}
    for row, m in zip(rows, mappings):
        if not m.mapped or not hw_time(row) > 0:
            continue
        key = group_key(row, m)
        if key not in best or hw_time(row) < hw_time(best[key]):
            best[key] = row
    return {r["id"] for r in best.values()}


# ---------------------------------------------------------------------------------------------
# Per-row results


def result_rows(rows, mappings, results, best_ids, holdout):
    out = []
    for row, m in zip(rows, mappings):
        hw = hw_time(row)
        r = {"id": row["id"], "op": row["op"], "shape": row["shape"], "op_class": m.op_class,
             "cores": m.knobs.get("max_cores") or (int(row["cores"]) if row["cores"].isdigit() else row["cores"]),
             "hw_us": hw, "alg_bytes": m.alg_bytes, "alg_read": m.alg_read, "alg_write": m.alg_write, "generator": ("gen_" + m.generator) if m.generator else "",
             "params": " ".join(m.generator_args()[:len(m.params)]),
             "knobs": " ".join(m.generator_args()[len(m.params):]), "variant_ignored": "; ".join(m.ignored),
             "group": group_key(row, m), "best_of_group": row["id"] in best_ids,
             "split": "held-out" if holdout_of(row, holdout) else "fit",
             "hw_model_bytes": (re.search(r"HBM bytes=(\d+)", row["metric_note"]) or [None, ""])[1],
             "notes": list(m.notes), "sim_us": None, "status": "unmapped"}
        if not m.mapped:
            r["notes"].insert(0, m.unmapped)
        else:
            status, res, error = results[(m.generator, tuple(m.generator_args()))]
            r["status"] = status
            if error:
                r["notes"].insert(0, error)
            if status == "ok":
                r.update(sim_us=res["simulated_us"], bound_us=res["roofline_bound_us"],
                         sim_dram_bytes=res["dram_read_bytes"] + res["dram_write_bytes"], macs=res["macs"],
                         bottleneck=res["bottleneck"], active_cores=res["active_cores"])
                r["ratio"] = r["sim_us"] / hw if hw > 0 else float("nan")
        out.append(r)
    return out


def row_cells(r):
    """rows.csv's line of one result (ROW_FIELDS)."""
    ok = r["status"] == "ok"
    return [r["id"], r["op"], r["shape"], r["op_class"], r["cores"], r["status"], fmt(r["hw_us"]),
            fmt(r["sim_us"]) if ok else "", fmt(r.get("ratio"), "%.4f") if ok else "",
            fmt(r.get("bound_us")) if ok else "", (r["hw_us"] < r["alg_bound_us"]) if ok else "",
            r.get("sim_dram_bytes", ""), r["alg_bytes"] or "", r["hw_model_bytes"], r.get("macs", ""),
            r.get("bottleneck", ""), r.get("active_cores", ""), r["generator"], r["params"], r["knobs"],
            r["variant_ignored"], r["group"], r["best_of_group"], r["split"], "; ".join(r["notes"])]


def write_rows_csv(path, results):
    write_csv(path, [ROW_FIELDS] + [row_cells(r) for r in results])


# ---------------------------------------------------------------------------------------------
# Summary tables


def error_stats(rs):
    """[n, median |e|, rms e, 'min..max' of sim/hw, spearman] of rows with a simulated time."""
    rs = [r for r in rs if r["status"] == "ok" and not math.isnan(r["ratio"])]
    if not rs:
        return [0, "", "", "", ""]
    e = [r["ratio"] - 1 for r in rs]
    return [len(rs), "%.1f%%" % (100 * median([abs(x) for x in e])), "%.1f%%" % (100 * rms(e)),
            "%.2f..%.2f" % (min(r["ratio"] for r in rs), max(r["ratio"] for r in rs)),
            fmt(spearman([r["sim_us"] for r in rs], [r["hw_us"] for r in rs]), "%.2f")]


def splits_of(holdout):
    if holdout > 0:
        return [("all", lambda r: True), ("fit", lambda r: r["split"] == "fit"),
                ("held-out", lambda r: r["split"] == "held-out")]
    return [("all", lambda r: True)]


def class_table(results, holdout, best_only):
    """Per op class: the error statistics of each split."""
    rs = [r for r in results if r["status"] == "ok" and (r["best_of_group"] or not best_only)]
    splits = splits_of(holdout)
    header = ["class"]
    for name, _ in splits:
        header += ["%s n" % name, "med|e|", "rms e", "sim/hw", "rho"]
    table = [header]
    for cls in sorted({r["op_class"] for r in rs}) + ["(all classes)"]:
        sel = [r for r in rs if cls == "(all classes)" or r["op_class"] == cls]
        line = [cls]
        for _, pred in splits:
            line += error_stats([r for r in sel if pred(r)])
        table.append(line)
    return table


def target_stats(rs):
    rs = [r for r in rs if r["status"] == "ok" and not math.isnan(r["ratio"])]
    if not rs:
        return 0, float("nan"), float("nan"), "n/a"
    e = [abs(r["ratio"] - 1) for r in rs]
    med, p90 = median(e), percentile(e, 90)
    return len(rs), med, p90, "PASS" if med <= TARGET_MEDIAN and p90 <= TARGET_P90 else "FAIL"


def target_table(results, holdout):
    splits = splits_of(holdout)
    header = ["target group", "rows"]
    for name, _ in splits:
        header += ["%s n" % name, "median", "p90", "verdict"]
    table = [header]
    for name, pred in TARGETS:
        for label, best_only in (("best-of-group", True), ("all mapped", False)):
            sel = [r for r in results if pred(r) and (r["best_of_group"] or not best_only)]
            line = [name, label]
            for _, split in splits:
                n, med, p90, verdict = target_stats([r for r in sel if split(r)])
                line += [n, fmt(100 * med, "%.1f%%"), fmt(100 * p90, "%.1f%%"), verdict]
            table.append(line)
    return table


def add_algorithm_bounds(results, machine_set=None):
    """Sets alg_bound_us: the roofline bound (MachineDescription::dram_bound_ns and the datasheet PT peak on
    every core) of the row's minimal bytes and its MACs, the figure no hardware run may beat."""
    m = machine.source_values(machine_set)
    peak_macs_per_us = m["pt_peak_macs_per_cycle_fp16"] * m["clock_ghz"] * m["cores"] * 1000
    for r in results:
        if r["status"] != "ok":
            continue
        rd, wr = r["alg_read"], r["alg_write"]
        dram_us = ((rd + wr) / m["dram_bandwidth_gbps"] + m["dram_bound_turnaround_ns_per_byte"] * min(rd, wr)) / 1000
        r["alg_bound_us"] = max(dram_us, (r.get("macs") or 0) / peak_macs_per_us)


def bound_violations(results):
    return [r for r in results if r["status"] == "ok" and r["hw_us"] < r["alg_bound_us"]]


def bound_table(results):
    """Per op class: the rows whose card time is below the bound of their minimal bytes, and the worst."""
    table = [["class", "rows below bound", "of mapped", "min hw/bound", "worst row"]]
    bad = bound_violations(results)
    for cls in sorted({r["op_class"] for r in bad}):
        rs = [r for r in bad if r["op_class"] == cls]
        worst = min(rs, key=lambda r: r["hw_us"] / r["alg_bound_us"])
        mapped = sum(1 for r in results if r["status"] == "ok" and r["op_class"] == cls)
        table.append([cls, len(rs), mapped, "%.3f" % (worst["hw_us"] / worst["alg_bound_us"]),
                      "%s %s cores=%s: hw %.1f us, bound %.1f us" % (worst["id"], worst["shape"], worst["cores"],
                                                                     worst["hw_us"], worst["alg_bound_us"])])
    return table


def counts_line(results):
    by = {}
    for r in results:
        by[r["status"]] = by.get(r["status"], 0) + 1
    return ", ".join("%s %d" % kv for kv in sorted(by.items()))


def summary_text(results, holdout):
    parts = ["rows: %d (%s)" % (len(results), counts_line(results)),
             "", "Per op class, all mapped rows (e = sim/hw - 1; rho: Spearman of sim vs hw):",
             render_text(class_table(results, holdout, False)),
             "", "Per op class, best-of-group rows:", render_text(class_table(results, holdout, True)),
             "", "Single-resource targets (median |e| <= %d%%, p90 <= %d%%):" % (100 * TARGET_MEDIAN, 100 * TARGET_P90),
             render_text(target_table(results, holdout))]
    bad = bound_violations(results)
    parts += ["", "Rows with hw time below the bound of their minimal bytes: %d (rows.csv, hw_below_bound)" % len(bad)]
    if bad:
        parts.append(render_text(bound_table(results)))
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------
# The markdown report


def grouped(results, status):
    """[(op class, reason, count, ops, example id)] of the rows with `status`, by class and first note."""
    groups = {}
    for r in results:
        if r["status"] != status:
            continue
        key = (r["op_class"], r["notes"][0] if r["notes"] else "")
        g = groups.setdefault(key, [0, set(), r["id"]])
        g[0] += 1
        g[1].add(r["op"])
    return [(c, why, g[0], ", ".join(sorted(g[1])), g[2]) for (c, why), g in sorted(groups.items())]


def ignored_summary(results):
    """[(variant information ignored, rows)], the information stripped of its values."""
    counts = {}
    for r in results:
        if r["status"] == "unmapped":
            continue
        for item in filter(None, r["variant_ignored"].split("; ")):
            key = re.sub(r"\d+", "N", item)
            counts[key] = counts.get(key, 0) + 1
    return sorted(counts.items(), key=lambda kv: -kv[1])


def markdown(results, args, command):
    o = ["# Simulator fidelity against Spyre card timings", "",
         "Generated by `python3 -m benchmarks.fidelity.fidelity` (benchmarks/fidelity/README.md); do not edit by hand.", "",
         "```sh", command, "```", "",
         "Each row of `%s` that maps onto a project kernel (rules in `benchmarks/fidelity/row_mapping.py`) is "
         "compiled with its generator (`max_cores` = the row's cores, float16) and simulated timing-only; "
         "e = sim/hw - 1. A *group* is the rows of one op, shape, dtype and core count (different plans); its "
         "fastest row is the card's best plan (*best-of-group*). Groups are split by a hash of op and shape "
         "into fit and held-out (%d%% held out)." % (os.path.basename(args.csv), round(100 * args.holdout)),
         "", "Rows: %d (%s)." % (len(results), counts_line(results)),
         "", "## Targets", "",
         "Single-resource groups: median |e| <= %d%% and 90th percentile <= %d%%. Bytes moved are the torch op's "
         "minimal algorithmic bytes." % (100 * TARGET_MEDIAN, 100 * TARGET_P90), "",
         render_md(target_table(results, args.holdout)), "",
         "A group that misses is limited by the kernels on our side, not by a rate the calibration could move: "
         "see \"Where our kernel and the card's plan differ\" below (row reductions and gelu).",
         "", "## Per op class", "", "All mapped rows (rho: Spearman rank correlation of sim vs hw in the class):", "",
         render_md(class_table(results, args.holdout, False)), "", "Best-of-group rows:", "",
         render_md(class_table(results, args.holdout, True)), "",
         "## Calibration", "",
         "The machine description's measured (M) rates fitted to the train rows by "
         "`benchmarks/fidelity/calibrate.py` (the simulator in the loop: each candidate value re-simulates our "
         "kernels; only fit-split, best-of-group rows of each group's resource are fitted; held-out groups are "
         "reported, never fitted). The other parameters are published (P) or our estimates (E); "
         "`build/bin/spyre-info` prints them all.", "",
         render_md(calibration_table()), "",
         "## Against torch-spyre's fitted cost model", "",
         "RMS of e per class family, beside the RMS errors torch-spyre publishes for its own fitted model "
         "(their figures, on their data; \"ours better\" compares the best-of-group RMS with the upper end of "
         "theirs).", "", render_md(torch_spyre_table(results)), "",
         "## Where our kernel and the card's plan differ", "",
         "Rows of these classes are off because the two compilers plan differently, not because of a rate:", ""] + [
         "- **%s**: %s." % kv for kv in sorted(PLAN_DIFFERENCES.items())] + ["", "## The bound check", ""]
    bad = bound_violations(results)
    if bad:
        o += ["%d mapped rows have a card time below the roofline bound of their minimal bytes and MACs, which "
              "must stay a bound (each is marked `hw_below_bound` in rows.csv):" % len(bad), "",
              render_md(bound_table(results))]
    else:
        o += ["No mapped row's card time is below the roofline bound of its minimal bytes and MACs "
              "(the datasheet PT peak on every core; the bytes at `dram_bandwidth_gbps` plus "
              "`dram_bound_turnaround_ns_per_byte` x min(read, written)): the bound stays a bound."]
    for status, title in (("compile_error", "Compile failures"), ("sim_error", "Simulation failures"),
                          ("unmapped", "Unmapped rows")):
        g = grouped(results, status)
        if g:
            o += ["", "## " + title, "",
                  render_md([["class", "reason", "rows", "ops", "e.g. id"]] + [list(x) for x in g])]
    ign = ignored_summary(results)
    if ign:
        o += ["", "## Variant information no knob expresses", "",
              "Recorded per row in rows.csv (`variant_ignored`); N stands for the values.", "",
              render_md([["ignored", "rows"]] + [list(x) for x in ign])]
    return "\n".join(o) + "\n"


# torch-spyre's own fitted cost model on the same kind of data (its published RMS errors), by our
# op classes: the bar of the calibration issue.
TORCH_SPYRE_RMS = [
    ("memory-bound", {"add", "add_scalar", "add_bcast_row", "add_bcast_col", "mul_bcast_row", "neg", "transpose",
                      "sum_rows", "mean_rows", "amax_rows", "sum_cols", "gelu", "linear"}, "5-8.5%", 0.085),
    ("softmax", {"softmax"}, "21%", 0.21),
    ("matmul", {"matmul", "bmm_3d2d"}, "25-40%", 0.40),
    ("bmm", {"bmm"}, "25-40%", 0.40),
]
# Classes whose card plans are deliberately not ours: the error there is the plan's, not the model's.
PLAN_DIFFERENCES = {
    "bmm": "the card's rows force operand layouts (batch next to the stick) and work divisions that reach "
           "11-20 GB/s; our kernel keeps its own layout (batch outermost) and split, so it is 2-10x faster",
    "sum_cols": "the card's rows tile the column sum coarsely and re-read the input; ours reads it once",
    "softmax": "the card's coarse row tilings (the variants of a group) spill rows that do not fit the "
               "scratchpad; our planner picks its own tiles, so only the best-of-group rows compare plans",
    "sum_rows": "at 32 cores our reduce kernel stages 64 rows of 16 KiB per core single-buffered (its fp32 copy "
                "leaves no room for a second tile), so DMA and SFU do not overlap (sim/hw 1.2 at [2048,8192]); "
                "the card slows as rows per core grow (108 GB/s at 512 rows per core), which no rate explains",
    "gelu": "our gelu is 13 SFU instructions per row, 3 of them repeated casts of the same input (no SFU common-"
            "subexpression elimination yet): on 1-2 cores it is SFU-bound at 1.25-1.39x the card's time",
}


def calibration_table():
    """The machine description's fitted parameters: name, value, unit, rows, how they were fitted."""
    params = machine.source_document()["parameters"]
    table = [["parameter", "value", "unit", "fitted on", "how"]]
    for name, p in params.items():
        m = re.search(r"\[fitted: (.*)\]$", p.get("rationale", ""))
        if p.get("provenance") != "M" or not m:
            continue
        ids = p.get("fitted_on", [])
        table.append([name, "%g" % p["value"], p.get("unit", ""),
                      ("%d train rows (ids in spyre_machine.json)" % len(ids)) if ids else "all mapped train rows",
                      m.group(1)])
    return table


def torch_spyre_table(results):
    table = [["classes", "rows", "our RMS e (all mapped)", "our RMS e (best-of-group)", "torch-spyre's model",
              "ours better"]]
    for name, classes, theirs, limit in TORCH_SPYRE_RMS:
        rs = [r for r in results if r["op_class"] in classes and r["status"] == "ok" and not math.isnan(r["ratio"])]
        if not rs:
            continue
        e_all = rms([r["ratio"] - 1 for r in rs])
        e_best = rms([r["ratio"] - 1 for r in rs if r["best_of_group"]])
        table.append([name, str(len(rs)), "%.1f%%" % (100 * e_all), "%.1f%%" % (100 * e_best), theirs,
                      "yes" if e_best <= limit else "no"])
    return table


# ---------------------------------------------------------------------------------------------


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--csv", required=True, help="hardware timing CSV")
    kernel_runs.add_arguments(p)
    p.add_argument("--machine-set", help="k=v,... machine overrides for the simulation (SPYRE_MACHINE_SET)")
    p.add_argument("--only", help="op classes to run, comma-separated")
    p.add_argument("--holdout", type=float, default=0.3, help="fraction of row groups held out (0: no split)")
    p.add_argument("--md", help="write the markdown report here")
    return kernel_runs.parse_args(p)


def main():
    args = parse_args()
    t0 = time.time()
    rows = read_rows(args.csv)
    mappings = [map_row(r) for r in rows]
    if args.only:
        keep = set(args.only.split(","))
        selected = [i for i, m in enumerate(mappings) if m.op_class in keep]
        rows, mappings = [rows[i] for i in selected], [mappings[i] for i in selected]
    best_ids = best_of_groups(rows, mappings)
    kernels = {}
    for row, m in zip(rows, mappings):
        if m.mapped:
            kernels.setdefault((m.generator, tuple(m.generator_args())), row["id"])
    log("%d rows, %d mapped onto %d distinct kernels" % (len(rows), sum(m.mapped for m in mappings), len(kernels)))
    harness = Harness(args)
    results = result_rows(rows, mappings, run_kernels(harness, kernels, args.jobs), best_ids, args.holdout)
    add_algorithm_bounds(results, args.machine_set)
    write_rows_csv(os.path.join(args.out, "rows.csv"), results)
    text = summary_text(results, args.holdout)
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(text + "\n")
    print(text)
    if args.md:
        command = " ".join(["python3 -m benchmarks.fidelity.fidelity"] + [a for a in sys.argv[1:]])
        with open(args.md, "w") as f:
            f.write(markdown(results, args, command))
    log("wrote %s/rows.csv and summary.txt%s in %.1f s" % (args.out, " and " + args.md if args.md else "",
                                                          time.time() - t0))


if __name__ == "__main__":
    main()
