"""A compiled module: runs the plan node by node (kernels on the card, views, CPU fallbacks), keeps
kernel outputs on the card, and reports the simulated time per op and the host<->device traffic of
each call."""

import copy

import torch
import torch.fx

from . import _native
from .fx_values import _floats_to_half, _halves_to_float, _on_host


class CompiledModule:
    """The module's graph with a plan per node; call it like the module."""

    def __init__(self, gm, steps, example_shapes):
        self.graph_module = gm
        self.steps = steps
        self.example_shapes = example_shapes
        self.last_report = []
        self.last_traffic = {}

    @property
    def fallbacks(self):
        """[(op, reason)] of the ops that run on the CPU."""
        return [(s.label, s.reason) for s in self.steps.values() if s is not None and s.where == "cpu"]

    @property
    def offloaded(self):
        return [s.label for s in self.steps.values() if s is not None and s.where == "spyre"]

    def __call__(self, *inputs):
        shapes = [tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in inputs]
        if shapes != self.example_shapes:
            raise _native.Error(f"compiled for input shapes {self.example_shapes}, called with {shapes}; "
                                "compile again for other shapes")
        env = {}
        report = []
        traffic = {"to_host_values": 0}
        before = {name: _stats(name) for name in ("host->device", "device->host", "device->device", "relayout")}
        placeholders = iter(inputs)
        output = None
        for node in self.graph_module.graph.nodes:
            if node.op == "placeholder":
                env[node] = next(placeholders)
                continue
            if node.op == "get_attr":
                env[node] = _fetch_attr(self.graph_module, node.target)
                continue
            if node.op == "output":
                output = torch.fx.node.map_arg(node.args[0], lambda n: env[n])
                continue
            step = self.steps[node]
            if step.where == "fused":
                continue
            if step.where in ("spyre", "view"):
                value = step.run(lambda n: env[n] if isinstance(n, torch.fx.Node) else n)
                target = getattr(step, "result_node", node)
                env[target] = value
                if target is not node:
                    env[node] = value
                if step.where == "spyre":
                    stats = _native.last_run()
                    report.append({"op": step.label, "where": "spyre", "kernel": stats["kernel"],
                                   "simulated_us": stats["simulated_us"], "bound_us": stats["bound_us"],
                                   "bottleneck": stats["bottleneck"]})
                continue
            args = _on_host(torch.fx.node.map_arg(node.args, lambda n: env[n]), traffic)
            kwargs = _on_host(torch.fx.node.map_arg(node.kwargs, lambda n: env[n]), traffic)
            env[node] = _run_on_cpu(self.graph_module, node, args, kwargs)
            report.append({"op": step.label, "where": "cpu", "reason": step.reason})
        result = _on_host(output, traffic)
        for name, stats in before.items():
            after = _stats(name)
            traffic[name] = {k: after[k] - stats[k] for k in after}
        self.last_report = report
        self.last_traffic = traffic
        return result

    def report_text(self):
        lines = [f"{'op':44s} {'where':6s} {'simulated us':>13s} {'of bound':>9s}  bottleneck / reason"]
        total = 0.0
        for row in self.last_report:
            if row["where"] == "spyre":
                total += row["simulated_us"]
                share = row["bound_us"] / row["simulated_us"] if row["simulated_us"] else 0.0
                lines.append(f"{row['op'][:44]:44s} {'spyre':6s} {row['simulated_us']:13.3f} {share:9.1%}  "
                             f"{row['bottleneck']}")
            else:
                lines.append(f"{row['op'][:44]:44s} {'cpu':6s} {'':13s} {'':9s}  {row['reason']}")
        lines.append(f"{'kernels on the card':44s} {'':6s} {total:13.3f}")
        for name in ("host->device", "device->host", "device->device", "relayout"):
            t = self.last_traffic.get(name, {})
            if t.get("calls"):
                lines.append(f"{name:44s} {'':6s} {t['simulated_us']:13.3f} {'':9s}  {t['calls']} transfers, "
                             f"{t['bytes'] / 1e6:.3f} MB")
        return "\n".join(lines)

    def print_report(self):
        print(self.report_text())


def _stats(name):
    s = _native.kernel_stats(name)
    if s is None:
        return {"calls": 0, "simulated_us": 0.0, "bytes": 0}
    return {"calls": s["calls"], "simulated_us": s["simulated_us"], "bytes": s["dram_read_bytes"] + s["dram_write_bytes"]}


def _fetch_attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _run_on_cpu(gm, node, args, kwargs):
    """A node on the CPU. float16 ops torch's CPU kernels lack run in float32 and round once."""
    try:
        return _run_node(gm, node, args, kwargs)
    except RuntimeError as e:
        if "Half" not in str(e):
            raise
    return _floats_to_half(_run_node(gm, node, _halves_to_float(args), _halves_to_float(kwargs), float_copy=True))


def _run_node(gm, node, args, kwargs, float_copy=False):
    if node.op == "call_module":
        module = gm.get_submodule(node.target)
        if float_copy:
            module = copy.deepcopy(module).float()
        return module(*args, **kwargs)
    if node.op == "call_function":
        return node.target(*args, **kwargs)
    if node.op == "call_method":
        self_obj, *rest = args
        return getattr(self_obj, node.target)(*rest, **kwargs)
    raise _native.Error(f"cannot run {node.op} {node.target}")
