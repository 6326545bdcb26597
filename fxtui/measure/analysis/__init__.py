"""Explain the hotspot: the figures behind a node's time, and what to change.

Each module answers one question a user asks of a slow node, taking plain inputs
(a ``GraphModule``, example inputs, node names, medians in seconds) and returning
frozen dataclasses keyed by FX node name:

* :mod:`~fxtui.measure.analysis.work` — how much work it does (FLOPs, bytes, parameters);
* :mod:`~fxtui.measure.analysis.roofline` — is it running efficiently on this machine;
* :mod:`~fxtui.measure.analysis.aten` — which aten kernels it calls;
* :mod:`~fxtui.measure.analysis.source` — where it is in the model's code;
* :mod:`~fxtui.measure.analysis.cpu_setup` — are the threads set right (and setting them for a block);
* :mod:`~fxtui.measure.analysis.hint_rules` — what to change, with the estimated saving;
* :mod:`~fxtui.measure.whatif.fold_bn` — the Conv→BatchNorm folding what-if.
"""
