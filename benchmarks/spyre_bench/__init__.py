"""The shared harness of the benchmark scripts: one concept per module.

- generate:    running gen_<g> for -target=spyre into a work directory (the program, or its first error)
- simulate:    `spyre-run PROG --timing-only [--report R]` and its figures; the run-time scalars of a program
- machine:     the machine description, as `spyre-info` prints it (and the source tree's JSON)
- errors:      the first error line of a compiler's or simulator's output
- kernel_runs: compiling and simulating many kernels in parallel, with the caches (fidelity, calibrate, incumbent)
- stats:       median, percentile, rms, geomean, Spearman's rank correlation (standard library only)
- tables:      aligned text and markdown tables, number formatting
- doc_section: the generated sections of a markdown file (docs/performance.md)
- mpi:         running a program on several simulated cards under mpirun
- progress:    progress lines on stderr

Only the standard library is used. The scripts import it as `benchmarks.spyre_bench.<module>`, so they
run as modules from the repository root (benchmarks/README.md).
"""
