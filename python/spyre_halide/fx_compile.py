"""spyre_halide.compile: a torch.nn.Module offloaded op by op to the simulated card.

    compiled = spyre_halide.compile(model, (x,))
    y = compiled(x)                    # a torch tensor, as model(x) returns
    compiled.print_report()            # simulated time per op, host<->device traffic

The module is traced with ``torch.fx.symbolic_trace`` and its tensors' shapes
and dtypes are found by running it once on the example inputs
(``torch.fx.passes.shape_prop``). Every op the suite computes exactly (the
same function, at these static shapes) becomes a kernel of the suite,
compiled when compile() runs and cached (kernels.py); everything else runs on
the CPU, and compile() prints what fell back and why. Values produced by
kernels stay on the card (DeviceTensors); they come back to the host only
where a CPU op or the module's output needs them, and every such transfer is
counted in the report.

What maps (docs/pytorch.md has the table):
- nn.Linear -> matmul with its bias, plus the epilogue the suite fuses: a
  following relu, tanh-GELU or SiLU, then a residual add (C = act(xW^T + b) + r);
- matmul / bmm / @ of 2-D or batched operands -> matmul or bmm;
- softmax over the last dim, or over a dim with nothing before it (dim=0 of a
  2-D tensor); nn.LayerNorm / layer_norm over the last dim;
  the RMSNorm pattern x * rsqrt(mean(x^2, -1, keepdim) + eps) * w;
- GELU(approximate='tanh'), SiLU, ReLU; add / mul of two tensors with broadcasting
  (or of a tensor and a number);
- nn.Conv2d with stride 1, dilation 1, one group and zero padding, plus a
  following relu (the suite's conv2d is channels-last: the NCHW tensors are
  transposed views on the card, re-laid out by the runtime, charged);
- transpose, permute, view, reshape, flatten, unsqueeze, squeeze, contiguous of
  a tensor on the card are views (or a device copy when the bytes must move).
Not mapped, with the reason printed: the erf GELU (the suite's GELU is the tanh
form, a different function), softmax over a middle dim, dtypes other than
float16/float32, and any other op.

Assumes: static shapes (those of the example inputs; another shape is refused
at call time), parameters frozen at compile() (uploaded once, resident on the
card; compile again after changing them), a module in eval mode (compile()
sets it).
"""


import torch
import torch.fx

from . import _native
from .fx_module import CompiledModule
from .fx_rules import Fallback, _Planner, _Step
from .fx_shapes import _propagate_shapes


def compile(module, example_inputs, verbose=True):
    """Traces `module` with torch.fx at the shapes of `example_inputs` (a tuple of tensors)
    and plans every op: on the card where a suite kernel computes the same function,
    else on the CPU (listed, with the reason, when verbose). Returns a CompiledModule:
    call it like the module; its .last_report and print_report() give the simulated time
    per op and the host<->device traffic of the last call."""
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    module = module.eval()
    try:
        gm = torch.fx.symbolic_trace(module)
    except torch.fx.proxy.TraceError as e:
        raise _native.Error(f"torch.fx.symbolic_trace cannot trace {type(module).__name__}: {e} "
                            "(control flow on tensor values and unpacking a shape do not trace; "
                            "index it instead: x.shape[0])") from e
    with torch.no_grad():
        _propagate_shapes(gm, example_inputs)
    planner = _Planner(gm)
    steps = {}
    with torch.no_grad():
        # Patterns that span several nodes first, so their parts are not planned on their own.
        for node in gm.graph.nodes:
            if node.op in ("call_function", "call_method") and node.target in (torch.rsqrt, "rsqrt"):
                try:
                    step = planner.rms_norm(node)
                except Fallback:
                    step = None
                if step is not None:
                    steps[step.planned_at] = step
        for node in gm.graph.nodes:
            if node in steps:
                continue
            step = planner.plan(node)
            if step is not None:
                planned = getattr(step, "planned_at", node)
                steps[planned] = step
                if planned is not node:
                    steps.setdefault(node, _Step("fused", None, f"fused into {planned.name}"))
    # Nodes fused after they were planned on their own (a later rule claimed them).
    for node, owner in planner.fused.items():
        if node is not owner and steps.get(node) is not None and steps[node].where != "fused":
            steps[node] = _Step("fused", None, f"fused into {owner.name}")
    compiled = CompiledModule(gm, steps, [tuple(x.shape) if isinstance(x, torch.Tensor) else None
                                          for x in example_inputs])
    if verbose:
        print(f"spyre_halide.compile({type(module).__name__}): {len(compiled.offloaded)} ops on the card, "
              f"{len(compiled.fallbacks)} on the CPU")
        for label, reason in compiled.fallbacks:
            print(f"  cpu: {label}: {reason}")
    return compiled
