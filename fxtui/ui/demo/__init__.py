"""Deterministic, torch-free demo data and the screenshot tooling built on it.

Nothing in the shipped app imports this package (``tests/test_layering.py`` checks it):
it exists for the UI tests, the benchmarks, the README's pictures
(``python -m fxtui.ui.demo.screenshots OUTDIR``) and trying the app without a model
(``python -m fxtui.ui.demo``).

* :mod:`~fxtui.ui.demo.demo_source`: resnet18-shaped and synthetic graphs with fixed timings;
  :mod:`~fxtui.ui.demo.demo_session`: :class:`~fxtui.ui.demo.demo_session.DemoSource`, a snapshot source that
  publishes them and answers every command the app sends with fixed results.
* :mod:`~fxtui.ui.demo.demo_findings`: fixed hints, thread facts and a diff;
  :mod:`~fxtui.ui.demo.demo_what_ifs`: measured-looking what-ifs.
* :mod:`~fxtui.ui.demo.screenshots`: drives the app headless and saves SVG pictures.
"""
