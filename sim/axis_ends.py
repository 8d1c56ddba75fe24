"""cocotbext-axi ends for the AXI4-Stream benches (docs/axis.md): one place for how a bench
attaches a source or sink to a ``--ports axis`` top, pauses it at random, and resets the top."""

from __future__ import annotations

import random

__all__ = ["pauses", "axis_end", "start_axis"]


def pauses(rng: random.Random, percent: int):
    """cocotbext-axi pause generator: paused in a cycle with probability ``percent`` %."""
    while True:
        yield percent and rng.randrange(100) < percent


def axis_end(dut, prefix: str, kind, rng: random.Random, percent: int):
    """An ``AxiStreamSource`` or ``AxiStreamSink`` (``kind``) on the ports ``<prefix>_t*``:
    clock ``aclk``, reset ``aresetn`` active low, ``byte_lanes=1`` (one AXI "byte" is the
    whole ``tdata``, whatever its width), pausing with ``percent`` % probability."""
    from cocotbext.axi import AxiStreamBus

    end = kind(
        AxiStreamBus.from_prefix(dut, prefix),
        dut.aclk,
        dut.aresetn,
        reset_active_level=False,
        byte_lanes=1,
    )
    end.set_pause_generator(pauses(random.Random(rng.getrandbits(32)), percent))
    end.log.setLevel("WARNING")
    return end


async def start_axis(dut, cycles: int = 3) -> None:
    """Start a 10 ns clock on ``aclk`` and hold ``aresetn`` low for ``cycles`` rising edges."""
    from cocotb.clock import Clock
    from cocotb.triggers import RisingEdge

    Clock(dut.aclk, 10, unit="ns").start()
    dut.aresetn.value = 0
    for _ in range(cycles):
        await RisingEdge(dut.aclk)
    dut.aresetn.value = 1
