"""cocotb bench of :class:`fattree.hdl.leiserson_tree.LeisersonFatTree` on generated Verilog.

First two sets that fill every channel to its capacity in their first delivery cycle
(:func:`~fattree.sim.models.leiserson_schedule.filling_sets`: every leaf to the leaf across
the root, then every leaf to the outside and back, packed first-fit). Then message sets with
load factor above 1 (random sets, random permutations, bit reversal, in
turn) are scheduled off-line by Theorem 1 under the tree's alpha-derated capacities. Every
fourth set (the second of each turn) goes through the root's external channel: messages from
outside (``root_i``) to leaves, from leaves to outside (``root_o``) and between leaves, packed
into delivery cycles first-fit, each on a random free wire of its source
(:func:`fattree.sim.models.leiserson_schedule.schedule_first_fit`: Theorem 1 leaves the
external channel out). In every set 15 % of the messages carry an edge index a switch on
their path lacks, and must vanish there; every concentrator stage takes a random maximum
matching.
:class:`fattree.sim.checks.leiserson_tree.LeisersonTreeCheck` gives each delivery cycle
switch settings and headers, random data, and senders staggered by up to 2 cycles, drives the
cycles one after another, bit-serially, and checks:

* cycle by cycle, every leaf's receive wires and ``root_o`` against the tree model
  (:func:`fattree.sim.models.leiserson_tree.delivery_waves`);
* message by message, that each message arrives once, at its destination, with its data.

``frames`` (``fattree sim --frames``) caps the number of delivery cycles driven. A tree built
with ``start_lead = d`` gets ``start`` d cycles before each delivery cycle, its senders and
expected outputs as the model's, d cycles later. The
summary reports d against lambda and Theorem 1's bound for every leaf-to-leaf message set,
and the messages and d of every external set; with ``coverage`` set (``fattree sim
--coverage``) the tree model's cover points (docs/leiserson.md, "Coverage").
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.checks.leiserson_tree import CHECKS, LeisersonTreeCheck
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.models.leiserson_schedule import (
    external_messages,
    filling_sets,
    layout_capacities,
    load_factor,
    message_set,
    schedule_first_fit,
    schedule_theorem1,
    theorem1_bound,
)
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.capacities import TreeLayout

#: Share of a set's messages sent with an edge index a switch lacks (where their path has a
#: stage input of fewer edges than its decision bits name): they must vanish there.
DROP = 0.15


@cocotb.test()
async def scheduled_message_sets(dut):
    config = bench_config()
    params = config["params"]
    n = params["leaves"]
    layout = TreeLayout.universal(n, params.get("w") or None, params.get("seed", 0))
    caps = layout_capacities(layout)
    budget = config["bench"].get("frames", 200)
    rng = random.Random(config["seed"])
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))
    sends = [getattr(dut, f"send__{i}") for i in range(n)]
    recvs = [getattr(dut, f"recv__{i}") for i in range(n)]

    def read():
        return [int(r.value) for r in recvs], int(dut.root_o.value)

    def drive(start, row):
        dut.start.value = start
        for leaf, s in enumerate(sends):
            s.value = row[leaf]

    def drive_root(word):
        dut.root_i.value = word

    def tick():
        return FallingEdge(dut.clk)

    check = LeisersonTreeCheck(
        layout, scoreboard, read, drive, tick, drive_root, start_lead=params.get("start_lead", 0)
    )

    coverage = check.model.start_coverage()
    await clock_and_reset(dut, dut.start, dut.root_i, *sends)

    sets, external = [], []
    fill = filling_sets(n)
    kinds = ["random", "external", "permutation", "bit-reversal"]
    while check.delivery_cycles < budget:
        kind = kinds[(len(sets) + len(external) - 2) % len(kinds)] if not fill else fill[0][0]
        if kind in ("external", "across", "external-all"):
            messages = fill.pop(0)[1] if fill else external_messages(n, rng)
            full, wires = schedule_first_fit(layout, messages, rng)
            schedule = full[: budget - check.delivery_cycles]
            complete = len(schedule) == len(full)
            drop = {m for m in range(len(messages)) if rng.random() < DROP}
            before = check.dropped
            await check.deliver(
                messages, schedule, rng, kind, complete=complete, wires=wires, drop=drop
            )
            external.append(
                {
                    "pattern": kind,
                    "messages": len(messages),
                    "d": len(schedule),
                    "complete": complete,
                    "dropped": check.dropped - before,
                }
            )
            continue
        messages = message_set(kind, n, rng)
        lam = load_factor(n, messages, caps)
        if lam <= 1 and kind != "random":
            messages = messages + message_set("random", n, rng)  # make lambda > 1
            lam = load_factor(n, messages, caps)
            kind += "+random"
        full = schedule_theorem1(n, messages, caps)
        schedule = full[: budget - check.delivery_cycles]
        complete = len(schedule) == len(full)
        drop = {m for m in range(len(messages)) if rng.random() < DROP}
        await check.deliver(messages, schedule, rng, kind, complete=complete, drop=drop)
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
    await check.flush()
    summary = scoreboard.summary(
        check.delivery_cycles,
        message_sets=sets,
        external_sets=external,
        dropped=check.dropped,
        **({"coverage": coverage.as_dict()} if config["bench"].get("coverage") else {}),
    )
    write_summary(config, summary)
    scoreboard.raise_on_mismatch()
