"""cocotb bench of :class:`fattree.hdl.rn1.bidelta.RN1Bidelta`: endpoints, model, scoreboard.

The endpoints of :mod:`fattree.sim.checks.rn1` on every network channel (each endpoint's two
ways in and two ways out run independent senders and receivers), with the bidelta layout:
heads name destination endpoints. Phases: random destinations (``frames`` transmissions in
all), then a hot spot (every transmission to endpoint 0). Checks: every output word against
:class:`RN1BideltaModel` cycle by cycle (the same RN1 models, LFSR seeds and wiring), and
every transmission delivered exactly once to its destination with its bytes intact, every
segment after a turn received as sent.
"""

from __future__ import annotations

import cocotb

from fattree.sim.benches.rn1 import run_phases
from fattree.sim.checks.rn1 import bidelta_layout
from fattree.sim.cocotb_runner import bench_config
from fattree.sim.models.rn1 import RN1BideltaModel


@cocotb.test()
async def traffic_phases(dut):
    p = bench_config()["params"]
    model = RN1BideltaModel(p["endpoints"], p["seed"])
    await run_phases(dut, model, bidelta_layout(model.net))
