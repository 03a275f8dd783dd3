"""The suite's kernels at given shapes, compiled on demand and cached on disk.

``kernel("bmm", batch=2, m=64, n=128, k=256, dtype="float16")`` runs the
generator executable ``gen_bmm -target=spyre`` with those parameters (exactly
the command line a C++ user writes) and loads the Spyre program it writes.
Programs are cached in a directory keyed by a SHA-256 of

- the generator executable's bytes (a rebuilt generator is a new key),
- the generator name and its parameters (sorted), and
- the effective machine description of this process (every parameter's value:
  SPYRE_MACHINE and SPYRE_MACHINE_SET change the key),

so a second run with the same key compiles nothing. The cache directory is
``$SPYRE_KERNEL_CACHE`` or ``~/.cache/spyre_halide/kernels``; entries are
written to a temporary directory and renamed into place, so concurrent
processes never see half an entry.

Assumes: the generators are the ones next to this package (``_paths.py``, the
build tree's ``bin/`` or the install prefix's) and the process's machine
description does not change after its first use (the runtime fixes it).
"""

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

import torch

from . import _native, _paths

# The kernel families of the suite (one generator executable each).
FAMILIES = ("attention", "bmm", "conv2d", "elementwise", "layernorm", "matmul", "reduce", "rmsnorm", "rope",
            "softmax", "transpose")

_lock = threading.Lock()
_loaded = {}  # cache key -> Kernel, for this process
_executable_hashes = {}  # (path, size, mtime) -> sha256 of the file
_stats = {"compiled": 0, "from_disk": 0, "in_process": 0}


def cache_dir():
    """The on-disk kernel cache of this user (``$SPYRE_KERNEL_CACHE`` overrides it)."""
    return os.environ.get("SPYRE_KERNEL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "spyre_halide",
                                                                 "kernels")


def cache_stats():
    """How many kernels this process compiled, read from disk, or reused in memory."""
    return dict(_stats)


def generator_executable(family):
    if family not in FAMILIES:
        raise _native.Error(f"no generator '{family}'; the suite has {', '.join(FAMILIES)}")
    path = os.path.join(_paths.GENERATOR_DIR, "gen_" + family)
    if not os.access(path, os.X_OK):
        raise _native.Error(f"generator executable {path} is missing; build the project (scripts/build.sh)")
    return path


def _project_libraries():
    """This project's shared libraries the generators load (beside bin/: lib/, or lib/<multiarch>/ installed)."""
    lib = os.path.join(_paths.GENERATOR_DIR, "..", "lib")
    found = glob.glob(os.path.join(lib, "libspyre*.so*")) + glob.glob(os.path.join(lib, "*", "libspyre*.so*"))
    return sorted(os.path.realpath(f) for f in found if not os.path.islink(f))


def _file_sha256(path):
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _executable_hashes:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        _executable_hashes[key] = digest.hexdigest()
    return _executable_hashes[key]


def _param_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, torch.dtype):
        return str(value).replace("torch.", "")
    return str(value)


def cache_key(family, params):
    """The content hash that names a kernel's cache entry (see the module comment)."""
    digest = hashlib.sha256()
    digest.update(b"spyre_halide kernel cache v1\n")
    digest.update(_file_sha256(generator_executable(family)).encode() + b"\n")
    for library in _project_libraries():  # the generator's shared libraries of this project (the planner's inputs)
        digest.update(f"library {os.path.basename(library)} {_file_sha256(library)}\n".encode())
    digest.update(family.encode() + b"\n")
    for name in sorted(params):
        digest.update(f"{name}={_param_text(params[name])}\n".encode())
    machine = _native.machine_parameters()
    for name in sorted(machine):
        digest.update(f"machine {name}={machine[name]['value']!r}\n".encode())
    return digest.hexdigest()


def _function_name(family, key):
    return f"{family}_{key[:12]}"


def _compile(family, params, entry, function):
    """Runs the generator into a temporary directory beside `entry` and renames it into place."""
    parent = os.path.dirname(entry)
    os.makedirs(parent, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".compiling-", dir=parent)
    try:
        command = [generator_executable(family), "-g", family, "-f", function, "-o", scratch, "-e", "c_header",
                   "-target=spyre"] + [f"{k}={_param_text(v)}" for k, v in sorted(params.items())]
        if os.environ.get("SPYRE_PYTHON_VERBOSE"):
            print("spyre_halide: compiling " + " ".join(command), file=sys.stderr)
        # The generator compiles for this process's machine (the one the cache key names), whatever
        # the environment says now: every parameter's effective value, passed explicitly.
        machine = _native.machine_parameters()
        env = dict(os.environ)
        env.pop("SPYRE_MACHINE", None)
        env["SPYRE_MACHINE_SET"] = ",".join(
            f"{name}={int(p['value']) if float(p['value']).is_integer() else repr(p['value'])}"
            for name, p in machine.items())
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        if result.returncode != 0:
            message = (result.stderr.strip() or result.stdout.strip()).splitlines()
            shown = " ".join(f"{k}={_param_text(v)}" for k, v in sorted(params.items()))
            raise _native.Error(f"gen_{family} {shown}: " + (message[-1] if message else
                                                                             f"exit status {result.returncode}"))
        with open(os.path.join(scratch, "command.txt"), "w") as f:
            f.write(" ".join(command) + "\n")
        try:
            os.rename(scratch, entry)
        except OSError:
            if not os.path.exists(os.path.join(entry, function + ".spyre")):  # not another process's same entry
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def halide_signature(header_path, function):
    """The Halide function's arguments in call order, from the C header the generator
    wrote: [(name, is_buffer)]. The program's argument table has its own order."""
    with open(header_path) as f:
        text = f.read()
    match = re.search(r"^int " + re.escape(function) + r"\((.*?)\);", text, re.M)
    if not match:
        raise _native.Error(f"{header_path}: no declaration of {function}()")
    arguments = []
    for declaration in match.group(1).split(","):
        buffer = re.search(r"\*_(\w+)_buffer$", declaration.strip())
        scalar = re.search(r"\b_(\w+)$", declaration.strip())
        if buffer:
            arguments.append((buffer.group(1), True))
        elif scalar:
            arguments.append((scalar.group(1), False))
        else:
            raise _native.Error(f"{header_path}: cannot read the argument '{declaration.strip()}' of {function}()")
    return arguments


class Kernel:
    """One compiled kernel of the suite. Call it with its inputs in the generator's
    argument order (tensors as torch tensors or DeviceTensors, in torch order:
    outermost dimension first; scalars such as a norm's eps as numbers); it returns
    its output DeviceTensor(s), which stay on the simulated card until ``.to_torch()``."""

    def __init__(self, family, params, program_path, header_path, function):
        self.family = family
        self.params = dict(params)
        self.program = _native.Program(program_path)
        outputs = {a["name"] for a in self.program.outputs}
        by_name = {a["name"]: a for a in self.program.inputs}
        # The call's arguments: the Halide function's, outputs left out.
        self.arguments = [(name, is_buffer) for name, is_buffer in halide_signature(header_path, function)
                          if name not in outputs]
        missing = [n for n, is_buffer in self.arguments if is_buffer and n not in by_name]
        if missing or sorted(n for n, b in self.arguments if not b) != sorted(self.program.params):
            raise _native.Error(f"{program_path}: the program's arguments do not match {header_path}")

    @property
    def inputs(self):
        """The tensor inputs in call order: dicts of name, dtype, shape (torch order), layout."""
        by_name = {a["name"]: a for a in self.program.inputs}
        return [by_name[name] for name, is_buffer in self.arguments if is_buffer]

    @property
    def outputs(self):
        return self.program.outputs

    def to_device(self, tensor, argument):
        """Uploads a CPU tensor in the device layout this kernel expects for `argument`
        (by name or input position), so calls read it without a relayout (weights)."""
        args = self.inputs
        match = [a for i, a in enumerate(args) if a["name"] == argument or i == argument]
        if not match:
            raise _native.Error(f"{self.program.name}: no input '{argument}'; inputs are "
                                f"{', '.join(a['name'] for a in args)}")
        return _native.DeviceTensor.from_torch(tensor, match[0]["layout"])

    def __call__(self, *inputs, out=None):
        names = [name for name, _ in self.arguments]
        if len(inputs) != len(names):
            raise _native.Error(f"{self.program.name}: takes {len(names)} inputs "
                                f"({', '.join(names)}), got {len(inputs)}")
        tensors, scalars = {}, {}
        tensor_args = {a["name"]: a for a in self.program.inputs}
        for position, (value, (name, is_buffer)) in enumerate(zip(inputs, self.arguments)):
            if not is_buffer:
                if not isinstance(value, (int, float)):
                    raise _native.Error(f"{self.program.name}: input {position + 1} '{name}' is a scalar; "
                                        f"got {type(value).__name__}")
                scalars[name] = float(value)
                continue
            arg = tensor_args[name]
            if isinstance(value, _native.DeviceTensor):
                tensors[name] = value
            elif isinstance(value, torch.Tensor):
                if value.device.type != "cpu":
                    raise _native.Error(f"{self.program.name}: input {position + 1} '{arg['name']}' is on "
                                        f"{value.device}; spyre_halide takes CPU tensors or DeviceTensors")
                if value.dtype != arg["dtype"] or tuple(value.shape) != arg["shape"]:
                    raise _native.Error(f"{self.program.name}: input {position + 1} '{arg['name']}' must be a "
                                        f"{str(arg['dtype']).replace('torch.', '')} tensor of shape "
                                        f"{list(arg['shape'])}, got a {str(value.dtype).replace('torch.', '')} "
                                        f"tensor of shape {list(value.shape)}")
                tensors[name] = _native.DeviceTensor.from_torch(value, arg["layout"])
            else:
                raise _native.Error(f"{self.program.name}: input {position + 1} '{arg['name']}' must be a "
                                    f"torch.Tensor or a spyre_halide.DeviceTensor, got {type(value).__name__}")
        if out is not None and not isinstance(out, (list, tuple)):
            out = [out]
        results = self.program.run([tensors[a["name"]] for a in self.program.inputs],
                                   [scalars[p] for p in self.program.params], list(out) if out is not None else None)
        return results[0] if len(results) == 1 else tuple(results)

    def __repr__(self):
        shown = ", ".join(f"{k}={_param_text(v)}" for k, v in sorted(self.params.items()))
        return f"spyre_halide.kernel({self.family!r}, {shown})"


def kernel(family, **params):
    """The suite's generator `family` (gen_<family>) at these generator parameters, compiled
    for Spyre (once per cache key; see the module comment)."""
    key = cache_key(family, params)
    with _lock:
        if key in _loaded:
            _stats["in_process"] += 1
            return _loaded[key]
        entry = os.path.join(cache_dir(), key[:2], key)
        function = _function_name(family, key)
        program = os.path.join(entry, function + ".spyre")
        if os.path.exists(program):
            _stats["from_disk"] += 1
        else:
            _compile(family, params, entry, function)
            _stats["compiled"] += 1
        k = Kernel(family, params, program, os.path.join(entry, function + ".h"), function)
        _loaded[key] = k
        return k
