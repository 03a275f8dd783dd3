"""Values of a compiled module on the card and on the host: DeviceTensors seen with another shape
(a view when the device bytes allow it, else device copies), permutations as transposes, and the
host copies (with float16 widened for the CPU kernels torch lacks)."""

import torch

from . import _native

DeviceTensor = _native.DeviceTensor


def as_shape(value, shape):
    """The value with another shape of the same elements. On the card: a view when the
    bytes allow it (spyre_device_reshape's rule), else a device copy into the default
    layout and a view of that; a split or merge of the innermost dim that no layout
    allows as a view (a row of 128 as 4 x 32 fp16 elements, 32 not being whole sticks) is
    one device copy per piece. Only a reshape none of these covers goes through the host."""
    shape = [int(s) for s in shape]
    if not isinstance(value, DeviceTensor):
        return value.reshape(shape).contiguous()
    source = list(value.shape)
    if source == shape:
        return value
    for attempt in (lambda: value.reshape(shape), lambda: value.clone().reshape(shape)):
        try:
            return attempt()
        except _native.Error:
            pass
    if len(shape) == len(source) + 1 and shape[:-2] == source[:-1] and shape[-2] * shape[-1] == source[-1]:
        pieces, width = shape[-2], shape[-1]  # [..., H*D] -> [..., H, D]
        result = DeviceTensor.empty(shape, value.dtype)
        for i in range(pieces):
            result.select(len(shape) - 2, i).copy_(value.narrow(len(source) - 1, i * width, width))
        return result
    if len(shape) == len(source) - 1 and shape[:-1] == source[:-2] and source[-2] * source[-1] == shape[-1]:
        pieces, width = source[-2], source[-1]  # [..., H, D] -> [..., H*D]
        result = DeviceTensor.empty(shape, value.dtype)
        for i in range(pieces):
            result.narrow(len(shape) - 1, i * width, width).copy_(value.select(len(source) - 2, i))
        return result
    return DeviceTensor.from_torch(value.to_torch().reshape(shape))


def _on_host(value, traffic):
    if isinstance(value, DeviceTensor):
        traffic["to_host_values"] += 1
        return value.to_torch()
    if isinstance(value, (list, tuple)):
        return type(value)(_on_host(v, traffic) for v in value)
    if isinstance(value, dict):
        return {k: _on_host(v, traffic) for k, v in value.items()}
    return value


def _permute(value, dims):
    """A permutation as a sequence of transposes (views of the same tensor)."""
    dims = [d % value.dim() for d in dims]
    order = list(range(value.dim()))
    for i, want in enumerate(dims):
        j = order.index(want)
        if j != i:
            value = value.transpose(i, j)
            order[i], order[j] = order[j], order[i]
    return value


def _halves_to_float(value):
    if isinstance(value, torch.Tensor) and value.dtype == torch.float16:
        return value.float()
    if isinstance(value, (list, tuple)):
        return type(value)(_halves_to_float(v) for v in value)
    if isinstance(value, dict):
        return {k: _halves_to_float(v) for k, v in value.items()}
    return value


def _floats_to_half(value):
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        return value.half()
    if isinstance(value, (list, tuple)):
        return type(value)(_floats_to_half(v) for v in value)
    return value
