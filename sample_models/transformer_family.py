"""Tiny exports of today's transformer architectures, for the LLM samples and the benchmark.

Each architecture is built with random (seeded) weights at a tiny size — hidden 64, 2 layers,
4 query heads and fewer key/value heads where the architecture has them — and exported with
both PyTorch exporters: TorchScript (``torch.onnx.export(dynamo=False)``) and dynamo
(``dynamo=True``).  Every file is checked against torch with onnxruntime at input sizes other
than the export's, so dynamic axes really are dynamic.

    python sample_models/make_samples.py --transformers OUT_DIR   # the whole family

The family covers what an LLM-compiler engineer meets: grouped-query and multi-query attention
with rotary embeddings, RMSNorm and SwiGLU (Llama, Qwen2, Mistral with a sliding window), a
decode step reading a KV cache, PyTorch's sequence-first ``nn.TransformerEncoder`` (packed
in-projection), an encoder-decoder with cross-attention (BART) and a ViT, in float32 and some in
float16.  Needs torch and transformers; nothing else in GraphLab imports this module.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

VOCAB = 256
MAX_POS = 128
HIDDEN = 64
LAYERS = 2


def _torch():
    import torch  # noqa: PLC0415  (lazy: only the --transformers run needs it)

    return torch


@dataclasses.dataclass
class Spec:
    """One model of the family: how to build it, what it takes, and the sizes it is checked at.

    ``feeds(batch, seq, rng)`` returns the named inputs as numpy arrays; ``axes`` names each
    input's and output's dynamic axes (TorchScript's dynamic_axes form).
    """

    name: str
    build: Callable[[str], object]  # attention implementation -> torch module in eval mode
    inputs: list[str]
    outputs: list[str]
    axes: dict[str, dict[int, str]]
    feeds: Callable[[int, int, np.random.Generator], dict[str, np.ndarray]]
    teaches: str
    export_size: tuple[int, int] = (2, 8)
    check_sizes: tuple[tuple[int, int], ...] = ((1, 5), (3, 11))
    dtype: str = "float32"
    torchscript_fixes_sizes: bool = False  # its trace bakes the export sizes into Reshapes


# ------------------------------------------------------------------------------ feeds
def _tokens(batch: int, seq: int, rng: np.random.Generator, padded: bool = True) -> dict:
    """input_ids and an attention mask whose first row ends in padding (when long enough)."""
    mask = np.ones((batch, seq), np.int64)
    if padded and seq > 3 and batch > 1:
        mask[0, -2:] = 0
    return {"input_ids": rng.integers(0, VOCAB, (batch, seq), dtype=np.int64),
            "attention_mask": mask}


def _token_axes(outputs: list[str]) -> dict:
    return {k: {0: "batch", 1: "seq"} for k in ["input_ids", "attention_mask", *outputs]}


# ------------------------------------------------------------------------------ decoders
def _seeded(seed: int) -> None:
    _torch().manual_seed(seed)


def _noisy(model, std: float = 0.02):
    """Perturb norm weights and biases so exporters do not deduplicate equal constants and
    folds change numbers visibly."""
    torch = _torch()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() == 1:
                param.add_(torch.randn_like(param) * std)
    return model


def _logits_only(lm):
    """Wrap a causal LM so its forward takes (input_ids, attention_mask) and returns logits."""
    torch = _torch()

    class CausalLM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = lm

        def forward(self, input_ids, attention_mask):
            return self.lm(input_ids=input_ids, attention_mask=attention_mask,
                           use_cache=False).logits

    return CausalLM().eval()


def _decoder(config_class: str, model_class: str, seed: int, dtype: str = "float32", **extra):
    """A builder of a tiny causal decoder from transformers' classes of these names."""
    def build(attn_implementation: str):
        torch = _torch()
        import transformers  # noqa: PLC0415

        _seeded(seed)
        config = getattr(transformers, config_class)(
            vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
            num_hidden_layers=LAYERS, max_position_embeddings=MAX_POS, use_cache=False,
            tie_word_embeddings=False, **extra)
        config._attn_implementation = attn_implementation
        model = _noisy(getattr(transformers, model_class)(config))
        return _logits_only(model.to(getattr(torch, dtype)))
    return build


def _decoder_spec(name: str, build, teaches: str, dtype: str = "float32") -> Spec:
    return Spec(name, build, ["input_ids", "attention_mask"], ["logits"],
                _token_axes(["logits"]), _tokens, teaches, dtype=dtype)


def llama(dtype: str = "float32") -> Spec:
    suffix = "" if dtype == "float32" else "_fp16"
    return _decoder_spec(
        f"llama{suffix}",
        _decoder("LlamaConfig", "LlamaForCausalLM", 21, dtype, num_attention_heads=4,
                 num_key_value_heads=2),
        "Llama-style decoder: grouped-query attention (4 query heads share 2 key/value heads), "
        "rotary position embedding, RMSNorm, SwiGLU MLP, causal and padding mask.", dtype)


def qwen2() -> Spec:
    return _decoder_spec(
        "qwen2", _decoder("Qwen2Config", "Qwen2ForCausalLM", 22, num_attention_heads=4,
                          num_key_value_heads=2),
        "Qwen2-style decoder: like Llama, with biases on the Q/K/V projections.")


def mistral() -> Spec:
    return _decoder_spec(
        "mistral", _decoder("MistralConfig", "MistralForCausalLM", 23, num_attention_heads=4,
                            num_key_value_heads=2, sliding_window=4),
        "Mistral-style decoder: grouped-query attention with a sliding-window causal mask "
        "(window 4).")


def llama_mqa() -> Spec:
    return _decoder_spec(
        "llama_mqa", _decoder("LlamaConfig", "LlamaForCausalLM", 24, num_attention_heads=4,
                              num_key_value_heads=1),
        "Multi-query attention: 4 query heads share one key/value head.")


def llama_decode_step() -> Spec:
    """One decode step reading a KV cache: one new token per sequence, past keys/values in,
    present keys/values (past + the new one) out."""
    past_len = 5
    kv_heads, head_size = 2, HIDDEN // 4
    past_names = [f"past_{kind}_{i}" for i in range(LAYERS) for kind in ("key", "value")]
    present_names = [n.replace("past", "present") for n in past_names]

    def build(attn_implementation: str):
        torch = _torch()
        from transformers import DynamicCache  # noqa: PLC0415

        lm = _decoder("LlamaConfig", "LlamaForCausalLM", 25, num_attention_heads=4,
                      num_key_value_heads=kv_heads)(attn_implementation).lm
        lm.config.use_cache = True

        class DecodeStep(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lm = lm

            def forward(self, input_ids, attention_mask, position_ids, *past):
                cache = DynamicCache(config=lm.config)
                for layer in range(LAYERS):
                    cache.update(past[2 * layer], past[2 * layer + 1], layer)
                out = self.lm(input_ids=input_ids, attention_mask=attention_mask,
                              position_ids=position_ids, past_key_values=cache, use_cache=True)
                present = [t for layer in out.past_key_values.layers
                           for t in (layer.keys, layer.values)]
                return (out.logits, *present)

        return DecodeStep().eval()

    def feeds(batch: int, past: int, rng: np.random.Generator) -> dict:
        data = {"input_ids": rng.integers(0, VOCAB, (batch, 1), dtype=np.int64),
                "attention_mask": np.ones((batch, past + 1), np.int64),
                "position_ids": np.full((batch, 1), past, np.int64)}
        for name in past_names:
            data[name] = rng.standard_normal((batch, kv_heads, past, head_size)).astype(np.float32)
        return data

    axes = {"input_ids": {0: "batch"}, "attention_mask": {0: "batch", 1: "total"},
            "position_ids": {0: "batch"}, "logits": {0: "batch"},
            **{n: {0: "batch", 2: "past"} for n in past_names},
            **{n: {0: "batch", 2: "total"} for n in present_names}}
    return Spec("llama_decode_step", build, ["input_ids", "attention_mask", "position_ids",
                                             *past_names], ["logits", *present_names], axes,
                feeds, "A decode step with a KV cache: past keys/values are concatenated with "
                "the new token's, attention reads them all, present keys/values are outputs.",
                export_size=(2, past_len), check_sizes=((1, 3), (3, 9)))


# ------------------------------------------------------------------------------ encoders
def transformer_encoder(batch_first: bool = False) -> Spec:
    """PyTorch's own nn.TransformerEncoder: nn.MultiheadAttention with one packed in-projection
    split into Q/K/V; sequence-first unless batch_first."""
    def build(attn_implementation: str):
        torch = _torch()
        _seeded(26)
        layer = torch.nn.TransformerEncoderLayer(HIDDEN, 4, 2 * HIDDEN, dropout=0.0,
                                                 batch_first=batch_first)
        encoder = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        return _noisy(encoder).eval()

    def feeds(batch: int, seq: int, rng: np.random.Generator) -> dict:
        shape = (batch, seq, HIDDEN) if batch_first else (seq, batch, HIDDEN)
        return {"src": rng.standard_normal(shape).astype(np.float32)}

    axes = {k: ({0: "batch", 1: "seq"} if batch_first else {0: "seq", 1: "batch"})
            for k in ("src", "output")}
    layout = "batch-first" if batch_first else "sequence-first"
    return Spec(f"torch_encoder{'_bf' if batch_first else ''}", build, ["src"], ["output"],
                axes, feeds, f"PyTorch nn.TransformerEncoder ({layout}): one packed "
                "in-projection GEMM split into Q, K and V, no mask.",
                torchscript_fixes_sizes=True)


def bart() -> Spec:
    """A BART-style encoder-decoder: the decoder's cross-attention takes Q from the decoder and
    K/V from the encoder's output."""
    names = ["input_ids", "attention_mask", "decoder_input_ids"]

    def build(attn_implementation: str):
        torch = _torch()
        from transformers import BartConfig, BartForConditionalGeneration  # noqa: PLC0415

        _seeded(27)
        config = BartConfig(vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=LAYERS,
                            decoder_layers=LAYERS, encoder_attention_heads=4,
                            decoder_attention_heads=4, encoder_ffn_dim=2 * HIDDEN,
                            decoder_ffn_dim=2 * HIDDEN, max_position_embeddings=MAX_POS,
                            use_cache=False, dropout=0.0, attention_dropout=0.0,
                            pad_token_id=1, bos_token_id=0, eos_token_id=2)
        config._attn_implementation = attn_implementation
        model = _noisy(BartForConditionalGeneration(config))

        class Seq2Seq(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, input_ids, attention_mask, decoder_input_ids):
                return self.model(input_ids=input_ids, attention_mask=attention_mask,
                                  decoder_input_ids=decoder_input_ids, use_cache=False).logits

        return Seq2Seq().eval()

    def feeds(batch: int, seq: int, rng: np.random.Generator) -> dict:
        data = _tokens(batch, seq, rng)
        data["input_ids"][:, 0] = 0
        data["decoder_input_ids"] = rng.integers(3, VOCAB, (batch, max(1, seq // 2)),
                                                 dtype=np.int64)
        return data

    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
            "decoder_input_ids": {0: "batch", 1: "target"}, "logits": {0: "batch", 1: "target"}}
    return Spec("bart", build, names, ["logits"], axes, feeds,
                "Encoder-decoder (BART-style): encoder self-attention with a padding mask, "
                "decoder causal self-attention, and cross-attention whose K/V come from the "
                "encoder output.")


def vit() -> Spec:
    def build(attn_implementation: str):
        torch = _torch()
        from transformers import ViTConfig, ViTModel  # noqa: PLC0415

        _seeded(28)
        config = ViTConfig(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=4,
                           intermediate_size=2 * HIDDEN, image_size=32, patch_size=8,
                           num_channels=3)
        config._attn_implementation = attn_implementation
        model = _noisy(ViTModel(config, add_pooling_layer=False))

        class Encoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.vit = model

            def forward(self, pixel_values):
                return self.vit(pixel_values=pixel_values).last_hidden_state

        return Encoder().eval()

    def feeds(batch: int, seq: int, rng: np.random.Generator) -> dict:
        return {"pixel_values": rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)}

    return Spec("vit", build, ["pixel_values"], ["last_hidden_state"],
                {"pixel_values": {0: "batch"}, "last_hidden_state": {0: "batch"}}, feeds,
                "Vision transformer: attention without a mask.")


FAMILY: dict[str, Callable[[], Spec]] = {
    "llama": llama, "llama_fp16": lambda: llama("float16"), "qwen2": qwen2,
    "mistral": mistral, "llama_mqa": llama_mqa, "llama_decode_step": llama_decode_step,
    "torch_encoder": transformer_encoder, "torch_encoder_bf": lambda: transformer_encoder(True),
    "bart": bart, "vit": vit,
}
EXPORTERS = {"torchscript": 17, "dynamo": 20}


# ------------------------------------------------------------------------------ exporting
def _to_torch(feed: dict[str, np.ndarray], dtype: str):
    torch = _torch()
    tensors = []
    for value in feed.values():
        tensor = torch.from_numpy(value)
        if tensor.is_floating_point():
            tensor = tensor.to(getattr(torch, dtype))
        tensors.append(tensor)
    return tuple(tensors)


def _onnx_feed(spec: Spec, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: (v.astype(spec.dtype) if v.dtype.kind == "f" else v) for k, v in feed.items()}


def _export_torchscript(spec: Spec, model, args, path: Path, opset: int) -> None:
    torch = _torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, str(path), dynamo=False, opset_version=opset,
                          input_names=spec.inputs, output_names=spec.outputs,
                          dynamic_axes=spec.axes)


def _export_dynamo(spec: Spec, model, args, path: Path, opset: int) -> None:
    """torch.export wants one Dim object per axis name, shared by every input that names it;
    an output's axes follow from the inputs'."""
    torch = _torch()
    dims: dict[str, object] = {}

    def dim(label: str):
        if label not in dims:
            dims[label] = torch.export.Dim(label, max=MAX_POS - 8)
        return dims[label]

    shapes = [{axis: dim(label) for axis, label in spec.axes.get(name, {}).items()}
              for name in spec.inputs]
    total = spec.axes.get("attention_mask", {}).get(1)
    if total == "total":  # the decode step: the mask spans past + 1 positions
        shapes[1] = {0: dim("batch"), 1: dim("past") + 1}
    logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, args, dynamo=True, opset_version=opset, verbose=False,
                                    input_names=spec.inputs, output_names=spec.outputs,
                                    dynamic_shapes=_nest(spec, shapes))
    program.save(str(path), external_data=False)
    _strip_stack_traces(path)


def _nest(spec: Spec, shapes: list[dict]):
    """dynamic_shapes in the structure of forward's arguments (a *past vararg is one tuple)."""
    fixed = len(spec.inputs) - sum(1 for n in spec.inputs if n.startswith("past_"))
    if fixed == len(spec.inputs):
        return tuple(shapes)
    return (*shapes[:fixed], tuple(shapes[fixed:]))


def _strip_stack_traces(path: Path) -> None:
    """Drop the dynamo exporter's per-node stack traces: they hold this machine's file paths."""
    model = onnx.load(str(path))
    for node in model.graph.node:
        keep = [p for p in node.metadata_props if p.key != "pkg.torch.onnx.stack_trace"]
        del node.metadata_props[:]
        node.metadata_props.extend(keep)
    model.ir_version = min(model.ir_version, 10)
    onnx.save(model, str(path))


def _check(spec: Spec, model, path: Path, sizes) -> float:
    """Largest error relative to the output's scale, onnxruntime vs torch, at these sizes."""
    torch = _torch()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    worst = 0.0
    for batch, seq in sizes:
        feed = spec.feeds(batch, seq, rng)
        got = session.run(None, _onnx_feed(spec, feed))
        with torch.no_grad():
            expected = model(*_to_torch(feed, spec.dtype))
        expected = expected if isinstance(expected, (tuple, list)) else (expected,)
        for ours, theirs in zip(got, expected, strict=True):
            theirs = theirs.float().numpy()
            assert ours.shape == theirs.shape, (path.name, ours.shape, theirs.shape)
            scale = max(float(np.abs(theirs).max()), 1e-6)
            worst = max(worst, float(np.abs(ours.astype(np.float32) - theirs).max()) / scale)
    tolerance = 1e-4 if spec.dtype == "float32" else 2e-2
    assert worst < tolerance, f"{path.name}: onnxruntime differs from torch by {worst:.2e}"
    return worst


def export(spec: Spec, exporter: str, out_dir: Path, opset: int | None = None) -> Path:
    """Export one model with one exporter (SDPA attention, eager where SDPA will not export);
    check it against torch; return the file."""
    opset = opset or EXPORTERS[exporter]
    suffix = "" if opset == EXPORTERS[exporter] else f"_op{opset}"
    path = out_dir / f"{spec.name}_{exporter}{suffix}.onnx"
    writer = _export_torchscript if exporter == "torchscript" else _export_dynamo
    last_error: Exception | None = None
    for implementation in ("sdpa", "eager"):
        model = spec.build(implementation)
        args = _to_torch(spec.feeds(*spec.export_size, np.random.default_rng(1)), spec.dtype)
        try:
            writer(spec, model, args, path, opset)
        except Exception as exc:  # noqa: BLE001 -- any exporter failure: try eager attention
            last_error = exc
            continue
        fixed = exporter == "torchscript" and spec.torchscript_fixes_sizes
        _check(spec, model, path, [spec.export_size] if fixed else spec.check_sizes)
        return path
    raise RuntimeError(f"{spec.name}: {exporter} export failed: {last_error}") from last_error


def export_family(out_dir: Path, names: list[str] | None = None) -> list[Path]:
    """Every model of the family with both exporters (and Llama also at TorchScript opset 14)
    into out_dir; a model an exporter cannot export is reported and skipped."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names or list(FAMILY):
        spec = FAMILY[name]()
        jobs = [(e, None) for e in EXPORTERS] + ([("torchscript", 14)] if name == "llama" else [])
        for exporter, opset in jobs:
            try:
                written.append(export(spec, exporter, out_dir, opset))
                print(f"    {written[-1].name}")
            except Exception as exc:  # noqa: BLE001 -- report and go on with the family
                print(f"    {name} ({exporter}): skipped — {str(exc).splitlines()[0][:300]}")
    return written
