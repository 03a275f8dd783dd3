"""spyre_halide: the project's Spyre kernels from PyTorch, on the simulated card.

    import torch, spyre_halide as sh
    bmm = sh.kernel("bmm", batch=2, m=64, n=128, k=256, dtype="float16")
    a = sh.DeviceTensor.from_torch(torch.randn(2, 64, 256).half())   # stays on the card
    c = bmm(a, torch.randn(2, 256, 128).half())                       # a DeviceTensor
    print(c.to_torch(), sh.last_run()["simulated_us"])

- ``kernel(family, **params)``: a suite generator at static shapes, compiled on
  demand by running ``gen_<family> -target=spyre`` and cached on disk by content
  hash (kernels.py);
- ``DeviceTensor``: a tensor resident in the simulated card's memory
  (from_torch / to_torch move data; transpose, narrow, select, reshape, clone,
  copy_ work on the card);
- ``last_run()``, ``kernel_stats(name)``, ``profile()``: the simulated clock
  and statistics of the runtime (simulated us, bytes, bound, bottleneck);
- ``set_timing_only(True)``: run only the timing phase (no values move);
- ``configure_machine(file=..., overrides=...)``: the machine description
  (SPYRE_MACHINE / SPYRE_MACHINE_SET), before the first device use;
- ``compile(module, example_inputs)``: a torch.nn.Module traced with torch.fx
  and offloaded op by op (fx_compile.py).

Dimension order is torch's (outermost first) everywhere in this package.
docs/pytorch.md has the whole story.
"""

import os

import torch  # before _native: it links libtorch_python

from ._native import DeviceTensor, Error, Program, kernel_stats, last_run, profile, set_timing_only, timing_only
from ._native import machine_in_use as _machine_in_use
from ._native import machine_parameters
from .kernels import FAMILIES, Kernel, cache_dir, cache_key, cache_stats, kernel

__all__ = ["DeviceTensor", "Error", "Program", "Kernel", "kernel", "FAMILIES", "cache_dir", "cache_key", "cache_stats",
           "last_run", "kernel_stats", "profile", "set_timing_only", "timing_only", "machine_parameters",
           "configure_machine", "compile", "CompiledModule"]


def configure_machine(file=None, overrides=None):
    """Selects the machine description for this process: `file` a JSON machine
    description (SPYRE_MACHINE), `overrides` a dict or "key=value,..." string
    (SPYRE_MACHINE_SET). Only before the first device use: the runtime fixes the
    machine then, and kernels compiled for one machine do not run on another."""
    if _machine_in_use():
        raise Error("configure_machine: this process already used its machine description; "
                    "configure it before the first kernel or device tensor (or set SPYRE_MACHINE / "
                    "SPYRE_MACHINE_SET before starting Python)")
    if file is not None:
        os.environ["SPYRE_MACHINE"] = os.fspath(file)
    if overrides is not None:
        if isinstance(overrides, dict):
            overrides = ",".join(f"{k}={v}" for k, v in overrides.items())
        os.environ["SPYRE_MACHINE_SET"] = overrides
    return machine_parameters()


from .fx_compile import CompiledModule, compile  # noqa: E402  (builds on the names above)
