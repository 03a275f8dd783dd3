"""Fits the timing model's measured (M) rates to hardware timings, with the simulator in the loop.

Each fit group names a few machine parameters and the hardware rows one resource bounds (the
matmul unit, DRAM, the SFU). The group's parameters are searched (coordinate descent, a golden-
section search per parameter within physical bounds, a few rounds) to minimise the RMS of
log(sim / hw) over the group's FIT rows, where `sim` is the simulated time of the project's own
kernel for the row (benchmarks/fidelity/fidelity.py compiles it once; each candidate value only
re-simulates, SPYRE_MACHINE_SET). Only the fastest row of each hardware group (the card's best plan
of that op and shape) is fitted: the other variants are plans we do not reproduce. Rows of held-out
groups (fidelity.py's --holdout split) are never fitted and are reported separately.

The groups are fitted in order, each on the values the earlier ones found: PT (compute-bound
matmuls on 1-4 cores), DRAM (memory-bound kernels where the SFU and PT are far from binding), SFU
(gelu, softmax and row reductions on 1-2 cores). Then the DRAM bound's turnaround is set to the
largest value no mapped train row beats (the bound stays a bound).

Usage (from the repository root):
  python3 -m benchmarks.fidelity.calibrate --csv TRAIN.csv [--build build] [--out DIR] [--rounds 2]
                                           [--groups pt,dram,sfu] [--write-machine]
--write-machine stores the fitted values, with provenance M and the fitted row ids, in
runtime/machine/spyre_machine.json (rebuild afterwards: the JSON is compiled into the runtime).
The search never reads the hardware data at run time of the simulator: it only chooses the
numbers of the machine description.
"""
import argparse
import json
import math
import re
import time

from benchmarks.fidelity import fidelity
from benchmarks.fidelity.row_mapping import LARGE_BYTES, ROW_REDUCTIONS, map_row
from benchmarks.spyre_bench import kernel_runs, machine, progress
from benchmarks.spyre_bench.kernel_runs import Harness, run_kernels
from benchmarks.spyre_bench.stats import median, percentile, rms

MACHINE_JSON = machine.SOURCE_JSON
STREAMING = {"add", "add_scalar", "add_bcast_row", "add_bcast_col", "mul_bcast_row", "neg", "transpose", "linear"}


def is_pt_row(r):
    return r["op_class"] == "matmul" and r["cores"] <= 4


def is_dram_row(r):
    # Memory-bound kernels big enough that the DMA latency and issue overheads do not matter:
    # streaming ops on any core count, and gelu and row reductions where 32 cores leave the
    # SFU far from binding.
    if r["alg_bytes"] < LARGE_BYTES:
        return False
    if r["op_class"] in STREAMING:
        return True
    return r["op_class"] in ROW_REDUCTIONS | {"gelu"} and r["cores"] == 32


def is_sfu_row(r):
    return r["op_class"] in ROW_REDUCTIONS | {"gelu", "softmax"} and r["cores"] <= 2


# (name, rows, [(parameter, low, high, kind)]): kind "log" searches log(value), "lin" the value.
GROUPS = [
    ("pt", is_pt_row, [("pt_sustained_macs_per_ns", 600, 1536, "log"), ("pt_pass_fill_cycles", 0, 200, "lin")]),
    ("dram", is_dram_row, [("dram_bandwidth_gbps", None, 220, "log"), ("dram_turnaround_ns_per_byte", 0, 0.012, "lin"),
                           ("dram_one_core_fraction", 0.2, 1.0, "lin")]),
    ("sfu", is_sfu_row, [("sfu_bytes_per_cycle_per_corelet", 8, 512, "log"), ("sfu_transcendental_cost", 1, 8, "lin"),
                         ("sfu_row_reduce_cost", 1, 64, "log"), ("sfu_row_reduce_row_cycles", 0, 400, "lin")]),
]
GOLDEN = (math.sqrt(5) - 1) / 2


def log(msg):
    progress.log("calibrate: " + msg)


class Evaluator:
    """Simulated results of a set of rows under machine overrides (kernels compiled once)."""

    def __init__(self, args, rows, mappings):
        self.args = args
        self.rows, self.mappings = rows, mappings
        self.best = fidelity.best_of_groups(rows, mappings)

    def results(self, overrides, selected):
        h = argparse.Namespace(build=self.args.build, out=self.args.out, machine_set=",".join(
            "%s=%.10g" % kv for kv in sorted(overrides.items())))
        harness = Harness(h)
        kernels = {}
        for i in selected:
            m = self.mappings[i]
            kernels.setdefault((m.generator, tuple(m.generator_args())), self.rows[i]["id"])
        sims = run_kernels(harness, kernels, self.args.jobs)
        rows = [self.rows[i] for i in selected]
        maps = [self.mappings[i] for i in selected]
        return fidelity.result_rows(rows, maps, sims, self.best, self.args.holdout)


# Rows off by more than this factor are not errors of a rate (our plan differs from the card's, or
# another resource binds): in the objective their log error counts as this much, so they cannot
# pull a rate away from the rows it does explain.
LOG_ERROR_CAP = math.log(1.5)


def log_errors(results, split):
    return [max(-LOG_ERROR_CAP, min(LOG_ERROR_CAP, math.log(r["ratio"]))) for r in results
            if r["status"] == "ok" and r["best_of_group"] and r["split"] == split and r["ratio"] > 0]


def describe(results, split):
    e = [abs(r["ratio"] - 1) for r in results
         if r["status"] == "ok" and r["best_of_group"] and r["split"] == split]
    if not e:
        return "no rows"
    return "%d rows, median |sim/hw-1| %.1f%%, p90 %.1f%%, RMS %.1f%%" % (
        len(e), 100 * median(e), 100 * percentile(e, 90), 100 * rms(e))


def golden_search(f, lo, hi, iters):
    a, b = lo, hi
    c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - GOLDEN * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + GOLDEN * (b - a)
            fd = f(d)
    return (c, fc) if fc < fd else (d, fd)


def fit_group(ev, name, selector, params, values, rounds, iters):
    """Fits `params` on the group's fit rows; returns (values, fit rows' ids, fit/held-out text)."""
    base = ev.results(values, range(len(ev.rows)))  # one pass to learn which rows the selector keeps
    selected = [i for i, r in enumerate(base) if r["status"] == "ok" and selector(r)]
    fit_ids = sorted(base[i]["id"] for i in selected if base[i]["best_of_group"] and base[i]["split"] == "fit")
    log("group %s: %d rows (%d best-of-group fit rows); start %s" % (
        name, len(selected), len(fit_ids), describe([base[i] for i in selected], "fit")))

    def objective(v):
        return rms(log_errors(ev.results(v, selected), "fit"))

    values = dict(values)
    current = objective(values)
    for rnd in range(rounds):
        for p, lo, hi, kind in params:
            if lo is None:  # the peak DRAM rate may not be below a rate the card was measured at
                lo = max_measured_rate(base)
            to = (lambda x: math.log(x)) if kind == "log" else (lambda x: x)
            back = (lambda y: math.exp(y)) if kind == "log" else (lambda y: y)

            def f(y, p=p, back=back):
                trial = dict(values)
                trial[p] = round(back(y), 6)
                return objective(trial)

            y, best = golden_search(f, to(lo), to(hi), iters)
            if best < current:
                values[p], current = round(back(y), 6), best
            log("group %s round %d: %s = %g (RMS log error %.4f)" % (name, rnd + 1, p, values[p], current))
    final = ev.results(values, selected)
    return values, fit_ids, "fit: %s; held-out: %s" % (describe(final, "fit"), describe(final, "held-out"))


def max_measured_rate(results):
    """The highest DRAM rate (GB/s of algorithmic bytes) of any mapped row."""
    rates = [r["alg_bytes"] / (r["hw_us"] * 1000) for r in results if r["status"] == "ok" and r["alg_bytes"]
             and r["hw_us"] > 0]
    return max(rates)


def bound_turnaround(ev, values):
    """The largest turnaround the DRAM bound may charge so that no mapped row beats the bound of
    its minimal bytes (balanced rows only give a limit; reads and writes from the row mapping)."""
    limit = values["dram_turnaround_ns_per_byte"]
    for row, m in zip(ev.rows, ev.mappings):
        hw = fidelity.hw_time(row)
        if not m.mapped or not hw > 0 or not m.alg_read or not m.alg_write:
            continue
        slack = hw * 1000 - (m.alg_read + m.alg_write) / values["dram_bandwidth_gbps"]
        limit = min(limit, max(0.0, slack / min(m.alg_read, m.alg_write)))
    return math.floor(limit * 1e6) / 1e6


def write_machine(values, provenance):
    with open(MACHINE_JSON) as f:
        text = f.read()
    doc = json.loads(text)
    for name, (ids, note) in provenance.items():
        p = doc["parameters"][name]
        p["value"] = float("%.4g" % values[name])  # four significant digits: the data supports no more
        p["provenance"] = "M"
        p["rationale"] = re.sub(r" \[fitted: .*\]$", "", p.get("rationale", "")) + " [fitted: %s]" % note
        p["fitted_on"] = ids
    with open(MACHINE_JSON, "w") as f:
        f.write(format_machine(doc))


def format_machine(doc):
    """The machine JSON with one parameter per line (fitted_on lists wrapped), as the file is kept."""
    lines = ["{"]
    for k in doc:
        if k != "parameters":
            lines.append("  %s: %s," % (json.dumps(k), json.dumps(doc[k])))
    lines.append('  "parameters": {')
    items = list(doc["parameters"].items())
    for n, (name, p) in enumerate(items):
        fields = ", ".join("%s: %s" % (json.dumps(k), json.dumps(v)) for k, v in p.items() if k != "fitted_on")
        if "fitted_on" in p:
            fields += ',\n      "fitted_on": %s' % json.dumps(p["fitted_on"])
        lines.append("    %s: { %s }%s" % (json.dumps(name), fields, "," if n + 1 < len(items) else ""))
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", required=True)
    kernel_runs.add_arguments(ap)
    ap.add_argument("--holdout", type=float, default=0.3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10, help="golden-section steps per parameter and round")
    ap.add_argument("--groups", default="pt,dram,sfu")
    ap.add_argument("--write-machine", action="store_true")
    args = kernel_runs.parse_args(ap)
    t0 = time.time()
    rows = fidelity.read_rows(args.csv)
    mappings = [map_row(r) for r in rows]
    ev = Evaluator(args, rows, mappings)
    all_values = machine.source_values()
    fitted = {p: all_values[p] for _, _, params in GROUPS for p, *_ in params}
    # The bound's turnaround does not change simulated times; 0 keeps every searched turnaround legal.
    fitted["dram_bound_turnaround_ns_per_byte"] = 0.0
    provenance, report = {}, []
    for name, selector, params in GROUPS:
        if name not in args.groups.split(","):
            continue
        fitted, ids, text = fit_group(ev, name, selector, params, fitted, args.rounds, args.iters)
        report.append("%s: %s" % (name, text))
        for p, *_ in params:
            provenance[p] = (ids, "%s group, %d best-of-group train rows by calibrate.py; %s" % (name, len(ids), text))
    fitted["dram_bound_turnaround_ns_per_byte"] = bound_turnaround(ev, fitted)
    provenance["dram_bound_turnaround_ns_per_byte"] = (
        [], "the largest turnaround no mapped train row beats, at dram_bandwidth_gbps, by calibrate.py")
    print(json.dumps(fitted, indent=1, sort_keys=True))
    for line in report:
        print(line)
    if args.write_machine:
        write_machine(fitted, provenance)
        log("wrote %s (rebuild to use it)" % MACHINE_JSON)
    log("done in %.0f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
