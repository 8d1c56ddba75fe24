"""cocotb bench of :class:`fattree.hdl.leiserson_tree.LeisersonFatTree` on generated Verilog.

Message sets with load factor above 1 (random sets, random permutations, bit reversal, in
turn) are scheduled off-line by Theorem 1 under the tree's alpha-derated capacities. Each
delivery cycle gets switch settings and headers, random data, and senders staggered by up to
2 cycles. The bench drives the cycles one after another, bit-serially, and checks:

* cycle by cycle, every leaf's receive wires against the tree model
  (:func:`fattree.sim.models.leiserson_tree.delivery_waves`);
* message by message, that each message arrives once, at its destination, with its data.

``frames`` (``fattree sim --frames``) caps the number of delivery cycles driven. The
summary reports d against lambda and Theorem 1's bound for every message set.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.models.leiserson_schedule import (
    layout_capacities,
    load_factor,
    message_set,
    schedule_theorem1,
    theorem1_bound,
)
from fattree.sim.models.leiserson_tree import delivery_waves
from fattree.spec.capacities import TreeLayout

DATA_BITS = 8


@cocotb.test()
async def scheduled_message_sets(dut):
    config = bench_config()
    params = config["params"]
    n = params["leaves"]
    layout = TreeLayout.universal(n, params.get("w") or None, params.get("seed", 0))
    caps = layout_capacities(layout)
    budget = config["bench"].get("frames", 200)
    mutation = bool(config["bench"].get("mutation", False))
    rng = random.Random(config["seed"])
    sends = [getattr(dut, f"send__{i}") for i in range(n)]
    recvs = [getattr(dut, f"recv__{i}") for i in range(n)]

    await clock_and_reset(dut, dut.start, dut.root_i, *sends)

    cycles_run = checked = cycle_mismatches = message_mismatches = 0
    first: str | None = None
    sets = []
    kinds = ["random", "permutation", "bit-reversal"]
    while cycles_run < budget:
        kind = kinds[len(sets) % len(kinds)]
        messages = message_set(kind, n, rng)
        lam = load_factor(n, messages, caps)
        if lam <= 1 and kind != "random":
            messages = messages + message_set("random", n, rng)  # make lambda > 1
            lam = load_factor(n, messages, caps)
            kind += "+random"
        schedule = schedule_theorem1(n, messages, caps)[: budget - cycles_run]
        waves = delivery_waves(layout, messages, schedule, rng, DATA_BITS)
        arrived = []
        for number, wave in enumerate(waves):
            expect = [row[:] for row in wave.expect]
            if mutation and number == 0:  # self-check: a wrong reference must fail the bench
                t = next(t for t, row in enumerate(expect) if any(row))
                leaf = next(i for i, word in enumerate(expect[t]) if word)
                expect[t][leaf] &= expect[t][leaf] - 1  # drop one expected M bit
            for t, row in enumerate(wave.drive):
                await FallingEdge(dut.clk)
                got = [int(r.value) for r in recvs]
                if got != expect[t] or int(dut.root_o.value) != 0:
                    cycle_mismatches += 1
                    first = first or (
                        f"{kind} set, delivery cycle {number}, cycle {t}: recv {got}, "
                        f"model says {expect[t]}"
                    )
                dut.start.value = int(t == 0)
                for leaf, s in enumerate(sends):
                    s.value = row[leaf]
            for a in wave.delivery.arrivals:
                index, data = wave.sent[(a.src, a.src_wire)]
                want = tuple([1] + [(data >> (DATA_BITS - 1 - b)) & 1 for b in range(DATA_BITS)])
                checked += 1
                if a.where != ("leaf", messages[index][1]) or a.bits != want:
                    message_mismatches += 1
                    first = first or f"message {messages[index]} arrived at {a.where}"
                arrived.append(index)
            cycles_run += 1
        complete = len(schedule) == len(schedule_theorem1(n, messages, caps))
        if complete and sorted(arrived) != list(range(len(messages))):
            message_mismatches += 1
            first = first or f"{kind} set: not every message arrived exactly once"
        sets.append(
            {
                "pattern": kind,
                "messages": len(messages),
                "lambda": float(lam),
                "d": len(schedule),
                "complete": complete,
                "theorem1_bound": theorem1_bound(n, messages, caps),
            }
        )
    mismatches = cycle_mismatches + message_mismatches
    write_summary(
        config,
        {
            "cycles": cycles_run,
            "messages_checked": checked,
            "cycle_mismatches": cycle_mismatches,
            "message_mismatches": message_mismatches,
            "mismatches": mismatches,
            "first_mismatch": first,
            "message_sets": sets,
        },
    )
    assert mismatches == 0, f"{mismatches} mismatches; first: {first}"
