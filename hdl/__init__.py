"""Amaranth components of the fat-tree networks, built from the definitions in
:mod:`fattree.spec` (topology, capacities, concentrator graphs, encodings).

Components are imported on first use, so ``import fattree.hdl`` alone loads no Amaranth.
"""

import importlib

_COMPONENTS = {"Selector": ".selector"}

__all__ = list(_COMPONENTS)


def __getattr__(name):
    if name in _COMPONENTS:
        return getattr(importlib.import_module(_COMPONENTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
