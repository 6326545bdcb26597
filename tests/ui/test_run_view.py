"""The app on a program profiled as it runs (fxtui run): its status line, the step plot, its output, its keys."""

from __future__ import annotations

import asyncio
import dataclasses
import textwrap
from pathlib import Path

import pytest
from fakes import FakeSource, program_snapshot, resnet_snapshot, settle

from fxtui.core.program_run import STEP_PHASES, KindSummary
from fxtui.core.settings import ProgramSettings
from fxtui.ui.app import FxtuiApp
from fxtui.ui.screens.program_log import ProgramLogScreen
from fxtui.ui.widgets.step_plot import StepPlot, phase_rows, stacked_columns

pytestmark = pytest.mark.e2e


def status(app: FxtuiApp) -> str:
    return app.main.query_one("#status").render().plain  # type: ignore[attr-defined]


async def test_a_program_shows_its_steps_its_phases_and_its_output() -> None:
    app = FxtuiApp(FakeSource([program_snapshot()]))
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(app, pilot)
        line = status(app)
        assert "train.py" in line and "40 training steps · 8 sampled · 57.0 ms" in line
        plot = app.main.query_one(StepPlot)
        assert plot.display and plot.rows and any(c != " " for c in plot.rows[-1])
        # Pausing a user's program and the what-ifs (they need a copy of the model) do not apply.
        assert app.main.check_action("toggle_pause", ()) is False
        assert app.main.check_action("what_ifs", ()) is False
        assert app.main.check_action("program_log", ()) is True
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, ProgramLogScreen)
        text = app.screen.query_one("#program-log-text").render().plain  # type: ignore[attr-defined]
        assert "loss 2.30" in text and "/tmp/x/output.log" in text
        app.source.push(program_snapshot(seq=2, lines=("epoch 1", "loss 2.30", "epoch 2 done")))  # type: ignore[attr-defined]
        await settle(app, pilot, applied=2)
        text = app.screen.query_one("#program-log-text").render().plain  # type: ignore[attr-defined]
        assert "epoch 2 done" in text  # the panel follows the program
        await pilot.press("escape")
        app.source.push(program_snapshot(seq=3, running=False))  # type: ignore[attr-defined]
        await settle(app, pilot, applied=3)
        assert "exited 0" in status(app)


async def test_a_program_that_also_evaluates_shows_the_other_kind_and_k_asks_for_it() -> None:
    base = program_snapshot()
    assert base.steps is not None
    kinds = (KindSummary("train", 40, 5, 8, 0.057), KindSummary("eval", 120, 5, 20, 0.012, fidelity=0.95))
    app = FxtuiApp(FakeSource([dataclasses.replace(base, steps=dataclasses.replace(base.steps, kinds=kinds))]))
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(app, pilot)
        assert "120 eval (k)" in status(app)  # the other kind, counted, and the key that shows it
        assert "Next kind of step" in {c.title for c in app.get_system_commands(app.screen)}
        await pilot.press("k")
        await pilot.pause()
        assert app.source.calls[-1] == "showkind"  # type: ignore[attr-defined]


async def test_a_program_of_one_kind_offers_no_kind_switch() -> None:
    app = FxtuiApp(FakeSource([program_snapshot()]))
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(app, pilot)
        assert "(k)" not in status(app) and app.check_action("cycle_kind", ()) is False


async def test_a_model_session_keeps_its_keys_and_shows_no_step_plot() -> None:
    app = FxtuiApp(FakeSource([resnet_snapshot()]))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        assert not app.main.query_one(StepPlot).display
        assert app.main.check_action("toggle_pause", ()) is not False
        assert app.main.check_action("program_log", ()) is False


def test_the_step_plot_stacks_each_steps_phases_and_scales_to_the_usual_step() -> None:
    steps = [(1.0, 1.0, 0.0, 0.0, 0.0)] * 19 + [(10.0, 10.0, 0.0, 0.0, 0.0)]  # one slow step (an epoch's end)
    columns = stacked_columns(steps, width=20, height=2)
    assert columns[0] == [8, 8, 0, 0, 0]  # the usual step fills the plot: data below, forward above
    assert sum(columns[-1]) == 16  # the slow one is drawn to the top, not scaled
    rows = phase_rows(columns, 2)
    assert rows[0][0] == ("█", 1) and rows[1][0] == ("█", 0)  # top row forward, bottom row data
    assert len(STEP_PHASES) == 5


async def test_the_app_on_a_real_running_script_and_stopping_it(tmp_path: Path) -> None:
    from fxtui.jobs.job_start import start_detached
    from fxtui.wire.attach_source import AttachSource

    (tmp_path / "loop.py").write_text(
        textwrap.dedent(
            """
            import torch
            model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            for step in range(1000000):
                opt.zero_grad()
                model(torch.randn(16, 32)).pow(2).mean().backward()
                opt.step()
                if step % 50 == 0:
                    print("step", step, flush=True)
            """
        )
    )
    job, _ = start_detached(ProgramSettings((str(tmp_path / "loop.py"),), warmup=2, every=2))
    source = AttachSource(job)
    app = FxtuiApp(source)
    async with app.run_test(size=(140, 44)) as pilot:
        for _ in range(900):  # steps arrive (the program starts torch first: allow a busy machine its time)
            snapshot = app.main.snapshot
            if snapshot is not None and snapshot.steps is not None and snapshot.steps.sampled >= 2:
                break
            await asyncio.sleep(0.1)
        snapshot = app.main.snapshot
        assert snapshot is not None and snapshot.steps is not None and snapshot.steps.kind == "train"
        assert snapshot.graph is not None and any(n.name == "0 · addmm" for n in snapshot.graph.nodes)
        assert snapshot.program is not None and any(line.startswith("step ") for line in snapshot.program.log_tail)
        assert app.check_action("detach", ()) is True
        await pilot.press("K")
        await pilot.pause()
        await pilot.press("y")  # stop it, as Ctrl+C would
        for _ in range(300):
            snapshot = app.main.snapshot
            if snapshot is not None and snapshot.program is not None and not snapshot.program.running:
                break
            await asyncio.sleep(0.1)
        assert "stopped by Ctrl+C" in status(app)
        assert app.check_action("detach", ()) is False  # nothing left to detach from
        await pilot.press("q")
    assert source.exit_code == -2


def test_the_header_says_whose_phase_medians_it_shows_when_no_step_ran_unsampled() -> None:
    """Two long L-BFGS steps: one warm-up, one sampled; the phases are the sampled step's, and the header says so."""
    from fxtui.report.data import ReportData
    from fxtui.report.program_text import program_lines

    snapshot = program_snapshot()
    assert snapshot.steps is not None
    for median, said in ((0.057, "(medians of the unsampled steps)"), (None, "(medians of the sampled steps: none")):
        steps = dataclasses.replace(snapshot.steps, step_median_s=median)
        lines = program_lines(ReportData.from_snapshot(dataclasses.replace(snapshot, steps=steps)))
        assert any(line.startswith("phases") and said in line for line in lines), lines
