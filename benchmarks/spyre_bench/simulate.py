"""Simulating a Spyre program timing-only and reading its figures.

simulate() runs `BUILD/bin/spyre-run PROG --timing-only [--report R.json] [--param k=v]...` (the cycles
of a functional run without computing values); with a report path it returns the JSON report
(runtime/sim/src/report.cpp: simulated_us, roofline_bound_us, calibrated_floor_us, dram_read_bytes, macs,
bottleneck, active_cores, cores[] with each unit's utilization, ...). simulated_time_us() reads the
time spyre-run prints. scalars_of() gives the --param values of a program's run-time scalars.
"""
import json
import os
import re
import subprocess

from benchmarks.spyre_bench.errors import first_error

# Run-time scalars by name; any other scalar gets 1.
SCALAR_DEFAULTS = {"eps": "1e-5"}
UNITS = ("dma", "pt", "sfu")


class Simulated:
    """One spyre-run: report (the JSON report when asked for and the run succeeded, else None), stdout,
    error (the first error line of a failed run, '' otherwise), timed_out."""

    def __init__(self, report, stdout, error, timed_out=False):
        self.report, self.stdout, self.error, self.timed_out = report, stdout, error, timed_out


def spyre_run(build):
    return os.path.join(build, "bin", "spyre-run")


def command(build, program, report=None, scalars=()):
    cmd = [spyre_run(build), program, "--timing-only"] + (["--report", report] if report else [])
    for s in scalars:
        cmd += ["--param", s]
    return cmd


def simulate(build, program, report=None, scalars=(), env=None, timeout=None):
    """Runs the program timing-only; `report` is where spyre-run writes the JSON report (None: no report)."""
    try:
        p = subprocess.run(command(build, program, report, scalars), capture_output=True, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return Simulated(None, "", "simulation did not finish in %d s" % timeout, True)
    if p.returncode != 0:
        return Simulated(None, p.stdout, first_error(p.stderr + "\n" + p.stdout))
    if report is None:
        return Simulated(None, p.stdout, "")
    with open(report) as f:
        return Simulated(json.load(f), p.stdout, "")


def simulated_time_us(stdout):
    """The simulated time spyre-run prints ("simulated time   12.345 us")."""
    return float(re.search(r"simulated time\s+([\d.]+) us", stdout).group(1))


def scalar_value(name):
    """The value passed to spyre-run for a program's run-time scalar `name`."""
    return SCALAR_DEFAULTS.get(name, "1")


def scalars_of(program):
    """spyre-run --param values for the program's run-time scalars (`.param NAME TYPE` lines of PROG.txt)."""
    out = []
    with open(program + ".txt") as f:
        for line in f:
            if line.startswith(".param "):
                name = line.split()[1]
                out.append("%s=%s" % (name, scalar_value(name)))
            elif line.startswith(".core"):
                break
    return out


def unit_busy(report):
    """{unit: {"mean": m, "max": x}}: each unit's busy share (utilization) over the report's active cores
    (cores that ran a timed instruction), the mean and the busiest core's."""
    active = [c for c in report.get("cores", []) if any(c[u]["instructions"] for u in UNITS)]
    out = {}
    for u in UNITS:
        shares = [c[u]["utilization"] for c in active] or [0.0]
        out[u] = {"mean": sum(shares) / len(shares), "max": max(shares)}
    return out
