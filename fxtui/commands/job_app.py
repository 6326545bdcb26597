"""The app attached to a job of ``fxtui run`` (shared by ``fxtui run`` on a terminal and ``fxtui attach``).

Quitting stops the program when the app started it (``fxtui run``), else leaves it running
(``fxtui attach``); ``D`` always leaves it running. When the program has ended, its last profile
prints below the app.
"""

from __future__ import annotations

from fxtui.commands.output import say
from fxtui.commands.program_report import print_snapshot
from fxtui.core.errors import FxtuiError
from fxtui.core.settings import OutputSettings
from fxtui.wire.job_directory import JobInfo


def watch(job: JobInfo, output: OutputSettings, *, stop_on_quit: bool, token: bytes | None = None) -> int:
    """The app attached to ``job``; the program's exit status once it has ended (0 when it goes on)."""
    from fxtui.jobs.launch import exit_status
    from fxtui.ui.app import FxtuiApp
    from fxtui.wire.attach_source import AttachSource
    from fxtui.wire.job_directory import LOG, job_dir
    from fxtui.wire.viewer_commands import StopProgram

    source = AttachSource(job, token)
    app = FxtuiApp(source, title=f"fxtui {'run' if stop_on_quit else 'attach'} {' '.join(job.command)}")
    app.run()
    detached = app.detached
    fatal = getattr(app, "fatal_error", None)
    if fatal:
        raise FxtuiError(fatal)
    if detached or (not stop_on_quit and source.exit_code is None):
        say(f"job {job.id} goes on: {' '.join(job.command)}; fxtui attach {job.id} watches it again")
        return 0
    final, code = source.last, source.exit_code
    if code is None:  # quit while the program runs: stop it as Ctrl+C would, and wait for its last profile
        stopper = AttachSource(job, token)
        stopper.send(StopProgram())
        stopper.run(lambda snapshot: None)  # until the collector has sent the last profile and the status
        final, code = stopper.last or final, stopper.exit_code
    if final is not None:
        print_snapshot(final, OutputSettings(top=10, exports=output.exports))
    if job.pid:  # a job of this machine's (a remote one keeps its output where it runs)
        say(f"the program's output: {job_dir(job.id) / LOG}")
    return exit_status(code) if code is not None else 1
