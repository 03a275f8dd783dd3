"""The Granite-8B-shaped model on the simulated card: runs build/bin/llm timing-only at each decode
batch size it was built for and writes the figures to the `llm` section of docs/performance.md.

    python3 -m benchmarks.llm.llm_report [--llm build/bin/llm] [--tokens 8] [--md docs/performance.md]

Each run is `llm --timing-only --batch B --tokens N --json FILE` (a few seconds each); the section
shows, per batch, the prefill and decode figures against the configuration's physical bounds and the
targets (decode within 1.3x of the weight-traffic floor, prefill within 1.5x of the larger of its
compute and traffic bounds), then the per-kernel tables of the batch-1 run.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from benchmarks.spyre_bench.doc_section import with_section

INCUMBENT_MS_PER_TOKEN = 865.0  # torch-spyre, Granite-3.3-8B on one card, batch 1 (its published figure)


def run(llm, batch, tokens):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        cmd = [llm, "--timing-only", "--batch", str(batch), "--tokens", str(tokens), "--json", path]
        print("running:", " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(path) as f:
            return json.load(f)
    finally:
        os.unlink(path)


def kernel_table(rows):
    total = sum(r["us"] for r in rows)
    out = ["| kernel | calls | time (ms) | share | MB moved | % of its bound | bottleneck |",
           "|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        share = 100.0 * r["us"] / total if total else 0.0
        pct = 100.0 * r["bound_us"] / r["us"] if r["us"] else 0.0
        out.append("| %s | %d | %.2f | %.1f%% | %.1f | %.0f%% | %s |" %
                   (r["kernel"], r["calls"], r["us"] / 1e3, share, r["bytes"] / 1e6, pct, r["bottleneck"]))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llm", default="build/bin/llm")
    ap.add_argument("--tokens", type=int, default=8, help="decode steps per run")
    ap.add_argument("--batches", default="1,4,8")
    ap.add_argument("--md", default="docs/performance.md", help="markdown file whose `llm` section is written")
    args = ap.parse_args()

    results = [run(args.llm, int(b), args.tokens) for b in args.batches.split(",")]
    first = results[0]
    lines = ["## A Granite-8B-shaped decoder (apps/llm)", "",
             "`python3 -m benchmarks.llm.llm_report` (this section) runs `build/bin/llm --timing-only --batch B "
             "--tokens %d`: the Granite-3.x-8B shape (hidden 4096, %d layers, 32 query / 8 KV heads of 128, "
             "SwiGLU 12800, vocabulary 49155, fp16), a %d-token prompt, then %d greedy decode steps, with the "
             "weights and the KV cache on the simulated device ([docs/llm.md](llm.md)). Times are simulated "
             "under the calibrated timing model; host-side costs are not in them." %
             (args.tokens, first["layers"], first["prompt"], args.tokens), "",
             "| batch | prefill (ms per sequence) | prefill vs its bound | decode step (ms) | ms per token | "
             "tokens/s | weight-traffic floor (ms) | decode vs floor |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        p, d = r["prefill"], r["decode"]
        lines.append("| %d | %.1f | %.2fx (target 1.5x: %s) | %.1f | %.1f | %.1f | %.1f | %.2fx (target 1.3x: %s) |" % (
            r["batch"], p["us"] / 1e3 / r["batch"], p["ratio"], "met" if p["ratio"] <= 1.5 else "missed",
            d["step_us"] / 1e3, d["step_us"] / 1e3 / r["batch"], d["tokens_per_s"], d["floor_us"] / 1e3, d["ratio"],
            "met" if d["ratio"] <= 1.3 else "missed"))
    b1 = first["decode"]
    lines += ["", "At batch 1 a token costs %.1f ms against the incumbent's published ~%.0f ms (%.1fx). The prefill's "
              "bounds are %.1f ms of compute at the datasheet peak and %.1f ms of weight and KV-cache traffic." %
              (b1["step_us"] / 1e3, INCUMBENT_MS_PER_TOKEN, INCUMBENT_MS_PER_TOKEN / (b1["step_us"] / 1e3),
               first["prefill"]["compute_bound_us"] / 1e3, first["prefill"]["traffic_bound_us"] / 1e3), "",
              "Decode at batch 1, all %d steps (per-kernel):" % args.tokens, "", kernel_table(b1["kernels"]), "",
              "Prefill of one %d-token sequence (per-kernel):" % first["prompt"], "",
              kernel_table(first["prefill"]["kernels"])]
    body = "\n".join(lines) + "\n"
    with open(args.md) as f:
        text = f.read()
    with open(args.md, "w") as f:
        f.write(with_section(text, "llm", body))
    print(body)


if __name__ == "__main__":
    main()
