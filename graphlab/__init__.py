"""GraphLab: the CLI and the Dash app that show what each compiler pass does to a model, and a
Python API for notebooks:

    import graphlab
    result = graphlab.compile("bert_tiny_op13", pipeline="O2", bindings={"seq": 512})
    result.snapshots, result.roofline, result.memory, result.show()
    graphlab.diff("bert_tiny_op13", "bert_tiny_dynamo")
    graphlab.compile(graphlab.edit("teach_gelu").set_tensor("gelu_wrongconst_sqrt2", 1.41421))

All compiler logic lives in ``compiler_core``; this package only renders its records.
"""

from .version import __version__  # noqa: F401 - graphlab.__version__

# The notebook API (graphlab/notebook) is imported when first used, so `import graphlab` and
# the CLI's start-up stay as cheap as before it existed.
_NOTEBOOK_API = ("CompileResult", "ModelEditor", "compile", "diff", "edit", "show")


def __getattr__(name: str):
    if name in _NOTEBOOK_API:
        from . import notebook
        return getattr(notebook, name)
    raise AttributeError(f"module 'graphlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_NOTEBOOK_API])
