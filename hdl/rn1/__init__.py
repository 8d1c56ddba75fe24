"""DeHon's RN1 networks (DeHon 1993, docs/dehon.md): the router and the networks built from it.

=====================  ==================================================================
module                 holds
=====================  ==================================================================
``router``             :class:`RN1Router`, the router (``rn1``), and the channel signature
``swallow``            :class:`RN1Swallow`, the element that removes a crossed unit tree's
                       head byte
``network``            ``wire_network``: routers and swallows from a link list
``modules``            the shared Verilog modules of a hierarchical export (one per router
                       mode) and the written top of a large network
``bidelta``            :class:`RN1Bidelta`, the bidelta network (``rn1-bidelta``)
``unit_tree``          :class:`RN1UnitTree`, one unit tree (``rn1-unit-tree``)
``fat_tree``           :class:`RN1FatTree`, a fat-tree of unit-tree stages
                       (``rn1-fat-tree-network``), and :class:`RN1FatTreeStream`, the
                       64-node one with an endpoint per node (``rn1-fat-tree``)
``hybrid``             :class:`RN1Hybrid`, bidelta leaf clusters under unit trees
                       (``rn1-hybrid``)
``endpoint``           :class:`RN1Endpoint`, the endpoint interface (messages in and out),
                       and how a network gets one per node
``bidelta_stream``     :class:`RN1BideltaStream`, the bidelta network with an endpoint per
                       node (``rn1-bidelta-stream``)
``axis``               :class:`RN1StreamAxis`, AXI4-Stream ports for the networks with
                       endpoints (``--ports axis``)
=====================  ==================================================================

Components are imported on first use, so ``import fattree.hdl.rn1`` alone loads no Amaranth.
"""

import importlib

_COMPONENTS = {
    "RN1Router": ".router",
    "RN1Swallow": ".swallow",
    "RN1Bidelta": ".bidelta",
    "RN1UnitTree": ".unit_tree",
    "RN1FatTree": ".fat_tree",
    "RN1FatTreeStream": ".fat_tree",
    "RN1Hybrid": ".hybrid",
    "RN1Endpoint": ".endpoint",
    "RN1BideltaStream": ".bidelta_stream",
    "RN1StreamAxis": ".axis",
}

__all__ = list(_COMPONENTS)


def __getattr__(name):
    if name in _COMPONENTS:
        return getattr(importlib.import_module(_COMPONENTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
