"""Example pattern texts to start from (the app's editor offers them; docs/patterns.md walks
through them).  Each is a file in ``examples/``, so it can also be copied and run with
``graphlab explain MODEL --patterns FILE``."""

from __future__ import annotations

from importlib.resources import files

# name shown to the user -> file in examples/, in the order offered
EXAMPLES = {"GELU": "gelu.pat", "LayerNorm": "layernorm.pat", "RMSNorm": "rmsnorm.pat",
            "A near miss: Conv + BatchNorm": "conv_bn_near_miss.pat"}


def example_text(name: str) -> str:
    """The text of example ``name`` (one of ``EXAMPLES``)."""
    return files(__package__).joinpath("examples", EXAMPLES[name]).read_text(encoding="utf-8")
