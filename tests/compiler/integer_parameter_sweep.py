#!/usr/bin/python3
"""Runs every generator with every integer parameter (shape and schedule knob) at
0, -1, INT_MAX and INT_MAX + 1, and checks that each run either compiles (exit 0,
the outputs written) or is refused with exactly one line "gen_X: error: ..." that
names the parameter and quotes the value as given, exit status 1. Never a signal,
never a hang (each run is bounded), never an accepted INT_MAX.

The parameters are read from the sources, so a new one is swept without editing
this file: each generator's `GeneratorParam<int> name{"key", ...}` and the
`X(int, key, ...)` entries of the knob table its SPYRE_KNOB_GENERATOR_PARAMS names
(schedules/*_schedule.h); rmsnorm and layernorm take norm_generator.h's.

usage: integer_parameter_sweep.py SOURCE_DIR BIN_DIR [GENERATOR...]
"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

VALUES = ["0", "-1", "2147483647", "2147483648"]
TIMEOUT_S = 300


def integer_parameters(source_dir):
    """{generator: [parameter keys]} from the generator and schedule sources."""
    knob_tables = {}
    sched = os.path.join(source_dir, "schedules")
    for name in os.listdir(sched):
        if not name.endswith(".h"):
            continue
        text = open(os.path.join(sched, name)).read()
        for m in re.finditer(r"#define (SPYRE_\w+_KNOBS)\(X\)((?:.*\\\n)*.*)", text):
            knob_tables[m.group(1)] = re.findall(r"X\(int,\s*(\w+)", m.group(2))
    gens = os.path.join(source_dir, "generators")

    def params_of(text):
        keys = re.findall(r'GeneratorParam<int>\s+\w+\{"(\w+)"', text)
        for table in re.findall(r"SPYRE_KNOB_GENERATOR_PARAMS\((SPYRE_\w+_KNOBS)\)", text):
            if table not in knob_tables:
                raise SystemExit(f"knob table {table} not found in schedules/*.h")
            keys += knob_tables[table]
        return keys

    out = {}
    for name in sorted(os.listdir(gens)):
        m = re.fullmatch(r"(\w+)_generator\.cpp", name)
        if not m:
            continue
        text = open(os.path.join(gens, name)).read()
        for inc in re.findall(r'#include "(\w+_generator\.h)"', text):
            text += open(os.path.join(gens, inc)).read()
        reg = re.search(r"HALIDE_REGISTER_GENERATOR\(\w+,\s*(\w+)\)", text)
        if reg:
            out[reg.group(1)] = params_of(text)
    return out


def run_one(bin_dir, generator, key, value, out_dir):
    exe = os.path.join(bin_dir, "gen_" + generator)
    cmd = [exe, "-g", generator, "-f", f"{generator}_{key}", "-o", out_dir, "-e", "c_header",
           "-target=spyre", f"{key}={value}"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"{generator} {key}={value}: no answer within {TIMEOUT_S} s (a hang)"
    err_lines = [l for l in r.stderr.splitlines() if l.strip()]
    where = f"{generator} {key}={value}"
    if r.returncode < 0 or r.returncode >= 128:
        return f"{where}: killed by a signal (status {r.returncode}): {r.stderr.strip()[-300:]}"
    if r.returncode == 0:
        if value != "0":
            return f"{where}: accepted (exit 0); only 0 may be (each integer knob's 'chosen' value)"
        if not os.path.exists(os.path.join(out_dir, f"{generator}_{key}.h")):
            return f"{where}: exit 0 but no header written"
        return None
    if r.returncode != 1:
        return f"{where}: exit {r.returncode}, expected 0 or 1"
    if len(err_lines) != 1:
        return f"{where}: {len(err_lines)} lines on stderr, expected one:\n    " + "\n    ".join(err_lines[:6])
    line = err_lines[0]
    if not re.match(r"\S*gen_" + generator + r": error: ", line):
        return f"{where}: the line is not 'gen_{generator}: error: ...': {line}"
    # "key=value" or "key" ... "value", each a whole word (not part of "gen_matmul" or of -2147483648).
    named_pair = re.search(r"(?<![\w-])" + re.escape(key) + "=" + re.escape(value) + r"(?!\d)", line)
    named_apart = (re.search(r"(?<![\w-])" + re.escape(key) + r"(?!\w)", line.split(": error: ", 1)[-1]) and
                   re.search(r"(?<![\w-])" + re.escape(value) + r"(?!\d)", line))
    if not (named_pair or named_apart):
        return f"{where}: the error does not name the parameter and the value as given: {line}"
    return None


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    source_dir, bin_dir = sys.argv[1], sys.argv[2]
    params = integer_parameters(source_dir)
    only = sys.argv[3:]
    if only:
        params = {g: p for g, p in params.items() if g in only}
    if not params or any(not p for p in params.values()):
        raise SystemExit(f"no integer parameters found for some generator: {params}")
    jobs = [(g, k, v) for g, keys in params.items() for k in keys for v in VALUES]
    print(f"{len(jobs)} runs: {sum(len(p) for p in params.values())} integer parameters of "
          f"{len(params)} generators x {VALUES}", flush=True)
    failures = []
    with tempfile.TemporaryDirectory(prefix="spyre-knob-sweep-") as out_dir:
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            for problem in pool.map(lambda j: run_one(bin_dir, *j, out_dir), jobs):
                if problem:
                    failures.append(problem)
    for f in failures:
        print("FAIL:", f)
    print(f"{len(jobs) - len(failures)} of {len(jobs)} runs as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
