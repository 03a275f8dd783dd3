"""spyre_halide.DeviceTensor: values stay on the simulated card between kernel calls and
move only in from_torch / to_torch; views and copies work on the card as the C API's do."""
import pytest
import torch

import spyre_halide as sh


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int8, torch.int32])
def test_round_trip_is_exact_at_an_odd_shape(dtype):
    torch.manual_seed(3)
    t = (torch.randn(3, 5, 67) * 50).to(dtype)
    d = sh.DeviceTensor.from_torch(t)
    assert d.shape == (3, 5, 67) and d.dtype == dtype and d.numel() == t.numel()
    assert torch.equal(d.to_torch(), t)


def test_non_contiguous_input_is_copied_in_its_logical_order():
    t = torch.arange(35, dtype=torch.float32).reshape(5, 7).t()
    assert torch.equal(sh.DeviceTensor.from_torch(t).to_torch(), t)


def test_views_see_the_same_device_values():
    t = torch.randn(4, 6, 70)
    d = sh.DeviceTensor.from_torch(t)
    assert torch.equal(d.transpose(1, 2).to_torch(), t.transpose(1, 2))
    assert torch.equal(d.narrow(2, 3, 41).to_torch(), t.narrow(2, 3, 41))
    assert torch.equal(d.narrow(-2, 1, 4).to_torch(), t.narrow(1, 1, 4))
    assert torch.equal(d.select(0, 2).to_torch(), t[2])
    assert torch.equal(d.reshape([24, 70]).to_torch(), t.reshape(24, 70))
    assert torch.equal(d.reshape([-1, 6, 70]).to_torch(), t)
    assert d.transpose(0, 1).is_view and not d.is_view


def test_clone_and_copy_work_on_the_card():
    t = torch.randn(3, 64).half()
    d = sh.DeviceTensor.from_torch(t)
    moved_before = sh.kernel_stats("host->device")["calls"]
    e = d.clone()
    f = sh.DeviceTensor.empty([3, 64], torch.float16)
    f.copy_(d.narrow(0, 0, 3))
    assert sh.kernel_stats("host->device")["calls"] == moved_before  # nothing went through the host
    assert torch.equal(e.to_torch(), t) and torch.equal(f.to_torch(), t)


def test_bad_input_raises_and_leaves_the_process_usable():
    with pytest.raises(sh.Error, match="float64 is not a Spyre device type"):
        sh.DeviceTensor.from_torch(torch.zeros(4, dtype=torch.float64))
    with pytest.raises(sh.Error, match="on meta"):
        sh.DeviceTensor.from_torch(torch.empty(4, device="meta"))
    with pytest.raises(sh.Error, match="scalar"):
        sh.DeviceTensor.from_torch(torch.tensor(1.0))
    d = sh.DeviceTensor.from_torch(torch.randn(2, 64))
    with pytest.raises(sh.Error, match="out of range"):
        d.transpose(0, 2)
    with pytest.raises(sh.Error, match="outside its extent"):
        d.narrow(1, 60, 10)
    with pytest.raises(sh.Error, match="DeviceTensor.reshape"):
        d.reshape([3, 64])
    with pytest.raises(sh.Error, match="DeviceTensor.copy_"):
        sh.DeviceTensor.empty([2, 64], torch.float16).copy_(d)
    with pytest.raises(TypeError):
        sh.DeviceTensor.from_torch("not a tensor")
    assert torch.equal(d.to_torch(), d.clone().to_torch())



def test_exhausted_device_memory_is_an_error_and_loses_nothing():
    kept = sh.DeviceTensor.from_torch(torch.arange(64, dtype=torch.float32))
    with pytest.raises(sh.Error, match="memory"):
        sh.DeviceTensor.empty([4_000_000, 20_000], torch.float16)  # 160 GB, more than the card has
    assert torch.equal(kept.to_torch(), torch.arange(64, dtype=torch.float32))
