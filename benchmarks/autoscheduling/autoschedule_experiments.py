"""Autoscheduler experiments: hand schedules, our Spyre autoscheduler and Halide 14's stock ones on Spyre.

For each suite kernel (one modest shape) and each scheduler in {hand, Spyre, Mullapudi2016,
Adams2019, Li2018}, compiles the kernel with its generator for -target=spyre (the autoschedulers
via `-p <plugin> -s <Name> auto_schedule=true machine_params=<cores>,<scratchpad bytes>,40` of the
machine spyre-info describes, 32,2097152,40 on the built-in one; Spyre is our plugin,
build/lib/libautoschedule_spyre.so, with a search budget of --budget seconds). If it compiles,
simulates it timing-only with spyre-run and records the simulated time, then runs it functionally
on seeded random inputs and compares its outputs with the host build of the same generator on the
same inputs (spyre-host-reference); if it does not compile, records the Spyre backend's first
error line. Writes a CSV (the resume state),
docs/autoscheduling.md and an SVG chart.

Usage (from the repository root):
    python3 -m benchmarks.autoscheduling.autoschedule_experiments [--build build] [--fresh]
           [--kernels softmax,bmm] [--schedulers hand,Spyre] [--budget 50] [--csv F] [--md F|'']
           [--svg F|''] [--check]
Points already in the CSV are skipped unless --fresh. --check exits non-zero unless every requested
point has a row, every hand row has a positive simulated time, every Spyre and Legalized_* point
compiles, and every compiled point matches the host build.
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile

from benchmarks.spyre_bench import generate, machine, simulate
from benchmarks.spyre_bench.errors import first_error

PLUGIN_DIR = "/usr/lib/x86_64-linux-gnu/halide14"
# Halide's machine_params for the stock autoschedulers (parallelism, last-level cache bytes,
# balance): the machine's cores and per-core scratchpad, read from the machine description
# (spyre-info --json) in main(); the balance is Halide 14's default (MachineParams::generic()).
MACHINE_PARAMS = None

# name -> plugin libraries, comma-separated ("" for the hand schedule); SPYRE is ours,
# <build>/lib/libautoschedule_spyre.so. Legalized_<Name> runs the stock <Name> and our
# legalization layer (autoscheduler/stock_legalization.h), so it loads both plugins.
SCHEDULERS = [
    ("hand", ""),
    ("Spyre", "SPYRE"),
    ("Legalized_Mullapudi2016", "libautoschedule_mullapudi2016.so,SPYRE"),
    ("Legalized_Adams2019", "libautoschedule_adams2019.so,SPYRE"),
    ("Legalized_Li2018", "libautoschedule_li2018.so,SPYRE"),
    ("Mullapudi2016", "libautoschedule_mullapudi2016.so"),
    ("Adams2019", "libautoschedule_adams2019.so"),
    ("Li2018", "libautoschedule_li2018.so"),
]
# (kernel, generator, params, scalar params for spyre-run): a modest shape of each kernel,
# then a large one (the shapes of docs/performance.md or close to them).
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
    ("conv2d", "conv2d", "ci=64 co=64 width=18 height=18 kw=3 kh=3 dtype=float16", []),
    ("rope", "rope", "d=128 heads=8 tokens=64 dtype=float16", []),
    ("bmm_large", "bmm", "batch=8 m=512 n=512 k=512 dtype=float16", []),
    ("matmul_gelu_large", "matmul", "m=512 n=1024 k=1024 activation=gelu dtype=float16", []),
    ("softmax_large", "softmax", "cols=1024 rows=2048 dtype=float16", []),
    ("layernorm_large", "layernorm", "cols=1024 rows=2048 dtype=float16", ["eps=1e-5"]),
    ("rmsnorm_large", "rmsnorm", "cols=1024 rows=2048 dtype=float16", ["eps=1e-5"]),
    ("elementwise_add_large", "elementwise", "d0=1024 d1=2048 d2=2 op=add dtype=float16", []),
    ("reduce_mean_large", "reduce", "d0=1024 d1=2048 d2=4 op=mean axis=1 dtype=float16", []),
    ("transpose_large", "transpose", "x=1024 y=1024 dtype=float16", []),
    ("attention_causal_large", "attention", "d=64 s=1024 heads=8 causal=true dtype=float16", []),
    ("conv2d_large", "conv2d", "ci=64 co=64 width=58 height=58 kw=3 kh=3 dtype=float16", []),
    ("rope_large", "rope", "d=128 heads=32 tokens=512 dtype=float16", []),
]
FIELDS = ["kernel", "generator", "params", "scheduler", "status", "simulated_us", "compile_s", "search", "knobs",
          "check", "error"]
CHECK_SEED = 7
COMMAND = "python3 -m benchmarks.autoscheduling.autoschedule_experiments --build build"


def scheduler_flags(build, scheduler, plugin):
    """The generator's flags that load the scheduler's plugins and run it ([] for the hand schedule)."""
    if not plugin:
        return []
    paths = [os.path.join(build, "lib", "libautoschedule_spyre.so") if p == "SPYRE" else os.path.join(PLUGIN_DIR, p)
             for p in plugin.split(",")]
    return ["-p", ",".join(paths), "-s", scheduler, "auto_schedule=true", "machine_params=" + MACHINE_PARAMS]


def read_npy(path):
    """The values of a float16/float32 .npy file as a flat list (the outputs spyre-run writes)."""
    import ast
    import struct
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError("%s is not an .npy file" % path)
    major = data[6]
    hlen = struct.unpack("<H", data[8:10])[0] if major == 1 else struct.unpack("<I", data[8:12])[0]
    start = 10 if major == 1 else 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    code = {"<f2": "e", "<f4": "f"}[header["descr"]]
    body = data[start + hlen:]
    return list(struct.unpack("<%d%s" % (len(body) // struct.calcsize(code), code), body))


def output_names(program_txt):
    """The output arguments of a program, from its .spyre.txt (`.arg NAME output ...`)."""
    with open(program_txt) as f:
        return [l.split()[1] for l in f if l.startswith(".arg ") and l.split()[2] == "output"]


def functional_outputs(build, tmp, program, scalars, timeout):
    """Runs the program functionally on inputs seeded with CHECK_SEED; returns {output: values}."""
    names = output_names(program + ".txt")
    cmd = [simulate.spyre_run(build), program, "--seed", str(CHECK_SEED)]
    for s in scalars:
        cmd += ["--param", s]
    paths = {}
    for n in names:
        paths[n] = os.path.join(tmp, "%s.%s.npy" % (os.path.basename(program), n))
        cmd += ["--output", "%s=%s" % (n, paths[n])]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(first_error(r.stderr + "\n" + r.stdout))
    return {n: read_npy(p) for n, p in paths.items()}


def host_outputs(build, tmp, program, gen, params, scalars, timeout):
    """The host build of the generator on the inputs functional_outputs gives `program`: {output: values}."""
    names = output_names(program + ".txt")
    header = program[:-len(".spyre")] + ".h"
    cmd = [os.path.join(build, "bin", "spyre-host-reference"), program, header, "-g", gen, "--seed", str(CHECK_SEED)]
    cmd += params.split()
    for s in scalars:
        cmd += ["--param", s]
    paths = {}
    for n in names:
        paths[n] = os.path.join(tmp, "%s.%s.host.npy" % (os.path.basename(program), n))
        cmd += ["--output", "%s=%s" % (n, paths[n])]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("host reference: " + (r.stderr.strip() or r.stdout.strip())[:300])
    return {n: read_npy(p) for n, p in paths.items()}


def compare_outputs(got, ref, fp16):
    """'' when every output matches within the tolerance of its dtype, else what differs."""
    tol = 2e-2 if fp16 else 1e-4
    worst = 0.0
    for name, values in ref.items():
        if name not in got or len(got[name]) != len(values):
            return "output %s missing or of another size" % name
        for a, b in zip(got[name], values):
            if math.isnan(a) != math.isnan(b):
                return "output %s: NaN where the host build has none" % name
            if not math.isnan(a):
                worst = max(worst, abs(a - b) / max(1.0, abs(b)))
    return "" if worst <= tol else "max relative difference %.3g from the host build (tolerance %g)" % (worst, tol)


def run_point(build, tmp, kernel, gen, params, scalars, scheduler, plugin, timeout, budget):
    row = {"kernel": kernel, "generator": gen, "params": params, "scheduler": scheduler, "status": "",
           "simulated_us": "", "compile_s": "", "search": "", "check": "", "error": ""}
    name = "%s_%s" % (kernel, scheduler)
    env = dict(os.environ, SPYRE_AUTOSCHEDULE_BUDGET_S=str(budget), SPYRE_AUTOSCHEDULE_QUIET="1")
    g = generate.generate(build, gen, tmp, name, params.split(), scheduler_flags(build, scheduler, plugin), env=env,
                          timeout=timeout)
    if g.timed_out:
        row.update(status="timeout", compile_s="%.1f" % g.seconds, error=g.error)
        return row
    row["compile_s"] = "%.2f" % g.seconds
    if g.program is None:
        row.update(status="compile_error", error=g.error)
        return row
    run = simulate.simulate(build, g.program, os.path.join(tmp, name + ".json"), scalars, timeout=timeout)
    if run.timed_out:
        row.update(status="timeout", error=run.error)
        return row
    if run.report is None:
        row.update(status="sim_error", error=run.error)
        return row
    row.update(status="ok", simulated_us="%.3f" % run.report["simulated_us"])
    for l in g.stderr.splitlines():
        if l.startswith("spyre legalization: ") and " -> " in l:
            row["knobs"] = l.split(" -> ", 1)[1]  # "spyre legalization: Mullapudi2016 on bmm -> max_cores=32 ..."
        if l.startswith("spyre autoscheduler: ") and " candidates in " in l:
            # "spyre autoscheduler: bmm: 240 of 240 candidates in 5.5 s (...); best 3.137 us (...), ..."
            row["search"] = l.split(": ", 2)[2].split(";")[0]
            best = float(l.split("; best ")[1].split(" us")[0])
            row["knobs"] = l.split("; best ")[1].split(" us (")[1].split("), ")[0]
            if abs(best - float(row["simulated_us"])) > 0.005 * best + 0.001:
                # The schedule applied to the pipeline is not the one the search measured.
                row["check"] = "MISMATCH: the search measured %.3f us for its choice, the compiled kernel runs %s us" % (
                    best, row["simulated_us"])
    return row


def check_point(build, tmp, row, scalars, timeout):
    """Sets row['check']: the point's outputs against the host build of the same generator, both on the
    inputs spyre-run generates from CHECK_SEED in the program's argument order."""
    if row["status"] != "ok" or row["check"]:
        return
    program = os.path.join(tmp, "%s_%s.spyre" % (row["kernel"], row["scheduler"]))
    try:
        got = functional_outputs(build, tmp, program, scalars, timeout)
        ref = host_outputs(build, tmp, program, row["generator"], row["params"], scalars, timeout)
        diff = compare_outputs(got, ref, "float16" in row["params"])
        row["check"] = "matches host" if not diff else "MISMATCH: " + diff
    except Exception as e:  # a run that fails is a finding, recorded in the row
        row["check"] = "MISMATCH: %s" % e


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


def ratio(by, kernel, a, b):
    ra, rb = by.get((kernel, a)), by.get((kernel, b))
    if not ra or not rb or ra["status"] != "ok" or rb["status"] != "ok":
        return None
    return float(ra["simulated_us"]) / float(rb["simulated_us"])


def search_seconds(row):
    """The search time from the row's summary ("240 of 240 candidates in 5.5 s ...")."""
    try:
        return float(row["search"].split(" candidates in ")[1].split(" s")[0])
    except (IndexError, ValueError, KeyError, AttributeError):
        return None


def write_md(path, rows, kernels, schedulers, csv_path, svg_path, budget):
    by = {(r["kernel"], r["scheduler"]): r for r in rows}
    ours = "Spyre" in schedulers and "hand" in schedulers
    out = []
    o = out.append
    o("# Autoscheduling experiments")
    o("")
    spent = sum(float(r["compile_s"] or 0) for r in rows)
    o("Generated by `%s` (after building the generators, the Spyre autoscheduler plugin," % COMMAND)
    o("`spyre-run` and `spyre-host-reference`). Our autoscheduler searches up to %g s per kernel, and" % budget)
    o("stops early once it has measured its whole space. The compiles and searches of this table took")
    o("%.1f minutes. Add `--fresh` to recompute every point; otherwise the points already in `%s` are kept." %
      (spent / 60, os.path.relpath(csv_path, os.path.dirname(os.path.abspath(path)))))
    o("")
    o("## What is measured")
    o("")
    o("Each kernel of the suite, at a modest and a large shape, is compiled for `-target=spyre` with:")
    o("")
    o("- `hand`: its hand schedule;")
    o("- `Spyre`: our autoscheduler (`-p build/lib/libautoschedule_spyre.so -s Spyre auto_schedule=true`,")
    o("  described below);")
    o("- `Legalized_<Name>`: each of Halide 14's stock autoschedulers followed by our legalization layer")
    o("  (`-p %s/libautoschedule_<name>.so,build/lib/libautoschedule_spyre.so -s Legalized_<Name>`)," % PLUGIN_DIR)
    o("  described below;")
    o("- each stock autoscheduler alone, loaded as a plugin:")
    o("  `-p %s/libautoschedule_<name>.so -s <Name> auto_schedule=true machine_params=%s`" % (PLUGIN_DIR, MACHINE_PARAMS))
    o("  (32 cores, 2 MiB of scratchpad as the last-level cache, balance 40: about a core's fp16 PT")
    o("  flops per cycle over its DMA port's bytes per cycle, 2 x 1024 / 50, docs/machine.md).")
    o("")
    o("With `auto_schedule=true` the generators skip their hand schedules. They keep the static shapes,")
    o("give the autoschedulers estimates equal to those shapes, and attach the Spyre lowering pass.")
    o("")
    o("A kernel that compiles is simulated by `spyre-run --timing-only` (the cycles of a functional")
    o("run), and the table gives the simulated time. It is then run functionally on seeded random inputs,")
    o("and its outputs are compared with the host build of the same generator on the same inputs")
    o("(`spyre-host-reference`; `check` in the CSV; every compiled point below matches). A kernel that")
    o("does not compile gives the Spyre backend's first error: which Spyre rule the schedule breaks.")
    o("")
    head = ["kernel", "shape"] + schedulers
    if ours:
        head.insert(4, "Spyre / hand")
    o("| " + " | ".join(head) + " |")
    o("|" + "---|" * len(head))
    for k, gen, params, _ in kernels:
        cells = [k, "`%s`" % params] + [cell(by.get((k, s))) for s in schedulers]
        if ours:
            r = ratio(by, k, "Spyre", "hand")
            cells.insert(4, "%.3f" % r if r is not None else "-")
        o("| " + " | ".join(cells) + " |")
    o("")
    if svg_path:
        o("![simulated time per kernel and scheduler](%s)" % os.path.relpath(svg_path, os.path.dirname(os.path.abspath(path))))
        o("")
    if ours:
        o("## Our autoscheduler")
        o("")
        o("`autoscheduler/` is a Halide autoscheduler plugin named `Spyre`. It works like AutoTVM's templates.")
        o("")
        o("- **The template.** A suite generator built with `auto_schedule=true` for Spyre registers its")
        o("  schedule template (`schedules/schedule_template.h`). The template is the family's Spyre schedule")
        o("  and its knobs: tile sizes, core counts, staging levels (bmm's K chunking and B residency,")
        o("  reduce's chunk of the reduced axis), device layouts (elementwise), SFU vector shape (softmax)")
        o("  and double buffering.")
        o("- **Your own generator.** Register a template the same way (`spyre::register_schedule_template`")
        o("  in `schedule()` when `auto_schedule=true`: the knobs are GeneratorParams, `apply` schedules with")
        o("  given values). The suite's generators get theirs from `spyre::FamilyGenerator`")
        o("  (`generators/family_generator.h`), which builds the template from the family's declaration;")
        o("  every family has one, conv2d and rope included.")
        o("  The registry is the shared library libspyre_schedule_templates.so, which the")
        o("  generator (through `SpyreHalide::spyre_schedules`) and the plugin both link, so no export flags")
        o("  are needed; examples/user_project/row_scale_generator.cpp is a complete example.")
        o("- **The cost.** The plugin measures candidate knob values with the timing model itself. Each")
        o("  candidate is compiled in the generator's own process: the generator is created again from")
        o("  Halide's registry with the candidate's knobs, scheduled into a schedule context of its own")
        o("  (docs/compiler.md, \"The schedule context\") and lowered without LLVM")
        o("  (`autoscheduler/in_process_candidates.cpp`); its program is simulated timing only, two at a")
        o("  time on two threads (`SPYRE_AUTOSCHEDULE_WORKERS`). A candidate still compiling 5 s past the")
        o("  budget stops at the Spyre lowering's next pass boundary (the context's deadline), a failed")
        o("  candidate. `SPYRE_AUTOSCHEDULE_ISOLATION=process` compiles each candidate in a child process")
        o("  instead (`-e stmt`), which is killed at the deadline wherever it is: the choice for a generator")
        o("  whose Halide lowering itself could run long. On `gen_bmm batch=2 m=128 n=256 k=256` (480")
        o("  candidates, the whole space) the whole generator run takes 9.1 s in process against 33.5 s")
        o("  with child processes (medians of 3 paired runs; wall ratio 0.27), with the same choice and the")
        o("  same program; the search alone reports 7.4 s against 29.2 s.")
        o("- **The search.** The generator's own knobs are measured first. Spaces of up to 256 assignments")
        o("  are measured completely. Larger ones go through coordinate descent, then rounds of random")
        o("  assignments, each improvement restarting the descent. The search stops at the time budget")
        o("  (`SPYRE_AUTOSCHEDULE_BUDGET_S`, 50 s by default).")
        o("- **The result.** The best assignment is applied. `-e schedule` writes it as code to paste into")
        o("  the generator's `schedule()`, with the knobs for the command line and the measured times.")
        o("")
        o("Rows kept from earlier runs (in the CSV) keep the search times measured then, some of them when")
        o("every candidate still compiled in a child process (before the schedule context). Where the whole")
        o("space is measured the choice does not depend on where candidates compile; a search the budget")
        o("stops (bmm_large) now measures more candidates in the same time, about 4x as many for bmm, and")
        o("may choose better. `--fresh` remeasures every row.")
        o("")
        o("| kernel | search (candidates measured of the space, time) | chosen knobs |")
        o("|---|---|---|")
        for k, _, _, _ in kernels:
            r = by.get((k, "Spyre")) or {}
            o("| %s | %s | `%s` |" % (k, r.get("search") or "-", r.get("knobs") or "-"))
        o("")
        o("## Targets")
        o("")
        within = [(k, ratio(by, k, "Spyre", "hand")) for k, _, _, _ in kernels]
        measured = [(k, r) for k, r in within if r is not None]
        worst = max(measured, key=lambda kr: kr[1]) if measured else None
        o("- **Within 10%% of the hand schedule on every kernel:** %s." % (
            ("met on %d of %d kernels (worst: %s at %.3f of the hand time)" % (
                sum(1 for _, r in measured if r <= 1.10), len(kernels), worst[0], worst[1])) if measured else "not measured"))
        o("  By construction the search starts from the hand schedule's knobs, so it is never slower. Where")
        o("  it is faster, the search found knob values the hand planner's cost model ranks lower; the")
        o("  planner should learn from those (the chosen knobs are in the table above).")
        secs = [(k, search_seconds(by[(k, "Spyre")])) for k, _, _, _ in kernels if (k, "Spyre") in by]
        secs = [(k, t) for k, t in secs if t is not None]
        if secs:
            slow = max(secs, key=lambda kt: kt[1])
            o("- **Search within 60 s per kernel:** %s (longest: %s, %.1f s of search; the generator run adds the" % (
                "met" if slow[1] <= 60 else "missed", slow[0], slow[1]))
            o("  final compile, `compile_s` in the CSV).")
        legal = [x for x in schedulers if x.startswith("Legalized_")]
        if legal:
            ahead = tied = behind = 0
            lines = []
            for k, _, _, _ in kernels:
                for x in legal:
                    r = ratio(by, k, "Spyre", x)
                    if r is None:
                        continue
                    if r < 0.995:
                        ahead += 1
                    elif r <= 1.005:
                        tied += 1
                        lines.append("%s: tied with %s (%.3f)" % (k, x, r))
                    else:
                        behind += 1
                        lines.append("%s: behind %s (%.3f)" % (k, x, r))
            o("- **Ahead of every legalized stock autoscheduler:** ahead in %d, tied (within 0.5%%) in %d and" % (ahead, tied))
            o("  behind in %d of the kernel x autoscheduler pairs that compiled%s" % (behind, ":" if lines else "."))
            for l in lines:
                o("  - " + l)
            o("  A tie means the legalized knobs run as fast as the ones our search chose (for example")
            o("  reduce_sum: ours `tile=0 double_buffer=true`, legalized `tile=64 double_buffer=false`). Our")
            o("  search only measures the template's candidate values. A legalized schedule may use other")
            o("  values (e.g. bmm `tile_m=8`), so it could be ahead; in this run none was.")
        o("")
    o("## The legalization layer")
    o("")
    o("The stock autoschedulers produce CPU schedules: vectors of at most 64 bytes (never a 128-byte")
    o("stick), several parallel loops, parallel loops whose extent is not the core count, no scratchpad")
    o("staging and no DMA stages. Alone, the Spyre backend rejects them with the errors in the table.")
    o("`Legalized_<Name>` (autoscheduler/stock_legalization.h) does five things:")
    o("")
    o("1. It runs the stock autoscheduler.")
    o("2. It reads its decisions: where each Func is computed (fusion), the tile of each split loop,")
    o("   the parallel loops and the vector widths.")
    o("3. It restores the pipeline (schedules and the definitions the stock schedulers rewrite when")
    o("   they inline trivial Funcs).")
    o("4. It projects the decisions onto the family's Spyre template:")
    o("   - tiles are kept, rounded to whole sticks and PT passes and shrunk until they fit the scratchpad;")
    o("   - fusion into the output's tiles is kept where the template stages per tile;")
    o("   - the parallel loops become one static split over at most 32 cores;")
    o("   - vectors become whole sticks;")
    o("   - no double buffering, since the stock schedules have no DMA overlap.")
    o("5. It applies the result.")
    o("")
    o("What it kept and what it changed is printed, and written at the top of `-e schedule`'s output.")
    o("It refuses a stock schedule that adds Funcs (rfactor), naming them.")
    o("")
    o("### Legalizing for your own template")
    o("")
    o("Step 4 is the template's `legalize` (`ScheduleTemplate::legalize`,")
    o("`schedules/schedule_template.h`); a template without one is refused by every")
    o("`Legalized_<Name>` with \"the <generator> template has no legalization yet\" (every suite")
    o("family has one: rope takes the stock tile along the tokens as `tile_tokens`; conv2d takes the")
    o("stock tiles of its output along co, x and y as `tile_co`, `tile_x` and `tile_y`, halved until its")
    o("planner accepts them, else the planner's own). A suite generator declares it as a public member")
    o("of its family declaration")
    o("(`generators/family_generator.h`), which the template picks up:")
    o("")
    o("```c++")
    o("spyre::KnobValues legalize_stock(const spyre::StockScheduleDecisions &d,")
    o("                                 std::vector<std::string> *kept, std::vector<std::string> *changed);")
    o("```")
    o("")
    o("Your own template sets `t.legalize` to a function of the same three arguments. What it gets")
    o("and what it returns:")
    o("")
    o("- `d` is what the stock autoscheduler decided, as plain data (`schedules/stock_schedule_decisions.h`):")
    o("  per Func (`d.find(name)`, which also finds Halide's uniquified `name$2`), where it is computed")
    o("  (`compute_at`: `inline`, `root` or `<func>.<loop>`) and per stage its tiles (`d.tile(func,")
    o("  stage, var)`: the inner extent of the var's first split, 0 if it is not split), its parallel")
    o("  loops and its vector width.")
    o("- It returns knob values of the template (`spyre::knob_values(options)` from the family's")
    o("  Options), which `apply` then schedules: only what the template can express survives.")
    o("- It appends one line per decision to `kept` (carried over, possibly rounded to Spyre's rules)")
    o("  or `changed` (not expressible, with the reason); the layer prints them and writes them into")
    o("  `-e schedule`'s output.")
    o("- It throws `std::runtime_error` when nothing sensible can be kept (the generator run then")
    o("  fails with that message).")
    o("")
    o("The shared rules (`schedules/stock_legalization_rules.h`) do most of it:")
    o("`legalize_fusion(d, f, out, var, how)` keeps a stock fusion of `f` into `out`'s tile loop along")
    o("`var` or reports the template's placement instead; `legalize_parallel_and_vectors(d, out,")
    o("lanes)` turns the stock parallel loops into one static core split and the vectors into whole")
    o("sticks; `shrink_rows_to_fit` and `shrink_matmul_tile_to_fit` halve a tile until the family's")
    o("planner accepts it. `generators/softmax_generator.cpp`'s `legalize_stock` is a complete")
    o("example in 30 lines: the tile of rows from the stock tile of `out` along y, shrunk to fit; the")
    o("row statistics' fusion; whole-row or one-stick SFU vectors from the stock vector width.")
    o("")
    o("A `Legalized_<Name>` run needs the stock plugin too. When the generator did not load it")
    o("(`-p <stock>.so,libautoschedule_spyre.so`), our plugin loads it itself from Halide's package")
    o("(the path it was built against, e.g. /usr/lib/x86_64-linux-gnu/halide14/libautoschedule_mullapudi2016.so),")
    o("so one plugin is enough: on the command line `-p libautoschedule_spyre.so -s Legalized_Mullapudi2016`,")
    o("and in CMake")
    o("```cmake")
    o("add_spyre_library(mine FROM gen_mine GENERATOR mine")
    o("                  AUTOSCHEDULER Legalized_Mullapudi2016 PLUGINS SpyreHalide::Spyre)")
    o("```")
    o("(Halide 14's `add_halide_library` cannot pass two plugins, so `add_spyre_library` refuses two")
    o("with an error.) Tests: `autoscheduler.legalized_stock_with_one_plugin`,")
    o("`autoscheduler.legalized_stock_rope`, `autoscheduler.legalized_stock_conv2d`.")
    o("")
    o("## What is not done yet")
    o("")
    o("- The legalization keeps only decisions that the family's template can express. A stock fusion")
    o("  that the template does not have (e.g. computing a producer at root) is replaced by the")
    o("  template's own, and reported as changed.")
    if ours:
        o("- **Our autoscheduler searches within each family's template.** It does not invent loop")
        o("  structures, fusions or stagings that the template lacks. A pipeline without a template is")
        o("  refused with an error that says so.")
    o("- Two shapes per kernel, fp16 only.")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


COLORS = {"hand": "#4c72b0", "Spyre": "#8172b3", "Legalized_Mullapudi2016": "#937860",
          "Legalized_Adams2019": "#da8bc3", "Legalized_Li2018": "#8c8c8c", "Mullapudi2016": "#dd8452", "Adams2019": "#55a868", "Li2018": "#c44e52"}


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
        lx = left + (j % 4) * 170
        ly = height - 30 + (j // 4) * 14
        s.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>'
                 % (lx, ly - 9, COLORS.get(sch, "#888"), lx + 14, ly, sch))
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
    ap.add_argument("--budget", type=float, default=50, help="search seconds of the Spyre autoscheduler per kernel")
    ap.add_argument("--fresh", action="store_true", help="recompute every point (default: resume from the CSV)")
    ap.add_argument("--check", action="store_true",
                    help="fail unless every point has a row, hand times are > 0 and every compiled point matches the host build")
    args = ap.parse_args()
    global MACHINE_PARAMS
    MACHINE_PARAMS = machine.halide_machine_params(args.build)

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
            row = run_point(args.build, tmp, kernel, gen, params, scalars, sch, plugin, args.timeout, args.budget)
            check_point(args.build, tmp, row, scalars, args.timeout)
            print("%s (%ss) %s %s" % (row["status"], row["compile_s"],
                                      row["simulated_us"] + " us" if row["status"] == "ok" else row["error"][:100],
                                      row["check"]), flush=True)
            rows = [r for r in rows if (r["kernel"], r["scheduler"]) != (kernel, sch)] + [row]
            write_csv(args.csv, rows)  # after every point, so an interrupted run resumes
    order = {(k[0], s[0]): n for n, (k, s) in enumerate((k, s) for k in KERNELS for s in SCHEDULERS)}
    rows.sort(key=lambda r: order.get((r["kernel"], r["scheduler"]), len(order)))
    write_csv(args.csv, rows)
    names = [s[0] for s in schedulers]
    if args.md:
        write_md(args.md, rows, kernels, names, args.csv, args.svg, args.budget)
    if args.svg:
        write_svg(args.svg, rows, kernels, names)
    print("wrote " + ", ".join(p for p in (args.csv, args.md, args.svg) if p))
    if args.check:
        by = {(r["kernel"], r["scheduler"]): r for r in rows}
        bad = ["%s/%s: no row" % (k[0], sch[0]) for k, sch in points if (k[0], sch[0]) not in by]
        bad += ["%s/hand: %s %s" % (k, by[(k, "hand")]["status"], by[(k, "hand")]["error"])
                for k, _, _, _ in kernels if (k, "hand") in by and "hand" in names
                and not (by[(k, "hand")]["status"] == "ok" and float(by[(k, "hand")]["simulated_us"]) > 0)]
        bad += ["%s/%s: %s" % (r["kernel"], r["scheduler"], r["check"]) for r in rows
                if (r["kernel"], r["scheduler"]) in {(k[0], s[0]) for k, s in points} and r["status"] == "ok"
                and r["check"] != "matches host"]
        # Our autoscheduler and the legalizations are this project's code: on the suite's shapes they must compile
        # (a raw stock schedule may break a Spyre rule; that is what the table shows).
        # (A template without a legalization refuses Legalized_* by saying so; every suite family has one.)
        bad += ["%s/%s: %s %s" % (r["kernel"], r["scheduler"], r["status"], r["error"]) for r in rows
                if (r["kernel"], r["scheduler"]) in {(k[0], s[0]) for k, s in points}
                and (r["scheduler"] == "Spyre" or r["scheduler"].startswith("Legalized_")) and r["status"] != "ok"
                and "has no legalization yet" not in r["error"]]
        if bad:
            print("check FAILED:\n  " + "\n  ".join(bad), file=sys.stderr)
            return 1
        print("check passed: %d points, hand times positive" % len(points))
    return 0


if __name__ == "__main__":
    sys.exit(main())
