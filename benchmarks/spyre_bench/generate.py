"""Running a generator for -target=spyre: `BUILD/bin/gen_<g> -g <g> -f NAME -o WORK -e c_header
-target=spyre [flags] key=value...` writes the Spyre program WORK/NAME.spyre (with NAME.spyre.txt and
NAME.h).

Assumes the project's generator driver (target/driver/generator_main.cpp): GenGen's flags in any order, the
GeneratorParams as key=value, a failure reported on stderr (first_error() picks its line), exit != 0.
"""
import os
import subprocess
import time

from benchmarks.spyre_bench.errors import first_error


class Generated:
    """One generator run: program (WORK/NAME.spyre, or None when it failed), error (its first error line),
    stderr (the generator's messages, e.g. the autoschedulers' summaries), seconds, timed_out."""

    def __init__(self, program, error, stderr, seconds, timed_out=False):
        self.program, self.error, self.stderr, self.seconds, self.timed_out = program, error, stderr, seconds, timed_out


def generator_binary(build, gen):
    return os.path.join(build, "bin", "gen_" + gen)


def not_built(build, gen):
    """'' when BUILD/bin/gen_<gen> exists, else the reason a report shows."""
    return "" if os.path.exists(generator_binary(build, gen)) else "generator gen_%s not built" % gen


def command(build, gen, work, name, params, flags=()):
    return ([generator_binary(build, gen), "-g", gen, "-f", name, "-o", work, "-e", "c_header", "-target=spyre"]
            + list(flags) + list(params))


def generate(build, gen, work, name, params, flags=(), env=None, timeout=None):
    """Compiles gen_<gen> with the GeneratorParams `params` (key=value strings) and extra GenGen `flags`
    (e.g. -p PLUGIN -s NAME) for -target=spyre into the directory `work`; env None inherits this process's."""
    t0 = time.time()
    try:
        p = subprocess.run(command(build, gen, work, name, params, flags), capture_output=True, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return Generated(None, "compilation did not finish in %d s" % timeout, "", time.time() - t0, True)
    seconds = time.time() - t0
    program = os.path.join(work, name + ".spyre")
    if p.returncode == 0 and os.path.exists(program):
        return Generated(program, "", p.stderr, seconds)
    return Generated(None, first_error(p.stderr + "\n" + p.stdout), p.stderr, seconds)
