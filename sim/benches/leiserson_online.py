"""cocotb bench of :class:`fattree.hdl.leiserson_online.LeisersonOnline` on generated Verilog:
the on-line Leiserson fat-tree, switches set in hardware, lost messages resent.

Message sets in turn (random sets of 3 messages per leaf, random permutations, bit reversal,
all-to-one hot spots) are offered on the transmit streams; the receivers stall at random
(bench knob ``backpressure``, percent). Then, for each choice of the greedy at the root
that the sets left out and a search of the root's cascades found reachable
(:func:`~fattree.sim.models.leiserson_online.root_search`), the set of messages across the
root that makes it, timed to go out in a delivery cycle of the turn that does. Last, a
directed set: two messages from one leaf to
another whose receiver is held not ready for four delivery cycles (the second arrives at a
full register and is sent again), and a message from that leaf to itself (flagged on
``error``). :class:`fattree.sim.checks.leiserson_online.
LeisersonOnlineCheck` checks:

* cycle by cycle, ``cycle_start``, every ``tx.ready`` and every receive stream (valid,
  source, data) against :class:`LeisersonOnlineModel`;
* message by message, every message received exactly once, at its destination, from its
  source, with its data.

``frames`` (``fattree sim --frames``) caps the number of delivery cycles (a set is always
finished). The summary gives per set the messages, the delivery cycles, and the messages the
network lost and the receivers refused (both resent); with ``coverage`` set (``fattree sim
--coverage``) the model's cover points (docs/leiserson.md, "Coverage").
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.checks.leiserson_online import CHECKS, LeisersonOnlineCheck
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.models.leiserson_online import LeisersonOnlineModel, root_search
from fattree.sim.models.leiserson_schedule import message_set
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.bits import pack_fields, unpack_fields
from fattree.spec.capacities import TreeLayout
from fattree.spec.leiserson_online import rx_fields, tx_fields


class Ports:
    """The flattened Verilog's streams: ``tx__3__valid/ready/payload``,
    ``rx__3__valid/ready/payload``, ``cycle_start``, ``error``."""

    def __init__(self, dut, n: int, data_bits: int):
        self.tx_fields, self.rx_fields = tx_fields(n, data_bits), rx_fields(n, data_bits)

        def ports(fmt):
            return [getattr(dut, fmt.format(i)) for i in range(n)]

        self.tx_valid, self.tx_ready = ports("tx__{}__valid"), ports("tx__{}__ready")
        self.tx_payload = ports("tx__{}__payload")
        self.rx_valid, self.rx_ready = ports("rx__{}__valid"), ports("rx__{}__ready")
        self.rx_payload = ports("rx__{}__payload")
        self.cycle_start, self.error = dut.cycle_start, dut.error

    def read(self):
        rx = []
        for valid, payload in zip(self.rx_valid, self.rx_payload, strict=True):
            beat = None
            if int(valid.value):
                fields = unpack_fields(self.rx_fields, int(payload.value))
                beat = (fields["src"], fields["data"])
            rx.append(beat)
        error = int(self.error.value)
        return (
            int(self.cycle_start.value),
            [int(r.value) for r in self.tx_ready],
            rx,
            [(error >> i) & 1 for i in range(len(rx))],
        )

    def drive(self, beats, ready):
        for i, beat in enumerate(beats):
            self.tx_valid[i].value = int(beat is not None)
            if beat is not None:
                self.tx_payload[i].value = pack_fields(self.tx_fields, dst=beat[0], data=beat[1])
            self.rx_ready[i].value = ready[i]


def hot_spot(n: int, rng) -> list[tuple[int, int]]:
    """Every leaf sends one message to one random leaf (which sends nothing)."""
    dst = rng.randrange(n)
    return [(src, dst) for src in range(n) if src != dst]


@cocotb.test()
async def online_message_sets(dut):
    config = bench_config()
    params = config["params"]
    n = params["leaves"]
    layout = TreeLayout.universal(n, params.get("w") or None, params.get("seed", 0))
    data_bits = params.get("data_bits", 8)
    budget = config["bench"].get("frames", 40)
    backpressure = config["bench"]["backpressure"]
    rng = random.Random(config["seed"])
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))
    ports = Ports(dut, n, data_bits)
    model = LeisersonOnlineModel(layout, data_bits, params.get("queue", 4))
    check = LeisersonOnlineCheck(
        model,
        scoreboard,
        ports.read,
        ports.drive,
        lambda: FallingEdge(dut.clk),
        rng=random.Random(rng.getrandbits(32)),
        stall=backpressure / 100,
    )
    coverage = model.start_coverage()
    ports.drive([None] * n, [1] * n)
    await clock_and_reset(dut)

    sets = []

    async def run_set(kind: str, messages, **options) -> None:
        before = (model.delivery_cycles, len(model.results), model.refused)
        received = await check.deliver(messages, f"{kind} set {len(sets)}", **options)
        results = model.results[before[1] :]
        sets.append(
            {
                "pattern": kind,
                "messages": len(messages),
                "to_itself": sum(src == dst for src, dst in messages),
                "received": received,
                "delivery_cycles": model.delivery_cycles - before[0],
                "lost_in_network": sum(len(r.lost) for r in results),
                "refused_by_receiver": model.refused - before[2],
            }
        )

    kinds = ["random", "permutation", "bit-reversal", "hot-spot"]
    while model.delivery_cycles < budget:
        kind = kinds[len(sets) % len(kinds)]
        await run_set(kind, hot_spot(n, rng) if kind == "hot-spot" else message_set(kind, n, rng))
    # Then the greedy's rarest choices at the root, found by searching its cascades
    # (root_search): each set of messages across the root that hits a bin the sets before
    # did not, sent so that it goes out in a delivery cycle of the turn that hits it.
    turns = layout.cascade(0, "L").r
    for name, bins in (root_search(layout) or {}).items():
        for b, (sources, turn) in bins.items():
            if not coverage.hits[name][b]:
                await check.before_turn(turn, turns)
                await run_set("root search", [(leaf, leaf + n // 2) for leaf in sources])
    # Last, what random sets leave out: two messages to one leaf whose receiver holds the
    # first for four delivery cycles (the second finds its register full and is refused,
    # then sent again), and a message from that leaf to itself (dropped, flagged on error).
    dst = rng.randrange(n)
    src = (dst + 1) % n
    await run_set("held receiver", [(src, dst), (src, dst), (dst, dst)], hold=4 * model.length)
    write_summary(
        config,
        scoreboard.summary(
            check.cycle,
            delivery_cycles=model.delivery_cycles,
            cycle_length=model.length,
            backpressure=backpressure,
            backpressure_cycles=check.backpressure_cycles,
            message_sets=sets,
            **({"coverage": coverage.as_dict()} if config["bench"].get("coverage") else {}),
        ),
    )
    scoreboard.raise_on_mismatch()
