"""Attention over quantized projections: Q, K and V computed by 4-bit MatMulNBits, int4
weights dequantized before a MatMul, or int8 MatMulInteger of dynamically quantized
activations are projections of the same tensor, so the block is self-attention, fused with its
projections and lowered to onnxruntime's GroupQueryAttention / MultiHeadAttention; the lowered
model computes what the quantized model computes in onnxruntime at its default level."""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

import pytest

from compiler_core.ir import FUSED_DOMAIN, to_bytes
from compiler_core.lowering import lower_for_onnxruntime
from compiler_core.passes import PassManager
from compiler_core.quantized_outputs import rounding_allowance
from compiler_core.records import to_json
from compiler_core.runtime_check import run_isolated_many
from compiler_core.verify import compare_outputs, make_inputs
from passes_helpers import ops
from quantized_graphs import KINDS, quantized_decoder

MS = "com.microsoft:"
GQA, MHA = MS + "GroupQueryAttention", MS + "MultiHeadAttention"
# name: (quantizer kind, decoder_attention form, sizes of its symbolic dims, operator)
CASES = {
    **{f"{kind}_gqa": (kind, {"rotary": True}, {"batch": 2, "seq": 5}, GQA) for kind in KINDS},
    **{f"{kind}_mha": (kind, {"kv_heads": 4}, {"batch": 2, "seq": 5}, MHA) for kind in KINDS},
    "nbits_decode_step": ("nbits", {"past": True, "seq": 1, "rotary": True},
                          {"batch": 2, "past": 4, "total": 5}, GQA),
    "dynamic_decode_step": ("dynamic", {"past": True, "seq": 1},
                            {"batch": 2, "past": 4, "total": 5}, GQA),
}
# The op each kind's linear layers have one of (and attention's own products have none of)
PRODUCT = {"nbits": "MatMulNBits", "nbits_qdq": "DequantizeLinear", "dynamic": "MatMulInteger"}


@lru_cache(maxsize=None)
def _compiled(name: str):
    kind, form, sizes, _ = CASES[name]
    graph = quantized_decoder(kind, **form)
    final = PassManager("O2", check=True).run(graph).final
    return graph, final, lower_for_onnxruntime(final), make_inputs(graph, sizes)


@pytest.fixture(scope="module")
def at_default_level():
    """Each case's quantized input and lowered output run in onnxruntime at its default
    level (ORT_ENABLE_ALL), in one child process."""
    jobs = []
    for name in sorted(CASES):
        graph, _, lowering, inputs = _compiled(name)
        jobs += [(to_bytes(graph), [inputs]), (to_bytes(lowering.graph), [inputs])]
    outcomes = run_isolated_many(jobs, level="all")
    return {name: outcomes[2 * i: 2 * i + 2] for i, name in enumerate(sorted(CASES))}


@pytest.mark.parametrize("name", sorted(CASES))
def test_attention_over_quantized_projections_is_self_attention_fused_with_them(name):
    kind = CASES[name][0]
    graph, final, _, _ = _compiled(name)
    (fused,) = final.nodes_of_type("Attention", FUSED_DOMAIN)
    assert (fused.attrs["cross"], fused.attrs["qkv"]) == (0, "separate")
    inside = Counter(n.op_type for n in fused.body.nodes)
    products = ops(graph)[PRODUCT[kind]]
    # Q, K and V's layers moved inside; the output projection stays outside
    assert inside[PRODUCT[kind]] == 3 and ops(final)[PRODUCT[kind]] == products - 3
    if kind == "dynamic":  # the activations' quantizer, shared by Q, K and V, went with them
        assert inside["DynamicQuantizeLinear"] == 1


@pytest.mark.parametrize("name", sorted(CASES))
def test_attention_over_quantized_projections_lowers_to_the_operator(name, at_default_level):
    graph, _, lowering, inputs = _compiled(name)
    expected = CASES[name][3]
    (record,) = [r for r in lowering.nodes if r.fused_op == "Attention"]
    assert (record.result, record.reason) == (expected, None)
    assert "Softmax" not in ops(lowering.graph)
    lowering.graph.check()
    source, lowered = at_default_level[name]
    assert source.ok and lowered.ok, (source.describe(), lowered.describe())
    report = compare_outputs(source.outputs[0], lowered.outputs[0],
                             allowance=rounding_allowance(graph))
    assert report.ok, to_json(report)
