"""cocotb bench of :class:`fattree.hdl.leiserson_stream.LeisersonStreamTree` on generated
Verilog: the Leiserson fat-tree behind stream ports.

First a directed set: every leaf to the leaf across the root (every channel full), then a
random permutation, packed first-fit, with an empty delivery cycle after the first, each
delivery cycle offered while the one before still runs, whose messages the receivers hold
until the next cycle beat is offered (transmit beats refused while a delivery cycle runs,
the cycle beat waiting for it and for the messages not taken).
Then message sets with load factor above 1 (random sets, random permutations, bit reversal,
in turn) are scheduled off-line by Theorem 1, every other one offered early in the same way.
In every set 15 % of the messages carry an
edge index a switch on their path lacks, and must vanish there.
:class:`fattree.sim.checks.leiserson_stream.LeisersonStreamCheck` loads each delivery
cycle's messages into the transmit streams, starts it with a ``cycle`` beat, stalls the
receivers at random (bench knob ``backpressure``, percent) and checks:

* cycle by cycle, ``cycle.ready``, every ``tx.ready`` and every receive stream (valid, data,
  wire) against :class:`LeisersonStreamModel`;
* delivery cycle by delivery cycle, every message received once, at its destination, with its
  data.

``frames`` (``fattree sim --frames``) caps the number of delivery cycles. With ``coverage``
set (``fattree sim --coverage``) the summary has the model's cover points (docs/leiserson.md,
"Coverage").
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.checks.leiserson_stream import CHECKS, LeisersonStreamCheck
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.models.leiserson_schedule import (
    filling_sets,
    layout_capacities,
    load_factor,
    message_set,
    schedule_first_fit,
    schedule_theorem1,
)
from fattree.sim.models.leiserson_stream import LeisersonStreamModel
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.bits import pack_fields, unpack_fields
from fattree.spec.capacities import TreeLayout
from fattree.spec.leiserson_frames import header_bits_bound, rx_fields, tx_fields

#: Share of a set's messages sent with an edge index a switch lacks (where their path has a
#: stage input of fewer edges than its decision bits name): they must vanish there.
DROP = 0.15


class Ports:
    """The flattened Verilog's streams: ``tx__3__valid/ready/payload``, ``cycle_valid/ready``,
    ``rx__3__valid/ready/payload``."""

    def __init__(self, dut, layout: TreeLayout, data_bits: int):
        n = self.leaves = layout.leaves
        self.tx_fields = tx_fields(header_bits_bound(layout), data_bits)
        self.rx_fields = rx_fields(layout.cap(layout.levels), data_bits)

        def ports(fmt):
            return [getattr(dut, fmt.format(i)) for i in range(n)]

        self.tx_valid, self.tx_ready = ports("tx__{}__valid"), ports("tx__{}__ready")
        self.tx_payload = ports("tx__{}__payload")
        self.rx_valid, self.rx_ready = ports("rx__{}__valid"), ports("rx__{}__ready")
        self.rx_payload = ports("rx__{}__payload")
        self.cycle_valid, self.cycle_ready = dut.cycle_valid, dut.cycle_ready

    def read(self):
        rx = []
        for valid, payload in zip(self.rx_valid, self.rx_payload, strict=True):
            beat = None
            if int(valid.value):
                fields = unpack_fields(self.rx_fields, int(payload.value))
                beat = (fields["data"], fields["wire"])
            rx.append(beat)
        return int(self.cycle_ready.value), [int(r.value) for r in self.tx_ready], rx

    def drive(self, beats, cycle_valid, ready):
        self.cycle_valid.value = cycle_valid
        for i, beat in enumerate(beats):
            self.tx_valid[i].value = int(beat is not None)
            if beat is not None:
                header, length, data = beat
                self.tx_payload[i].value = pack_fields(
                    self.tx_fields, header=header, header_len=length, data=data
                )
            self.rx_ready[i].value = ready[i]


@cocotb.test()
async def scheduled_message_sets(dut):
    config = bench_config()
    params = config["params"]
    n = params["leaves"]
    layout = TreeLayout.universal(n, params.get("w") or None, params.get("seed", 0))
    data_bits = params.get("data_bits", 8)
    caps = layout_capacities(layout)
    budget = config["bench"].get("frames", 60)
    backpressure = config["bench"]["backpressure"]
    rng = random.Random(config["seed"])
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))
    ports = Ports(dut, layout, data_bits)
    check = LeisersonStreamCheck(
        LeisersonStreamModel(layout, data_bits),
        scoreboard,
        ports.read,
        ports.drive,
        lambda: FallingEdge(dut.clk),
        rng=random.Random(rng.getrandbits(32)),
        stall=backpressure / 100,
        header_bits=header_bits_bound(layout),
    )
    coverage = check.model.start_coverage()
    ports.drive([None] * n, 0, [1] * n)
    await clock_and_reset(dut)

    sets = []
    kinds = ["random", "permutation", "bit-reversal"]
    while check.delivery_cycles < budget:
        # Every other set offers each delivery cycle while the one before is not over.
        wires, eager = None, len(sets) % 2 == 0
        if not sets:
            kind = "across+permutation"
            messages = filling_sets(n)[0][1] + message_set("permutation", n, rng)
            full, wires = schedule_first_fit(layout, messages)
            full = full[:1] + [[]] + full[1:]  # an empty one: its cycle beat waits at once
        else:
            kind = kinds[(len(sets) - 1) % len(kinds)]
            messages = message_set(kind, n, rng)
            if load_factor(n, messages, caps) <= 1 and kind != "random":
                messages = messages + message_set("random", n, rng)  # make lambda > 1
                kind += "+random"
            full = schedule_theorem1(n, messages, caps)
        schedule = full[: budget - check.delivery_cycles]
        drop = {m for m in range(len(messages)) if rng.random() < DROP}
        received = await check.deliver(
            messages,
            schedule,
            f"{kind} set {len(sets)}",
            eager=eager,
            drop=drop,
            wires=wires,
        )
        sets.append(
            {
                "pattern": kind,
                "messages": sum(len(c) for c in schedule),
                "received": received,
                "d": len(schedule),
                "complete": len(schedule) == len(full),
            }
        )
    write_summary(
        config,
        scoreboard.summary(
            check.cycle,
            delivery_cycles=check.delivery_cycles,
            cycle_length=check.model.length,
            backpressure=backpressure,
            backpressure_cycles=check.backpressure_cycles,
            message_sets=sets,
            dropped=check.dropped,
            **({"coverage": coverage.as_dict()} if config["bench"].get("coverage") else {}),
        ),
    )
    scoreboard.raise_on_mismatch()
