"""Built-in targets load, cite their sources and carry the published figures; user target
files are checked field by field with errors that name the file and the field."""

import json

import pytest

from compiler_core.hardware.targets import (DEFAULT_TARGET, REQUIRED_FIELDS, TARGETS_DIR, Target,
                                            TargetError, get_target, list_targets)
from compiler_core.records import to_json

BUILTINS = ["asic32", "ethos_u55_256", "h100_sxm", "teach16", "tpu_v1", "tpu_v4"]


def test_builtin_targets_are_listed_and_named_after_their_files():
    assert list_targets() == BUILTINS
    for name in BUILTINS:
        target = get_target(name)
        assert target.name == name
        assert (TARGETS_DIR / f"{name}.json").is_file()


@pytest.mark.parametrize("name", BUILTINS)
def test_every_builtin_cites_sources_and_explains_itself(name):
    target = get_target(name)
    assert target.sources
    for source in target.sources:
        assert source.title and source.supports and (source.url or source.publication)
    assert len(target.notes) > 80


def test_default_target_is_the_example_asic():
    assert DEFAULT_TARGET == "asic32"
    assert get_target().name == "asic32"
    assert get_target(None) is get_target("asic32")


def test_asic32_ridge_is_13_33_ops_per_byte_for_every_dtype():
    asic = get_target("asic32")
    # 32e12 ops/s / 2.4e12 bytes/s = 13.333... ops/byte
    assert asic.ridge_point() == pytest.approx(13.33, abs=0.005)
    assert asic.ridge_point("float32") == pytest.approx(40 / 3)
    assert (asic.array_rows, asic.array_cols) == (128, 128)


def test_tpu_v1_ridge_is_about_2706():
    # 92e12 / 34e9 = 2705.9 ops/byte, the ridge in Jouppi et al. 2017
    assert get_target("tpu_v1").ridge_point("int8") == pytest.approx(2706, abs=1)


def test_published_figures():
    v1, v4 = get_target("tpu_v1"), get_target("tpu_v4")
    assert (v1.array_rows, v1.array_cols, v1.clock_hz) == (256, 256, 700e6)
    assert v1.sram_bytes == 28 * 2**20
    assert v4.peak("bfloat16") == 275e12 and v4.bandwidth_bytes_per_s == 1.2e12
    assert (v4.array_rows, v4.array_cols, v4.array_count) == (128, 128, 8)
    h100 = get_target("h100_sxm")
    assert h100.peak("bfloat16") == 989e12 and h100.peak("int8") == 1979e12
    assert h100.bandwidth_bytes_per_s == 3.35e12
    u55 = get_target("ethos_u55_256")
    assert u55.peak("int8") == 256e9 and u55.clock_hz == 500e6
    assert u55.array_rows * u55.array_cols == 256
    teach = get_target("teach16")
    assert teach.bytes_per_cycle == 16 and teach.ridge_point() == 32


@pytest.mark.parametrize("name", BUILTINS)
def test_array_model_matches_the_headline_peak(name):
    """2 ops x R x C x arrays x clock is the default dtype's peak, within 1%."""
    target = get_target(name)
    modelled = 2 * target.array_rows * target.array_cols * target.array_count * target.clock_hz
    assert modelled == pytest.approx(target.peak(), rel=0.01)


def test_missing_dtype_falls_back_as_documented():
    v1, v4, h100 = get_target("tpu_v1"), get_target("tpu_v4"), get_target("h100_sxm")
    # float32 is wider than anything TPU v1 runs: the widest listed rate (int8)
    assert v1.peak_dtype("float32") == "int8" and v1.peak("float32") == 92e12
    # float16 is not listed on TPU v4; bfloat16 is as wide, so its rate is used
    assert v4.peak_dtype("float16") == "bfloat16"
    # int4 runs on the narrowest wider datapath (int8)
    assert v4.peak_dtype("int4") == "int8"
    # aliases are canonicalised
    assert h100.peak("fp16") == h100.peak("float16") == 989e12
    assert v4.peak() == v4.peak("bfloat16")  # default dtype: first listed
    with pytest.raises(ValueError, match="unknown dtype"):
        v4.peak("float33")


def test_target_is_frozen_and_hashable():
    target = get_target("teach16")
    with pytest.raises(AttributeError):
        target.clock_hz = 2e9
    assert isinstance(hash(target), int)
    assert isinstance(target, Target)


def _write(tmp_path, data, name="mine.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _user_target():
    data = to_json(get_target("teach16"))
    data["name"] = "my_npu"
    return data


def test_user_target_file_loads_by_path(tmp_path):
    path = _write(tmp_path, _user_target())
    target = get_target(path)
    assert target.name == "my_npu" and target.ridge_point() == 32
    assert get_target(str(path)) == target


@pytest.mark.parametrize("field", REQUIRED_FIELDS)
def test_user_target_missing_a_field_is_rejected_naming_it(tmp_path, field):
    data = _user_target()
    del data[field]
    path = _write(tmp_path, data)
    with pytest.raises(TargetError) as caught:
        get_target(path)
    message = str(caught.value)
    assert f"'{field}' is missing" in message
    assert "mine.json" in message
    assert "add" in message  # says what to do


@pytest.mark.parametrize("field, value, words", [
    ("bandwidth_bytes_per_s", -1, "positive"),
    ("clock_hz", "fast", "must be a number"),
    ("array_rows", 12.5, "whole number"),
    ("sram_bytes", True, "must be a number"),
    ("peak_ops_per_s", {"int9": 1e12}, "unknown dtype 'int9'"),
    ("peak_ops_per_s", {}, "non-empty"),
    ("sources", [{"title": "x", "supports": "y"}], "neither 'url' nor 'publication'"),
    ("name", "my npu", "characters"),
    ("measured", {"when": "now", "how": "timed", "ops_per_s_by_kind": {"gemm": 1e9}},
     "kinds conv, strided_conv"),
    ("measured", {"when": "now", "how": "timed", "ops_per_s_by_kind": {"conv": 0}},
     "positive rate"),
    ("measured", {"when": "now", "how": "timed", "recast_bytes_per_s": -5},
     "bad recast_bytes_per_s: -5"),
])
def test_user_target_bad_values_are_rejected_naming_the_field(tmp_path, field, value, words):
    data = _user_target()
    data[field] = value
    with pytest.raises(TargetError) as caught:
        get_target(_write(tmp_path, data))
    assert f"field '{field}'" in str(caught.value) and words in str(caught.value)


def test_user_target_unknown_field_and_bad_json_are_reported(tmp_path):
    data = _user_target()
    data["bandwith_bytes_per_s"] = 1e9
    with pytest.raises(TargetError, match="unknown field 'bandwith_bytes_per_s'"):
        get_target(_write(tmp_path, data))
    broken = tmp_path / "broken.json"
    broken.write_text('{"name": "x",')
    with pytest.raises(TargetError, match="not valid JSON"):
        get_target(broken)
    with pytest.raises(TargetError, match="does not exist"):
        get_target(tmp_path / "absent.json")


def test_unknown_target_name_lists_the_builtins():
    with pytest.raises(TargetError) as caught:
        get_target("tpu_v9")
    assert isinstance(caught.value, ValueError)
    assert "tpu_v9" in str(caught.value) and "asic32" in str(caught.value)


def test_a_target_travels_between_processes_as_a_pickle():
    """Records that name their target (the traffic story a build keeps with its workspace)
    are pickled to the store; the copy prices as the original and keeps its peaks read-only."""
    import pickle
    from types import MappingProxyType

    target = get_target("asic32")
    copy = pickle.loads(pickle.dumps(target))
    assert copy == target
    assert isinstance(copy.peak_ops_per_s, MappingProxyType)
    assert copy.ridge_point("int8") == target.ridge_point("int8")
