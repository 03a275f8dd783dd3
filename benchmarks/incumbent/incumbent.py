"""Our default schedules against torch-spyre's fastest measured plan, on the shapes of its own benchmark.

For every mappable row of a hardware timing CSV (/work/shared/hw/spyre_hw_timings_*.csv; the row
mapping of benchmarks/fidelity/row_mapping.py), rows are grouped by op class, core count and mapped
algorithm (the kernel's GeneratorParams: shape and dtype): the rows of one group are the card's
different plans of the same work (the variants of a sweep, and the sweeps that differ only in the
plan they force, such as `matmul:mm` and `matmul:mmwd`, a forced work division). Each group's kernel is compiled with OUR DEFAULT schedule: the generator's own planner, with
only the algorithm's GeneratorParams and `max_cores` = the row's core count (the documented parameter
names; no other knob), simulated timing-only on the built-in (calibrated) machine description, and
compared with the FASTEST hardware row of the group. Compiling, simulating and the caches are
benchmarks/spyre_bench/kernel_runs.py's, shared with the fidelity harness (same cache directory by
default, so a run after fidelity.py simulates nothing new).

Prints, per op class: the shapes, the geometric mean and the worst of ours / theirs, how many shapes
are within 1.05x and how many are faster; the issue's targets (ours <= 1.05x theirs on >= 95% of
shapes, geomean <= 0.7, no shape worse than 1.25x; then every losing shape not at the model's floor
within 1.05x and geomean <= 0.80), met or missed; the losing shapes (> 1.05x) at the model's floor
(DMA >= 95% busy on minimal bytes, every core used) in a table of their own, the card's time against
that floor; and every other losing shape with the run's own figures: our roofline bound and how close we are to it, the DRAM bytes we move
against the op's minimum, each unit's busy share on the busiest core, the cores used, the simulator's
bottleneck, and the card's time against the bound of the minimal bytes.

Usage (from the repository root):
  python3 -m benchmarks.incumbent.incumbent --csv PATH [--build build] [--out DIR] [--jobs N] [--only CLASS,...]
      [--md FILE]

  --out   cache directory (default BUILD/fidelity, the fidelity harness's); writes DIR/incumbent.csv
  --md    sets the `incumbent` section of FILE (docs/performance.md) to the markdown report
          (benchmarks/spyre_bench/doc_section.py; the rest of the file is kept)
"""
import argparse
import os
import sys
import time

from benchmarks.fidelity import fidelity
from benchmarks.fidelity.row_mapping import map_row
from benchmarks.spyre_bench.doc_section import with_section
from benchmarks.spyre_bench import kernel_runs
from benchmarks.spyre_bench.kernel_runs import Harness, run_kernels
from benchmarks.spyre_bench.progress import log
from benchmarks.spyre_bench.simulate import UNITS
from benchmarks.spyre_bench.stats import geomean
from benchmarks.spyre_bench.tables import fmt, render_md, render_text, write_csv

WITHIN = 1.05  # "as fast as the card": the allowance for two compilers at the same bound
TARGET_SHARE_WITHIN = 0.95
TARGET_GEOMEAN = 0.7
TARGET_WORST = 1.25
# Issue 35's targets: every losing shape not at the model's floor within WITHIN, the geomean, the worst.
TARGET_GEOMEAN_35 = 0.80
# A shape at the model's floor: its DMA at least this busy on the busiest core, moving no more than
# FLOOR_BYTES times the op's minimal bytes, on every core it was given (necessary work only: nothing a
# schedule could remove); or the card itself that busy: our time within 1 / FLOOR_BUSY of the calibrated
# floor the simulator reports (every argument read and written once at the calibrated DRAM rate and
# turnaround, the MACs at the sustained PT rate, on every core), so the card's DRAM (or every PT) does
# that share of the run in necessary work. Its card time is evidence for the fidelity work, not a
# schedule target.
FLOOR_BUSY = 0.95
FLOOR_BYTES = 1.005
# Thresholds of the mechanical reading of a losing shape's figures (see reading()).
NEAR_BOUND = 1.15  # simulated time within this factor of our own roofline bound
EXTRA_BYTES = 1.10  # moving more than this times the op's minimal bytes
BUSY_UNIT = 0.80  # a unit busy this share of the run on the busiest core binds
CSV_FIELDS = ["op_class", "op", "shape", "dtype", "cores", "best_hw_id", "hw_us", "hw_rows", "generator", "params",
              "status", "ours_us", "ours_over_theirs", "bound_us", "ours_over_bound", "calibrated_floor_us",
              "dram_bytes", "min_bytes", "bytes_over_min", "dma_busy_max", "pt_busy_max", "sfu_busy_max", "active_cores", "bottleneck",
              "hw_over_min_bound", "reading", "error"]


def group_key(mapping):
    """Rows of one shape: same op class and kernel (the algorithm's GeneratorParams and max_cores)."""
    return "|".join([mapping.op_class, mapping.generator] + mapping.generator_args())


def groups_of(rows, mappings):
    """[{row, mapping, rows}] per hardware group with a time: its fastest row and how many rows it has."""
    groups = {}
    for row, m in zip(rows, mappings):
        if not m.mapped or not fidelity.hw_time(row) > 0:
            continue
        g = groups.setdefault(group_key(m), {"row": row, "mapping": m, "rows": 0})
        g["rows"] += 1
        if fidelity.hw_time(row) < fidelity.hw_time(g["row"]):
            g["row"], g["mapping"] = row, m
    return list(groups.values())


# The findings a losing shape's figures can show: (name, predicate, text of the shape's figures).
FINDINGS = [
    ("fewer cores used than given", lambda r: r["active_cores"] < r["cores"],
     lambda r: "uses %d of %d cores" % (r["active_cores"], r["cores"])),
    ("more than %.2fx the minimal bytes" % EXTRA_BYTES, lambda r: r["bytes_over_min"] > EXTRA_BYTES,
     lambda r: "moves %.2fx the minimal bytes" % r["bytes_over_min"]),
    ("a unit busy >= %.0f%% (bound by it)" % (100 * BUSY_UNIT), lambda r: r["busy"][busiest(r)] >= BUSY_UNIT,
     lambda r: "%s-bound (%s busy %.0f%% on the busiest core)" % (busiest(r).upper(), busiest(r).upper(),
                                                                   100 * r["busy"][busiest(r)])),
    ("within %.2fx of our roofline bound" % NEAR_BOUND, lambda r: r["ours_over_bound"] <= NEAR_BOUND,
     lambda r: "at %.2fx our roofline bound: the card runs faster than the calibrated model's bound of the bytes "
               "we move" % r["ours_over_bound"]),
]
WAITING = "none of these: units wait on each other"


def busiest(r):
    return max(UNITS, key=lambda u: r["busy"][u])


def findings_of(r):
    return [name for name, pred, _ in FINDINGS if pred(r)] or [WAITING]


def reading(r):
    """What the figures say about a losing shape, from thresholds on them (never from the kernel's name)."""
    why = [text(r) for _, pred, text in FINDINGS if pred(r)]
    if not why:
        b = busiest(r)
        why.append("no unit busy %.0f%% or more (busiest: %s %.0f%%) and %.2fx our bound: units wait on each other"
                   % (100 * BUSY_UNIT, b.upper(), 100 * r["busy"][b], r["ours_over_bound"]))
    return "; ".join(why)


def of_calibrated_floor(r):
    """The share of our run the calibrated floor of the op's arguments takes (1.0: at that floor)."""
    return r["floor_us"] / r["ours_us"] if r["ours_us"] > 0 else 0.0


def at_floor(r):
    """Whether a simulated shape sits at the machine model's floor: its cores' DMA (FLOOR_BUSY, FLOOR_BYTES,
    all cores) or the card's calibrated floor (FLOOR_BUSY of the run)."""
    return ((r["busy"]["dma"] >= FLOOR_BUSY and r["bytes_over_min"] <= FLOOR_BYTES and
             r["active_cores"] == r["cores"]) or of_calibrated_floor(r) >= FLOOR_BUSY)


def losers_of(results, floor):
    """The losing shapes (> WITHIN) at the model's floor (floor=True) or not (False)."""
    return [r for r in results if r["status"] == "ok" and r["ratio"] > WITHIN and at_floor(r) == floor]


def findings_table(results):
    """How many losing shapes show each finding (a shape may show several), and in which classes."""
    losers = losers_of(results, False)
    table = [["finding", "losing shapes", "classes"]]
    for name in [f[0] for f in FINDINGS] + [WAITING]:
        rs = [r for r in losers if name in findings_of(r)]
        classes = {}
        for r in rs:
            classes[r["op_class"]] = classes.get(r["op_class"], 0) + 1
        table.append([name, str(len(rs)), ", ".join("%s %d" % kv for kv in sorted(classes.items()))])
    return table


def shape_results(groups, sims, machine_set):
    out = []
    for g in groups:
        row, m = g["row"], g["mapping"]
        status, res, error = sims[(m.generator, tuple(m.generator_args()))]
        r = {"op_class": m.op_class, "op": row["op"], "shape": row["shape"], "dtype": row["dtype"],
             "cores": m.knobs["max_cores"], "best_hw_id": row["id"], "hw_us": fidelity.hw_time(row),
             "hw_rows": g["rows"], "generator": "gen_" + m.generator, "params": " ".join(m.generator_args()),
             "status": status, "error": error, "alg_read": m.alg_read, "alg_write": m.alg_write}
        if status == "ok":
            dram = res["dram_read_bytes"] + res["dram_write_bytes"]
            r.update(ours_us=res["simulated_us"], bound_us=res["roofline_bound_us"],
                     floor_us=res["calibrated_floor_us"], dram_bytes=dram,
                     min_bytes=m.alg_bytes, bytes_over_min=dram / m.alg_bytes if m.alg_bytes else float("nan"),
                     macs=res["macs"], active_cores=res["active_cores"], bottleneck=res["bottleneck"],
                     busy={u: res["unit_busy"][u]["max"] for u in UNITS})
            r["ratio"] = r["ours_us"] / r["hw_us"]
            r["ours_over_bound"] = r["ours_us"] / r["bound_us"] if r["bound_us"] > 0 else float("nan")
        out.append(r)
    fidelity.add_algorithm_bounds(out, machine_set)
    for r in out:
        if r["status"] == "ok":
            r["hw_over_min_bound"] = r["hw_us"] / r["alg_bound_us"]
            r["reading"] = reading(r) if r["ratio"] > WITHIN else ""
    return sorted(out, key=lambda r: (r["op_class"], r["shape"], r["cores"]))


# ---------------------------------------------------------------------------------------------
# Tables


def class_line(name, rs):
    ok = [r for r in rs if r["status"] == "ok"]
    ratios = [r["ratio"] for r in ok]
    failed = len(rs) - len(ok)
    return [name, str(len(rs)) + (" (%d failed)" % failed if failed else ""),
            fmt(geomean(ratios), "%.2f"), fmt(max(ratios) if ratios else None, "%.2f"),
            str(sum(x <= WITHIN for x in ratios)), str(sum(x < 1 for x in ratios))]


def class_table(results):
    table = [["class", "shapes", "ours/theirs geomean", "worst", "<= %.2fx" % WITHIN, "faster"]]
    table.append(class_line("(all mapped)", results))
    for cls in sorted({r["op_class"] for r in results}):
        table.append(class_line(cls, [r for r in results if r["op_class"] == cls]))
    return table


def target_table(results):
    """Issue 19's and issue 35's targets, over every mapped shape (a shape that failed to compile or run misses)."""
    ok = [r for r in results if r["status"] == "ok"]
    n = len(results)
    within = sum(r["ratio"] <= WITHIN for r in ok)
    worse = [r for r in ok if r["ratio"] > TARGET_WORST]
    gm = geomean([r["ratio"] for r in ok])
    worst = max((r["ratio"] for r in ok), default=float("nan"))
    failed = n - len(ok)
    off_floor = losers_of(results, False)
    worse_at_floor = [r for r in worse if at_floor(r)]
    worst_off_floor = max((r["ratio"] for r in ok if not at_floor(r)), default=float("nan"))
    return [["issue", "target", "figure", "verdict"],
            ["35", "every losing shape not at the model's floor within %.2fx" % WITHIN,
             "%d losing shapes not at the floor (%d at it)%s" % (len(off_floor), len(losers_of(results, True)),
                                                                 ", %d failed" % failed if failed else ""),
             "met" if not off_floor and not failed else "MISSED"],
            ["35", "geomean of ours/theirs <= %.2f" % TARGET_GEOMEAN_35, "%.3f" % gm,
             "met" if gm <= TARGET_GEOMEAN_35 else "MISSED"],
            ["19, 35", "no shape worse than %.2fx" % TARGET_WORST,
             "worst %.2fx; %d shapes above (%d at the model's floor; worst off it %.2fx)%s"
             % (worst, len(worse), len(worse_at_floor), worst_off_floor, ", %d failed" % failed if failed else ""),
             "met" if not worse and not failed else "MISSED"],
            ["19", "ours <= %.2fx theirs on >= %d%% of shapes" % (WITHIN, round(100 * TARGET_SHARE_WITHIN)),
             "%d of %d (%.1f%%)" % (within, n, 100.0 * within / n if n else float("nan")),
             "met" if n and within >= TARGET_SHARE_WITHIN * n else "MISSED"],
            ["19", "geomean of ours/theirs <= %.2f" % TARGET_GEOMEAN, "%.3f" % gm,
             "met" if gm <= TARGET_GEOMEAN else "MISSED"]]


def pct(x):
    return "%.0f%%" % (100 * x)


def loser_table(results):
    table = [["class", "shape", "cores", "ours us", "theirs us", "ours/theirs", "our bound us", "ours/bound",
              "calibrated floor us", "of it", "bytes/min", "DMA busy", "PT busy", "SFU busy", "cores used", "bottleneck",
              "theirs/min-bytes bound", "reading"]]
    for r in sorted(losers_of(results, False), key=lambda r: -r["ratio"]):
        table.append([r["op_class"], r["shape"], str(r["cores"]), "%.1f" % r["ours_us"], "%.1f" % r["hw_us"],
                      "%.2f" % r["ratio"], "%.1f" % r["bound_us"], "%.2f" % r["ours_over_bound"],
                      "%.1f" % r["floor_us"], pct(of_calibrated_floor(r)),
                      "%.2f" % r["bytes_over_min"], pct(r["busy"]["dma"]), pct(r["busy"]["pt"]),
                      pct(r["busy"]["sfu"]), "%d/%d" % (r["active_cores"], r["cores"]), r["bottleneck"],
                      "%.2f" % r["hw_over_min_bound"], r["reading"]])
    return table


def floor_table(results):
    """The losing shapes at the model's floor: the card's time against it (our time, on minimal bytes)."""
    table = [["class", "shape", "cores", "card us", "model's floor us", "card/floor", "DMA busy", "bytes/min",
              "of the calibrated floor", "theirs/min-bytes bound"]]
    for r in sorted(losers_of(results, True), key=lambda r: -r["ratio"]):
        table.append([r["op_class"], r["shape"], str(r["cores"]), "%.1f" % r["hw_us"], "%.1f" % r["ours_us"],
                      "%.2f" % (r["hw_us"] / r["ours_us"]), pct(r["busy"]["dma"]), "%.2f" % r["bytes_over_min"],
                      pct(of_calibrated_floor(r)), "%.2f" % r["hw_over_min_bound"]])
    return table


def failure_table(results):
    table = [["class", "shape", "cores", "generator and params", "status", "error"]]
    for r in results:
        if r["status"] != "ok":
            table.append([r["op_class"], r["shape"], str(r["cores"]), r["generator"] + " " + r["params"], r["status"],
                          r["error"][:200]])
    return table


def csv_cells(r):
    """incumbent.csv's line of one shape (CSV_FIELDS)."""
    ok = r["status"] == "ok"
    return ([r["op_class"], r["op"], r["shape"], r["dtype"], r["cores"], r["best_hw_id"],
             fmt(r["hw_us"]), r["hw_rows"], r["generator"], r["params"], r["status"]] +
            ([fmt(r["ours_us"]), fmt(r["ratio"], "%.4f"), fmt(r["bound_us"]),
              fmt(r["ours_over_bound"], "%.4f"), fmt(r["floor_us"]), r["dram_bytes"], r["min_bytes"],
              fmt(r["bytes_over_min"], "%.4f")] +
             [fmt(r["busy"][u], "%.4f") for u in UNITS] +
             [r["active_cores"], r["bottleneck"], fmt(r["hw_over_min_bound"], "%.4f"),
              r["reading"]] if ok else [""] * 15) + [r["error"]])


def summary_text(results):
    parts = ["Per op class (ours = our default schedule simulated; theirs = the card's fastest row of the group):",
             render_text(class_table(results)), "", "Targets:", render_text(target_table(results))]
    losers = loser_table(results)
    parts += ["", "Shapes slower than %.2fx the card, not at the model's floor: %d" % (WITHIN, len(losers) - 1)]
    if len(losers) > 1:
        parts += [render_text(findings_table(results)), "", render_text(losers)]
    floors = floor_table(results)
    parts += ["", "Shapes slower than %.2fx the card at the model's floor: %d" % (WITHIN, len(floors) - 1)]
    if len(floors) > 1:
        parts += [render_text(floors)]
    failures = failure_table(results)
    if len(failures) > 1:
        parts += ["", "Shapes that did not compile or run: %d" % (len(failures) - 1), render_text(failures)]
    return "\n".join(parts)


def markdown(results, command, csv_name):
    o = ["## Against torch-spyre on its own benchmark", "",
         "Generated by `python3 -m benchmarks.incumbent.incumbent` (benchmarks/incumbent/README.md); do not edit by hand:",
         "", "```sh", command, "```", "",
         "Every mappable row of `%s` (the rules of `benchmarks/fidelity/row_mapping.py`), grouped by op class, "
         "shape and cores (the sweeps of one torch op that differ only in the plan they force are one group): *ours* is our default schedule for the group's shape (the generator's own planner, "
         "`max_cores` = the row's cores, no other knob) simulated timing-only on the calibrated machine "
         "description; *theirs* is the fastest card time of the group (torch-spyre's best measured plan). "
         "Within %.2fx counts as as fast as the card." % (csv_name, WITHIN), "",
         render_md(class_table(results)), "", "Targets (over every mapped shape):", "",
         render_md(target_table(results))]
    floors = floor_table(results)
    o += ["", "### Where we are slower than %.2fx the card at the model's floor (%d shapes)" % (WITHIN, len(floors) - 1),
          "",
          "Shapes whose DMA is at least %.0f%% busy on the busiest core, moving at most %.3fx the op's minimal "
          "bytes, on every core given, or whose run the calibrated floor of the op's arguments fills to at least "
          "%.0f%% (the simulator's `calibrated floor`: every argument read and written once at the calibrated "
          "DRAM rate and turnaround, the MACs at the sustained PT rate, on every core: the card's DRAM or PTs "
          "busy that share of the run on necessary work): no schedule moves less or keeps the limiting unit "
          "busier on this machine model, so our time is the model's floor for the shape and the card's time "
          "against it is evidence for the fidelity work (docs/fidelity.md), not a schedule target."
          % (100 * FLOOR_BUSY, FLOOR_BYTES, 100 * FLOOR_BUSY), ""]
    o += [render_md(floors)] if len(floors) > 1 else ["None."]
    losers = loser_table(results)
    o += ["", "### Where we are slower than %.2fx the card, not at the model's floor (%d shapes)"
          % (WITHIN, len(losers) - 1), ""]
    if len(losers) > 1:
        o += ["The run's own figures: our roofline bound (`roofline_bound_us` of the bytes and MACs we move) and "
              "how close we are to it, the calibrated floor of the op's arguments and the share of our run it "
              "fills, the DRAM bytes we move against the op's minimum, each unit's busy share on "
              "the busiest core, the cores with work, the simulator's bottleneck, and the card's time against the "
              "bound of the minimal bytes (below 1.0 would mean the card beats it). *reading* states what those "
              "figures show (thresholds: within %.2fx of the bound, more than %.2fx the bytes, a unit %.0f%% busy)."
              % (NEAR_BOUND, EXTRA_BYTES, 100 * BUSY_UNIT), "", "What they show (a shape may show several):", "",
              render_md(findings_table(results)), "", render_md(losers)]
    else:
        o += ["None."]
    failures = failure_table(results)
    if len(failures) > 1:
        o += ["", "### Shapes that did not compile or run (%d)" % (len(failures) - 1), "", render_md(failures)]
    return "\n".join(o) + "\n"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--csv", required=True, help="hardware timing CSV")
    kernel_runs.add_arguments(p)
    p.add_argument("--only", help="op classes to run, comma-separated")
    p.add_argument("--md", help="set the incumbent section of this markdown file (docs/performance.md)")
    args = kernel_runs.parse_args(p)
    args.machine_set = None  # the built-in, calibrated machine description
    return args


def main():
    args = parse_args()
    if "SPYRE_MACHINE_SET" in os.environ or "SPYRE_MACHINE" in os.environ:
        raise SystemExit("incumbent.py compares on the built-in calibrated machine description: unset "
                         "SPYRE_MACHINE and SPYRE_MACHINE_SET")
    t0 = time.time()
    rows = fidelity.read_rows(args.csv)
    mappings = [map_row(r) for r in rows]
    if args.only:
        keep = set(args.only.split(","))
        pairs = [(r, m) for r, m in zip(rows, mappings) if m.op_class in keep]
        rows, mappings = [p[0] for p in pairs], [p[1] for p in pairs]
    groups = groups_of(rows, mappings)
    kernels = {}
    for g in groups:
        kernels.setdefault((g["mapping"].generator, tuple(g["mapping"].generator_args())), g["row"]["id"])
    log("%d rows, %d groups with a card time onto %d distinct kernels" % (len(rows), len(groups), len(kernels)))
    sims = run_kernels(Harness(args), kernels, args.jobs)
    results = shape_results(groups, sims, args.machine_set)
    write_csv(os.path.join(args.out, "incumbent.csv"), [CSV_FIELDS] + [csv_cells(r) for r in results])
    print(summary_text(results))
    if args.md:
        command = " ".join(["python3 -m benchmarks.incumbent.incumbent"] + sys.argv[1:])
        text = open(args.md).read() if os.path.exists(args.md) else ""
        with open(args.md, "w") as f:
            f.write(with_section(text, "incumbent", markdown(results, command, os.path.basename(args.csv))))
    log("wrote %s/incumbent.csv%s in %.1f s" % (args.out, " and " + args.md if args.md else "", time.time() - t0))


if __name__ == "__main__":
    main()
