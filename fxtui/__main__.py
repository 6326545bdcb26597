"""``python -m fxtui`` is the ``fxtui`` command."""

from fxtui.cli import main

raise SystemExit(main())
