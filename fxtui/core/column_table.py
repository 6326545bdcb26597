"""Records of one kind (``NodeStats``, ``ModuleStats``) held as columns, a record made only when read.

A snapshot maps every node name to a :class:`~fxtui.core.nodes.NodeStats`. As objects,
a 50,000-node snapshot is 50,000 frozen dataclasses (and as many tuples of recent
samples): pickling them in the engine's child and unpickling them in the app took
about a second a snapshot, and unpickling holds the GIL the whole time, so the app
stopped answering keys for as long. As columns (one array per field) the same
snapshot pickles as a handful of byte buffers.

:class:`ColumnTable` is a read-only ``Mapping`` from name to record: code that reads a
few records (the rows on screen, the selected node) reads them as before, and
code that needs one field of every record (a sort, a sum) reads the column
(:func:`column_map`, :meth:`ColumnTable.column`) without making any record.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

R = TypeVar("R")

#: How one field is stored: ``("d", array)`` floats, ``("q", array)`` ints,
#: ``("t", flat float array, offsets)`` tuples of numbers (read back as floats), ``("o", list)`` anything else.
Stored = tuple[Any, ...]


def _encode(values: Sequence[Any]) -> Stored:
    if isinstance(values, array) and values.typecode in "dq":
        return (values.typecode, values)  # already a column
    first = type(values[0]) if values else float
    try:
        if first is float:
            return ("d", array("d", values))
        if first is int:
            return ("q", array("q", values))
        if first is tuple:
            offsets = array("q", itertools.accumulate(map(len, values), initial=0))
            return ("t", array("d", itertools.chain.from_iterable(values)), offsets)
    except (TypeError, OverflowError):  # not all numbers: kept as they are
        pass
    return ("o", list(values))


def equal_tuples(flat: Sequence[float], count: int, width: int) -> Stored:
    """A field of ``count`` tuples of ``width`` floats each, given one after another in ``flat``."""
    if len(flat) != count * width:
        raise ValueError(f"{len(flat)} values are not {count} tuples of {width}")
    values = flat if isinstance(flat, array) and flat.typecode == "d" else array("d", flat)
    return ("t", values, array("q", range(0, count * width + 1, width) if width else [0] * (count + 1)))


def _getter(stored: Stored) -> Callable[[int], Any]:
    if stored[0] == "t":
        flat, offsets = stored[1], stored[2]
        return lambda i: tuple(flat[offsets[i] : offsets[i + 1]])
    return stored[1].__getitem__


class ColumnTable(Mapping[str, R], Generic[R]):
    """A read-only mapping from name to a frozen dataclass record, stored one column per field.

    Records are made on first access and kept; :meth:`column` gives one field of every
    record, in :attr:`names` order, without making any.
    """

    __slots__ = ("_getters", "_index", "_made", "columns", "kind", "names")

    def __init__(
        self,
        kind: type[R],
        names: tuple[str, ...],
        columns: Mapping[str, Stored],
        index: Mapping[str, int] | None = None,
    ) -> None:
        self.kind = kind
        self.names = names
        """The keys, in the order of the columns."""
        self.columns = dict(columns)
        self._index = index
        self._getters = [_getter(self.columns[f.name]) for f in dataclasses.fields(kind) if f.init]  # type: ignore[arg-type]
        self._made: dict[str, R] = {}

    @classmethod
    def of(cls, kind: type[R], records: Mapping[str, R]) -> ColumnTable[R]:
        """The columns of ``records`` (every value a ``kind``), in the mapping's order."""
        if isinstance(records, ColumnTable) and records.kind is kind:
            return records
        names = [f.name for f in dataclasses.fields(kind) if f.init]  # type: ignore[arg-type]
        if not records:
            return cls(kind, (), {name: ("o", []) for name in names})
        rows = map(operator.attrgetter(*names), records.values())
        # One attrgetter call per record and a transpose in C: a getattr per field and record was slower.
        transposed = zip(*rows, strict=True) if len(names) > 1 else ([row for row in rows],)
        return cls(kind, tuple(records), dict(zip(names, map(_encode, transposed), strict=True)))

    @classmethod
    def from_columns(
        cls,
        kind: type[R],
        names: Sequence[str],
        columns: Mapping[str, Sequence[Any]],
        stored: Mapping[str, Stored] | None = None,
    ) -> ColumnTable[R]:
        """A table made straight from one sequence per field of ``kind`` (no record is made).

        ``stored`` gives fields already in their stored form (:func:`equal_tuples`); a field given neither way
        takes its default in every record.
        """
        stored = stored or {}
        out: dict[str, Stored] = {}
        for f in dataclasses.fields(kind):  # type: ignore[arg-type]
            if not f.init:
                continue
            if f.name in stored:
                out[f.name] = stored[f.name]
            elif f.name in columns or f.default is dataclasses.MISSING:
                out[f.name] = _encode(columns[f.name])
            else:
                out[f.name] = _encode([f.default] * len(names))
        return cls(kind, tuple(names), out)

    def with_columns(self, **fields: Sequence[Any]) -> ColumnTable[R]:
        """The same records with ``fields`` replaced, one value per record (the others' columns shared)."""
        columns = {**self.columns, **{name: _encode(values) for name, values in fields.items()}}
        return ColumnTable(self.kind, self.names, columns, self._index)

    @property
    def index(self) -> Mapping[str, int]:
        """Each name's position in :attr:`names` and in every column (made when first asked for)."""
        if self._index is None:
            self._index = dict(zip(self.names, range(len(self.names)), strict=True))
        return self._index

    def column(self, field: str) -> Sequence[Any]:
        """Field ``field`` of every record, in :attr:`names` order."""
        stored = self.columns[field]
        if stored[0] == "t":
            get = _getter(stored)
            return [get(i) for i in range(len(self.names))]
        return stored[1]

    def __getitem__(self, name: str) -> R:
        made = self._made.get(name)
        if made is None:
            i = self.index[name]
            made = self._made[name] = self.kind(*[get(i) for get in self._getters])
        return made

    def __contains__(self, name: object) -> bool:
        return name in self.index

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return f"ColumnTable({self.kind.__name__}, {len(self.names)} records)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ColumnTable, (self.kind, self.names, self.columns))


class FieldView(Mapping[str, Any]):
    """One field of a :class:`ColumnTable`'s records, by name, read from its column: nothing is copied."""

    __slots__ = ("_column", "_index", "_names")

    def __init__(self, table: ColumnTable[Any], field: str) -> None:
        self._column = table.column(field)
        self._index = table.index
        self._names = table.names

    def __getitem__(self, name: str) -> Any:
        return self._column[self._index[name]]

    def get(self, name: str, default: Any = None) -> Any:
        i = self._index.get(name)
        return default if i is None else self._column[i]

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def column_map(records: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    """``{name: record.field}`` for every record: a view of the column when ``records`` is a :class:`ColumnTable`."""
    if isinstance(records, ColumnTable):
        return FieldView(records, field)
    return {name: getattr(record, field) for name, record in records.items()}


def column_total(records: Mapping[str, Any], field: str) -> float:
    """The sum of ``field`` over every record (from the column when ``records`` is a :class:`ColumnTable`)."""
    if isinstance(records, ColumnTable):
        return float(sum(records.column(field)))
    return float(sum(getattr(record, field) for record in records.values()))


def float_column(values: Any) -> array[float]:
    """An array's values (numpy, or anything it reads), row by row, as a float64 column.

    ``tolist`` makes a Python float per value and ``array`` reads them back: 25 ms for a 10,000-node
    graph's recent samples (320,000 values), against 0.3 ms for copying the memory.
    """
    import numpy as np

    out = array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out
