"""Every column a node can be shown or sorted by, once: the headless table, ``--sort``, ``--columns`` and the app.

A :class:`Column` says how one figure of a node reads (its header, its cell text), how it
sorts, and where it appears: the headless table's default set (:data:`HEADLESS`), the extra
columns ``--columns`` may add (:data:`EXTRA`), the app's timing and memory sets
(:func:`app_columns`). Adding a column is one entry in :data:`COLUMNS` and, to show it, its
key in a view's tuple.

Cells and sort values read a node's facts (:class:`~fxtui.core.nodes.NodeInfo`), its
statistics (:class:`~fxtui.core.nodes.NodeStats`, None before the first run) and its rates
(:class:`~fxtui.core.nodes.Rates`, empty in the app). A column that reads one statistic
names it (``stat``), so the app can sort a 50,000-node table from the statistics' columns
without making a record per node.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from fxtui.core.errors import FxtuiError
from fxtui.core.units import format_bytes, format_pct, format_seconds

if TYPE_CHECKING:
    import numpy as np

    from fxtui.core.nodes import NodeInfo, NodeStats
    from fxtui.core.rows import Rates

# The nodes' and rows' modules are imported where a cell is read, not with the registry: ``fxtui run`` checks --sort
# and --columns against it before its program starts, and every import there is time before the program's first line.

SortValue = float | str
Read = Callable[["NodeInfo", "NodeStats | None", "Rates"], Any]
#: A column's sort values for every node from the statistics' columns (given a field name, its column).
ByColumns = Callable[[Callable[[str], Sequence[float]]], "Sequence[SortValue] | np.ndarray"]


@functools.cache
def no_rates() -> Rates:
    """No rates (the app's nodes): what a cell reads when it is given none. Made when first asked for."""
    from fxtui.core.rows import Rates

    return Rates()


@dataclass(frozen=True, slots=True)
class Column:
    """One figure of a node: how it reads, how it sorts, and how wide the app draws it."""

    key: str
    """What ``--sort``, ``--columns`` and the app call it: ``median``, ``flops`` …"""
    header: str
    """The headless table's header."""
    cell: Read
    """The cell's text."""
    sort: Read
    """The value the column sorts by."""
    numeric: bool = True
    """Right-aligned, and sorted largest first when first chosen."""
    label: str = ""
    """The app's header, where it is shorter than :attr:`header`."""
    width: int = 0
    """The app's width, in cells (0: the app does not show the column)."""
    stat: str = ""
    """The one statistic the column reads (``median_s``): its order changes with every snapshot."""
    fact: str = ""
    """The one fact of the node the column reads and sorts by as it is (``name``, ``op``)."""
    by_columns: ByColumns | None = None
    """Sort values from the statistics' columns for a column that reads several statistics."""

    @property
    def app_label(self) -> str:
        return self.label or self.header

    @property
    def live(self) -> bool:
        """The order depends on the statistics, so it changes with every snapshot."""
        return bool(self.stat or self.by_columns)

    def text(self, info: NodeInfo, stats: NodeStats | None, rates: Rates | None = None) -> str:
        """The cell for one node (``rates``: none, as in the app, when not given)."""
        return str(self.cell(info, stats, no_rates() if rates is None else rates))


def _stat(field: str) -> Read:
    return lambda _i, s, _r: -1.0 if s is None else float(getattr(s, field))


def _time(field: str) -> Read:
    return lambda _i, s, _r: "–" if s is None or s.count == 0 else format_seconds(getattr(s, field))


def _fact(field: str) -> Read:
    return lambda i, _s, _r: getattr(i, field)


def _opt(value: float | None, fmt: str) -> str:
    return "–" if value is None else format(value, fmt)


def _number(value: float | None) -> float:
    return -1.0 if value is None else float(value)


def caution(stats: NodeStats | None) -> bool:
    """The ``~`` mark: the median is noisy (wide IQR) or unsteady (far above the fastest run)."""
    return stats is not None and stats.count > 0 and (stats.noisy or stats.unsteady)


def _caution_by_columns(column: Callable[[str], Sequence[float]]) -> np.ndarray:
    """:func:`caution` of every node from the columns: NodeStats.noisy and .unsteady, one array operation each."""
    import numpy as np

    from fxtui.core.nodes import NOISY_IQR_RATIO, UNSTEADY_MIN_S, UNSTEADY_RATIO

    count, median, iqr, fastest = (
        np.asarray(column(f), dtype=np.float64) for f in ("count", "median_s", "iqr_s", "min_s")
    )
    noisy = (median > 0) & (iqr > NOISY_IQR_RATIO * median)
    unsteady = (fastest > 0) & (median >= UNSTEADY_RATIO * fastest) & (median - fastest >= UNSTEADY_MIN_S)
    return ((count > 0) & (noisy | unsteady)).astype(np.float64)


def marks(stats: NodeStats | None) -> str:
    """The headless table's last column: why a node's median deserves caution."""
    if stats is None:
        return ""
    said = ["noisy"] if stats.noisy else []
    if stats.unsteady:
        said.append(f"min {format_seconds(stats.min_s)}")
    return ", ".join(said)


def _calls(stats: NodeStats | None) -> float:
    """A node's calls: per sampled step in a program's profile (a module called in a loop runs its nodes at each
    call), else the timed runs."""
    if stats is None:
        return -1.0
    return stats.calls_per_step if stats.calls_per_step > 0 else float(stats.count)


def _calls_text(stats: NodeStats | None) -> str:
    if stats is None:
        return "–"
    calls = _calls(stats)
    return str(round(calls)) if abs(calls - round(calls)) < 0.05 else f"{calls:.1f}"


def _calls_by_columns(column: Callable[[str], Sequence[float]]) -> np.ndarray:
    import numpy as np

    per_step = np.asarray(column("calls_per_step"), dtype=np.float64)
    return np.where(per_step > 0, per_step, np.asarray(column("count"), dtype=np.float64))


def _time_column(key: str, header: str, field: str, width: int = 0) -> Column:
    return Column(key, header, _time(field), _stat(field), width=width, stat=field)


def _bytes_column(key: str, header: str, field: str) -> Column:
    return Column(
        key, header, lambda i, _s, _r: format_bytes(getattr(i, field)), lambda i, _s, _r: _number(getattr(i, field)),
        width=10,
    )  # fmt: skip


def _text_column(key: str, header: str, field: str, width: int = 0, label: str = "") -> Column:
    return Column(key, header, _fact(field), _fact(field), numeric=False, label=label, width=width, fact=field)


COLUMNS: tuple[Column, ...] = (
    _text_column("node", "node", "name", 22),
    _time_column("median", "median", "median_s", 9),
    _time_column("p90", "p90", "p90_s", 9),
    Column("pct", "% of run", lambda _i, s, _r: "–" if s is None else format_pct(s.pct), _stat("pct"),
           label="% run", width=6, stat="pct"),
    Column("calls", "calls", lambda _i, s, _r: _calls_text(s), lambda _i, s, _r: _calls(s), width=6,
           by_columns=lambda column: _calls_by_columns(column)),
    Column("noisy", "~", lambda _i, s, _r: "~" if caution(s) else " ", lambda _i, s, _r: 1.0 if caution(s) else 0.0,
           numeric=False, width=1, by_columns=_caution_by_columns),
    Column("marks", "", lambda _i, s, _r: marks(s), lambda _i, s, _r: marks(s), numeric=False),
    _text_column("phase", "phase", "phase", 9),
    _text_column("op", "op type", "op", 13, label="op"),
    _text_column("target", "target", "target", 20),
    Column("module", "module path", lambda i, _s, _r: i.module_path or "(root)",
           _fact("module_path"), numeric=False, label="module", width=18, fact="module_path"),
    _text_column("shape", "output shape", "shape", 16),
    Column("order", "index", lambda i, _s, _r: str(i.index), lambda i, _s, _r: i.index, numeric=False, fact="index"),
    _time_column("mean", "mean", "mean_s"),
    _time_column("min", "min", "min_s"),
    _time_column("max", "max", "max_s"),
    _time_column("iqr", "IQR", "iqr_s"),
    Column("flops", "MFLOP", lambda i, _s, _r: _opt(i.flops / 1e6 if i.flops is not None else None, ".1f"),
           lambda i, _s, _r: _number(i.flops)),
    Column("gflops", "GFLOP/s", lambda _i, _s, r: _opt(r.gflops_s, ".1f"), lambda _i, _s, r: _number(r.gflops_s)),
    Column("gbps", "GB/s", lambda _i, _s, r: _opt(r.gbytes_s, ".1f"), lambda _i, _s, r: _number(r.gbytes_s)),
    Column("intensity", "FLOP/B", lambda _i, _s, r: _opt(r.intensity, ".1f"), lambda _i, _s, r: _number(r.intensity)),
    Column("bound", "bound", lambda _i, _s, r: r.bound.replace("-bound", "") or "–", lambda _i, _s, r: r.bound,
           numeric=False),
    Column("roofline", "% roofline",
           lambda _i, _s, r: _opt(r.roofline_fraction * 100 if r.roofline_fraction is not None else None, ".0f"),
           lambda _i, _s, r: _number(r.roofline_fraction)),
    Column("params", "params", lambda i, _s, _r: _opt(i.params, ",d"), lambda i, _s, _r: _number(i.params)),
    _text_column("source", "source", "source"),
    _bytes_column("output", "output", "output_bytes"),
    _bytes_column("alloc", "allocated", "alloc_bytes"),
    _bytes_column("live", "live after", "live_bytes"),
    _bytes_column("saved", "saved", "saved_bytes"),
    _time_column("rank_min", "fastest rank", "rank_min_s", 11),
    _time_column("rank_max", "slowest rank", "rank_max_s", 11),
    Column("slowest", "slowest", lambda _i, s, _r: "–" if s is None or s.slowest_rank < 0 else f"rank {s.slowest_rank}",
           _stat("slowest_rank"), numeric=False, width=8, stat="slowest_rank"),
)  # fmt: skip

BY_KEY: Mapping[str, Column] = {c.key: c for c in COLUMNS}

#: The headless table's columns, in order (``phase`` only for a training step); ``--columns`` adds
#: :data:`EXTRA` before the last (``marks``).
HEADLESS = ("phase", "op", "node", "target", "module", "shape", "median", "p90", "pct", "calls")
#: What ``--columns`` may add to the headless table.
EXTRA = ("flops", "gflops", "gbps", "intensity", "bound", "roofline", "params", "mean", "min", "max", "iqr",
         "source", "output", "alloc", "live", "saved")  # fmt: skip
#: The memory columns ``--memory`` adds (``saved`` too in a training step).
MEMORY = ("output", "alloc", "live")
#: The app's timing set: numbers right after the node name, so they stay on screen in 80 columns.
APP_TIME = ("node", "median", "p90", "pct", "calls", "noisy", "phase", "op", "target", "module", "shape")
#: The app's memory set (``m``): each node's bytes first.
APP_MEMORY = ("node", "output", "alloc", "live", "saved", "median", "pct", "noisy", "phase", "op", "target", "module",
              "shape")  # fmt: skip
#: Columns that mean something only for a training step (or a program's phases).
TRAINING_ONLY = frozenset({"phase", "saved"})
#: Columns of a distributed job: every rank's spread of each node, after the shown rank's median.
RANK_COLUMNS = ("rank_min", "rank_max", "slowest")
#: What ``--sort`` also accepts, for the columns' other names.
SORT_ALIASES = {"name": "node", "path": "module"}


#: In a ``generate()`` call a node's share is of its own phase (the prefill, or one decode step).
PHASE_SHARE = replace(BY_KEY["pct"], header="% of phase", label="% ph")


def app_columns(
    training: bool, column_set: str = "time", ranks: bool = False, generating: bool = False
) -> tuple[Column, ...]:
    """The app table's columns: ``time`` or ``memory``; a training step's or a generation's rows also show their
    phase (a generation's shares are of their phase), a distributed job's the spread of every rank after the
    median."""
    keys: tuple[str, ...] = APP_MEMORY if column_set == "memory" else APP_TIME
    if ranks:
        keys = (*keys[:2], *RANK_COLUMNS, *keys[2:])
    return tuple(_column(k, generating) for k in keys if training or generating or k not in TRAINING_ONLY)


def headless_columns(training: bool, extra: Sequence[str] = (), generating: bool = False) -> tuple[Column, ...]:
    """The headless table's columns, ``extra`` (``--columns``) before the marks."""
    keys = [k for k in HEADLESS if training or generating or k not in TRAINING_ONLY]
    return tuple(_column(k, generating) for k in (*keys, *extra, "marks"))


def _column(key: str, generating: bool) -> Column:
    return PHASE_SHARE if generating and key == "pct" else BY_KEY[key]


def check_extra(keys: Sequence[str]) -> None:
    """Raise :class:`FxtuiError` naming the first key ``--columns`` cannot add."""
    unknown = [k for k in keys if k not in EXTRA]
    if unknown:
        raise FxtuiError(f"--columns: no column {unknown[0]!r}; choose from {', '.join(EXTRA)}")


def sort_column(key: str) -> Column:
    """The column ``--sort KEY`` sorts by; :class:`FxtuiError` listing the choices for an unknown key."""
    column = BY_KEY.get(SORT_ALIASES.get(key, key))
    if column is None or column.key == "marks":
        choices = [k for k in (*SORT_ALIASES, *BY_KEY) if k not in ("node", "module", "marks")]
        raise FxtuiError(f"cannot sort by {key!r}; choose one of {', '.join(choices)}")
    return column
