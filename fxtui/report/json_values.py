"""Values as JSON and back, by their declared types: how a report file writes what the engine hands it.

The conventions every field follows, so a new field of the snapshot or the graph is written and
read back with no line here:

* a dataclass is an object of its fields (one with its own ``to_dict``/``from_dict`` writes itself);
  tuples, lists and arrays are lists; mappings are objects, and so are pairs keyed by text
  (``holds``: ``{"forward": 1, "optimizer:AdamW": 1}``); enums are their value;
* a value that does not apply is ``null``: an empty text (``loss`` of a model run without a loss,
  ``phase`` of an inference node) is written ``null`` — but a module path, where ``""`` is the root;
  a float that is not finite is ``null`` too;
* a part of a whole is a fraction 0–1 named ``…_frac`` (:data:`RENAMED` turns the engine's percents
  and shares into them); a ratio that may pass 1 (``fidelity``, ``overhead``) keeps its plain name;
* reading back, ``null`` or a missing key gives the field's default, and each value is made the
  field's type (tuples from lists, numbers from JSON numbers, nested dataclasses from objects); a
  ``null`` where a float stands inside a list or a record is NaN again (:func:`as_float`).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import sys
import types
import typing
from array import array
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, NamedTuple

from fxtui.core.findings import AtenOp, Disturbance, Hint
from fxtui.core.nodes import NodeStats
from fxtui.core.rows import ModuleRow, Rates


class Renamed(NamedTuple):
    """A field written under another name, its value multiplied by ``scale`` (and divided reading it back)."""

    key: str
    scale: float = 1.0


#: Fields whose JSON name says what kind of number they are: the engine's percents (0–100) and shares
#: (0–1) become fractions 0–1 named ``…_frac``.
RENAMED: dict[type, dict[str, Renamed]] = {
    NodeStats: {"pct": Renamed("run_frac", 0.01)},
    ModuleRow: {"pct": Renamed("run_frac", 0.01)},
    Rates: {"roofline_fraction": Renamed("roofline_frac")},
    AtenOp: {"share": Renamed("node_frac")},
    Hint: {"saving_pct": Renamed("saving_frac", 0.01)},
    Disturbance: {
        "median_lost": Renamed("median_lost_frac"),
        "worst_lost": Renamed("worst_lost_frac"),
        "median_display": Renamed("median_display_frac"),
    },
}

#: Text fields where ``""`` is a value, not a missing one: the root module's path.
EMPTY_IS_A_VALUE = frozenset({"path", "module_path"})


def json_key(kind: type, name: str) -> str:
    """The key field ``name`` of ``kind`` is written under."""
    renamed = RENAMED.get(kind, {}).get(name)
    return renamed.key if renamed else name


def as_float(value: Any) -> float:
    """A JSON number as a float; ``null`` (how a float that is not finite was written) as NaN."""
    return math.nan if value is None else float(value)


def missing_as_null(name: str, value: Any) -> Any:
    """``value`` of field ``name`` with an empty text as ``None`` (where empty is not a value of its own)."""
    return None if value == "" and name not in EMPTY_IS_A_VALUE else value


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data, by the conventions above."""
    if value is None or isinstance(value, (bool, int, str)):
        return value.value if isinstance(value, enum.Enum) else value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (tuple, list, set, frozenset, array)):
        return [encode(v) for v in value]
    if isinstance(value, enum.Enum):
        return encode(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        to_dict = getattr(value, "to_dict", None)
        if to_dict is not None:  # it writes itself; its empty texts are missing values all the same
            return {k: missing_as_null(k, v) for k, v in encode(to_dict()).items()}
        return encode_fields(value)
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray)):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


class _Field(NamedTuple):
    """How one field of a dataclass is written and read: worked out once per class (:func:`_plan`)."""

    name: str
    key: str
    scale: float
    empty_is_missing: bool
    pairs: bool
    """``tuple[tuple[str, X], ...]``: written as an object."""
    convert: Callable[[Any], Any]
    """JSON data to the field's type."""
    required: bool


@cache
def _plan(kind: type) -> tuple[_Field, ...]:
    renamed = RENAMED.get(kind, {})
    types = field_types(kind)
    plan = []
    for f in dataclasses.fields(kind):
        if not f.init or f.name.startswith("_"):
            continue
        rename = renamed.get(f.name)
        annotation = types.get(f.name, Any)
        plan.append(
            _Field(
                name=f.name,
                key=rename.key if rename else f.name,
                scale=rename.scale if rename else 1.0,
                empty_is_missing=f.name not in EMPTY_IS_A_VALUE,
                pairs=_keyed_pairs(annotation),
                convert=_converter(annotation),
                required=f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
        )
    return tuple(plan)


_PLAIN = (int, str, bool, type(None))


def encode_fields(record: Any, leave_out: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A dataclass's fields as a JSON object (renamed and scaled, missing values ``null``, pairs keyed by text
    as an object)."""
    out: dict[str, Any] = {}
    kind: type = type(record)
    for f in _plan(kind):
        if f.name in leave_out:
            continue
        value = getattr(record, f.name)
        if value.__class__ is float:  # most fields, below: a number or a text, written as it is
            value *= f.scale
            out[f.key] = value if math.isfinite(value) else None
            continue
        if value.__class__ in _PLAIN:
            out[f.key] = None if value == "" and f.empty_is_missing else value
            continue
        if f.scale != 1 and isinstance(value, (int, float)):
            value = value * f.scale
        if f.pairs and isinstance(value, tuple):
            value = {str(k): v for k, v in value}  # ``(("forward", 1), ("optimizer:AdamW", 1))``
        out[f.key] = encode(value)
    return out


def _keyed_pairs(kind: Any) -> bool:
    """``tuple[tuple[str, X], ...]``: pairs keyed by text, written as an object."""
    args = typing.get_args(kind)
    if typing.get_origin(kind) is not tuple or len(args) != 2 or args[1] is not Ellipsis:
        return False
    pair = typing.get_args(args[0])
    return typing.get_origin(args[0]) is tuple and len(pair) == 2 and pair[0] is str


def decode(kind: Any, value: Any) -> Any:
    """JSON data ``value`` as a value of type ``kind`` (an annotation); ``None`` stays ``None``."""
    return None if value is None else _converter(kind)(value)


def _identity(value: Any) -> Any:
    return value


@cache
def _converter(kind: Any) -> Callable[[Any], Any]:
    """What turns JSON data into a value of type ``kind`` (an annotation), worked out once per annotation."""
    if kind is Any:
        return _identity
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Union or isinstance(kind, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if len(options) != 1:
            return _identity
        inner = _converter(options[0])
        return lambda v: None if v is None else inner(v)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return lambda v: _dataclass_from(kind, v)
    if origin is tuple or kind is tuple:
        if _keyed_pairs(kind):
            item = _converter(typing.get_args(args[0])[1])
            pair = _converter(args[0])
            return lambda v: (
                tuple((str(k), item(x)) for k, x in v.items()) if isinstance(v, Mapping) else tuple(map(pair, v))
            )
        if args and args[-1] is not Ellipsis:
            parts = [_converter(a) for a in args]
            return lambda v: tuple(c(x) for c, x in zip(parts, v, strict=False))
        each = _converter(args[0] if args else Any)
        return lambda v: tuple(map(each, v))
    if origin is list or kind is list:
        each = _converter(args[0] if args else Any)
        return lambda v: list(map(each, v))
    if origin in (dict, Mapping) or kind in (dict, Mapping):
        key, item = (_converter(args[0]), _converter(args[1])) if len(args) == 2 else (_identity, _identity)
        return lambda v: {key(k): item(x) for k, x in v.items()}
    if kind is float:
        return as_float
    if kind in (bool, int, str, bytes):
        return kind
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind
    return _identity


def _dataclass_from(kind: type, value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise ValueError(f"{kind.__name__} is not an object")
    from_dict = getattr(kind, "from_dict", None)
    if from_dict is None:
        return decode_fields(kind, value)
    texts = {f.name for f in dataclasses.fields(kind) if f.default == ""}  # written null when empty
    return from_dict({**value, **{k: "" for k in texts if k in value and value[k] is None}})


def decode_fields(kind: type, data: Mapping[str, Any], /, **defaults: Any) -> Any:
    """A ``kind`` dataclass from the JSON object :func:`encode_fields` wrote (or an older, smaller one).

    A key that is missing or ``null`` gives the field's default; ``defaults`` stands in for required fields
    the data lacks.
    """
    given: dict[str, Any] = {}
    for f in _plan(kind):
        value = data.get(f.key)
        if value is None:
            if f.name in defaults:
                given[f.name] = defaults[f.name]
            elif f.required and f.key in data:
                given[f.name] = None  # a required field that does not apply (``saving_s`` of a hint)
            continue
        value = f.convert(value)
        if f.scale != 1 and isinstance(value, (int, float)):
            value = value / f.scale
        given[f.name] = value
    return kind(**given)


@cache
def field_types(kind: type) -> dict[str, Any]:
    """Each field's annotation evaluated where it was written (``Any`` where it cannot be, e.g. ``array[float]``
    before Python 3.12)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(kind):
        owner = next((c for c in kind.__mro__ if f.name in vars(c).get("__annotations__", {})), kind)
        try:
            scope = vars(sys.modules[owner.__module__])
            out[f.name] = eval(f.type, scope) if isinstance(f.type, str) else f.type
        except Exception:  # a type this Python cannot subscript: the value is taken as it is
            out[f.name] = Any
    return out
