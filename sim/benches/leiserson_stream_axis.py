"""cocotb bench of the Leiserson stream tree's AXI4-Stream top (``leiserson_stream_axis``,
docs/axis.md), driven by cocotbext-axi as a user outside Amaranth would drive it.

Per leaf ``k``: an ``AxiStreamSource`` on ``s_axis_<k>`` and an ``AxiStreamSink`` on
``m_axis_<k>`` (``byte_lanes=1``: one beat is one whole message, no ``tlast``), each with a
random pause generator (bench knob ``backpressure``, percent). ``cycle_valid``/``cycle_ready``
are plain signals the bench drives itself.

Message sets are scheduled off-line by Theorem 1 (random sets, permutations, bit reversal, in
turn). For each delivery cycle the bench queues its messages (headers from ``plan_cycle``,
random data) on the sources, waits until the sources have sent them all, then raises
``cycle_valid`` until ``cycle_ready``. Check (``message_mismatches``): once a delivery cycle
is over and ``cycle_ready`` is back (every received message taken), every leaf's sink has
received exactly the messages scheduled to it so far, with their data (a multiset per leaf:
none lost or duplicated).
"""

from __future__ import annotations

import random
from collections import Counter

import cocotb
from cocotb.triggers import FallingEdge, RisingEdge
from cocotbext.axi import AxiStreamFrame, AxiStreamSink, AxiStreamSource

from fattree.sim.axis_ends import axis_end, start_axis
from fattree.sim.cocotb_runner import bench_config, write_summary
from fattree.sim.models.leiserson_schedule import (
    layout_capacities,
    load_factor,
    message_set,
    plan_cycle,
    schedule_theorem1,
)
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.bits import pack_fields, unpack_fields
from fattree.spec.capacities import TreeLayout
from fattree.spec.leiserson_frames import cycle_length, header_bits_bound, rx_fields, tx_fields

CHECKS = ("message_mismatches",)


@cocotb.test()
async def axis_delivery_cycles(dut):
    config = bench_config()
    params = config["params"]
    n, data_bits = params["leaves"], params.get("data_bits", 8)
    layout = TreeLayout.universal(n, params.get("w") or None, params.get("seed", 0))
    caps = layout_capacities(layout)
    budget = config["bench"].get("frames", 60)
    percent = config["bench"]["backpressure"]
    rng = random.Random(config["seed"])
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))
    txf = tx_fields(header_bits_bound(layout), data_bits)
    rxf = rx_fields(layout.cap(layout.levels), data_bits)

    sources, sinks = [], []
    for k in range(n):
        sources.append(axis_end(dut, f"s_axis_{k}", AxiStreamSource, rng, percent))
        sinks.append(axis_end(dut, f"m_axis_{k}", AxiStreamSink, rng, percent))
    dut.cycle_valid.value = 0
    await start_axis(dut)

    received = [Counter() for _ in range(n)]
    want = [Counter() for _ in range(n)]
    cycles = delivery_cycles = 0
    limit = 50 * cycle_length(layout, data_bits) + 1000  # per delivery cycle

    def drain():
        for k, sink in enumerate(sinks):
            while not sink.empty():
                beat = unpack_fields(rxf, sink.recv_nowait().tdata[0])
                received[k][beat["data"]] += 1

    def compare(where):
        drain()
        for k in range(n):
            got, exp = sorted(received[k].items()), sorted(want[k].items())
            scoreboard.compare("message_mismatches", f"{where}, leaf {k}: (data, count)", got, exp)

    async def clock():
        nonlocal cycles
        await RisingEdge(dut.aclk)
        cycles += 1
        drain()

    async def settled(where):
        """Wait until the last delivery cycle is over and every rx beat taken, then compare
        everything received so far with everything scheduled so far."""
        for _ in range(cycle_length(layout, data_bits)):  # no cycle ends sooner
            await clock()
        waited = 0
        while not int(dut.cycle_ready.value) and waited < limit:
            await clock()
            waited += 1
        for _ in range(3):  # the sinks' last beats
            await clock()
        compare(where)

    kinds = ["random", "permutation", "bit-reversal"]
    sets = 0
    while delivery_cycles < budget:
        kind = kinds[sets % len(kinds)]
        messages = message_set(kind, n, rng)
        if load_factor(n, messages, caps) <= 1 and kind != "random":
            messages = messages + message_set("random", n, rng)
        sets += 1
        for cycle in schedule_theorem1(n, messages, caps)[: budget - delivery_cycles]:
            if delivery_cycles:
                await settled(f"delivery cycle {delivery_cycles}")
            for plan in plan_cycle(layout, messages, cycle).messages:
                data = rng.getrandbits(data_bits)
                header = int("".join(map(str, plan.header)) or "0", 2)
                word = pack_fields(txf, header=header, header_len=len(plan.header), data=data)
                sources[plan.src].send_nowait(AxiStreamFrame([word]))
                want[plan.dst][data] += 1
            waited = 0
            while not all(s.idle() for s in sources) and waited < limit:
                await clock()
                waited += 1
            # Every message of this cycle taken: start it (a handshake on a falling edge).
            await FallingEdge(dut.aclk)
            dut.cycle_valid.value = 1
            while not int(dut.cycle_ready.value) and waited < limit:
                await clock()
                await FallingEdge(dut.aclk)
                waited += 1
            await clock()
            dut.cycle_valid.value = 0
            delivery_cycles += 1
            if waited >= limit:
                scoreboard.fail("message_mismatches", f"delivery cycle {delivery_cycles} stuck")
                break
    await settled("after the last delivery cycle")
    scoreboard.checked = sum(sum(c.values()) for c in want)
    write_summary(
        config,
        scoreboard.summary(cycles, delivery_cycles=delivery_cycles, backpressure=percent),
    )
    scoreboard.raise_on_mismatch()
