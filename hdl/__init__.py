"""Amaranth components of the fat-tree networks, built from the definitions in
:mod:`fattree.spec` (topology, capacities, concentrator graphs, encodings).

One class per design (``fattree designs`` lists them), each an
``amaranth.lib.wiring.Component`` constructed with the design's parameters as keyword
arguments, and the AXI4-Stream tops that wrap the stream networks::

    from fattree.hdl import CircuitFastTree, HypercubeNetwork
    net = CircuitFastTree(leaves=16, width=8, length=2)

Components are imported on first use, so ``import fattree.hdl`` alone loads no Amaranth.
"""

import importlib

#: Each public component and the module that holds it, by design (``fattree designs``).
_COMPONENTS = {
    "Selector": ".selector",  # selector
    "CircuitFatTree": ".circuit_tree",  # circuit-tree-paper
    "CircuitFastTree": ".circuit_fast.tree",  # circuit-tree
    "CircuitRouter": ".circuit_router",  # circuit-router
    "LevelWiseScheduler": ".scheduler.component",  # scheduler
    "LeisersonFatTree": ".leiserson_tree",  # leiserson-tree
    "LeisersonStreamTree": ".leiserson_stream",  # leiserson-stream
    "LeisersonOnline": ".leiserson_online",  # leiserson-online
    "RN1Router": ".rn1.router",  # rn1
    "RN1Bidelta": ".rn1.bidelta",  # rn1-bidelta
    "RN1BideltaStream": ".rn1.bidelta_stream",  # rn1-bidelta-stream
    "RN1UnitTree": ".rn1.unit_tree",  # rn1-unit-tree
    "RN1FatTreeStream": ".rn1.fat_tree",  # rn1-fat-tree
    "RN1FatTree": ".rn1.fat_tree",  # rn1-fat-tree-network
    "RN1Hybrid": ".rn1.hybrid",  # rn1-hybrid
    "HypercubeNetwork": ".hypercube",  # hypercube
    # AXI4-Stream tops (docs/axis.md).
    "CircuitTreeAxis": ".axis",
    "CircuitTreeFastAxis": ".axis",
    "StreamAxis": ".axis",
    "RN1StreamAxis": ".rn1.axis",
}

__all__ = list(_COMPONENTS)


def __getattr__(name):
    if name in _COMPONENTS:
        return getattr(importlib.import_module(_COMPONENTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *__all__])
