"""Maps one row of a Spyre hardware timing CSV onto a spyre-halide kernel.

A row has the columns of /work/shared/hw/spyre_hw_timings_*.csv: id, op, shape, dtype, cores,
variant, time_us, metric_note, source (timings of torch-spyre's kernels on a real card).
map_row(row) returns a Mapping: the op class, the generator (build/bin/gen_<generator>) with its
GeneratorParams, the schedule knobs set from the row, the run-time scalars the program needs, the
variant information no knob of ours expresses, the minimal algorithmic DRAM bytes of the torch op,
and, for a row that no kernel covers or whose time is not one device kernel's, the reason it is
unmapped (the op class is still set).

Every rule reads only the text of op, shape, dtype, cores, variant and metric_note; no row is
special-cased by id, so an unseen CSV of the same format goes through the same rules. The rules
assume the vocabulary of the torch-spyre sweep records (`a[R,C]+b[1,C]`, `x.sum(dim=-1)`,
`M=..,K=..,N=..`, `tiles=T; lx_planning=L`, ...); text they do not recognize leaves the row unmapped
with the reason, never guessed.

Conventions (the generator headers in generators/*.cpp):
  - Halide dims are innermost first: torch [R, C] is d0 = C, d1 = R; torch dim i of an n-D tensor
    is Halide dim n - 1 - i.
  - gen_matmul: C(n, m) = sum_k A(k, m) B(n, k) + bias(n), so torch a[M,K] @ b[K,N] is m=M, n=N, k=K
    (the bias adds N elements of traffic).
  - gen_bmm: C(n, m, b) = sum_k A(k, m, b) B(n, k, b) is torch.bmm(a[B,M,K], b[B,K,N]).
  - torch.matmul(a[B,M,K], b[K,N]) (one shared weight) and decode-shaped linears are gen_matmul
    with the batch folded into m: the weight is read once, as on the card.
  - The row's `cores` is max_cores (32 when not stated); dtype is float16 unless the row says fp32.
  - The sweep's bmm shapes `M=..,K=..,B*N=..` do not give B and N apart: B is solved from the metric
    note's model-counted HBM bytes (the divisor B of B*N whose operand + result bytes match exactly),
    else the harness default (BENCH_B in the note, else 8).
"""
import math
import re
from dataclasses import dataclass, field

# The op classes that reduce each row to one value (fidelity.py's and calibrate.py's row groups).
ROW_REDUCTIONS = frozenset({"sum_rows", "mean_rows", "amax_rows", "max_rows"})
# Rows moving at least 8 MiB are the DRAM-bound ones (fidelity.py's target (b), calibrate.py's DRAM group).
MIB = 1 << 20
LARGE_BYTES = 8 * MIB

ELEMENTWISE_OPS = ("add", "mul", "gelu", "silu")  # gen_elementwise's `op` values
DEFAULT_CORES = 32
DEFAULT_BENCH_B = 8


@dataclass
class Mapping:
    op_class: str
    generator: str = ""  # gen_<generator>; "" when unmapped
    params: dict = field(default_factory=dict)  # the algorithm's GeneratorParams (shape, dtype, op)
    knobs: dict = field(default_factory=dict)  # schedule knobs set from the row
    ignored: list = field(default_factory=list)  # variant information no knob expresses
    notes: list = field(default_factory=list)
    alg_read: int = 0  # minimal DRAM bytes the torch op reads: every operand once
    alg_write: int = 0  # and writes: the result once
    unmapped: str = ""  # why no kernel stands for the row

    @property
    def alg_bytes(self):
        """Minimal DRAM bytes of the torch op: every operand read once, the result written once."""
        return self.alg_read + self.alg_write

    @property
    def mapped(self):
        return bool(self.generator) and not self.unmapped

    def generator_args(self):
        """`key=value` GeneratorParams, algorithm first, then knobs."""
        return ["%s=%s" % kv for kv in list(self.params.items()) + list(self.knobs.items())]

    def shape_key(self):
        """The algorithm (no knobs): rows of one hardware group that map differently stay apart."""
        return " ".join("%s=%s" % kv for kv in self.params.items())


# ---------------------------------------------------------------------------------------------
# Parsing the row's text


def parse_int(text, default=None):
    try:
        return int(str(text).strip())
    except ValueError:
        return default


def bracket_lists(text):
    """Every `[a,b,...]` of integers in text, in order (lists with a non-integer are skipped)."""
    out = []
    for body in re.findall(r"\[([^\]]*)\]", text):
        items = [parse_int(x) for x in body.split(",")]
        if items and all(i is not None for i in items):
            out.append(items)
    return out


def key_values(text):
    """`M=1024,K=2048,B*N=4096` -> {'M': 1024, 'K': 2048, 'B*N': 4096} (integer values only)."""
    return {k: int(v) for k, v in re.findall(r"([A-Za-z][A-Za-z_*]*)\s*=\s*(\d+)\b", text)}


def note_int(note, pattern):
    m = re.search(pattern, note)
    return int(m.group(1)) if m else None


def dtype_of(row, mapping):
    """(generator dtype, bytes per element); notes when the row does not say fp16."""
    text = row["dtype"].lower()
    if "fp32" in text or "float32" in text:
        return "float32", 4
    if "bf16" in text or "bfloat16" in text:
        mapping.notes.append("bf16 row compiled as float16 (same bytes, the SFU/PT rates assumed equal)")
    elif "fp16" not in text and "float16" not in text:
        mapping.notes.append("dtype '%s': compiled as float16" % row["dtype"])
    return "float16", 2



def tensor_and_dtype(row, m):
    """The row's tensor dims (outermost first), dtype and element size; dims is empty, with the
    row marked unmapped, when the shape does not parse."""
    dims = tensor_dims(row["shape"])
    if not dims:
        m.unmapped = "shape '%s' not parsed" % row["shape"]
        return [], None, 0
    dt, size = dtype_of(row, m)
    return dims, dt, size

def set_cores(row, mapping):
    """max_cores from the row's core count."""
    cores = parse_int(row["cores"])
    if cores is None or cores < 1:
        cores = DEFAULT_CORES
        mapping.notes.append("cores '%s': max_cores=%d" % (row["cores"], DEFAULT_CORES))
    mapping.knobs["max_cores"] = cores


def record_variant(row, mapping):
    """The variant's plan choices, each recorded as ignored: none has a knob of ours (see the reasons)."""
    v = row["variant"]
    tiles = note_int(v, r"\btiles=(\d+)")
    if tiles is not None and tiles > 1:
        mapping.ignored.append("coarse tiling into %d sequential whole-card tiles (tiles=%d): no knob, our tiles "
                               "are per core inside one kernel" % (tiles, tiles))
    lx = re.search(r"\blx_planning=(\d+)", v)
    if lx:
        mapping.ignored.append("lx_planning=%s: torch-spyre's scratchpad planner, ours always plans the scratchpad"
                               % lx.group(1))
    nested = re.search(r"nested tiling ([^(;]*)", v, re.I)
    if nested:
        mapping.ignored.append("nested coarse tiling %s: no knob" % nested.group(1).strip())
    if re.search(r"FORCED work-division", v, re.I):
        mapping.ignored.append("forced work division (split not recorded in the CSV): our planner splits within "
                               "max_cores")
    wd = re.search(r"work division[^:]*:\s*([^;()]+)", v, re.I)
    if wd and not re.search(r"FORCED work-division", v, re.I):
        mapping.ignored.append("work division %s: no per-dimension core-count knob, our planner splits within "
                               "max_cores" % wd.group(1).strip())
    if re.search(r"FORCED operand device dim_order", v, re.I):
        mapping.ignored.append("forced operand layout (WD_LAYOUT_A/B, not labelled in the CSV): no layout knob")


def unusable_reason(row):
    """Why the row's time is not one device kernel's (or not trustworthy), else ''."""
    note, op, variant, shape = row["metric_note"], row["op"], row["variant"], row["shape"]
    text = " ".join((note, op, variant))
    if "UNRELIABLE" in note:
        return "timing marked UNRELIABLE in the metric note"
    if re.search(r"pathological", note, re.I):
        return "pathological plan (metric note: coarse-tiled build re-reads operands in a loop, 10-80 GB per kernel)"
    if re.search(r"multi-kernel|whole function|SEPARATE kernels", text, re.I):
        return "multi-kernel total, not one kernel"
    if re.search(r"WALL time|host wall|WITHOUT profiler", note, re.I):
        return "host wall-clock time, not a device kernel time"
    if re.search(r"launchKernel phase|NOT a profiler device time", text, re.I):
        return "host-instrumented launch phase, not a device kernel time"
    if re.search(r"not part of Self SPYRE kernel time|Memset", text, re.I):
        return "separate device event, not a kernel time"
    if re.search(r"shape not stated", shape, re.I):
        return "shape not stated"
    return ""


def tensor_dims(shape):
    """The first bracketed integer list of the shape (the input tensor), or None."""
    lists = bracket_lists(shape)
    return lists[0] if lists else None


def innermost_first(dims):
    """torch dims (outermost first) -> (d0, d1, d2): the inner two kept, every outer one folded into d2."""
    dims = list(dims)
    while len(dims) < 3:
        dims.insert(0, 1)
    outer = 1
    for d in dims[:-2]:
        outer *= d
    return dims[-1], dims[-2], outer


# ---------------------------------------------------------------------------------------------
# Rules: one function per kernel family. Each takes (row, mapping) and fills the mapping in.


def map_elementwise(row, m):
    dims, dt, size = tensor_and_dtype(row, m)
    if not dims:
        return
    d0, d1, d2 = innermost_first(dims)
    v = row["variant"]
    unary = re.search(r"\b(gelu|silu|neg)\(x\)", v) or re.search(r":(gelu|silu|neg)$", row["op"])
    scalar = re.search(r"\bx\s*([+*])\s*-?\d+(\.\d*)?\b", v)
    binary = re.search(r"\ba\[([^\]]+)\]\s*([+*])\s*b\[([^\]]+)\]", v)
    broadcast = ""
    if unary:
        name = unary.group(1)
        if name == "neg":
            op, broadcast, m.op_class = "mul", "d0,d1,d2", "neg"
            m.notes.append("neg as x * b with b a broadcast scalar (-1): gen_elementwise has no neg, same traffic")
        else:
            op, m.op_class = name, name
        m.alg_read, m.alg_write = d0 * d1 * d2 * size, d0 * d1 * d2 * size
    elif scalar:
        op = "add" if scalar.group(1) == "+" else "mul"
        broadcast, m.op_class = "d0,d1,d2", op + "_scalar"
        m.notes.append("%s as b a broadcast scalar" % scalar.group(0))
        m.alg_read, m.alg_write = d0 * d1 * d2 * size, d0 * d1 * d2 * size
    elif binary:
        op = "add" if binary.group(2) == "+" else "mul"
        a_dims = [x.strip() for x in binary.group(1).split(",")]
        b_dims = [x.strip() for x in binary.group(3).split(",")]
        if len(a_dims) != len(b_dims) or len(a_dims) != len(dims) or len(dims) > 3:
            m.unmapped = "broadcast '%s' does not match the shape %s (gen_elementwise: 3-D)" % (
                binary.group(0), row["shape"])
            return
        n = len(a_dims)
        bdims = ["d%d" % (n - 1 - i) for i in range(n) if b_dims[i] == "1" and a_dims[i] != "1"]
        broadcast = ",".join(sorted(bdims))
        kind = {"d1": "row", "d0": "col"}.get(broadcast, broadcast.replace(",", ""))
        m.op_class = op + ("_bcast_" + kind if broadcast else "")
        b_elems = 1
        for i in range(n):
            b_elems *= 1 if ("d%d" % (n - 1 - i)) in bdims else dims[i]
        m.alg_read, m.alg_write = (d0 * d1 * d2 + b_elems) * size, d0 * d1 * d2 * size
    elif re.search(r"\ba\s*([+*])\s*b\b", v) or re.fullmatch(r"(add|mul)(:.*)?", row["op"]):
        op = "mul" if re.search(r"\ba\s*\*\s*b\b", v) or row["op"].startswith("mul") else "add"
        m.op_class = op
        if re.search(r"two INDEPENDENT", v, re.I):
            d2 *= 2
            m.notes.append("two independent adds in one kernel as one add over twice the tensor (d2 doubled)")
        m.alg_read, m.alg_write = 2 * d0 * d1 * d2 * size, d0 * d1 * d2 * size
    else:
        m.unmapped = "elementwise op not recognized in '%s' (gen_elementwise: %s)" % (v, ", ".join(ELEMENTWISE_OPS))
        return
    m.generator = "elementwise"
    m.params.update(d0=d0, d1=d1, d2=d2, dtype=dt, op=op)
    if broadcast:
        m.params["broadcast_b"] = broadcast
    set_cores(row, m)
    record_variant(row, m)


def map_reduce(row, m):
    dims, dt, size = tensor_and_dtype(row, m)
    if not dims:
        return
    v = row["variant"]
    call = re.search(r"\b(sum|mean|amax|max)\(dim=(-?\d+)\)", v + " " + row["shape"])
    if call:
        torch_op, dim = call.group(1), int(call.group(2))
    else:
        op_word = re.search(r"(sum|mean|amax|max)", row["op"] + " " + v)
        if not op_word:
            m.unmapped = "reduction not recognized in '%s'" % v
            return
        torch_op, dim = op_word.group(1), -1
        m.notes.append("reduction dim not stated: the last (innermost) dim assumed")
    n = len(dims)
    dim = dim + n if dim < 0 else dim
    if not 0 <= dim < n or n > 3:
        m.unmapped = "reduction over dim %d of a %d-D tensor: gen_reduce takes 3-D tensors" % (dim, n)
        return
    d = (list(reversed(dims)) + [1, 1])[:3]  # d0, d1, d2
    axis = n - 1 - dim
    op = {"amax": "max"}.get(torch_op, torch_op)
    m.op_class = "%s_%s" % (torch_op, "rows" if axis == 0 else "cols")  # rows: along each row (torch dim -1)
    m.generator = "reduce"
    m.params.update(d0=d[0], d1=d[1], d2=d[2], dtype=dt, op=op, axis=axis)
    total = d[0] * d[1] * d[2]
    m.alg_read, m.alg_write = total * size, total // d[axis] * size
    set_cores(row, m)
    record_variant(row, m)


def map_softmax(row, m):
    dims, dt, size = tensor_and_dtype(row, m)
    if not dims:
        return
    dim = note_int(row["variant"], r"dim=(\d+)")
    if dim is not None and dim != len(dims) - 1:
        m.unmapped = "softmax over a dim other than the last: gen_softmax reduces the innermost dim"
        return
    cols, rows, outer = innermost_first(dims)
    m.generator = "softmax"
    m.params.update(cols=cols, rows=rows * outer, dtype=dt)
    m.alg_read, m.alg_write = cols * rows * outer * size, cols * rows * outer * size
    set_cores(row, m)
    record_variant(row, m)


def map_norm(row, m):
    dims, dt, size = tensor_and_dtype(row, m)
    if not dims:
        return
    cols, rows, outer = innermost_first(dims)
    rms = bool(re.search(r"rms", row["op"], re.I))
    m.generator = m.op_class = "rmsnorm" if rms else "layernorm"
    m.params.update(cols=cols, rows=rows * outer, dtype=dt)
    m.alg_read, m.alg_write = (cols * rows * outer + (1 if rms else 2) * cols) * size, cols * rows * outer * size
    set_cores(row, m)
    record_variant(row, m)


def map_transpose(row, m):
    dims = tensor_dims(row["shape"])
    if not dims or len(dims) not in (2, 3):
        m.unmapped = "shape '%s' not parsed as [R,C] or [B,R,C]" % row["shape"]
        return
    dt, size = dtype_of(row, m)
    m.generator = "transpose"
    m.params.update(x=dims[-1], y=dims[-2], batch=dims[0] if len(dims) == 3 else 0, dtype=dt)
    total = 1
    for d in dims:
        total *= d
    m.alg_read, m.alg_write = total * size, total * size
    set_cores(row, m)
    record_variant(row, m)


def matmul_dims(shape):
    """(M, K, N) of `M=..,K=..,N=..` or `[M,K] x [K,N]`, else None."""
    kv = key_values(shape)
    if all(k in kv for k in ("M", "K", "N")):
        return kv["M"], kv["K"], kv["N"]
    lists = bracket_lists(shape)
    if len(lists) == 2 and len(lists[0]) == 2 and len(lists[1]) == 2 and lists[0][1] == lists[1][0]:
        return lists[0][0], lists[0][1], lists[1][1]
    return None


def set_matmul(row, m, mm, k, n, dt):
    m.generator = "matmul"
    m.params.update(m=mm, n=n, k=k, dtype=dt)
    m.notes.append("gen_matmul also reads a bias of n elements")
    set_cores(row, m)
    record_variant(row, m)


def map_matmul(row, m):
    d = matmul_dims(row["shape"])
    if not d:
        m.unmapped = "shape '%s' not parsed as M=..,K=..,N=.." % row["shape"]
        return
    dt, size = dtype_of(row, m)
    mm, k, n = d
    m.alg_read, m.alg_write = (mm * k + k * n) * size, mm * n * size
    set_matmul(row, m, mm, k, n, dt)


def solve_batch(row, bn, elements_of, size):
    """(B, how) for a `B*N` shape: the divisor B of bn whose elements_of(B) x size equals the note's
    model-counted HBM bytes, else the harness default."""
    default = note_int(row["metric_note"], r"BENCH_B=(\d+)") or DEFAULT_BENCH_B
    hw_bytes = note_int(row["metric_note"], r"HBM bytes=(\d+)")
    fits = []
    if hw_bytes is not None:
        fits = [b for b in range(1, bn + 1) if bn % b == 0 and elements_of(b) * size == hw_bytes]
    if len(fits) == 1:
        return fits[0], "B=%d solved from the model-counted HBM bytes" % fits[0]
    if fits:
        # A shared weight makes the bytes symmetric in (B, N): take the solution nearest the harness default.
        b = min(fits, key=lambda x: abs(math.log(x / default)))
        return b, "B=%d solved from the model-counted HBM bytes (B in %s all match, the nearest to the harness " \
                  "default B=%d taken)" % (b, fits, default)
    return default, "B not derivable from the note's HBM bytes: harness default B=%d assumed" % default


def map_bmm(row, m):
    dt, size = dtype_of(row, m)
    kv = key_values(row["shape"])
    lists = bracket_lists(row["shape"])
    if all(x in kv for x in ("M", "K", "B*N")):
        mm, k, bn = kv["M"], kv["K"], kv["B*N"]
        b, how = solve_batch(row, bn, lambda b: b * mm * k + k * bn + mm * bn, size)
        if bn % b:
            m.unmapped = "B*N=%d is not a multiple of B=%d" % (bn, b)
            return
        n = bn // b
        m.notes.append(how)
    elif len(lists) == 2 and len(lists[0]) == 3 and len(lists[1]) == 3:
        (b, mm, k), (b2, k2, n) = lists
        if b != b2 or k != k2:
            m.unmapped = "bmm operands %s do not agree" % row["shape"]
            return
    else:
        m.unmapped = "shape '%s' not parsed as M=..,K=..,B*N=.. or [B,M,K] x [B,K,N]" % row["shape"]
        return
    m.generator = "bmm"
    m.params.update(batch=b, m=mm, n=n, k=k, dtype=dt)
    m.alg_read, m.alg_write = b * (mm * k + k * n) * size, b * mm * n * size
    set_cores(row, m)
    record_variant(row, m)


def map_shared_weight_matmul(row, m):
    """torch.matmul(a[B,M,K], b[K,N]): gen_matmul with m = B*M."""
    dt, size = dtype_of(row, m)
    kv = key_values(row["shape"])
    if not all(x in kv for x in ("M", "K", "B*N")):
        m.unmapped = "shape '%s' not parsed as M=..,K=..,B*N=.." % row["shape"]
        return
    mm, k, bn = kv["M"], kv["K"], kv["B*N"]
    b, how = solve_batch(row, bn, lambda b: b * mm * k + k * (bn // b) + mm * bn, size)
    if bn % b:
        m.unmapped = "B*N=%d is not a multiple of B=%d" % (bn, b)
        return
    n = bn // b
    m.notes.append(how + ", the batch folded into m (one shared weight)")
    m.alg_read, m.alg_write = (b * mm * k + k * n) * size, b * mm * n * size
    set_matmul(row, m, b * mm, k, n, dt)


def map_linear(row, m):
    """A linear on activations [B,...,K] and a 2-D weight [K,N]: gen_matmul with m = the activation rows."""
    lists = bracket_lists(row["shape"])
    if len(lists) != 2 or len(lists[1]) != 2 or lists[0][-1] != lists[1][0]:
        m.unmapped = "shape '%s' not parsed as [...,K] x [K,N]" % row["shape"]
        return
    dt, size = dtype_of(row, m)
    rows = 1
    for d in lists[0][:-1]:
        rows *= d
    k, n = lists[1]
    m.alg_read, m.alg_write = (rows * k + k * n) * size, rows * n * size
    m.notes.append("activation rows folded into m (one shared weight)")
    set_matmul(row, m, rows, k, n, dt)


def map_attention(row, m):
    """Attention shapes `B=..,H=..,S=..,D=..` or [B,H,S,D]: heads = B*H."""
    kv = {k.upper(): v for k, v in key_values(row["shape"]).items()}
    lists = bracket_lists(row["shape"])
    if "S" in kv and "D" in kv:
        heads = kv.get("B", 1) * kv.get("H", kv.get("HEADS", 1))
        s, d = kv["S"], kv["D"]
    elif lists and len(lists[0]) in (3, 4):
        *outer, s, d = lists[0]
        heads = 1
        for x in outer:
            heads *= x
    else:
        m.unmapped = "attention shape '%s' not parsed (B=..,H=..,S=..,D=.. or [B,H,S,D])" % row["shape"]
        return
    dt, size = dtype_of(row, m)
    text = row["op"] + " " + row["variant"]
    causal = bool(re.search(r"causal", text, re.I)) and not re.search(r"non-causal|causal\s*=\s*(false|0)", text, re.I)
    m.generator = "attention"
    m.params.update(d=d, s=s, heads=heads, dtype=dt, causal="true" if causal else "false")
    m.alg_read, m.alg_write = 3 * heads * s * d * size, heads * s * d * size
    set_cores(row, m)
    record_variant(row, m)


def unmapped_rule(op_class, reason):
    def rule(row, m):
        m.op_class = op_class
        m.unmapped = reason
    return rule


# (op pattern, op class, rule), first match wins. Rules may refine the class (elementwise, reductions).
RULES = [
    (r"^add_chain", "add_chain", unmapped_rule(
        "add_chain", "n-input fused sum (n inputs, 1 output): gen_elementwise is binary, so no one kernel has its "
        "traffic")),
    (r"^outer_add", "outer_add", unmapped_rule(
        "outer_add", "outer-product add b[1,C]+c[R,1] (both operands broadcast): gen_elementwise's a is full-shaped")),
    (r"silu_and_mul", "silu_and_mul", unmapped_rule(
        "silu_and_mul", "fused silu(a)*b: gen_elementwise's silu is unary (two kernels)")),
    (r"^(add|mul|pointwise)", "elementwise", map_elementwise),
    (r"^reduction", "reduction", map_reduce),
    (r"^softmax", "softmax", map_softmax),
    (r"(layer_?norm|rms_?norm)", "norm", map_norm),
    (r"^transpose_outer", "transpose_outer", unmapped_rule(
        "transpose_outer", "outer-dim permutation [R,M,C]->[M,R,C] keeping the stick dim: gen_transpose moves the "
        "stick dim and gen_elementwise's device_order sets one layout for input and output")),
    (r"^transpose", "transpose", map_transpose),
    (r"^bmm/linear|linear", "linear", map_linear),
    (r"^bmm_3d2d", "bmm_3d2d", map_shared_weight_matmul),
    (r"^bmm", "bmm", map_bmm),
    (r"^(matmul|mm)\b", "matmul", map_matmul),
    (r"(attention|sdpa)", "attention", map_attention),
    (r"^(concat|cat)\b", "concat", unmapped_rule(
        "concat", "concatenation: no concat kernel (every generator's output has its inputs' extents)")),
    (r"embedding", "embedding", unmapped_rule("embedding", "embedding lookup (a gather): no gather kernel")),
    (r"(proj|MoE|MLP)", "model_layer", unmapped_rule(
        "model_layer", "a model layer or function of several kernels, not one kernel")),
    (r"Memset", "device_event", unmapped_rule("device_event", "a device memset event, not a kernel")),
]


def op_slug(op):
    return re.sub(r"[^a-z0-9]+", "_", op.lower()).strip("_") or "unknown"


def map_row(row):
    """The Mapping of one CSV row (a dict of its columns)."""
    for pattern, op_class, rule in RULES:
        if re.search(pattern, row["op"], re.I):
            m = Mapping(op_class=op_class)
            rule(row, m)
            break
    else:
        m = Mapping(op_class=op_slug(row["op"]), unmapped="no rule maps op '%s' onto a kernel" % row["op"])
    reason = unusable_reason(row)
    if reason:
        m.unmapped = reason
    if m.unmapped:  # keep only the class and the reason
        m = Mapping(op_class=m.op_class, unmapped=m.unmapped)
    return m
