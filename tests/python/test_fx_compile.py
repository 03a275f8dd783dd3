"""spyre_halide.compile: plain-PyTorch modules traced with torch.fx, the ops the suite covers
run on the simulated card (intermediates stay there), the rest on the CPU with the reason,
results checked against torch on the CPU. Shapes are tiny and odd (rows and features that are
not whole sticks)."""
import os
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import spyre_halide as sh

sys.path.insert(0, os.path.join(os.environ.get("SPYRE_SOURCE_DIR", "."), "examples"))
from torch_models import MLP, ConvBlock, DecoderBlock  # noqa: E402

TOLERANCE = {torch.float32: 1e-4, torch.float16: 2e-2}


def relative_error(actual, expected):
    return ((actual.float() - expected.float()).abs().max() / expected.float().abs().max()).item()


def check_against_cpu(make, x, dtype):
    """Compiles make() in `dtype` and compares with the same weights in fp32 on the CPU."""
    torch.manual_seed(0)
    reference = make().eval()
    with torch.no_grad():
        expected = reference(x)
    model = make().eval()
    model.load_state_dict(reference.state_dict())
    model = model.to(dtype)
    compiled = sh.compile(model, (x.to(dtype),), verbose=False)
    y = compiled(x.to(dtype))
    assert y.dtype == dtype and y.shape == expected.shape
    assert relative_error(y, expected) <= TOLERANCE[dtype]
    return compiled


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_decoder_block_runs_on_the_card(dtype):
    torch.manual_seed(1)
    compiled = check_against_cpu(lambda: DecoderBlock(dim=64, heads=2, max_tokens=24), torch.randn(1, 24, 64), dtype)
    assert compiled.fallbacks == []
    ops = [row["op"] for row in compiled.last_report]
    assert any("Linear +gelu" in op for op in ops) and any("+residual" in op for op in ops)
    assert any("softmax" in op for op in ops) and any("LayerNorm" in op for op in ops)
    assert all(row["simulated_us"] > 0 for row in compiled.last_report)
    # The only host traffic: the input in, the output back.
    assert compiled.last_traffic["device->host"]["calls"] == 1
    assert "kernels on the card" in compiled.report_text()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_mlp_with_rmsnorm_and_fused_activations(dtype):
    torch.manual_seed(2)
    compiled = check_against_cpu(lambda: MLP(dim=70, hidden=40, classes=5), torch.randn(33, 70), dtype)
    ops = [row["op"] for row in compiled.last_report]
    assert ops[0].endswith("RMSNorm pattern (rsqrt at rsqrt)")
    assert "fc1: Linear +silu" in ops and "fc2: Linear +relu" in ops
    assert compiled.fallbacks == []


def test_cnn_block_maps_convolutions_and_reports_the_pool():
    torch.manual_seed(3)
    compiled = check_against_cpu(lambda: ConvBlock(channels=3, width=8, classes=5), torch.randn(1, 3, 10, 10),
                                 torch.float32)
    assert [label for label, _ in compiled.fallbacks] == ["pool: MaxPool2d"]
    assert "conv1: Conv2d +relu" in [row["op"] for row in compiled.last_report]


class ErfGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(40, 24)

    def forward(self, x):
        return F.gelu(self.fc(x)) + torch.relu(x[:, :24])


def test_ops_without_an_exact_kernel_fall_back_with_the_reason(capsys):
    torch.manual_seed(4)
    model = ErfGelu().eval()
    x = torch.randn(7, 40)
    compiled = sh.compile(model, (x,))
    printed = capsys.readouterr().out
    reasons = dict(compiled.fallbacks)
    assert "erf form" in reasons["gelu: gelu"] and "erf form" in printed
    assert "relu: relu" not in reasons  # a standalone ReLU is the elementwise kernel's op=relu
    assert "getitem: getitem" in reasons  # tensor indexing stays on the CPU
    with torch.no_grad():
        assert torch.allclose(compiled(x), model(x), rtol=1e-5, atol=1e-6)


class Broadcasts(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(70))
        self.gain = nn.Parameter(torch.randn(3, 1, 70))

    def forward(self, x):
        y = (x + self.bias) * self.gain
        return torch.softmax(y * 0.5, dim=-1).transpose(1, 2).reshape(3, 350)


def test_broadcasting_elementwise_ops_and_views():
    torch.manual_seed(5)
    model = Broadcasts().eval()
    x = torch.randn(3, 5, 70)
    compiled = sh.compile(model, (x,), verbose=False)
    assert compiled.fallbacks == []
    with torch.no_grad():
        assert torch.allclose(compiled(x), model(x), rtol=1e-5, atol=1e-6)


class ColumnSoftmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x * 0.5, dim=0) + torch.softmax(x, dim=-1)


def test_softmax_over_the_first_dim_runs_on_the_card():
    # dim=0 of a 2-D tensor: gen_softmax axis=1 (each column over the rows); ragged columns.
    torch.manual_seed(6)
    model = ColumnSoftmax().eval()
    x = torch.randn(37, 70)
    compiled = sh.compile(model, (x,), verbose=False)
    assert compiled.fallbacks == []
    with torch.no_grad():
        assert torch.allclose(compiled(x), model(x), rtol=1e-5, atol=1e-6)
    assert sum("softmax" in row["op"] for row in compiled.last_report) == 2


def test_softmax_over_a_middle_dim_falls_back_saying_why():
    class Middle(nn.Module):
        def forward(self, x):
            return torch.softmax(x, dim=1)

    compiled = sh.compile(Middle().eval(), (torch.randn(3, 5, 70),), verbose=False)
    assert any("softmax over dim 1 with 3 slices before it" in reason for _, reason in compiled.fallbacks)


def test_other_input_shapes_are_refused():
    model = MLP(dim=70, hidden=40, classes=5).eval()
    compiled = sh.compile(model, (torch.randn(33, 70),), verbose=False)
    with pytest.raises(sh.Error, match="compiled for input shapes"):
        compiled(torch.randn(32, 70))
    assert compiled(torch.randn(33, 70)).shape == (33, 5)


def test_untraceable_code_gets_a_clear_error():
    class Unpacks(nn.Module):
        def forward(self, x):
            rows, cols = x.shape
            return x.reshape(cols, rows)

    with pytest.raises(sh.Error, match="cannot trace Unpacks.*x.shape\\[0\\]"):
        sh.compile(Unpacks(), (torch.randn(4, 6),), verbose=False)
