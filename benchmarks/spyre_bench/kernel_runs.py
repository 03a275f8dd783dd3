"""Compiling and simulating many project kernels in parallel, with their caches.

A kernel is a generator and its `key=value` GeneratorParams. Harness.compile() runs the generator for
-target=spyre (generate.py; it writes <g>.spyre) once per cache key; Harness.simulate() runs it
timing-only with a report (simulate.py) and keeps REPORT_FIELDS of the report plus `unit_busy` (each
unit's busy share on the active cores). run_kernels() does a set of kernels in parallel. Shared by
benchmarks/fidelity/fidelity.py, calibrate.py and benchmarks/incumbent/incumbent.py, so they compile,
run and cache alike. Assumes a finished build: bin/gen_*, bin/spyre-run, bin/spyre-info, lib/*.so.

Caches: OUT/programs/<key>/ holds each compiled program, keyed by the generator binary and
build/lib/*.so (mtime, size), its GeneratorParams and the compile-time machine description;
OUT/sim_cache.json holds the simulation results, keyed by the program's sha256, the effective machine
(the output of spyre-info in the simulation's environment), spyre-run and build/lib/*.so (mtime, size)
and the run-time scalars. A cached result without one of the fields is simulated again. Compile
failures are recorded with the compiler's first error line and cached like programs.
"""
import concurrent.futures
import glob
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time

from benchmarks.spyre_bench import generate, machine, simulate
from benchmarks.spyre_bench.progress import log

COMPILE_TIMEOUT_S = 900
SIMULATE_TIMEOUT_S = 1800
REPORT_FIELDS = ("simulated_us", "roofline_bound_us", "calibrated_floor_us", "dram_read_bytes", "dram_write_bytes",
                 "macs", "bottleneck", "active_cores")


def add_arguments(parser):
    """The command-line options of a harness run: --build, --out (the caches), --jobs; parse with parse_args()."""
    parser.add_argument("--build", default="build", help="build directory (bin/gen_*, bin/spyre-run)")
    parser.add_argument("--out", help="output and cache directory (default BUILD/fidelity)")
    parser.add_argument("--jobs", type=int, default=2, help="kernels compiled and simulated in parallel")


def parse_args(parser):
    """The parser's arguments, --out defaulting to BUILD/fidelity (the caches the harness scripts share)."""
    args = parser.parse_args()
    args.out = args.out or os.path.join(args.build, "fidelity")
    return args


# ---------------------------------------------------------------------------------------------
# Tools and their fingerprints


def file_stamp(path):
    st = os.stat(path)
    return [os.path.basename(path), st.st_mtime_ns, st.st_size]


def tool_stamp(build, binary):
    """mtime and size of a binary and of the project's shared libraries it may load."""
    return [file_stamp(binary)] + [file_stamp(p) for p in sorted(glob.glob(os.path.join(build, "lib", "*.so")))]


def digest(obj):
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


# ---------------------------------------------------------------------------------------------
# Compiling and simulating one kernel, with the caches


class Harness:
    def __init__(self, args):
        self.build = args.build
        for tool in ("spyre-run", "spyre-info"):
            if not os.path.exists(os.path.join(self.build, "bin", tool)):
                raise SystemExit("no %s in %s/bin: build the project first (or pass --build)" % (tool, self.build))
        self.out = args.out
        self.programs = os.path.join(args.out, "programs")
        os.makedirs(self.programs, exist_ok=True)
        self.compile_env = {k: v for k, v in os.environ.items() if k != "SPYRE_MACHINE_SET"}
        self.sim_env = dict(os.environ)
        if args.machine_set is not None:
            self.sim_env["SPYRE_MACHINE_SET"] = args.machine_set
        # The effective machine descriptions (spyre-info's text) are part of the cache keys.
        self.compile_machine = machine.spyre_info(self.build, self.compile_env)
        self.sim_machine = machine.spyre_info(self.build, self.sim_env)
        self.spyre_run = simulate.spyre_run(self.build)
        self.run_stamp = tool_stamp(self.build, self.spyre_run)
        self.gen_stamps = {}
        self.cache_path = os.path.join(args.out, "sim_cache.json")
        self.sim_cache = self.load_sim_cache()
        self.lock = threading.Lock()
        self.unsaved = 0

    def load_sim_cache(self):
        try:
            with open(self.cache_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def save_sim_cache(self):
        with self.lock:
            tmp = self.cache_path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(self.sim_cache, f, indent=0, sort_keys=True)
            os.replace(tmp, self.cache_path)
            self.unsaved = 0

    def program_dir(self, gen, args):
        if gen not in self.gen_stamps:
            self.gen_stamps[gen] = tool_stamp(self.build, generate.generator_binary(self.build, gen))
        key = digest([gen, self.gen_stamps[gen], args, self.compile_machine])[:20]
        return os.path.join(self.programs, "%s_%s" % (gen, key))

    def compile(self, gen, args):
        """The program's path and '' or (None, first error line), compiled once per cache key."""
        final = self.program_dir(gen, args)
        meta_path = os.path.join(final, "meta.json")
        if os.path.exists(meta_path):
            with open(meta_path) as f:
                meta = json.load(f)
            return (os.path.join(final, gen + ".spyre") if meta["ok"] else None), meta.get("error", ""), True
        tmp = tempfile.mkdtemp(dir=self.programs, prefix=".tmp_")
        g = generate.generate(self.build, gen, tmp, gen, args, env=self.compile_env, timeout=COMPILE_TIMEOUT_S)
        ok, error = g.program is not None, g.error
        meta = {"generator": gen, "args": args, "ok": ok, "error": error, "compile_s": round(g.seconds, 2)}
        for f in os.listdir(tmp):
            if f.endswith(".h"):
                os.remove(os.path.join(tmp, f))  # only the program is needed
        with open(os.path.join(tmp, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        try:
            os.rename(tmp, final)
        except OSError:  # another run got there first
            shutil.rmtree(tmp, ignore_errors=True)
        return (os.path.join(final, gen + ".spyre") if ok else None), error, False

    def simulate(self, program):
        """The report fields (or {'error': ...}) of a timing-only run, cached."""
        with open(program, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        scalars = simulate.scalars_of(program)
        key = digest([sha, self.sim_machine, self.run_stamp, scalars])
        with self.lock:
            cached = self.sim_cache.get(key)
            if cached is not None and ("error" in cached or all(k in cached for k in REPORT_FIELDS + ("unit_busy",))):
                return cached, True
        with tempfile.TemporaryDirectory() as tmp:
            run = simulate.simulate(self.build, program, os.path.join(tmp, "r.json"), scalars, env=self.sim_env,
                                    timeout=SIMULATE_TIMEOUT_S)
            if run.report is not None:
                result = {k: run.report[k] for k in REPORT_FIELDS}
                result["unit_busy"] = simulate.unit_busy(run.report)
            else:
                result = {"error": run.error}
        with self.lock:
            self.sim_cache[key] = result
            self.unsaved += 1
            save = self.unsaved >= 20
        if save:
            self.save_sim_cache()
        return result, False

    def run_kernel(self, gen, args):
        """(status, result, error, reuse) of one kernel: compile, then simulate; reuse says what was cached."""
        if generate.not_built(self.build, gen):
            return "compile_error", {}, generate.not_built(self.build, gen), ""
        program, error, compiled_before = self.compile(gen, args)
        if program is None:
            return "compile_error", {}, error, "cached" if compiled_before else ""
        result, simulated_before = self.simulate(program)
        reuse = "cached" if simulated_before else "compiled before" if compiled_before else ""
        if "error" in result:
            return "sim_error", {}, result["error"], reuse
        return "ok", result, "", reuse


def run_kernels(harness, kernels, jobs):
    """{(gen, args tuple): (status, result, error)} for every kernel, `jobs` at a time, with progress."""
    results = {}
    total = len(kernels)
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(harness.run_kernel, gen, list(args)): (gen, args, row_id)
                   for (gen, args), row_id in kernels.items()}
        for done, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            gen, args, row_id = futures[fut]
            status, result, error, reuse = fut.result()
            results[(gen, args)] = (status, result, error)
            if reuse != "cached" or done == total or done % 50 == 0:
                what = ("%.1f us" % result["simulated_us"]) if status == "ok" else "%s: %s" % (status, error[:100])
                log("[%d/%d] %.0fs row %s: gen_%s %s -> %s%s" % (done, total, time.time() - t0, row_id, gen,
                                                                " ".join(args), what, " (%s)" % reuse if reuse else ""))
    harness.save_sim_cache()
    return results
