"""``python -m fxtui.ui.demo``: the app on the demo session, without torch or a model.

For trying keys and layouts by hand; what it shows is the same as the README's pictures.
"""

from __future__ import annotations

from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_session import resnet18_findings_source


def main() -> None:
    """Run the app on the resnet18 demo with its hints, what-ifs and thread facts."""
    FxtuiApp(resnet18_findings_source(), title="fxtui demo").run()


if __name__ == "__main__":
    main()
