"""A lower bound on a split over K for a matmul on the card, measured without building the split.

    python3 -m benchmarks.incumbent.split_k_bound [--build build] [--shape M,N,K,CORES,PARTS ...]

A split over K runs `parts` products of K/parts rows each on cores/parts cores at once, then adds the
fp32 partial tiles across the parts over the ring and stores C once. This script builds every part of
it but the reduction: gen_matmul's plan for one part (m n k/parts on cores/parts cores, the planner's
tiles and each listed tile_m x tile_n), disassembled with spyre-objdump, its cores copied to the other
parts' core ranges (ring targets shifted by the part's first core; the copies' stores of C removed,
since only one part stores C), reassembled with spyre-as and simulated timing-only by spyre-run on
the calibrated machine description. Timing-only runs charge the card's DRAM by bytes, not addresses,
so the copies reading the first part's addresses move what their own K rows would. The reduction and
its wait can only add to that time, so it bounds a split with those per-part plans from below.

Assumes spyre-objdump's text is spyre-as's input (tests/unit/fuzz_regression_test.cpp checks the round trip) and a
program's cores each start with a `.core N` (or `.core A-B`) line. Prints, per shape, the unsplit plan's time and each
part plan's time alone and with every part on the card.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from benchmarks.spyre_bench import generate, simulate

# The two incumbent matmuls of issue 35 that stay above their targets: m, n, k, cores, parts.
DEFAULT_SHAPES = ["512,512,512,32,2", "512,512,512,32,4", "512,2048,2048,32,2"]
PART_TILES = [None, (64, 128), (128, 64), (128, 128), (64, 256), (128, 256), (256, 128), (128, 512),
              (256, 256), (64, 512)]


def replicate_parts(text, parts, cores_per_part):
    """The program text with its cores copied to parts - 1 more core ranges, the copies without stores."""
    pieces = re.split(r"(?m)^(?=\.core )", text)
    head, cores = pieces[0].rstrip("\n"), [c for c in pieces[1:] if c.strip()]
    if not cores:
        raise SystemExit("split_k_bound: the disassembly has no `.core` line")
    out = [head] + [c.rstrip("\n") for c in cores]
    for p in range(1, parts):
        shift = p * cores_per_part
        for c in cores:
            copy = re.sub(r"^\.core (\d+)(?:-(\d+))?", lambda m: ".core %d" % (int(m.group(1)) + shift) + (
                "-%d" % (int(m.group(2)) + shift) if m.group(2) else ""), c)
            copy = re.sub(r"dst_core=(\d+)", lambda m: "dst_core=%d" % (int(m.group(1)) + shift), copy)
            copy = re.sub(r"(?m)^\s*dma\.store .*\n?", "", copy)
            out.append(copy.rstrip("\n"))
    return "\n".join(out) + "\n"


def timed(build, program):
    run = simulate.simulate(build, program)
    if run.error:
        raise SystemExit("spyre-run %s: %s" % (program, run.error))
    return simulate.simulated_time_us(run.stdout)


def tool(build, name):
    return os.path.join(build, "bin", name)


def part_bound(build, work, m, n, k, cores, parts, tiles):
    """(the part alone, every part at once) in us, or None when gen_matmul refuses the tiles."""
    knobs = [] if tiles is None else ["tile_m=%d" % tiles[0], "tile_n=%d" % tiles[1]]
    name = "part_%d_%d_%d_%d%s" % (m, n, k // parts, cores // parts,
                                   "" if tiles is None else "_%dx%d" % tiles)
    g = generate.generate(build, "matmul", work, name,
                          ["m=%d" % m, "n=%d" % n, "k=%d" % (k // parts), "max_cores=%d" % (cores // parts),
                           "dtype=float16"] + knobs)
    if g.program is None:
        return None
    text = subprocess.run([tool(build, "spyre-objdump"), g.program], capture_output=True, text=True,
                          check=True).stdout
    asm = os.path.join(work, name + ".parts.s")
    with open(asm, "w") as f:
        f.write(replicate_parts(text, parts, cores // parts))
    program = os.path.join(work, name + ".parts.spyre")
    subprocess.run([tool(build, "spyre-as"), asm, "-o", program], check=True, capture_output=True, text=True)
    return timed(build, g.program), timed(build, program)


def parse_shape(spec):
    """M,N,K,CORES,PARTS as five positive integers, PARTS (at least 2) dividing K and CORES."""
    try:
        m, n, k, cores, parts = (int(x) for x in spec.split(","))
    except ValueError:
        raise SystemExit("split_k_bound: --shape %r: expected M,N,K,CORES,PARTS (five integers)" % spec)
    if min(m, n, k, cores) < 1 or parts < 2 or k % parts or cores % parts:
        raise SystemExit("split_k_bound: --shape %s: M, N, K, CORES must be positive and PARTS (at least 2) "
                         "must divide K and CORES" % spec)
    return m, n, k, cores, parts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--shape", action="append", help="M,N,K,CORES,PARTS (default: %s)" % " ".join(DEFAULT_SHAPES))
    args = parser.parse_args()
    shapes = [parse_shape(spec) for spec in args.shape or DEFAULT_SHAPES]
    work = tempfile.mkdtemp(prefix="split-k-")
    print("| shape | cores | unsplit us | parts | part tiles | part alone us | every part at once, no reduction us |")
    print("|---|---|---|---|---|---|---|")
    for spec, (m, n, k, cores, parts) in zip(args.shape or DEFAULT_SHAPES, shapes):
        g = generate.generate(args.build, "matmul", work, "whole_%d_%d_%d_%d" % (m, n, k, cores),
                              ["m=%d" % m, "n=%d" % n, "k=%d" % k, "max_cores=%d" % cores, "dtype=float16"])
        if g.program is None:
            raise SystemExit("gen_matmul %s: %s" % (spec, g.error))
        whole = timed(args.build, g.program)
        for tiles in PART_TILES:
            print("%s: %d parts, tiles %s" % (spec, parts, tiles or "planner's"), file=sys.stderr)
            r = part_bound(args.build, work, m, n, k, cores, parts, tiles)
            if r is None:
                continue
            print("| m=%d n=%d k=%d | %d | %.1f | %d | %s | %.1f | %.1f |" % (
                m, n, k, cores, whole, parts, "planner's" if tiles is None else "%d x %d" % tiles, r[0], r[1]))


if __name__ == "__main__":
    main()
