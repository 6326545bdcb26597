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
  field's type (tuples from lists, numbers from JSON numbers, nested dataclasses from objects).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import sys
import types
import typing
from array import array
from collections.abc import Mapping
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


def missing_as_null(name: str, value: Any) -> Any:
    """``value`` of field ``name`` with an empty text as ``None`` (where empty is not a value of its own)."""
    return None if value == "" and name not in EMPTY_IS_A_VALUE else value


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data, by the conventions above."""
    if value is None or isinstance(value, (bool, int, str)):
        return value.value if isinstance(value, enum.Enum) else value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
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
    if isinstance(value, (tuple, list, set, frozenset, array)):
        return [encode(v) for v in value]
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def encode_fields(record: Any, leave_out: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A dataclass's fields as a JSON object (renamed and scaled, missing values ``null``, pairs keyed by text
    as an object)."""
    kind: type = type(record)
    renamed = RENAMED.get(kind, {})
    types = field_types(kind)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        if f.name in leave_out or f.name.startswith("_"):
            continue
        value = missing_as_null(f.name, getattr(record, f.name))
        rename = renamed.get(f.name)
        if rename is not None and rename.scale != 1 and isinstance(value, (int, float)):
            value = value * rename.scale
        if _keyed_pairs(types.get(f.name)) and isinstance(value, tuple):
            value = {str(k): v for k, v in value}  # ``(("forward", 1), ("optimizer:AdamW", 1))``
        out[rename.key if rename else f.name] = encode(value)
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
    if value is None or kind is Any:
        return value
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Union or isinstance(kind, types.UnionType):
        options = [a for a in args if a is not type(None)]
        return decode(options[0], value) if len(options) == 1 else value
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        if not isinstance(value, Mapping):
            raise ValueError(f"{kind.__name__} is not an object")
        from_dict = getattr(kind, "from_dict", None)
        if from_dict is None:
            return decode_fields(kind, value)
        texts = {f.name for f in dataclasses.fields(kind) if f.default == ""}  # written null when empty
        return from_dict({**value, **{k: "" for k in texts if k in value and value[k] is None}})
    if origin is tuple or kind is tuple:
        if isinstance(value, Mapping) and _keyed_pairs(kind):
            return tuple((str(k), decode(typing.get_args(args[0])[1], v)) for k, v in value.items())
        if args and args[-1] is not Ellipsis:
            return tuple(decode(a, v) for a, v in zip(args, value, strict=False))
        return tuple(decode(args[0] if args else Any, v) for v in value)
    if origin is list or kind is list:
        return [decode(args[0] if args else Any, v) for v in value]
    if origin in (dict, Mapping) or kind in (dict, Mapping):
        key, item = args if len(args) == 2 else (Any, Any)
        return {decode(key, k) if key is not str else str(k): decode(item, v) for k, v in value.items()}
    if kind is bool:
        return bool(value)
    if kind is int:
        return int(value)
    if kind is float:
        return float(value)
    if kind is str:
        return str(value)
    if kind is bytes:
        return bytes(value)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind(value)
    return value


def decode_fields(kind: type, data: Mapping[str, Any], /, **defaults: Any) -> Any:
    """A ``kind`` dataclass from the JSON object :func:`encode_fields` wrote (or an older, smaller one).

    A key that is missing or ``null`` gives the field's default; ``defaults`` stands in for required fields
    the data lacks.
    """
    renamed = RENAMED.get(kind, {})
    given: dict[str, Any] = {}
    for f in dataclasses.fields(kind):
        if not f.init:
            continue
        rename = renamed.get(f.name)
        key = rename.key if rename else f.name
        value = data.get(key)
        if value is None:
            if f.name in defaults:
                given[f.name] = defaults[f.name]
            elif key in data and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                given[f.name] = None  # a required field that does not apply (``saving_s`` of a hint)
            continue
        value = decode(field_types(kind).get(f.name, Any), value)
        if rename is not None and rename.scale != 1 and isinstance(value, (int, float)):
            value = value / rename.scale
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
