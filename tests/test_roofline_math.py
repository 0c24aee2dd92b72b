"""Roofline arithmetic: attainable rate, ridge, classification and time bounds."""

import json

import pytest

from compiler_core.hardware.roofline import (attainable_ops_per_s, classify, estimate_seconds,
                                             ridge_point)
from compiler_core.hardware.targets import get_target
from compiler_core.records import to_json


def test_attainable_is_bandwidth_times_intensity_below_the_ridge_and_peak_above():
    # asic32: 2.4e12 B/s, 32e12 ops/s, ridge 13.33 ops/byte
    assert attainable_ops_per_s(1, "asic32") == pytest.approx(2.4e12)
    assert attainable_ops_per_s(10, "asic32") == pytest.approx(24e12)
    assert attainable_ops_per_s(40 / 3, "asic32") == pytest.approx(32e12)
    assert attainable_ops_per_s(100, "asic32") == 32e12
    assert attainable_ops_per_s(0, "asic32") == 0


def test_ridge_is_peak_over_bandwidth():
    assert ridge_point("asic32") == pytest.approx(13.333, abs=1e-3)
    assert ridge_point("teach16") == 32
    assert ridge_point("h100_sxm", "bfloat16") == pytest.approx(989e12 / 3.35e12)
    assert ridge_point("h100_sxm", "int8") == pytest.approx(2 * 989e12 / 3.35e12, rel=1e-3)


def test_classify_splits_at_the_ridge():
    assert classify(13.0, "asic32") == "memory"
    assert classify(13.4, "asic32") == "compute"
    assert classify(32, "teach16") == "compute"  # the ridge itself counts as compute
    assert classify(31.99, "teach16") == "memory"
    assert classify(float("inf"), "teach16") == "compute"
    # the same op is compute-bound on the ASIC but memory-bound on TPU v1
    assert classify(100, "asic32") == "compute" and classify(100, "tpu_v1") == "memory"


def test_estimate_seconds_is_the_larger_of_compute_and_memory_time():
    # 1 GFLOP moving 1 GB on asic32: compute 1e9/32e12 = 31 us, memory 1e9/2.4e12 = 417 us
    assert estimate_seconds(1e9, 1e9, "asic32") == pytest.approx(1e9 / 2.4e12)
    # 1 TFLOP moving 1 MB: compute-bound, 1e12/32e12 = 31.25 ms
    assert estimate_seconds(1e12, 1e6, "asic32") == pytest.approx(1 / 32)
    # teach16: 512 ops at 512 GOPS = 1 ns; 16 bytes at 16 B/ns = 1 ns
    assert estimate_seconds(512, 16, "teach16") == pytest.approx(1e-9)


def test_dtype_selects_the_peak():
    assert estimate_seconds(1979e12, 0, "h100_sxm", "int8") == pytest.approx(1.0)
    assert estimate_seconds(1979e12, 0, "h100_sxm", "bfloat16") == pytest.approx(2.0, rel=1e-3)


def test_target_can_be_an_object_or_a_user_file(tmp_path):
    data = to_json(get_target("teach16"))
    data["name"] = "slow_teach"
    data["bandwidth_bytes_per_s"] = 1.6e9
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(data))
    assert ridge_point(path) == pytest.approx(320)
    assert ridge_point(get_target("teach16")) == 32


@pytest.mark.parametrize("bad", [-1, float("nan"), "3", True])
def test_bad_numbers_are_rejected(bad):
    with pytest.raises(ValueError, match="non-negative number"):
        classify(bad, "asic32")
    with pytest.raises(ValueError, match="non-negative number"):
        estimate_seconds(bad, 1, "asic32")
