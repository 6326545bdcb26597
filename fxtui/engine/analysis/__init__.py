"""Explain the hotspot: the figures behind a node's time, and what to change.

Each module answers one question a user asks of a slow node, taking plain inputs
(a ``GraphModule``, example inputs, node names, medians in seconds) and returning
frozen dataclasses keyed by FX node name:

* :mod:`~fxtui.engine.analysis.work` — how much work it does (FLOPs, bytes, parameters);
* :mod:`~fxtui.engine.analysis.roofline` — is it running efficiently on this machine;
* :mod:`~fxtui.engine.analysis.aten` — which aten kernels it calls;
* :mod:`~fxtui.engine.analysis.source` — where it is in the model's code;
* :mod:`~fxtui.engine.analysis.threads` — are the threads set right;
* :mod:`~fxtui.engine.analysis.hints` — what to change, with the estimated saving;
* :mod:`~fxtui.engine.whatif.fold_bn` — the Conv→BatchNorm folding what-if.
"""
