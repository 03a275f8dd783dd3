"""Running a program on several simulated cards: one MPI rank per card under Open MPI's mpirun.

Assumes `mpirun` on PATH (Open MPI: --oversubscribe lets the ranks outnumber the cores); it runs as
root too (OMPI_ALLOW_RUN_AS_ROOT and its confirmation are set for the child). The ranks see the machine
description of SPYRE_MACHINE_SET=machine_set when it is given, else the inherited one.
"""
import os
import subprocess

from benchmarks.spyre_bench.progress import log


def mpirun(ranks, argv, machine_set=None, capture=False):
    """Runs argv on `ranks` ranks, logging the command; raises CalledProcessError on a failure. Returns the
    standard output when capture, else discards it and returns None."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if machine_set:
        env["SPYRE_MACHINE_SET"] = machine_set
    command = ["mpirun", "--oversubscribe", "-np", str(ranks)] + list(argv)
    log("running: " + (f"SPYRE_MACHINE_SET={machine_set} " if machine_set else "") + " ".join(command))
    return subprocess.run(command, env=env, check=True, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                          text=True).stdout
