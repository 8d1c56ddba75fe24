"""cocotb bench of :class:`fattree.hdl.scheduler.LevelWiseScheduler`: driver, monitor,
scoreboard.

The driver sends ``frames`` bursts of 20 commands (schedule, release of an established
connection, now and then a clear; sources and destinations drawn either from all nodes or
from two "hot" leaf switches, so back-to-back commands hit the same memory rows), then a
clear and a random permutation of all nodes, with random idle cycles; the monitor takes
results under random back-pressure. The scoreboard checks every result against the
sequential reference (``SchedulerModel``, level-wise, ``keep``) field by field, and,
independently of the model, that no link is ever held by two established connections.

Inputs are driven and outputs sampled on the falling clock edge, half a cycle away from the
rising edge where the design samples and updates.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly

from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.models.scheduler_commands import CommandStream, LinkLedger
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.scheduler import Op, field_offsets, request_fields, result_fields
from fattree.spec.topology import FatTree

BURST = 20
CHECKS = ("reference_mismatches", "double_grants")


class Packer:
    """Packs and unpacks the stream payloads by the offsets of their fields."""

    def __init__(self, levels: int, w: int):
        self.levels, self.port_bits = levels, (w - 1).bit_length()
        self.req = field_offsets(request_fields(levels, w))
        self.res = field_offsets(result_fields(levels, w))
        self.node_mask = (1 << (levels * self.port_bits)) - 1

    def _ports(self, ports, offset: int) -> int:
        return sum(p << (offset + i * self.port_bits) for i, p in enumerate(ports))

    def request(self, op: Op, src: int, dst: int, ports) -> int:
        r = self.req
        return (
            (op.value << r["op"])
            | (src << r["src"])
            | (dst << r["dst"])
            | self._ports(ports, r["ports"])
        )

    def result(self, word: int) -> tuple:
        r, pmask = self.res, (1 << self.port_bits) - 1
        return (
            Op((word >> r["op"]) & 3),
            (word >> r["src"]) & self.node_mask,
            (word >> r["dst"]) & self.node_mask,
            (word >> r["granted"]) & 1,
            tuple(
                (word >> (r["ports"] + i * self.port_bits)) & pmask for i in range(self.levels - 1)
            ),
        )


def make_commands(tree: FatTree, rng: random.Random, bursts: int):
    """Commands and the results the sequential reference expects for them: bursts from all
    nodes and from two hot leaf switches in turn, then a clear and a random permutation."""
    stream = CommandStream(tree)
    for burst in range(bursts):
        nodes = stream.hot_nodes(rng) if burst % 2 else None
        stream.random(rng, BURST, nodes=nodes, releases=0.24, clears=0.01)
    stream.permutation(rng)
    return stream.commands, stream.expected


class ResultCheck:
    """Each result against the reference's, field by field, and through a :class:`LinkLedger`
    that does not trust the model (double grants, and releases of links the connection does
    not hold)."""

    def __init__(self, tree: FatTree, expected: list[tuple], scoreboard: Scoreboard):
        self.expected = expected
        self.ledger = LinkLedger(tree)
        self.scoreboard = scoreboard
        self.granted = 0

    def check(self, seen: tuple) -> None:
        sb = self.scoreboard
        k = sb.checked
        want = self.expected[k] if k < len(self.expected) else None
        sb.checked += 1
        sb.compare("reference_mismatches", f"result {k}", seen, want)
        if seen[0] == Op.SCHEDULE and seen[3]:
            self.granted += 1
        for problem in self.ledger.apply(seen):
            sb.fail("double_grants", f"result {k}: {problem}")


@cocotb.test()
async def random_commands(dut):
    config = bench_config()
    levels, w = config["params"]["levels"], config["params"]["w"]
    bursts = config["bench"].get("frames", 200)
    rng = random.Random(config["seed"])
    tree = FatTree(levels, w)
    packer = Packer(levels, w)
    commands, expected = make_commands(tree, rng, bursts)
    scoreboard = Scoreboard(CHECKS, unit="results", mutate=config["bench"].get("mutation", False))
    results = ResultCheck(tree, expected, scoreboard)

    await clock_and_reset(dut, dut.requests__valid, dut.requests__payload, dut.results__ready)

    sent, cycles = 0, 0
    limit = 40 * len(commands) + 100 * tree.num_switches + 1000
    valid = False
    while scoreboard.checked < len(commands) and cycles < limit:
        await FallingEdge(dut.clk)
        cycles += 1
        # Drive this cycle's inputs; a valid request stays until it is accepted.
        if not valid:
            valid = sent < len(commands) and rng.random() < 0.85
            if valid:
                dut.requests__payload.value = packer.request(*commands[sent])
        ready = rng.random() < 0.8
        dut.requests__valid.value = int(valid)
        dut.results__ready.value = int(ready)
        # Sample the settled handshakes: they are what the next rising edge will act on.
        await ReadOnly()
        if valid and int(dut.requests__ready.value):
            sent += 1
            valid = False
        if ready and int(dut.results__valid.value):
            results.check(packer.result(int(dut.results__payload.value)))

    write_summary(
        config,
        scoreboard.summary(cycles, commands=len(commands), granted=results.granted),
    )
    assert scoreboard.checked == len(commands), f"only {scoreboard.checked} results"
    scoreboard.raise_on_mismatch()
