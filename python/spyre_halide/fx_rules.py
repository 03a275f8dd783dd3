"""The mapping rules of spyre_halide.compile: for each node of the traced graph, the suite kernel
that computes the same function at its static shapes (compiled now, its parameters uploaded once in
the kernel's layout), a view of a value on the card, or the CPU with the reason (fx_compile.py's
docstring has the list). Epilogues (an activation, then a residual add after a Linear; a ReLU after
a Conv2d) and the RMSNorm pattern are fused: their nodes are marked as computed by the kernel."""

import operator

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from . import _native
from .fx_shapes import Fallback, _const, _dtype_name, _meta, _numel
from .fx_module import _run_on_cpu
from .fx_values import _permute, as_shape
from .kernels import kernel


class _Step:
    """How one node runs: on the card (a kernel), as a view of a device value, or on the CPU."""

    def __init__(self, where, run, label, reason=None, kernel_obj=None):
        self.where = where  # "spyre", "view", "cpu", "fused"
        self.run = run  # callable(env_lookup) -> value
        self.label = label
        self.reason = reason
        self.kernel = kernel_obj


class _Planner:
    def __init__(self, gm):
        self.gm = gm
        self.modules = dict(gm.named_modules())
        self.fused = {}  # node -> the node whose kernel computes it
        self.order = {n: i for i, n in enumerate(gm.graph.nodes)}

    # -- helpers over the graph --
    def only_user(self, node):
        users = list(node.users)
        return users[0] if len(users) == 1 else None

    def activation_of(self, node):
        """The relu / tanh-gelu / silu applied to node as its only use, or (None, None)."""
        user = self.only_user(node)
        if user is None:
            return None, None
        if user.op == "call_module":
            m = self.modules[user.target]
            if isinstance(m, nn.ReLU) and not m.inplace:
                return user, "relu"
            if isinstance(m, nn.GELU) and m.approximate == "tanh":
                return user, "gelu"
            if isinstance(m, nn.SiLU):
                return user, "silu"
        if user.op in ("call_function", "call_method"):
            t = user.target
            if t in (F.relu, torch.relu, "relu") and len(user.args) == 1 and not user.kwargs.get("inplace", False):
                return user, "relu"
            if t in (F.silu, "silu") and len(user.args) == 1:
                return user, "silu"
            if t is F.gelu and user.kwargs.get("approximate", "none") == "tanh":
                return user, "gelu"
        return None, None

    def residual_of(self, node):
        """(add node, other operand) when node's only use is an add of a tensor of its shape."""
        user = self.only_user(node)
        if user is None or user.op != "call_function" or user.target not in (operator.add, torch.add):
            return None, None
        if len(user.args) != 2 or user.kwargs:
            return None, None
        other = user.args[1] if user.args[0] is node else user.args[0]
        if not isinstance(other, torch.fx.Node) or other is node or _meta(other) != _meta(node):
            return None, None
        if self.order[other] > self.order[node]:  # computed after the matmul: it cannot be its input
            return None, None
        return user, other

    def param(self, target):
        obj = self.gm
        for part in target.split("."):
            obj = getattr(obj, part)
        return obj

    # -- the rules --
    def plan(self, node):
        if node in self.fused:
            return _Step("fused", None, f"fused into {self.fused[node].name}")
        if node.op in ("placeholder", "output", "get_attr"):
            return None
        try:
            return self.rule(node)
        except Fallback as why:
            return self.cpu(node, str(why))

    def cpu(self, node, reason):
        return _Step("cpu", None, _describe(node, self.modules), reason)

    def rule(self, node):
        t = node.target
        if _meta(node) is None and not any(_meta(n) is not None for n in node.all_input_nodes):
            # Python values (shapes, sizes, arithmetic on them): computed on the host, no tensor moves.
            return self.view(node, lambda *a, **k: _run_on_cpu(self.gm, node, a, k), *node.args, **node.kwargs)
        if node.op == "call_function" and t is operator.getitem and _meta(node.args[0]) is None:
            return self.view(node, operator.getitem, *node.args)  # an element of a tuple (split's pieces)
        if node.op == "call_module":
            m = self.modules[t]
            if isinstance(m, nn.Linear):
                return self.linear(node, m.weight, m.bias, node.args[0])
            if isinstance(m, nn.LayerNorm):
                return self.layer_norm(node, node.args[0], m.normalized_shape, m.weight, m.bias, m.eps)
            if isinstance(m, nn.Softmax):
                return self.softmax(node, node.args[0], m.dim)
            if isinstance(m, nn.GELU):
                return self.unary(node, node.args[0], m.approximate)
            if isinstance(m, nn.SiLU):
                return self.unary(node, node.args[0], "silu")
            if isinstance(m, nn.ReLU):
                if m.inplace:
                    raise Fallback("ReLU(inplace=True) changes its input, which a kernel's output does not")
                return self.unary(node, node.args[0], "relu")
            if isinstance(m, nn.Conv2d):
                return self.conv2d(node, m)
            if isinstance(m, (nn.Dropout, nn.Identity)):
                return self.view(node, lambda x: x, node.args[0])
            raise Fallback(f"no kernel for {type(m).__name__}")
        if node.op == "call_function":
            if t is F.linear:
                w = node.args[1]
                b = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
                if not (isinstance(w, torch.fx.Node) and w.op == "get_attr"):
                    raise Fallback("F.linear with a weight that is not a parameter")
                bias = self.param(b.target) if isinstance(b, torch.fx.Node) and b.op == "get_attr" else None
                if b is not None and bias is None:
                    raise Fallback("F.linear with a bias that is not a parameter")
                return self.linear(node, self.param(w.target), bias, node.args[0])
            if t in (torch.matmul, operator.matmul, torch.bmm):
                return self.matmul(node, node.args[0], node.args[1])
            if t in (torch.softmax, F.softmax):
                return self.softmax(node, node.args[0], node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else None),
                                    node.kwargs.get("dtype"))
            if t is F.layer_norm:
                return self.functional_layer_norm(node)
            if t is F.gelu:
                return self.unary(node, node.args[0], node.kwargs.get("approximate", "none"))
            if t is F.silu:
                return self.unary(node, node.args[0], "silu")
            if t in (F.relu, torch.relu) and not node.kwargs.get("inplace", False):
                return self.unary(node, node.args[0], "relu")
            if t is torch.rsqrt:
                rms = self.rms_norm(node)
                if rms:
                    return rms
            if t in (operator.add, torch.add, operator.mul, torch.mul):
                if t is torch.add and node.kwargs.get("alpha", 1) != 1:
                    raise Fallback("torch.add with alpha")
                return self.binary(node, "add" if t in (operator.add, torch.add) else "mul")
            if t in (torch.split, torch.chunk):
                return self.split(node, t.__name__, node.args[0], node.args[1:], node.kwargs)
            if t in (torch.transpose, torch.permute, torch.reshape, torch.flatten, torch.unsqueeze, torch.squeeze):
                return self.view_op(node, t.__name__, node.args[0], node.args[1:], node.kwargs)
            if t is getattr:
                return self.attribute(node)
            raise Fallback(f"no kernel for {getattr(t, '__name__', t)}")
        if node.op == "call_method":
            if t in ("matmul", "bmm"):
                return self.matmul(node, node.args[0], node.args[1])
            if t == "softmax":
                return self.softmax(node, node.args[0], node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else None),
                                    node.kwargs.get("dtype"))
            if t in ("add", "mul"):
                return self.binary(node, t)
            if t in ("transpose", "permute", "view", "reshape", "flatten", "unsqueeze", "squeeze", "contiguous"):
                return self.view_op(node, t, node.args[0], node.args[1:], node.kwargs)
            if t == "size":
                return self.view(node, lambda x, *d: tuple(x.shape)[d[0]] if d else tuple(x.shape), *node.args)
            if t == "dim":
                return self.view(node, lambda x: len(x.shape), node.args[0])
            if t in ("split", "chunk"):
                return self.split(node, t, node.args[0], node.args[1:], node.kwargs)
            if t == "relu":
                return self.unary(node, node.args[0], "relu")
            if t == "rsqrt":
                rms = self.rms_norm(node)
                if rms:
                    return rms
            raise Fallback(f"no kernel for .{t}()")
        raise Fallback(f"{node.op}")

    # A step that computes a value from other nodes' values (views on the card, Python values).
    def view(self, node, fn, *inputs, **kw_inputs):
        def run(get):
            args = [torch.fx.node.map_arg(i, get) for i in inputs]
            kwargs = {k: torch.fx.node.map_arg(v, get) for k, v in kw_inputs.items()}
            return fn(*args, **kwargs)

        return _Step("view", run, _describe(node, self.modules))

    def split(self, node, name, source, args, kwargs):
        """split / chunk into pieces along a dim: narrow views of the tensor on the card."""
        shape = _meta(source)[0] if _meta(source) else None
        if shape is None:
            raise Fallback(f"{name} of a tensor of unknown shape")
        size_or_count = _const(kwargs.get("split_size_or_sections", kwargs.get("chunks", args[0] if args else None)))
        dim = _const(kwargs.get("dim", args[1] if len(args) > 1 else 0)) % len(shape)
        extent = shape[dim]
        if isinstance(size_or_count, int):
            size = size_or_count if name == "split" else -(-extent // size_or_count)
            sizes = [min(size, extent - start) for start in range(0, extent, size)]
        elif name == "split" and isinstance(size_or_count, (list, tuple)):
            sizes = list(size_or_count)
        else:
            raise Fallback(f"{name} with {size_or_count!r}")
        starts = [sum(sizes[:i]) for i in range(len(sizes))]

        def pieces(x):
            return tuple(x.narrow(dim, start, size) for start, size in zip(starts, sizes))

        return self.view(node, pieces, source)

    def attribute(self, node):
        obj, name = node.args
        if name not in ("shape", "dtype"):
            raise Fallback(f"attribute .{name}")
        return self.view(node, lambda x: tuple(x.shape) if name == "shape" else x.dtype, obj)

    def view_op(self, node, name, source, args, kwargs):
        if kwargs:
            raise Fallback(f"{name} with keyword arguments")
        out = _meta(node)
        if out is None:
            raise Fallback(f"{name} of unknown shape")
        shape = out[0]
        args = _const(tuple(args))
        if name == "transpose":
            d0, d1 = args
            return self.view(node, lambda x: x.transpose(d0, d1), source)
        if name == "permute":
            dims = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
            return self.view(node, lambda x: _permute(x, dims), source)
        if name == "contiguous":
            return self.view(node, lambda x: x, source)
        # view, reshape, flatten, unsqueeze, squeeze: the traced output shape says it all.
        return self.view(node, lambda x: as_shape(x, shape), source)

    def kernel_step(self, node, k, make_inputs, finish=lambda y: y, label=None):
        def run(get):
            return finish(k(*make_inputs(get)))

        return _Step("spyre", run, label or _describe(node, self.modules), kernel_obj=k)

    def build(self, family, **params):
        try:
            return kernel(family, **params)
        except _native.Error as e:
            raise Fallback(f"gen_{family} refused the shape: {e}")

    def linear(self, node, weight, bias, x):
        dtype = _dtype_name(node)
        if weight.dtype != _meta(node)[1] or _meta(x) is None or _meta(x)[1] != weight.dtype:
            raise Fallback("the input and weight dtypes differ")
        in_shape = _meta(x)[0]
        n, k = weight.shape
        m = _numel(in_shape[:-1])
        act_node, act = self.activation_of(node)
        last = act_node or node
        add_node, residual = self.residual_of(last)
        matmul = self.build("matmul", m=m, n=n, k=k, dtype=dtype, activation=act or "none",
                            residual=residual is not None)
        b_dev = matmul.to_device(weight.detach().t().contiguous(), "B")
        bias_value = bias.detach() if bias is not None else torch.zeros(n, dtype=weight.dtype)
        bias_dev = matmul.to_device(bias_value.contiguous(), "bias")
        out_shape = _meta(node)[0]
        label = _describe(node, self.modules) + (f" +{act}" if act else "") + (" +residual" if residual else "")
        for fused in (act_node, add_node):
            if fused is not None:
                self.fused[fused] = node
        result = add_node or act_node or node

        def inputs(get):
            args = [as_shape(get(x), (m, k)), b_dev, bias_dev]
            if residual is not None:
                args.append(as_shape(get(residual), (m, n)))
            return args

        step = self.kernel_step(node, matmul, inputs, lambda y: as_shape(y, out_shape), label)
        step.result_node = result
        return step

    def matmul(self, node, a, b):
        dtype = _dtype_name(node)
        ma, mb = _meta(a), _meta(b)
        if ma is None or mb is None or ma[1] != mb[1]:
            raise Fallback("operands of unknown shape or different dtypes")
        sa, sb = ma[0], mb[0]
        if len(sa) < 2 or len(sb) < 2 or sa[:-2] != sb[:-2]:
            raise Fallback(f"matmul of shapes {list(sa)} @ {list(sb)} (no broadcasting of batch dims)")
        m, k, n = sa[-2], sa[-1], sb[-1]
        out_shape = _meta(node)[0]
        if len(sa) == 2:
            matmul = self.build("matmul", m=m, n=n, k=k, dtype=dtype)
            zero_bias = matmul.to_device(torch.zeros(n, dtype=ma[1]), "bias")
            return self.kernel_step(node, matmul, lambda get: [as_shape(get(a), (m, k)), as_shape(get(b), (k, n)),
                                                                 zero_bias])
        batch = _numel(sa[:-2])
        bmm = self.build("bmm", batch=batch, m=m, n=n, k=k, dtype=dtype)
        return self.kernel_step(node, bmm, lambda get: [as_shape(get(a), (batch, m, k)),
                                                         as_shape(get(b), (batch, k, n))],
                                lambda y: as_shape(y, out_shape))

    def softmax(self, node, x, dim, dtype=None):
        name = _dtype_name(node)
        shape = _meta(node)[0]
        if dtype is not None:
            raise Fallback("softmax with a dtype argument")
        if dim is None:
            raise Fallback("softmax without a dim")
        d = dim % len(shape)
        if d == len(shape) - 1:
            cols, rows = shape[-1], _numel(shape[:-1])
            k = self.build("softmax", cols=cols, rows=rows, dtype=name)
        elif _numel(shape[:d]) == 1:
            # Over a dim with nothing (or only ones) before it: its entries are the rows of the
            # (rows, cols) view, each column normalized over them (gen_softmax axis=1).
            rows, cols = shape[d], _numel(shape[d + 1:])
            k = self.build("softmax", cols=cols, rows=rows, dtype=name, axis=1)
        else:
            raise Fallback(f"softmax over dim {dim} with {_numel(shape[:d])} slices before it (the kernels "
                           "normalize the last dim, or a dim with nothing before it)")
        return self.kernel_step(node, k, lambda get: [as_shape(get(x), (rows, cols))], lambda y: as_shape(y, shape))

    def norm(self, node, family, x, weight, bias, eps):
        name = _dtype_name(node)
        shape = _meta(node)[0]
        cols, rows = shape[-1], _numel(shape[:-1])
        k = self.build(family, cols=cols, rows=rows, dtype=name)
        w = weight.detach() if weight is not None else torch.ones(cols, dtype=_meta(node)[1])
        uploaded = [k.to_device(w.to(_meta(node)[1]).contiguous(), "weight")]
        if family == "layernorm":
            b = bias.detach() if bias is not None else torch.zeros(cols, dtype=_meta(node)[1])
            uploaded.append(k.to_device(b.to(_meta(node)[1]).contiguous(), "bias"))
        return self.kernel_step(node, k, lambda get: [as_shape(get(x), (rows, cols))] + uploaded + [float(eps)],
                                lambda y: as_shape(y, shape))

    def layer_norm(self, node, x, normalized_shape, weight, bias, eps):
        if len(tuple(normalized_shape)) != 1:
            raise Fallback("layer_norm over more than the last dim")
        return self.norm(node, "layernorm", x, weight, bias, eps)

    def functional_layer_norm(self, node):
        args = list(node.args) + [None] * 5
        x, shape = args[0], args[1]
        w = node.kwargs.get("weight", args[2])
        b = node.kwargs.get("bias", args[3])
        eps = node.kwargs.get("eps", args[4] if args[4] is not None else 1e-5)
        params = []
        for p in (w, b):
            if p is None:
                params.append(None)
            elif isinstance(p, torch.fx.Node) and p.op == "get_attr":
                params.append(self.param(p.target))
            else:
                raise Fallback("layer_norm with a weight or bias that is not a parameter")
        return self.layer_norm(node, x, shape, params[0], params[1], eps)

    def rms_norm(self, rsqrt):
        """x * rsqrt(mean(x*x or x.pow(2), -1, keepdim=True) + eps) [* weight]: the whole pattern
        becomes one rmsnorm kernel at its last mul; None if the graph is not that pattern."""
        def is_call(n, *targets):
            return isinstance(n, torch.fx.Node) and n.op in ("call_function", "call_method") and n.target in targets

        add = rsqrt.args[0]
        if not is_call(add, operator.add, torch.add, "add") or len(add.args) != 2:
            return None
        mean, eps = add.args
        if not is_call(mean, torch.mean, "mean") or not isinstance(eps, (int, float)):
            return None
        dim = mean.kwargs.get("dim", mean.args[1] if len(mean.args) > 1 else None)
        keepdim = mean.kwargs.get("keepdim", mean.args[2] if len(mean.args) > 2 else False)
        if dim not in (-1, [-1], (-1,)) or not keepdim:
            return None
        square = mean.args[0]
        if is_call(square, torch.pow, "pow") and square.args[1] == 2:
            x = square.args[0]
        elif is_call(square, operator.mul, torch.mul, "mul") and square.args[0] is square.args[1]:
            x = square.args[0]
        else:
            return None
        scale = self.only_user(rsqrt)
        if not is_call(scale, operator.mul, torch.mul, "mul") or set(scale.args) != {x, rsqrt}:
            return None
        # Private to the pattern: nothing else reads its intermediates.
        if any(len(n.users) != 1 for n in (square, mean, add)):
            return None
        last, weight = scale, None
        user = self.only_user(scale)
        if is_call(user, operator.mul, torch.mul, "mul"):
            other = user.args[1] if user.args[0] is scale else user.args[0]
            if isinstance(other, torch.fx.Node) and other.op == "get_attr":
                weight = self.param(other.target)
                if weight.dim() != 1:
                    weight = None
            if weight is not None:
                last = user
        if _meta(last) is None or _meta(x) is None or _meta(last)[0] != _meta(x)[0]:
            return None
        name = _dtype_name(last)
        shape = _meta(last)[0]
        cols, rows = shape[-1], _numel(shape[:-1])
        k = self.build("rmsnorm", cols=cols, rows=rows, dtype=name)
        w = weight.detach() if weight is not None else torch.ones(cols)
        w_dev = k.to_device(w.to(_meta(last)[1]).contiguous(), "weight")
        for n in (square, mean, add, rsqrt, scale, user if weight is not None else None):
            if n is not None and n is not last:
                self.fused[n] = last
        step = self.kernel_step(last, k, lambda get: [as_shape(get(x), (rows, cols)), w_dev, float(eps)],
                                lambda y: as_shape(y, shape), f"{last.name}: RMSNorm pattern (rsqrt at {rsqrt.name})")
        step.result_node = last
        step.planned_at = last
        return step

    def unary(self, node, x, approximate):
        if approximate in ("silu", "relu"):
            op = approximate
        elif approximate == "tanh":
            op = "gelu"
        else:
            raise Fallback("GELU with approximate='none' is the erf form; the suite's GELU is the tanh form")
        name = _dtype_name(node)
        shape = _meta(node)[0]
        d0, d1 = shape[-1], _numel(shape[:-1])
        k = self.build("elementwise", d0=d0, d1=d1, d2=1, dtype=name, op=op)
        return self.kernel_step(node, k, lambda get: [as_shape(get(x), (1, d1, d0))], lambda y: as_shape(y, shape))

    def binary(self, node, op):
        name = _dtype_name(node)
        shape = _meta(node)[0]
        a, b = node.args[0], node.args[1]
        if _meta(a) is None:
            a, b = b, a
        if _meta(a) is None:
            raise Fallback(f"{op} without a tensor operand of known shape")
        if _meta(b) is None:
            b = _const(b)
        if isinstance(b, (int, float)) and not isinstance(b, bool):
            b_shape, b_const = (1,) * len(shape), torch.full((1,), float(b), dtype=_meta(node)[1])
        else:
            if not isinstance(b, torch.fx.Node) or _meta(b) is None:
                raise Fallback(f"{op} of an operand of unknown shape")
            b_shape, b_const = _meta(b)[0], None
            if _meta(a)[1] != _meta(b)[1]:
                raise Fallback(f"{op} of different dtypes")
        if tuple(_meta(a)[0]) != shape:
            if b_const is None and tuple(_meta(b)[0]) == shape:
                a, b, b_shape = b, a, _meta(a)[0]  # the broadcast operand goes second (add and mul commute)
            else:
                raise Fallback(f"{op} broadcasting both operands")
        groups = _broadcast_groups(shape, b_shape)
        if groups is None:
            raise Fallback(f"{op} broadcasting {list(b_shape)} over {list(shape)} in more than 3 groups")
        extents, flags = groups
        d0, d1, d2 = extents
        bc = ",".join(f"d{i}" for i in range(3) if flags[i])
        k = self.build("elementwise", d0=d0, d1=d1, d2=d2, dtype=name, op=op, broadcast_b=bc or "none")
        b3 = tuple(1 if flags[i] else extents[i] for i in (2, 1, 0))
        if b_const is not None:
            b_dev = k.to_device(b_const.reshape(b3).contiguous(), "b")
            make = lambda get: [as_shape(get(a), (d2, d1, d0)), b_dev]  # noqa: E731
        else:
            make = lambda get: [as_shape(get(a), (d2, d1, d0)), as_shape(get(b), b3)]  # noqa: E731
        return self.kernel_step(node, k, make, lambda y: as_shape(y, shape))

    def conv2d(self, node, m):
        name = _dtype_name(node)
        if m.stride != (1, 1) or m.dilation != (1, 1) or m.groups != 1 or m.padding_mode != "zeros":
            raise Fallback("Conv2d with a stride, dilation, groups or padding mode the suite's conv2d lacks")
        if isinstance(m.padding, str) or m.padding[0] != m.padding[1]:
            raise Fallback("Conv2d with unequal or named padding")
        x = node.args[0]
        if _meta(x) is None or len(_meta(x)[0]) != 4:
            raise Fallback("Conv2d of an input that is not a batched NCHW tensor of known shape")
        batch, ci, height, width = _meta(x)[0]
        co, _, kh, kw = m.weight.shape
        act_node, act = self.activation_of(node)
        if act not in (None, "relu"):
            act_node, act = None, None
        k = self.build("conv2d", ci=ci, co=co, width=width, height=height, kw=kw, kh=kh, batch=batch,
                       pad=m.padding[0], dtype=name, activation=act or "none")
        # torch NCHW <-> the kernel's channels-last: input [N, H, W, C], weights [kh, kw, ci, co].
        w_dev = k.to_device(m.weight.detach().permute(2, 3, 1, 0).contiguous(), "weights")
        bias = m.bias.detach() if m.bias is not None else torch.zeros(co, dtype=m.weight.dtype)
        b_dev = k.to_device(bias.contiguous(), "bias")
        if act_node is not None:
            self.fused[act_node] = node

        def to_nhwc(v):
            return _permute(v, [0, 2, 3, 1])

        step = self.kernel_step(node, k, lambda get: [to_nhwc(get(x)), w_dev, b_dev],
                                lambda y: _permute(y, [0, 3, 1, 2]),
                                _describe(node, self.modules) + (" +relu" if act else ""))
        step.result_node = act_node or node
        return step


def _broadcast_groups(shape, b_shape):
    """Groups the dims of `shape` into at most 3 (innermost first) within which b is either
    broadcast (extent 1) or not: ((d0, d1, d2), (flag0, flag1, flag2)), or None. The innermost
    dim is a group of its own (merging it with another would move padded sticks)."""
    b_shape = (1,) * (len(shape) - len(b_shape)) + tuple(b_shape)
    groups = []  # innermost first: [extent, broadcast]
    for i, (extent, b_extent) in enumerate(zip(reversed(shape), reversed(b_shape))):
        if b_extent not in (1, extent):
            return None
        broadcast = b_extent == 1 and extent != 1
        if i > 0 and extent == 1:
            continue
        if len(groups) > 1 and groups[-1][1] == broadcast:
            groups[-1][0] *= extent
        else:
            groups.append([extent, broadcast])
    if len(groups) > 3:
        return None
    while len(groups) < 3:
        groups.append([1, False])
    return tuple(g[0] for g in groups), tuple(g[1] for g in groups)


def _describe(node, modules):
    if node.op == "call_module":
        return f"{node.name}: {type(modules[node.target]).__name__}"
    target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", str(node.target))
    return f"{node.name}: {target}"
