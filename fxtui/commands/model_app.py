"""The live command (``fxtui TARGET`` on a terminal): the engine's child process, the app, and what is saved
on the way out.

The app reads no clock and imports no engine module; the command gives it a way to save the figures it
shows (``E``) and, after it has ended, saves them once more when they would otherwise be lost: the engine
died (its figures are final), or a signal ended the app (SIGTERM, or SIGHUP from a dropped SSH connection)
with figures not yet saved. A plain ``q`` saves nothing: the user chose to leave.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from fxtui.commands.output import say
from fxtui.core.errors import FxtuiError
from fxtui.core.settings import ModelSettings
from fxtui.core.snapshot import Snapshot, State

if TYPE_CHECKING:
    from fxtui.ui.app import FxtuiApp


def run_app(settings: ModelSettings) -> int:
    """Open the app on a child process profiling ``settings``; returns the exit status."""
    from fxtui.wire.viewer_commands import Stop

    app = make_app(settings)
    try:
        app.run()
    finally:
        app.source.send(Stop())
    return finish(app)


def make_app(settings: ModelSettings) -> FxtuiApp:
    """The app on a started child process that profiles ``settings``, the what-ifs asked for queued."""
    # torch is imported by the engine's child process only; the app stays light.
    from fxtui.commands.model_engine import ProcessSource
    from fxtui.measure.child import ChildOptions
    from fxtui.ui.app import FxtuiApp
    from fxtui.wire.viewer_commands import MeasureWhatIfs

    source = ProcessSource(ChildOptions(settings))
    source.start()
    if settings.what_ifs:  # measured once the session has warmed up; the what-if screen (w) shows them
        source.send(MeasureWhatIfs(settings.what_ifs))
    return FxtuiApp(source, title=f"fxtui {settings.target.target}", save=save_snapshot)


def finish(app: FxtuiApp) -> int:
    """After the app has ended: the session's fatal error, figures that would be lost saved, the exit status."""
    if app.fatal_error:
        raise FxtuiError(app.fatal_error)
    snapshot = app.savable()
    lost = snapshot is not None and (snapshot.state is State.ERROR or app.ended_by is not None)
    said = ""
    if lost and app.unsaved():
        try:
            said = f"the figures shown were saved to {app.save_figures()}"
        except FxtuiError as e:
            said = f"the figures could not be saved: {e}"
    elif lost and app.saved is not None:
        said = f"the figures shown were saved to {app.saved[1]}"
    if said:
        # After SIGHUP the terminal may be gone: the file is written, and saying so must not fail the exit.
        with contextlib.suppress(OSError):
            say(f"fxtui: {said}", sys.stderr)
    return 128 + app.ended_by if app.ended_by is not None else 0


def save_snapshot(snapshot: Snapshot, directory: str | os.PathLike[str] | None = None) -> str:
    """Write ``snapshot``'s figures as the JSON ``--json`` writes, to a new file named after the model and the
    time, in ``directory`` (the current one; the temporary directory when that is not writable); its path."""
    from fxtui.report.data import ReportData
    from fxtui.report.export import report_json, write_file

    text = report_json(ReportData.from_snapshot(snapshot))
    folder = Path(directory) if directory is not None else Path.cwd()
    if not os.access(folder, os.W_OK):
        folder = Path(tempfile.gettempdir())
    model = snapshot.graph.model if snapshot.graph is not None else "model"
    stem = f"fxtui-{re.sub(r'[^A-Za-z0-9_.-]+', '_', model)[:60]}-{time.strftime('%Y%m%d-%H%M%S')}"
    path = folder / f"{stem}.json"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"{stem}-{n}.json"
    write_file(path, text)
    return str(path)
