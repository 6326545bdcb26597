"""Output that fits: headless tables and headers within the terminal's width, figures whole, every column named,
a program's table without FX columns, and the next command suggested under a table."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from fxtui.measure.pipeline import make_report
from fxtui.measure.session import Session
from fxtui.report.api import Report
from fxtui.report.table_fit import Col, fit_table
from fxtui.report.text import header, module_table, table

pytestmark = pytest.mark.e2e

# -- laying a table out --------------------------------------------------------------------------------------------

ROWS = [
    ["layer4.0.downsample.0", "Conv2d", "1×512×2×2", "64.0 ms", "noisy, min 193 µs"],
    ["conv1", "Conv2d", "1×64×32×32", "21.8 ms", ""],
]
COLS = [
    Col("module path", cut="start", floor=12),
    Col("class", cut="end", drop=2),
    Col("output shape", cut="never", drop=1),
    Col("median", numeric=True),
    Col("note", cut="items"),
]


def test_without_a_width_every_cell_is_whole() -> None:
    text = fit_table(ROWS, COLS)
    assert "layer4.0.downsample.0" in text and "noisy, min 193 µs" in text and "…" not in text
    header_line, rule = text.splitlines()[:2]
    assert header_line.split() == ["module", "path", "class", "output", "shape", "median", "note"]
    assert set(rule) == {"-", " "}


def test_the_widest_text_columns_shorten_first_and_figures_never() -> None:
    natural = max(len(line) for line in fit_table(ROWS, COLS).splitlines())
    text = fit_table(ROWS, COLS, width=natural - 8)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= natural - 8
    assert "64.0 ms" in text and "1×512×2×2" in text  # figures whole
    # The module path (the widest) lost its start, marked; the note lost whole items, marked.
    assert "…" in lines[2] and lines[2].split()[0].endswith("downsample.0")
    assert "left out" not in text


def test_columns_are_left_out_last_the_least_useful_first_and_said() -> None:
    def left_out(text: str) -> str:
        lines = text.splitlines()
        return " ".join(lines[lines.index(next(line for line in lines if line.startswith("left out"))) :])

    text = fit_table(ROWS, COLS, width=48)
    assert max(len(line) for line in text.splitlines()) <= 48
    assert "class" not in text.splitlines()[0] and "1×512×2×2" in text  # the highest drop goes first
    assert left_out(text).startswith("left out to fit 48 columns: class (a wider terminal")
    text = fit_table(ROWS, COLS, width=40)
    assert max(len(line) for line in text.splitlines()) <= 40
    assert "1×512×2×2" not in text and "64.0 ms" in text and "21.8 ms" in text
    assert left_out(text).startswith("left out to fit 40 columns: class, output shape")


def test_a_list_is_cut_at_whole_items() -> None:
    text = fit_table([["a", "noisy, min 193 µs"]], [Col("x"), Col("note", cut="items")], width=12)
    assert text.splitlines()[2].endswith("noisy, …")


def test_numbers_are_right_aligned() -> None:
    lines = fit_table([["a", "1.5 ms"], ["b", "123 ms"]], [Col("node"), Col("median", numeric=True)]).splitlines()
    assert lines[2].endswith("1.5 ms") and lines[3].endswith("123 ms") and len(lines[2]) == len(lines[3])
    assert lines[0].endswith("median")


# -- a model's report -----------------------------------------------------------------------------------------------


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.convolution_with_a_long_name = nn.Conv2d(4, 4, 3, padding=1)
        self.batch_normalisation = nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.batch_normalisation(self.convolution_with_a_long_name(x)) + x)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.encoder_stage_one = nn.Sequential(Block(), Block())
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder_stage_one(self.stem(x)).mean(dim=(2, 3)))


@pytest.fixture(scope="module")
def report() -> Report:
    from fxtui.measure.capture.fx import trace_model

    traced = trace_model(Net().eval())
    session = Session(
        traced.gm,
        (torch.randn(1, 3, 16, 16),),
        model="Net",
        module_paths=traced.module_paths,
        module_classes=traced.module_classes,
    )
    session.warm_up(1)
    for _ in range(4):
        session.run_pair()
    return make_report(
        session,
        warnings=("a warning long enough to wrap: " + "word " * 30).strip(),
    )


def medians(text: str) -> list[str]:
    """The times of a table's figure columns (not the note's "min 12 µs", which a narrow table may leave out)."""
    return re.findall(r"(?<!min )(?<![\d.])\d[\d.]* (?:ns|µs|ms|s)\b", text)


@pytest.mark.parametrize("width", [80, 100])
def test_a_models_tables_fit_the_width_with_every_figure_whole(report: Report, width: int) -> None:
    whole = table(report, top=0)
    fitted = table(report, top=0, width=width)
    assert max(len(line) for line in whole.splitlines()) > width  # the test means something
    assert max(len(line) for line in fitted.splitlines()) <= width
    assert medians(fitted) == medians(whole)  # every time shown whole, in the same order
    assert "node" in fitted.splitlines()[0] and "median" in fitted.splitlines()[0]
    modules = module_table(report, top=0, width=width)
    assert max(len(line) for line in modules.splitlines()) <= width
    assert medians(modules) == medians(module_table(report, top=0))


def test_at_80_columns_the_fx_op_type_goes_first(report: Report) -> None:
    fitted = table(report, top=0, width=80)
    assert "op type" not in fitted.splitlines()[0] and "call_module" not in fitted
    assert "left out to fit 80 columns: op type" in fitted


def test_every_column_has_a_header(report: Report) -> None:
    text = table(report, top=0)
    header_line, rule = text.splitlines()[:2]
    starts = [m.start() for m in re.finditer(r"-+", rule)]
    ends = [m.end() for m in re.finditer(r"-+", rule)]
    for start, end in zip(starts, ends, strict=True):
        assert header_line[start:end].strip(), f"no header over columns {start}–{end}: {header_line!r}"
    assert header_line.split()[-1] == "note"


def test_the_header_wraps_under_its_labels_without_splitting_a_figure(report: Report) -> None:
    whole = header(report).splitlines()
    wrapped = header(report, width=80).splitlines()
    assert max(len(line) for line in whole) > 80 and max(len(line) for line in wrapped) <= 80
    continued = [line for line in wrapped if line.startswith(" ")]
    assert continued and all(line.startswith(" " * 11) and not line.startswith(" " * 12) for line in continued)
    joined = " ".join(line.strip() for line in wrapped)
    assert " ".join(" ".join(whole).split()) == " ".join(joined.split())  # nothing lost, nothing added
    for line, after in itertools.pairwise(wrapped):  # a wrapped number keeps its unit
        if after.startswith(" "):
            assert not re.search(r"\d$", line), line


def test_the_api_keeps_whole_lines(report: Report) -> None:
    text = report.table(top=0)  # no width: as before, a notebook or a file gets every column whole
    assert "…" not in text and "op type" in text.splitlines()[0] and "encoder_stage_one" in text


# -- a program's report (fxtui run) ---------------------------------------------------------------------------------

PROGRAM = """
import torch
from torch import nn

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(16):
    opt.zero_grad()
    nn.functional.cross_entropy(model(torch.randn(8, 16)), torch.randint(0, 4, (8,))).backward()
    opt.step()
"""


@pytest.fixture(scope="module")
def program_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    directory = tmp_path_factory.mktemp("program")
    (directory / "train.py").write_text(textwrap.dedent(PROGRAM))
    done = subprocess.run(
        [sys.executable, "-m", "fxtui", "run", "--once", "--warmup-steps", "2", "--sample-every", "2", "--json",
         "run.json", "train.py"],
        cwd=directory, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return directory / "run.json", done.stdout


def test_a_programs_table_names_the_module_and_the_op_once_each(program_run: tuple[Path, str]) -> None:
    path, _ = program_run
    report = Report.load(str(path))
    text = table(report, top=0)
    head = text.splitlines()[0]
    assert head.split()[:4] == ["phase", "module", "path", "op"]
    assert "% of step" in head and "op type" not in head and "node" not in head and "target" not in head
    rows = text.splitlines()[2:]
    assert not any("call_function" in row or "aten." in row for row in rows)
    # The op is said once, beside its module: "0 · addmm" appears as module 0 and op addmm.
    first_linear = next(r for r in report.rows if r.name.startswith("0 · "))
    op = first_linear.name.removeprefix("0 · ")
    assert any(row.split()[1:3] == ["0", op] for row in rows), text
    assert " · " not in text
    fitted = table(report, top=0, width=80)
    assert max(len(line) for line in fitted.splitlines()) <= 80
    assert "module path" in fitted.splitlines()[0]  # never left out: half of each op's name


def test_a_programs_module_table_has_no_flops(program_run: tuple[Path, str]) -> None:
    report = Report.load(str(program_run[0]))
    head = module_table(report).splitlines()[0]
    assert "GFLOP/s" not in head and "% of step" in head


def test_a_programs_table_ends_with_the_next_command(program_run: tuple[Path, str]) -> None:
    _, out = program_run
    last = out.strip().splitlines()[-1]
    assert (
        last
        == "next: fxtui run --modules --once --warmup-steps 2 --sample-every 2 train.py   (the same profile by module)"
    )


def test_saved_reports_still_load_and_fit(program_run: tuple[Path, str]) -> None:
    data = json.loads(program_run[0].read_text())
    assert data["metadata"]["mode"] == "run"
