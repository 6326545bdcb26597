"""Filter and sort specifications, as pure functions over a snapshot's data.

Shared by the headless report and the app, so ``--path 'layer1*'`` on the command
line and ``/ layer1*`` in the app select the same nodes.
"""

from __future__ import annotations

import fnmatch
import itertools
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from fxtui.core.nodes import NodeInfo

# The names a filter may take (opcodes, phases) are imported where they are checked: parsing ``fxtui run``'s options
# needs this module before the program starts, and the snapshot's module is not light.

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class FilterSpec:
    """Which nodes to show. Empty fields select everything."""

    ops: frozenset[str] = frozenset()
    """FX opcodes to keep (``call_module``, ``call_function`` …)."""
    path: str = ""
    """A glob on the module path (``layer[12]*``), or a substring when it has no glob characters."""
    types: frozenset[str] = frozenset()
    """Target type names to keep (``Conv2d``, ``add``), compared case-insensitively."""
    phases: frozenset[str] = frozenset()
    """Phases of a training step to keep (``forward``, ``backward``, ``optimizer``)."""

    @property
    def active(self) -> bool:
        """True when the spec hides anything."""
        return bool(self.ops or self.path or self.types or self.phases)


def _parse_names(text: str, known: Sequence[str], what: str) -> frozenset[str]:
    """Comma-separated names, each one of ``known``; ValueError names the first unknown one (``what`` it is)."""
    names = frozenset(n.strip() for n in text.split(",") if n.strip())
    unknown = sorted(names - set(known))
    if unknown:
        raise ValueError(f"unknown {what} {unknown[0]!r}; choose from {', '.join(known)}")
    return names


def parse_ops(text: str) -> frozenset[str]:
    """``"call_module,call_function"`` → the opcodes; ValueError names an unknown one."""
    from fxtui.core.snapshot import OPCODES

    return _parse_names(text, OPCODES, "op type")


def parse_phases(text: str) -> frozenset[str]:
    """``"forward,backward"`` → the phases; ValueError names an unknown one."""
    from fxtui.core.nodes import PHASES

    return _parse_names(text, PHASES, "phase")


def parse_types(text: str) -> frozenset[str]:
    """``"Conv2d,add"`` → the type names."""
    return frozenset(t.strip() for t in text.split(",") if t.strip())


def path_matches(module_path: str, pattern: str) -> bool:
    """True when ``module_path`` matches ``pattern`` (glob, or substring without glob characters)."""
    return not pattern or bool(path_test(pattern)(module_path))


def path_test(pattern: str) -> Callable[[str], object]:
    """The test of :func:`path_matches` for a non-empty ``pattern``, compiled once: truthy when a path matches.

    A compiled pattern's own method, so that testing thousands of paths runs no Python per path.
    """
    if _GLOB_CHARS & set(pattern):
        return re.compile(fnmatch.translate(pattern)).match
    return re.compile(re.escape(pattern)).search


def matches(node: NodeInfo, spec: FilterSpec) -> bool:
    """True when ``node`` passes every part of ``spec``."""
    if spec.ops and node.op not in spec.ops:
        return False
    if spec.phases and node.phase not in spec.phases:
        return False
    if (
        spec.types
        and node.type_name.lower() not in {t.lower() for t in spec.types}
        and (node.target.lower() not in {t.lower() for t in spec.types})
    ):
        return False
    return path_matches(node.module_path, spec.path)


class NodeColumns:
    """The fields a filter tests, each as codes into its distinct values, over a graph's nodes (graph order).

    A filter's test then runs once per distinct value (a module path, an opcode) and
    the nodes are picked by indexing an array of answers with the codes: at 50,000 nodes
    a call of :func:`matches` per node was 60 ms a filter, a lookup per node in C 20 ms,
    the array index well under one.
    """

    _last: NodeColumns | None = None

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        import numpy as np

        self.nodes = nodes
        fields: dict[str, Iterable[str]] = {
            "op": map(operator.attrgetter("op"), nodes),
            "phase": map(operator.attrgetter("phase"), nodes),
            "path": map(operator.attrgetter("module_path"), nodes),
            "type": (n.type_name.lower() for n in nodes),
            "target": (n.target.lower() for n in nodes),
        }
        self.distinct: dict[str, list[str]] = {}
        """Each field's distinct values, in order of first appearance."""
        self.codes: dict[str, np.ndarray] = {}
        """For each field, each node's value as an index into :attr:`distinct`."""
        for field, values in fields.items():
            column = list(values)
            index = {v: i for i, v in enumerate(dict.fromkeys(column))}
            self.distinct[field] = list(index)
            self.codes[field] = np.fromiter(map(index.__getitem__, column), np.int32, len(column))

    @classmethod
    def of(cls, nodes: Sequence[NodeInfo]) -> NodeColumns:
        """The columns of ``nodes`` (the last sequence's are kept: a session filters one graph many times)."""
        last = cls._last
        if last is None or last.nodes is not nodes:
            last = cls._last = cls(nodes)
        return last

    def mask(self, spec: FilterSpec) -> np.ndarray:
        """For each node, whether it passes every part of ``spec`` (what :func:`matches` says of it), as booleans."""
        import numpy as np

        mask = np.ones(len(self.nodes), dtype=bool)
        if spec.ops:
            mask &= self._passing("op", spec.ops.__contains__)
        if spec.phases:
            mask &= self._passing("phase", spec.phases.__contains__)
        if spec.types:
            types = {t.lower() for t in spec.types}
            mask &= self._passing("type", types.__contains__) | self._passing("target", types.__contains__)
        if spec.path:
            mask &= self._passing("path", path_test(spec.path))
        return mask

    def _passing(self, field: str, test: Callable[[str], object]) -> np.ndarray:
        """``test`` of each node's ``field``, run once per distinct value."""
        import numpy as np

        distinct = self.distinct[field]
        passed = np.fromiter(map(bool, map(test, distinct)), bool, len(distinct))
        return passed[self.codes[field]]


def select(nodes: Sequence[NodeInfo], spec: FilterSpec) -> list[NodeInfo]:
    """The nodes that ``spec`` lets through, in their order (:func:`matches` of each, worked out by columns)."""
    return list(itertools.compress(nodes, NodeColumns.of(nodes).mask(spec).tolist()))
