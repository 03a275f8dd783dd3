"""Plain-PyTorch models (examples/torch_models.py) offloaded to the simulated Spyre card with
spyre_halide.compile, each checked against torch on the CPU.

    /usr/bin/python3 examples/torch_offload.py [decoder|mlp|cnn|all] [--dtype float16|float32]

Prints what runs where (and why an op stays on the CPU), the simulated time per op, the
host<->device traffic and the largest error against the CPU result (relative to the largest
output); exits 1 if it exceeds the dtype's tolerance (1e-4 for float32, 2e-2 for float16,
whose kernels round every intermediate tensor to float16).
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spyre_halide  # noqa: E402
from torch_models import MLP, ConvBlock, DecoderBlock  # noqa: E402

TOLERANCE = {torch.float32: 1e-4, torch.float16: 2e-2}


def model_and_input(name):
    if name == "decoder":
        return (lambda: DecoderBlock(dim=128, heads=4, max_tokens=64)), torch.randn(2, 64, 128)
    if name == "mlp":
        return (lambda: MLP(dim=96, hidden=256, classes=10)), torch.randn(33, 96)
    return (lambda: ConvBlock(channels=3, width=32, classes=10)), torch.randn(1, 3, 16, 16)


def run(name, dtype):
    torch.manual_seed(0)
    make, x = model_and_input(name)
    reference = make().eval()  # fp32 on the CPU (torch's CPU kernels lack most fp16 ops)
    with torch.no_grad():
        expected = reference(x)
    model = make().eval()
    model.load_state_dict(reference.state_dict())
    model = model.to(dtype)
    x = x.to(dtype)
    print(f"== {name} ({type(model).__name__}, {str(dtype).replace('torch.', '')}, input {list(x.shape)})")
    compiled = spyre_halide.compile(model, (x,))
    y = compiled(x)
    compiled.print_report()
    error = ((y.float() - expected).abs().max() / expected.abs().max()).item()
    print(f"max error against torch on the CPU: {error:.2e} (relative to the largest output; "
          f"tolerance {TOLERANCE[dtype]:g})\n")
    return error <= TOLERANCE[dtype]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="decoder", choices=["decoder", "mlp", "cnn", "all"])
    parser.add_argument("--dtype", choices=["float16", "float32"], default="float32")
    args = parser.parse_args()
    names = ["decoder", "mlp", "cnn"] if args.model == "all" else [args.model]
    ok = [run(name, getattr(torch, args.dtype)) for name in names]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
