#!/usr/bin/env bash
# The kernels of a Granite-3-8B decoder layer (hidden 4096, 32 query + 8 KV
# heads of dim 128, SwiGLU MLP of 12800, vocabulary 49155, fp16) at decode and
# prefill shapes: each compiled with its generator for -target=spyre and
# simulated timing-only with spyre-run. Prints one Markdown row per kernel:
# simulated time, roofline bound, % of bound, bottleneck (docs/llm-kernels.md).
# Usage: benchmarks/llm_kernels.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-build}/bin"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

echo "| kernel | parameters | simulated | roofline bound | of bound | cores | bottleneck |"
echo "|---|---|---:|---:|---:|---:|---|"
row() {
  local label="$1" gen="$2"; shift 2
  local dir="$WORK/$gen.$RANDOM"
  mkdir -p "$dir"
  local params=()
  for a in "$@"; do [[ "$a" == --param* ]] || params+=("$a"); done
  "$BIN/gen_$gen" -g "$gen" -o "$dir" -e static_library,c_header -target=spyre "${params[@]}" >/dev/null
  local run_args=()
  [ "$gen" = rmsnorm ] && run_args+=(--param eps=1e-5)
  local out
  out="$("$BIN/spyre-run" --timing-only "${run_args[@]}" "$dir/$gen.spyre")"
  local sim bound pct cores neck
  sim=$(awk '/simulated time/ {print $3, $4}' <<<"$out")
  bound=$(awk '/roofline bound/ {print $3, $4}' <<<"$out")
  pct=$(awk '/roofline bound/ {print $(NF-2)}' <<<"$out")
  cores=$(sed -n 's/.*(\([0-9]* of [0-9]*\) cores active).*/\1/p' <<<"$out")
  neck=$(awk '/bottleneck/ {print $2}' <<<"$out" | tr -d ';')
  echo "| $label | \`${params[*]}\` | $sim | $bound | $pct | $cores | $neck |"
}

row "rmsnorm, decode" rmsnorm cols=4096 rows=1
row "rmsnorm, prefill" rmsnorm cols=4096 rows=512
row "QKV projection, decode" matmul m=1 n=6144 k=4096
row "QKV projection, prefill" matmul m=512 n=6144 k=4096
row "attention norm's 1/rms, prefill (what llm runs)" rmsnorm cols=4096 rows=512 output=inverse_rms
row "QKV projection scaled by it, prefill (what llm runs)" matmul m=512 n=6144 k=4096 row_scale=true shared_weight_layout=true
for t in 1 4 8 512; do row "rope of the Q and K heads, $t tokens" rope d=128 heads=40 in_heads=48 tokens=$t; done
row "key (d, 1, h) to (1, d, h), batch 1" transpose x=128 y=1 batch=8
row "key (d, 1, h) to (1, d, h), batch 8" transpose x=128 y=1 batch=64
row "keys of a prefill" transpose x=128 y=512 batch=8
row "GQA decode attention, batch 1" attention d=128 s=1024 q=4 heads=8 key_mask=true
row "GQA decode attention, batch 8" attention d=128 s=1024 q=4 heads=64 key_mask=true
row "causal prefill attention, K and V repeated to 32 heads" attention d=128 s=512 heads=32 causal=true
row "causal prefill attention, GQA, O token-major (what llm runs)" attention d=128 s=512 heads=32 kv_heads=8 causal=true o_token_major=true
row "O projection, decode" matmul m=1 n=4096 k=4096
row "O projection, prefill" matmul m=512 n=4096 k=4096
row "residual add, decode" elementwise op=add d0=4096 d1=1 d2=1
row "residual add, prefill" elementwise op=add d0=4096 d1=512 d2=1
row "gate/up projection, decode" matmul m=1 n=25600 k=4096
row "gate/up projection + SwiGLU gate, prefill" matmul m=512 n=12800 k=4096 activation=swiglu shared_weight_layout=true
for m in 1 4 8; do row "SwiGLU gate over the gate/up blocks, M=$m" elementwise op=swiglu d0=64 d1=200 d2=$m gate_up_blocks=true; done
row "down projection, decode" matmul m=1 n=4096 k=12800
row "down projection, prefill" matmul m=512 n=4096 k=12800
row "LM head, decode" matmul m=1 n=49155 k=4096
row "LM head, prefill" matmul m=512 n=49155 k=4096
