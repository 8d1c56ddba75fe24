"""Amaranth components of the fat-tree networks, and the pure-Python structure they are
built from (topology, capacities, concentrator graphs: no Amaranth import there).

Components are imported on first use, so ``import fattree.spec.topology`` stays free of
Amaranth.
"""

import importlib

_COMPONENTS = {"Selector": ".selector"}

__all__ = list(_COMPONENTS)


def __getattr__(name):
    if name in _COMPONENTS:
        return getattr(importlib.import_module(_COMPONENTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
