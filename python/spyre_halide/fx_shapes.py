"""What torch.fx knows of a traced module at the example inputs: each node's tensor shape and dtype
(ShapeProp), and the Python values (shapes, sizes, scales) nodes compute, which are constants at
static shapes. A float16 module is propagated as a float32 copy (torch's CPU kernels lack most
float16 ops) and its float32 tensors recorded as float16."""

import copy
import math

import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp

from .fx_values import _halves_to_float


class Fallback(Exception):
    """Raised by a mapping rule: the op runs on the CPU, for the reason given."""


_FLOAT_DTYPES = {torch.float16: "float16", torch.float32: "float32"}


def _meta(node):
    """(shape tuple, dtype) of a node's tensor value, or None if it is not one tensor."""
    tm = node.meta.get("tensor_meta") if isinstance(node, torch.fx.Node) else None
    if tm is None or not hasattr(tm, "shape"):
        return None
    return tuple(tm.shape), tm.dtype


class _Propagate(ShapeProp):
    """ShapeProp that also records the Python values (shapes, sizes, scales) nodes compute."""

    def run_node(self, n):
        result = super().run_node(n)
        is_value = isinstance(result, (int, float, bool)) or (isinstance(result, (tuple, list)) and
                                                               all(isinstance(v, int) for v in result))
        if is_value and _static(n):
            n.meta["value"] = result
        return result


def _static(n):
    """Whether n's value is fixed by the static shapes: every input is such a value, or n asks a
    tensor for its shape (x.shape, x.size(), x.dim()). A value read from a tensor's data (.item(),
    a data-dependent max) is not: it is recomputed at every call, never folded."""
    shape_query = ((n.op == "call_function" and n.target is getattr and len(n.args) > 1 and n.args[1] == "shape") or
                   (n.op == "call_method" and n.target in ("size", "dim")))
    for i in n.all_input_nodes:
        if "value" in i.meta or (shape_query and i.meta.get("tensor_meta") is not None):
            continue
        return False
    return True


def _const(value):
    """A Python value, or a node's value recorded at the example run (static shapes)."""
    if isinstance(value, torch.fx.Node):
        if "value" not in value.meta:
            raise Fallback(f"{value.name} is not a value known when compiling")
        return value.meta["value"]
    if isinstance(value, (list, tuple)):
        return type(value)(_const(v) for v in value)
    return value


def _dtype_name(node):
    m = _meta(node)
    if m is None:
        raise Fallback("not a tensor of known shape")
    if m[1] not in _FLOAT_DTYPES:
        raise Fallback(f"dtype {str(m[1]).replace('torch.', '')} (the kernels take float16 and float32)")
    return _FLOAT_DTYPES[m[1]]


def _numel(shape):
    return int(math.prod(shape)) if shape else 1


def _propagate_shapes(gm, example_inputs):
    """Shapes, dtypes and Python values of every node at the example inputs. torch's CPU
    kernels lack many float16 ops, so a float16 module is run as a float32 copy and its
    float32 tensors recorded as float16 (a float16 module computes in float16 throughout)."""
    half = any(isinstance(x, torch.Tensor) and x.dtype == torch.float16
               for x in list(example_inputs) + list(gm.parameters()) + list(gm.buffers()))
    if not half:
        _Propagate(gm).propagate(*example_inputs)
        return
    float_gm = torch.fx.GraphModule(copy.deepcopy(gm).float(), gm.graph)
    _Propagate(float_gm).propagate(*_halves_to_float(tuple(example_inputs)))
    for node in gm.graph.nodes:
        tm = node.meta.get("tensor_meta")
        if tm is not None and hasattr(tm, "dtype") and tm.dtype == torch.float32:
            node.meta["tensor_meta"] = tm._replace(dtype=torch.float16)
