"""What a model's structure says about its input sizes: one walk over the graph.

Every tensor gets a shape whose dims are polynomials in the input dims (``algebra.Poly``), and
small integer tensors — the Shape/Gather/Concat arithmetic exporters emit to build reshape
targets — get their contents as polynomials too.  Where the model combines two sizes that must
agree, the walk writes an ``Equation``: a Reshape keeps the element count, broadcasting and
Expand need equal dims (or a 1), MatMul needs equal inner dims, Concat equal dims off its axis.
A slice of a constant table up to a size the input sets is a ``Bound`` (a position table of 512
rows allows at most 512 positions).  Sizes the model's files state (onnx's inference, the
exporter's value_info) that the walk sees as symbolic become ``hints``: candidate sizes to try.

The rules per op live in ``shape_rules`` (tensor shapes) and ``shape_values`` (contents of
shape tensors); an op neither knows keeps the shape the IR inferred.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..ir import Graph, Node, Value
from ..ir.dtypes import to_numpy
from ..ir.lazy_tensors import values_of
from ..ir.shape_inference import is_unnamed_dim
from .algebra import OPAQUE_PREFIX, Poly, is_opaque, parse_dim

MAX_TRACKED_ELEMENTS = 64   # integer tensors up to this size have their contents followed


@dataclass(frozen=True)
class Equation:
    """``left == right`` must hold for the model to run; ``what`` says why, at ``node``."""

    left: Poly
    right: Poly
    node: str
    what: str

    @property
    def difference(self) -> Poly:
        return self.left - self.right


@dataclass(frozen=True)
class Bound:
    """``size <= limit`` must hold: a slice or an index into a dim of ``limit``."""

    size: Poly
    limit: Poly
    node: str
    what: str

    @property
    def excess(self) -> Poly:
        """Positive when the bound is broken."""
        return self.size - self.limit


@dataclass
class InputDim:
    """One axis of one graph input whose size is not fixed by the file."""

    name: str       # as written ('seq', 'past + 1'), or 'input[axis]' for a dim nobody named
    input: str
    axis: int
    rank: int
    named: bool
    size: Poly      # the name read as a polynomial: a symbol, or an expression of symbols


@dataclass
class SizeFacts:
    """Everything the walk learnt: the free input dims and what constrains them."""

    dims: list[InputDim] = field(default_factory=list)
    equations: list[Equation] = field(default_factory=list)
    bounds: list[Bound] = field(default_factory=list)
    hints: list[Equation] = field(default_factory=list)  # sizes the file states, to try
    target_sizes: set[int] = field(default_factory=set)  # numbers in Reshape/Expand targets

    @property
    def symbols(self) -> list[str]:
        """The free sizes: every symbol the input dims are written in, in order."""
        return list(dict.fromkeys(s for d in self.dims for s in sorted(d.size.symbols())))


class Walk:
    """The state of one walk: symbolic shapes and contents by value name, and the facts."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.facts = SizeFacts()
        self.shapes: dict[str, tuple[Poly, ...] | None] = {}
        self.contents: dict[str, np.ndarray | None] = {}
        self.spans: dict[str, tuple[Poly, Poly]] = {}   # (least, greatest) element
        self._fresh = itertools.count(1)
        self._ir_shapes: dict[tuple, tuple[Poly, ...]] = {}   # a shape as read (``ir_shape``)
        plain = {d for v in graph.inputs if v.stored is None for d in v.shape or ()
                 if isinstance(d, str) and parse_dim(d) == Poly.symbol(d)}
        for value in graph.inputs:
            self.shapes[value.name] = self._input_shape(value, plain)
        self.input_dims = {d.name: d.size for d in self.facts.dims}

    def inside(self, body: Graph, outer: Sequence[Value | None]) -> "Walk":
        """A walk of ``body`` (a fused node's, or a called function's) whose inputs are
        ``outer`` as this walk sees them: shapes, contents and spans carried in, the facts and
        the unknowns shared, so an equation met inside constrains the model's inputs.  The
        body's value names are its own, so they live in the inner walk's tables."""
        inner = Walk.__new__(Walk)
        inner.graph, inner.facts, inner.input_dims = body, self.facts, self.input_dims
        inner.shapes, inner.contents, inner.spans = {}, {}, {}
        inner._fresh, inner._ir_shapes = self._fresh, self._ir_shapes
        for value, given in zip(body.inputs, outer):
            inner.shapes[value.name] = self.shape(given)
            if self.content(given) is not None:
                inner.contents[value.name] = self.content(given)
            if given is not None and given.name in self.spans:
                inner.spans[value.name] = self.spans[given.name]
        return inner

    # -- reading values -------------------------------------------------------------------------
    def shape(self, value: Value | None) -> tuple[Poly, ...] | None:
        if value is None:
            return None
        if value.name not in self.shapes:
            self.shapes[value.name] = self.ir_shape(value)
        return self.shapes[value.name]

    def content(self, value: Value | None) -> np.ndarray | None:
        """The value's elements as an object array of Poly, when known and small."""
        if value is None:
            return None
        if value.name not in self.contents:
            self.contents[value.name] = _constant_content(value)
        return self.contents[value.name]

    def ints(self, value: Value | None) -> list[int] | None:
        """The value's contents as plain integers, when all of them are numbers."""
        content = self.content(value)
        if content is None:
            return None
        numbers = [p.as_int() for p in content.reshape(-1)]
        return None if any(n is None for n in numbers) else numbers

    def ir_shape(self, value: Value) -> tuple[Poly, ...] | None:
        """The shape the IR holds, its dims read as polynomials (a fresh unknown for '?');
        read once per distinct shape without a '?' (most values share a few shapes)."""
        shape = value.shape
        if shape is None:
            return None
        read = self._ir_shapes.get(shape)
        if read is None:
            read = tuple(self.dim(d) for d in shape)
            if None not in shape:
                self._ir_shapes[shape] = read
        return read

    def dim(self, dim) -> Poly:
        if isinstance(dim, int):
            return Poly.const(dim)
        if is_unnamed_dim(dim):
            return self.fresh() if dim is None else Poly.symbol(OPAQUE_PREFIX + dim)
        return self.input_dims[dim] if dim in self.input_dims else parse_dim(dim)

    def fresh(self) -> Poly:
        """A size nothing names (an equation may still pin it)."""
        return Poly.symbol(f"{OPAQUE_PREFIX}{next(self._fresh)}")

    # -- writing facts --------------------------------------------------------------------------
    def equal(self, left: Poly, right: Poly, node: Node, what: str) -> None:
        if left != right:
            self.facts.equations.append(Equation(left, right, node.name, what))

    def bound(self, size: Poly, limit: Poly, node: Node, what: str) -> None:
        if (size - limit).value is None:
            self.facts.bounds.append(Bound(size, limit, node.name, what))

    def set_output(self, node: Node, index: int, shape: tuple[Poly, ...] | None) -> None:
        """Record an output's shape, compared with the one the IR holds."""
        value = _output(node, index)
        if value is None:
            return
        ir = self.ir_shape(value)
        if shape is None or ir is not None and len(ir) != len(shape):
            shape = ir
        elif ir is not None and not _same_dims(shape, ir):
            shape = tuple(self._reconcile(mine, theirs, node, value)
                          for mine, theirs in zip(shape, ir))
        self.shapes[value.name] = shape

    def set_content(self, value: Value, content: np.ndarray | None) -> None:
        """Record a small integer output's elements (float ones are not sizes)."""
        if content is not None and content.size <= MAX_TRACKED_ELEMENTS and (
                value.elem_type is None or to_numpy(value.elem_type).kind in "iub"):
            self.contents[value.name] = content

    def _reconcile(self, mine: Poly, theirs: Poly, node: Node, value: Value) -> Poly:
        """Our dim, unless it is an unknown the IR knows; a size the IR states where we see
        an input-dependent one is a hint."""
        if mine == theirs:
            return mine
        if _only_opaque(mine):
            return theirs
        if theirs.value is not None and mine.value is None and not _only_opaque(theirs):
            self.facts.hints.append(Equation(mine, theirs, node.name,
                                             f"the file states {value.name!r} has a dim of "
                                             f"{theirs}"))
        return mine

    # -- inputs ---------------------------------------------------------------------------------
    def _input_shape(self, value: Value, plain: set[str]) -> tuple[Poly, ...] | None:
        """Symbols for the free dims; a name that is an expression of ``plain`` names (the
        dynamo exporter writes 'past + 1') is that expression."""
        if value.shape is None or value.stored is not None:
            return None
        dims = []
        for axis, dim in enumerate(value.shape):
            if isinstance(dim, int):
                dims.append(Poly.const(dim))
                continue
            named = isinstance(dim, str) and bool(dim)
            name = dim if named else f"{value.name}[{axis}]"
            size = parse_dim(name) if named else Poly.symbol(name)
            if not size.symbols() or not size.symbols() <= plain | {name}:
                size = Poly.symbol(name)
            self.facts.dims.append(InputDim(name, value.name, axis, len(value.shape), named,
                                            size))
            dims.append(size)
        return tuple(dims)


def _output(node: Node, index: int) -> Value | None:
    return node.outputs[index] if index < len(node.outputs) else None


def _same_dims(shape: tuple[Poly, ...], ir: tuple[Poly, ...]) -> bool:
    """Every dim the very object the IR's shape holds: nothing to reconcile (the usual case,
    since a shape read from the IR is read once per distinct shape and rules pass their
    inputs' dims on)."""
    return all(mine is theirs for mine, theirs in zip(shape, ir))


def _only_opaque(poly: Poly) -> bool:
    return bool(poly.symbols()) and all(is_opaque(s) for s in poly.symbols())


def _constant_content(value: Value) -> np.ndarray | None:
    data = value.constant_data()   # a weight's size and type, without reading it
    if data is None or data.size > MAX_TRACKED_ELEMENTS or data.dtype.kind not in "iub":
        return None
    array = values_of(data)
    return np.vectorize(lambda x: Poly.const(int(x)), otypes=[object])(array) \
        if array.size else np.empty(array.shape, dtype=object)
