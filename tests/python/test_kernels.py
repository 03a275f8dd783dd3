"""spyre_halide.kernel: the suite's generators compiled on demand, cached on disk by content
hash (a second process compiles nothing), run on DeviceTensors with the simulated clock."""
import os
import subprocess
import sys

import pytest
import torch

import spyre_halide as sh

SOFTMAX = dict(cols=70, rows=5, dtype="float32")


def run_python(code, **env):
    environment = dict(os.environ, **env)
    result = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=environment)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_a_chain_of_kernels_keeps_its_intermediate_on_the_card():
    torch.manual_seed(4)
    bmm = sh.kernel("bmm", batch=1, m=5, n=70, k=24, dtype="float32")
    softmax = sh.kernel("softmax", **SOFTMAX)
    a, b = torch.randn(1, 5, 24), torch.randn(1, 24, 70)
    uploads = sh.kernel_stats("host->device")
    uploads = uploads["calls"] if uploads else 0
    scores = bmm(a, b)
    assert isinstance(scores, sh.DeviceTensor) and scores.shape == (1, 5, 70)
    stats = sh.last_run()
    assert stats["kernel"].startswith("bmm_") and stats["simulated_us"] > 0 and stats["bound_us"] > 0
    assert stats["macs"] >= 5 * 70 * 24 and stats["bottleneck"]  # MACs the PT did, padding included
    probabilities = softmax(scores.reshape([5, 70]))
    assert sh.kernel_stats("host->device")["calls"] == uploads + 2  # a and b only
    reference = torch.softmax(torch.bmm(a, b)[0], dim=-1)
    assert torch.allclose(probabilities.to_torch(), reference, rtol=1e-4, atol=1e-6)


def test_wrong_inputs_name_the_argument():
    softmax = sh.kernel("softmax", **SOFTMAX)
    with pytest.raises(sh.Error, match=r"input 1 'in' must be a float32 tensor of shape \[5, 70\], got a float32 "
                                       r"tensor of shape \[5, 71\]"):
        softmax(torch.randn(5, 71))
    with pytest.raises(sh.Error, match="takes 1 inputs"):
        softmax(torch.randn(5, 70), torch.randn(5, 70))
    with pytest.raises(sh.Error, match="must be a float32 tensor"):
        softmax(sh.DeviceTensor.from_torch(torch.randn(5, 70).half()))
    with pytest.raises(sh.Error, match="torch.Tensor or a spyre_halide.DeviceTensor"):
        softmax([1.0, 2.0])
    assert softmax(torch.zeros(5, 70)).to_torch().sum().item() == pytest.approx(5.0)


def test_a_second_process_compiles_nothing():
    code = ("import spyre_halide as sh; sh.kernel('softmax', cols=70, rows=5, dtype='float32'); "
            "print(sh.cache_stats()['compiled'], sh.cache_stats()['from_disk'])")
    run_python(code)  # compiles it unless an earlier test of this run did
    assert run_python(code) == "0 1"


def test_the_cache_key_follows_parameters_and_machine():
    base = sh.cache_key("softmax", SOFTMAX)
    assert base == sh.cache_key("softmax", dict(SOFTMAX))
    assert base != sh.cache_key("softmax", dict(SOFTMAX, rows=6))
    other_machine = run_python("import spyre_halide as sh; print(sh.cache_key('softmax', "
                               "dict(cols=70, rows=5, dtype='float32')))",
                               SPYRE_MACHINE_SET="dram_bandwidth_gbps=100")
    assert other_machine != base


def test_generator_errors_arrive_as_exceptions():
    with pytest.raises(sh.Error, match="no generator 'nonsense'"):
        sh.kernel("nonsense", x=1)
    with pytest.raises(sh.Error, match="gen_softmax"):
        sh.kernel("softmax", cols=70, rows=5, dtype="float32", no_such_param=3)


def test_the_machine_is_fixed_after_first_use():
    sh.kernel("softmax", **SOFTMAX)
    with pytest.raises(sh.Error, match="already used its machine description"):
        sh.configure_machine(overrides={"dram_bandwidth_gbps": 100})


def test_configure_machine_before_first_use_changes_the_simulated_time():
    code = ("import torch, spyre_halide as sh; {} "
            "k = sh.kernel('softmax', cols=70, rows=5, dtype='float32'); k(torch.randn(5, 70)); "
            "print(sh.machine_parameters()['dram_bandwidth_gbps']['value'], sh.last_run()['simulated_us'])")
    default = run_python(code.format("")).split()
    slower = run_python(code.format("sh.configure_machine(overrides={'dram_bandwidth_gbps': 5});")).split()
    assert float(slower[0]) == 5 and float(slower[1]) > float(default[1])


def test_timing_only_runs_move_no_values():
    softmax = sh.kernel("softmax", **SOFTMAX)
    x = sh.DeviceTensor.from_torch(torch.randn(5, 70))
    previous = sh.set_timing_only(True)
    try:
        y = softmax(x)
        assert sh.last_run()["simulated_us"] > 0
        with pytest.raises(sh.Error, match="holds no values|no values"):
            y.to_torch()
    finally:
        sh.set_timing_only(previous)
    assert torch.allclose(softmax(x).to_torch().sum(dim=-1), torch.ones(5))
