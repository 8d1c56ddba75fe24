"""Self-test tops for real FPGA boards.

:data:`SELFTESTS` says which designs have a self-test core and how to make one: a
``wiring.Component`` that generates traffic, checks the design's outputs on chip and has the
status outputs ``heartbeat``, ``ok`` and ``error`` (see :mod:`fattree.boards.platforms` for
the boards and the LEDs they go to). A design adds its own self-test by adding an entry.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..registry import Registry, resolve

__all__ = ["SelfTest", "SELFTESTS", "get_selftest"]


@dataclass(frozen=True)
class SelfTest:
    design: str
    #: ``"module:Class"`` of the core; built as ``Class(**design_params, seed=...,
    #: blink_log2=..., fault_log2=...)``.
    core: str
    summary: str

    def build(self, params: dict[str, int], *, seed: int, blink_log2: int, fault_log2):
        return resolve(self.core)(**params, seed=seed, blink_log2=blink_log2, fault_log2=fault_log2)


SELFTESTS: Registry[SelfTest] = Registry(
    "self-test",
    [
        SelfTest(
            design="selector",
            core="fattree.boards.selector_selftest:SelectorSelfTest",
            summary="LFSR frames of random length and M bits; branch outputs checked every cycle",
        ),
    ],
    key="design",
    message="design {name!r} has no board self-test; designs with one: {known}",
)


def get_selftest(design: str) -> SelfTest:
    """The self-test of ``design``; ``ValueError`` naming the designs with one if none."""
    return SELFTESTS.get_or_raise(design)
