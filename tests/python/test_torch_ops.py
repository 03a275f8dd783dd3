"""Spyre kernels as torch ops: add_spyre_library(... PYTORCH) + add_spyre_torch_extension
(tests/python/CMakeLists.txt builds spyre_test_ops with torch_bmm_f16 at batch=2 m=33 n=20
k=40 and torch_bmm_f32 at batch=1 m=16 n=24 k=8), against torch.bmm on the CPU."""
import pytest
import torch

import spyre_test_ops as ops
import spyre_halide


def bmm_f16_inputs():
    torch.manual_seed(1)
    a = torch.randn(2, 33, 40).half()
    b = torch.randn(2, 40, 20).half()
    return a, b


def test_fp16_bmm_matches_torch_within_one_rounding():
    a, b = bmm_f16_inputs()
    c = torch.empty(2, 33, 20, dtype=torch.half)
    ops.torch_bmm_f16(a, b, c)
    # fp16 inputs accumulate in fp32 and round once: the exact product rounded to fp16,
    # up to the summation order's last bits.
    reference = torch.bmm(a.float(), b.float())
    assert torch.allclose(c.float(), reference.half().float(), rtol=2e-3, atol=2e-3)
    assert (c.float() - reference).abs().max().item() > 0  # the output really is fp16
    stats = spyre_halide.last_run()
    assert stats["kernel"] == "torch_bmm_f16" and stats["simulated_us"] > 0


def test_fp32_bmm_matches_torch():
    torch.manual_seed(2)
    a, b = torch.randn(1, 16, 8), torch.randn(1, 8, 24)
    c = torch.zeros(1, 16, 24)
    ops.torch_bmm_f32(a, b, c)
    assert torch.allclose(c, torch.bmm(a, b), rtol=1e-5, atol=1e-5)


def test_wrong_dtype_names_the_argument_and_the_expected_type():
    a, b = bmm_f16_inputs()
    c = torch.empty(2, 33, 20, dtype=torch.half)
    with pytest.raises(ValueError, match=r"argument 2 'B' \(input\) must be a contiguous CPU float16 tensor.*float32"):
        ops.torch_bmm_f16(a, b.float(), c)


def test_non_contiguous_tensor_is_refused_by_name():
    a, b = bmm_f16_inputs()
    c = torch.empty(2, 20, 33, dtype=torch.half).transpose(1, 2)
    with pytest.raises(ValueError, match=r"'C' \(output\) must be a contiguous.*non-contiguous"):
        ops.torch_bmm_f16(a, b, c)


def test_wrong_rank_is_refused():
    a, b = bmm_f16_inputs()
    c = torch.empty(2, 33 * 20, dtype=torch.half)
    with pytest.raises(ValueError, match=r"'C'.*3 dimensions.*shape \[2, 660\]"):
        ops.torch_bmm_f16(a, b, c)


def test_wrong_shape_raises_the_kernel_s_message_and_the_process_stays_usable():
    a, b = bmm_f16_inputs()
    c = torch.empty(2, 33, 20, dtype=torch.half)
    with pytest.raises(RuntimeError, match=r"torch_bmm_f16 failed: .*A"):
        ops.torch_bmm_f16(a[:, :, :39].contiguous(), b, c)
    ops.torch_bmm_f16(a, b, c)  # the next call works
    assert torch.allclose(c.float(), torch.bmm(a.float(), b.float()), rtol=2e-3, atol=2e-3)


def test_docstring_lists_the_arguments():
    assert "A: float16[3 dims]" in ops.torch_bmm_f16.__doc__
    assert "C: float16[3 dims] (output" in ops.torch_bmm_f16.__doc__
