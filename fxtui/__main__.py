"""``python -m fxtui`` is the ``fxtui`` command."""

from fxtui.commands.cli import main

# The guard matters: the engine's child process is started with "spawn", which
# imports the parent's main module again under another name.
if __name__ == "__main__":
    raise SystemExit(main())
