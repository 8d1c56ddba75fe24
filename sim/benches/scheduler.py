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
from fattree.spec.scheduler import Op, field_offsets, request_fields, result_fields
from fattree.spec.topology import FatTree

BURST = 20


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


def make_commands(tree: FatTree, rng: random.Random, bursts: int, mutation: bool):
    """Commands and the results the sequential reference expects for them: bursts from all
    nodes and from two hot leaf switches in turn, then a clear and a random permutation."""
    stream = CommandStream(tree)
    for burst in range(bursts):
        nodes = stream.hot_nodes(rng) if burst % 2 else None
        stream.random(rng, BURST, nodes=nodes, releases=0.24, clears=0.01)
    stream.permutation(rng)
    commands, expected = stream.commands, stream.expected
    if mutation and expected:
        # A wrong reference: the first scheduled result claims the opposite grant.
        k = next(i for i, e in enumerate(expected) if e[0] == Op.SCHEDULE)
        op, src, dst, granted, vector = expected[k]
        expected[k] = (op, src, dst, 1 - granted, vector)
    return commands, expected


class Scoreboard:
    def __init__(self, tree: FatTree, expected: list[tuple]):
        self.expected = expected
        self.ledger = LinkLedger(tree)
        self.checked = 0
        self.mismatches = 0
        self.double_grants = 0  # and releases of links the connection does not hold
        self.granted = 0
        self.first_mismatch: str | None = None

    def _report(self, text: str) -> None:
        self.first_mismatch = self.first_mismatch or text

    def check(self, seen: tuple) -> None:
        k = self.checked
        want = self.expected[k] if k < len(self.expected) else None
        self.checked += 1
        if seen != want:
            self.mismatches += 1
            self._report(f"result {k}: {seen}, reference says {want}")
        if seen[0] == Op.SCHEDULE and seen[3]:
            self.granted += 1
        for problem in self.ledger.apply(seen):
            self.double_grants += 1
            self._report(f"result {k}: {problem}")


@cocotb.test()
async def random_commands(dut):
    config = bench_config()
    levels, w = config["params"]["levels"], config["params"]["w"]
    bursts = config["bench"].get("frames", 200)
    mutation = bool(config["bench"].get("mutation", False))
    rng = random.Random(config["seed"])
    tree = FatTree(levels, w)
    packer = Packer(levels, w)
    commands, expected = make_commands(tree, rng, bursts, mutation)
    scoreboard = Scoreboard(tree, expected)

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
            scoreboard.check(packer.result(int(dut.results__payload.value)))

    write_summary(
        config,
        {
            "cycles": cycles,
            "commands": len(commands),
            "results_checked": scoreboard.checked,
            "granted": scoreboard.granted,
            "reference_mismatches": scoreboard.mismatches,
            "double_grants": scoreboard.double_grants,
            "mismatches": scoreboard.mismatches + scoreboard.double_grants,
            "first_mismatch": scoreboard.first_mismatch,
            "checked": scoreboard.checked,
            "unit": "results",
        },
    )
    assert scoreboard.checked == len(commands), f"only {scoreboard.checked} results"
    assert scoreboard.mismatches == 0 and scoreboard.double_grants == 0, scoreboard.first_mismatch
