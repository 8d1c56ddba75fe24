"""numba's ``njit``, compiled when a kernel is first called rather than when it is imported.

The fast simulators' modules also hold plain helpers (traffic patterns, checks) that the
experiments import whether or not they run a kernel, and numba is an optional dependency (the
``fast`` extra) that takes about a second to import. So :func:`njit` leaves each function as
it is until the first call of any kernel of its module; then it imports numba and replaces
every kernel of that module by its compiled dispatcher at once, so that kernels calling each
other see compiled callees when numba types them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from ... import toolchain

__all__ = ["njit", "numba_module"]

#: Kernels not compiled yet, by module name.
_PENDING: dict[str, list[_Kernel]] = {}


def numba_module():
    """The numba module, or :class:`~fattree.toolchain.ToolMissing` saying how to get it."""
    toolchain.require("numba")
    return importlib.import_module("numba")


class _Kernel:
    """A function to compile with ``numba.njit(**options)`` on the first call."""

    def __init__(self, function: Callable, options: dict):
        self.py_func = function
        self.options = options
        self.compiled = None
        self.__name__ = function.__name__
        self.__qualname__ = function.__qualname__
        self.__module__ = function.__module__
        self.__doc__ = function.__doc__

    def __call__(self, *args):
        if self.compiled is None:
            _compile_module(self.__module__)
        return self.compiled(*args)

    def __repr__(self) -> str:
        return f"<kernel {self.__module__}.{self.__qualname__}>"


def _compile_module(name: str) -> None:
    numba = numba_module()
    module = sys.modules[name]
    kernels = _PENDING.pop(name, [])
    for kernel in kernels:
        kernel.compiled = numba.njit(**kernel.options)(kernel.py_func)
        # The module's global is what numba reads when it types a kernel that calls this one.
        setattr(module, kernel.__name__, kernel.compiled)


def njit(**options) -> Callable[[Callable], _Kernel]:
    """``@njit(cache=True)``: as ``numba.njit``, with numba imported at the first call."""

    def wrap(function: Callable) -> _Kernel:
        kernel = _Kernel(function, options)
        _PENDING.setdefault(function.__module__, []).append(kernel)
        return kernel

    return wrap
