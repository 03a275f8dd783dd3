#!/usr/bin/env python3
"""Compares two functional llm runs written with --logits-out: a tensor-parallel
run against the --tp 1 run of the same model, weights, prompt and steps.

They must pick the same greedy tokens, and their logits must agree within the
tolerance the runner's own check uses against the host chain (fp16 between
kernels, fp32 inside; the shards sum in another order, and the all-reduce
rounds once more): max |a - b| <= 0.05 x rms + 0.02.

Usage: compare_llm_runs.py REFERENCE.json OTHER.json
"""
import json
import math
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        a = json.load(f)
    with open(sys.argv[2]) as f:
        b = json.load(f)
    ok = True
    if a["prefill_tokens"] != b["prefill_tokens"] or a["decoded"] != b["decoded"]:
        print(f"greedy tokens differ: tp {a['tp']}: {a['prefill_tokens']} {a['decoded']}, "
              f"tp {b['tp']}: {b['prefill_tokens']} {b['decoded']}")
        ok = False
    if len(a["logits"]) != len(b["logits"]) or not a["logits"]:
        sys.exit(f"the runs have {len(a['logits'])} and {len(b['logits'])} steps of logits")
    max_err, sum_sq, n = 0.0, 0.0, 0
    for la, lb in zip(a["logits"], b["logits"]):
        if len(la) != len(lb):
            sys.exit(f"logits of {len(la)} and {len(lb)} entries: not the same vocabulary")
        for x, y in zip(la, lb):
            if not (math.isfinite(x) and math.isfinite(y)):
                ok = False
            max_err = max(max_err, abs(x - y))
            sum_sq += x * x
            n += 1
    rms = math.sqrt(sum_sq / n)
    tolerance = 0.05 * rms + 0.02
    print(f"tp {b['tp']} vs tp {a['tp']}: {len(a['logits'])} steps, tokens {'equal' if ok else 'DIFFER'}; "
          f"logits rms {rms:.3f}, max |difference| {max_err:.4f} (tolerance {tolerance:.4f})")
    if max_err > tolerance or rms < 0.1:
        ok = False
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
