"""Filter and sort specifications, as pure functions over a snapshot's data.

Shared by the headless report and the app, so ``--path 'layer1*'`` on the command
line and ``/ layer1*`` in the app select the same nodes.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from fxtui.engine.model import PHASES, NodeInfo
from fxtui.engine.snapshot import OPCODES

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


def parse_ops(text: str) -> frozenset[str]:
    """``"call_module,call_function"`` → the opcodes; ValueError names an unknown one."""
    ops = frozenset(o.strip() for o in text.split(",") if o.strip())
    unknown = sorted(ops - set(OPCODES))
    if unknown:
        raise ValueError(f"unknown op type {unknown[0]!r}; choose from {', '.join(OPCODES)}")
    return ops


def parse_phases(text: str) -> frozenset[str]:
    """``"forward,backward"`` → the phases; ValueError names an unknown one."""
    phases = frozenset(p.strip() for p in text.split(",") if p.strip())
    unknown = sorted(phases - set(PHASES))
    if unknown:
        raise ValueError(f"unknown phase {unknown[0]!r}; choose from {', '.join(PHASES)}")
    return phases


def parse_types(text: str) -> frozenset[str]:
    """``"Conv2d,add"`` → the type names."""
    return frozenset(t.strip() for t in text.split(",") if t.strip())


def path_matches(module_path: str, pattern: str) -> bool:
    """True when ``module_path`` matches ``pattern`` (glob, or substring without glob characters)."""
    if not pattern:
        return True
    if _GLOB_CHARS & set(pattern):
        return fnmatch.fnmatchcase(module_path, pattern)
    return pattern in module_path


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
