"""Every tensor a pass can compute is written as ONNX expects and read back equal.

Passes make weights in many layouts and types: a transposed or sliced view (not
C-contiguous), a concatenation of such views, zero-size, big-endian, bool, string, packed
4-bit, bfloat16 and 8-bit floats.  Each is written by every path a model leaves by: as a
single file (what the app's download sends) and with external data, after being spilled to
a scratch file, and after a trip through pickle as the app's workspaces and the cluster's
builds make it; onnx itself reads it back and must give the same values.
"""

from __future__ import annotations

import pickle

import ml_dtypes
import numpy as np
import onnx
import pytest
from hypothesis import given, settings, strategies as st
from onnx import numpy_helper

from compiler_core.ir import Graph, Value
from compiler_core.ir.computed_tensors import ConcatenatedTensor, TransposedTensor
from compiler_core.ir.dtypes import from_numpy
from compiler_core.ir.exporter import to_bytes
from compiler_core.ir.lazy_tensors import self_contained_pickles
from compiler_core.ir.model_file import save_model

DTYPES = [np.float32, np.float64, np.int8, np.uint8, np.int64, np.bool_, np.float16,
          ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.int4, ml_dtypes.uint4]


def _values(dtype, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype in (ml_dtypes.int4, ml_dtypes.uint4):
        low = -8 if dtype == ml_dtypes.int4 else 0
        return rng.integers(low, low + 16, shape).astype(dtype)
    return (rng.standard_normal(shape) * 7).astype(dtype)


def _layouts(array: np.ndarray) -> dict:
    """The same values in the layouts passes hand to the exporter."""
    forms = {"plain": array,
             "transposed view": array.T.copy().T,   # F-order: same values, not C-contiguous
             "sliced view": np.repeat(array, 2, axis=-1)[..., ::2],
             "computed transpose": TransposedTensor("t", array.T.copy(),
                                                    tuple(reversed(range(array.ndim)))),
             "concatenation of views": ConcatenatedTensor(
                 "c", [array.T.copy().T[..., :1], array.T.copy().T[..., 1:]], axis=-1)}
    if array.dtype.kind in "iuf" and array.dtype.itemsize > 1:
        forms["big-endian"] = array.astype(array.dtype.newbyteorder(">"))
    return forms


def _pickled(graph: Graph, self_contained: bool) -> Graph:
    with self_contained_pickles(self_contained):
        return pickle.loads(pickle.dumps(graph))


def _graph_holding(data) -> Graph:
    graph = Graph("writes")
    weight = graph.add_initializer("w", data)
    node = graph.add_node("Identity", [weight])
    graph.set_outputs(node.outputs)
    return graph


def _read_back(model: onnx.ModelProto, base_dir=None) -> np.ndarray:
    if base_dir is not None:
        onnx.load_external_data_for_model(model, str(base_dir))
    return numpy_helper.to_array(model.graph.initializer[0])


@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from(DTYPES), rows=st.integers(1, 5), cols=st.integers(2, 300),
       seed=st.integers(0, 2**16), spilled=st.booleans())
def test_every_layout_and_type_writes_and_reads_back_equal(tmp_path_factory, dtype, rows,
                                                           cols, seed, spilled):
    array = _values(dtype, (rows, cols), seed)
    folder = tmp_path_factory.mktemp("writes")
    for layout, data in _layouts(array).items():
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("GRAPHLAB_SPILL_BYTES", "1" if spilled else str(1 << 30))
            graph = _graph_holding(data)
        read = {}
        for trip, copy in (("", graph), (", pickled", _pickled(graph, False)),
                           (", pickled self-contained", _pickled(graph, True))):
            read["single file" + trip] = _read_back(onnx.load_from_string(to_bytes(copy)))
            save_model(copy, folder / "m.onnx", external_data=True)
            read["external data" + trip] = _read_back(
                onnx.load(folder / "m.onnx", load_external_data=False), folder)
        for how, got in read.items():
            assert got.dtype == array.dtype and got.shape == array.shape, (layout, how)
            np.testing.assert_array_equal(got.astype(np.float64), array.astype(np.float64),
                                          err_msg=f"{layout}, {how}")


@pytest.mark.parametrize("array", [np.zeros((0, 4), np.float32), np.zeros((3, 0), np.int64),
                                   np.array(["a", "bc", ""], dtype=object)],
                         ids=["zero rows", "zero columns", "strings"])
def test_empty_and_string_tensors_write(tmp_path, array):
    graph = _graph_holding(array)
    save_model(graph, tmp_path / "m.onnx", external_data=True)
    got = _read_back(onnx.load(tmp_path / "m.onnx", load_external_data=False), tmp_path)
    assert got.shape == array.shape and got.tolist() == array.tolist()


def test_big_endian_weight_has_its_onnx_type():
    value = _graph_holding(np.arange(3, dtype=">i4")).initializers["w"]
    assert value.elem_type == from_numpy(np.dtype(np.int32))
    assert isinstance(value, Value)
