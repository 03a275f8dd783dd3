"""The Spyre machine description the scripts run against.

spyre_info() is what `BUILD/bin/spyre-info` prints in an environment: the effective description (the
built-in one, or SPYRE_MACHINE's file, with SPYRE_MACHINE_SET's overrides), the text or, with --json,
{"parameters": {name: {"value": ...}}, ...}. source_values() reads the description in the source tree
(runtime/machine/spyre_machine.json: what calibrate.py writes and the build compiles into the runtime),
for the scripts that report on the file itself.
"""
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE_JSON = os.path.join(ROOT, "runtime", "machine", "spyre_machine.json")
# Halide 14's default balance (MachineParams::generic()), which the stock autoschedulers' machine_params take.
HALIDE_DEFAULT_BALANCE = 40


def spyre_info(build, env=None, as_json=False):
    """spyre-info's output in env (default: this process's environment)."""
    cmd = [os.path.join(build, "bin", "spyre-info")] + (["--json"] if as_json else [])
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit("%s failed: %s" % (" ".join(["spyre-info"] + cmd[1:]), r.stderr.strip() or r.stdout.strip()))
    return r.stdout


def parameters(build, env=None):
    """{name: value} of the effective machine description (spyre-info --json)."""
    return {k: v["value"] for k, v in json.loads(spyre_info(build, env, as_json=True))["parameters"].items()}


def halide_machine_params(build, env=None):
    """Halide's machine_params for the stock autoschedulers, "parallelism,last-level cache bytes,balance":
    the machine's cores and per-core scratchpad, and Halide's default balance."""
    p = parameters(build, env)
    return "%d,%d,%d" % (p["cores"], p["scratchpad_bytes"], HALIDE_DEFAULT_BALANCE)


def source_document():
    """The source tree's machine description, as JSON."""
    with open(SOURCE_JSON) as f:
        return json.load(f)


def source_values(overrides=None):
    """{name: value} of the source tree's machine description, with `k=v,...` overrides applied."""
    values = {k: v["value"] for k, v in source_document()["parameters"].items()}
    for item in (overrides or "").split(","):
        if "=" in item:
            k, v = item.split("=", 1)
            values[k] = float(v)
    return values
