"""The one serializer of records (compiler_core.records): what each kind of value becomes, and
real records written as the CLI's --json writes them."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pytest

from compiler_core.hardware.representative_sizes import ChosenSizes
from compiler_core.ir import load_model
from compiler_core.model_diff import diff_models
from compiler_core.records import OMIT, name_of, names, record_field, to_json
from graphlab.samples import resolve_model


class Colour(enum.Enum):
    RED = "red"


class Span(NamedTuple):
    start: int
    stop: int


@dataclass
class Ref:
    name: str


@dataclass
class Inner:
    value: float
    note: str = record_field(omit_empty=True, default="")


@dataclass
class Outer:
    label: str = record_field(key="name")
    secret: str = record_field(omit=True)
    seconds: float = record_field(digits=2)
    inner: Inner | None = None
    refs: tuple[Ref, ...] = record_field(convert=names, default=())
    owner: Ref | None = record_field(convert=name_of, omit_none=True, default=None)
    tags: frozenset[str] = frozenset()
    extra: dict = field(default_factory=dict)

    json_derived = ("count", ("inner_value", "inner.value"), ("describe", "describe"))

    @property
    def count(self) -> int:
        return len(self.refs)

    def describe(self) -> str:
        return f"{self.label} with {self.count}"


def test_a_record_is_written_as_its_fields_metadata_and_declared_values_say():
    record = Outer("o", "hidden", 1.23456, Inner(0.5, ""), (Ref("a"), Ref("b")), None,
                   frozenset({"z", "a"}), {"k": (1, 2)})
    assert to_json(record) == {
        "name": "o", "seconds": 1.23, "inner": {"value": 0.5}, "refs": ["a", "b"],
        "tags": ["a", "z"], "extra": {"k": [1, 2]}, "count": 2, "inner_value": 0.5,
        "describe": "o with 2"}


def test_a_dotted_path_through_none_is_none_and_a_field_left_out_when_none():
    record = Outer("o", "s", 0.0, None, owner=Ref("me"))
    data = to_json(record)
    assert data["inner_value"] is None and data["inner"] is None and data["owner"] == "me"
    assert "owner" not in to_json(Outer("o", "s", 0.0))


def test_values_json_has_no_form_for_become_plain_ones():
    data = to_json({"inf": math.inf, "nan": float("nan"), "np": np.float32(2.5),
                    "int": np.int64(3), "array": np.arange(3), "enum": Colour.RED,
                    "span": Span(1, 4), "bad": np.float64(-np.inf)})
    assert data == {"inf": None, "nan": None, "np": 2.5, "int": 3, "array": [0, 1, 2],
                    "enum": "red", "span": {"start": 1, "stop": 4}, "bad": None}
    assert type(data["int"]) is int
    json.dumps(data, allow_nan=False)   # strict JSON


def test_a_declared_value_can_be_converted_and_none_is_left_as_none():
    @dataclass
    class Counted:
        counts: dict
        inner: Inner | None = None

        json_derived = (("doubled", "counts", lambda c: {k: 2 * v for k, v in c.items()}),
                        ("inner_value", "inner.value", str))

    assert to_json(Counted({"a": 2})) == {"counts": {"a": 2}, "inner": None,
                                          "doubled": {"a": 4}, "inner_value": None}
    assert to_json(Counted({}, Inner(0.5)))["inner_value"] == "0.5"


def test_only_keeps_the_keys_asked_for_of_fields_and_declared_values_alike():
    record = Outer("o", "s", 2.0, Inner(1.0), (Ref("a"),))
    assert to_json(record, only=("name", "count")) == {"name": "o", "count": 1}


def test_keys_come_in_field_order_then_derived_unless_the_class_orders_them():
    record = Outer("o", "s", 2.0)
    assert list(to_json(record))[:2] == ["name", "seconds"]
    assert list(to_json(record))[-3:] == ["count", "inner_value", "describe"]

    @dataclass
    class Ordered(Outer):
        json_order = ("describe", "seconds")

    data = to_json(Ordered("o", "s", 2.0))
    assert list(data)[:3] == ["describe", "seconds", "name"] and data == to_json(record)
    assert list(to_json(record, only=("count", "name"))) == ["count", "name"]


def test_a_value_that_is_omit_leaves_its_key_out():
    @dataclass
    class Rewrite:
        made: str | None
        along: tuple[str, ...] = record_field(convert=tuple, default=())

        json_derived = (("taken", "taken"),)

        @property
        def taken(self):
            return list(self.along) if self.made else OMIT

    assert to_json(Rewrite("fused", ())) == {"made": "fused", "along": [], "taken": []}
    assert to_json(Rewrite(None, ("a",))) == {"made": None, "along": ["a"]}

    @dataclass
    class Sparse:
        kept: int = record_field(convert=lambda v: OMIT if v < 0 else v)

    assert to_json([Sparse(-1), Sparse(2)]) == [{}, {"kept": 2}]


def test_a_value_it_cannot_write_is_refused_by_name():
    with pytest.raises(TypeError, match="cannot write object as JSON"):
        to_json(object())


def test_a_model_diff_is_written_with_node_names_and_its_summary():
    a = load_model(resolve_model("bert_tiny_op13"))
    b = load_model(resolve_model("bert_tiny_op20"))
    diff = diff_models(a, b, "op13", "op20")
    data = to_json(diff)
    assert data["a"] == "op13" and data["summary"] == diff.summary()
    assert data["only_a"] == [{"name": n.name, "op": n.op} for n in diff.only_a]
    assert [m["a"] for m in data["matched"]] == [p.a.name for p in diff.pairs]
    assert [m["op"] for m in data["matched"]] == [p.a.op for p in diff.pairs]
    assert "graph_a" not in data and data["seconds"] == round(diff.seconds, 6)


def test_chosen_sizes_read_back_from_their_record():
    sizes = ChosenSizes.from_dict({"dims": [{"dim": "batch", "size": 2, "reason": "given"},
                                            {"dim": "seq", "size": 8, "reason": "hint"}]})
    data = to_json(sizes)
    assert data["bindings"] == {"batch": 2, "seq": 8} and ChosenSizes.from_dict(data) == sizes
