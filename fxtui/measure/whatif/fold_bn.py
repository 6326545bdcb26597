"""What-if: fold each BatchNorm into the convolution before it.

In eval mode a BatchNorm is a per-channel affine map with frozen statistics, so
it can be folded into the preceding convolution's weight and bias; the model
computes the same output with one operator fewer per pair. This module finds the
pairs and builds the fused graph so the lead's profiler can time both.
"""

from __future__ import annotations

import torch
import torch.fx
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

from fxtui.measure.whatif.sharing import copy_sharing_tensors

_PAIRS: tuple[tuple[type[nn.Module], type[nn.Module]], ...] = (
    (nn.Conv1d, nn.BatchNorm1d),
    (nn.Conv2d, nn.BatchNorm2d),
    (nn.Conv3d, nn.BatchNorm3d),
)


def find_conv_bn(gm: torch.fx.GraphModule) -> list[tuple[str, str]]:
    """Node names ``(conv, bn)`` of every foldable Convolution → BatchNorm pair, graph order.

    A pair qualifies when a ``call_module`` convolution (not transposed) feeds a
    ``call_module`` BatchNorm of the same dimensionality as its only user, both
    modules are in eval mode, the BatchNorm tracks running statistics, and each
    module is called from exactly one node (a shared conv cannot be rewritten for
    one call site only).
    """
    calls: dict[str, int] = {}
    for node in gm.graph.nodes:
        if node.op == "call_module":
            calls[str(node.target)] = calls.get(str(node.target), 0) + 1
    pairs = []
    for node in gm.graph.nodes:
        if node.op != "call_module" or len(node.args) != 1 or node.kwargs:
            continue
        conv_node = node.args[0]
        if not isinstance(conv_node, torch.fx.Node) or conv_node.op != "call_module":
            continue
        if len(conv_node.users) != 1:
            continue
        conv = gm.get_submodule(str(conv_node.target))
        bn = gm.get_submodule(str(node.target))
        if not any(type(conv) is c and type(bn) is b for c, b in _PAIRS):
            continue
        if conv.training or bn.training or bn.running_mean is None or bn.running_var is None:
            continue
        if calls[str(conv_node.target)] != 1 or calls[str(node.target)] != 1:
            continue
        pairs.append((conv_node.name, node.name))
    return pairs


def fuse_conv_bn(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, list[tuple[str, str]]]:
    """A copy of ``gm`` with every pair :func:`find_conv_bn` reports folded into one conv.

    The original is left untouched. In the copy each fused convolution keeps its
    node name and module path; the BatchNorm nodes and modules are gone. Returns
    the copy and the ``(conv, bn)`` node-name pairs that were fused. The copy shares the
    original's parameters and buffers except the fused convolutions' own.
    """
    fused = copy_sharing_tensors(gm)
    assert isinstance(fused, torch.fx.GraphModule)
    pairs = find_conv_bn(fused)
    by_name = {n.name: n for n in fused.graph.nodes}
    for conv_name, bn_name in pairs:
        conv_node, bn_node = by_name[conv_name], by_name[bn_name]
        conv = fused.get_submodule(str(conv_node.target))
        bn = fused.get_submodule(str(bn_node.target))
        assert isinstance(conv, nn.modules.conv._ConvNd) and isinstance(bn, nn.modules.batchnorm._BatchNorm)
        _replace_submodule(fused, str(conv_node.target), fuse_conv_bn_eval(conv, bn))
        bn_node.replace_all_uses_with(conv_node)
        fused.graph.erase_node(bn_node)
    fused.graph.lint()
    fused.delete_all_unused_submodules()
    fused.recompile()
    return fused, pairs


def _replace_submodule(root: nn.Module, target: str, new: nn.Module) -> None:
    parent_path, _, attr = target.rpartition(".")
    parent = root.get_submodule(parent_path) if parent_path else root
    setattr(parent, attr, new)
