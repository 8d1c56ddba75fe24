"""The scheduler's results against the sequential reference, order for order (its contract:
one result per request, in request order), shared by the native and the AXI4-Stream benches.

* :class:`Packer` packs requests and unpacks results by the fields of
  :mod:`fattree.spec.scheduler`;
* :func:`make_commands` draws the command stream and the results the reference expects;
* :func:`stalled_clears` adds a directed phase: commands held in the pipeline by a stalled
  result stream, then a CLEAR right behind them;
* :class:`ResultCheck` compares each result field by field and keeps a :class:`LinkLedger`
  that does not trust the model (no link granted twice).
"""

from __future__ import annotations

import random

from ...spec.scheduler import (
    GeneralizedFatTree,
    Op,
    field_offsets,
    request_fields,
    result_fields,
)
from ...spec.topology import FatTree
from ..models.scheduler_commands import CommandStream, LinkLedger
from ..scoreboard import Scoreboard

__all__ = [
    "BURST",
    "CHECKS",
    "Packer",
    "tree_of",
    "make_commands",
    "stalled_clears",
    "ResultCheck",
]

BURST = 20
CHECKS = ("reference_mismatches", "double_grants")


def tree_of(params: dict) -> GeneralizedFatTree:
    """The FT(l, m, w) of the design parameters ``levels``, ``w`` and ``m`` (absent or ``""``:
    ``m = w``)."""
    levels, w = params["levels"], params["w"]
    m = params.get("m", "")
    return GeneralizedFatTree(levels, w if m in ("", None) else m, w)


class Packer:
    """Packs and unpacks the stream payloads by the offsets of their fields (nodes of
    FT(levels, m, w), ``m`` defaulting to ``w``)."""

    def __init__(self, levels: int, w: int, m: int | None = None):
        m = w if m in ("", None) else m
        self.levels, self.port_bits = levels, (w - 1).bit_length()
        self.req = field_offsets(request_fields(levels, w, m))
        self.res = field_offsets(result_fields(levels, w, m))
        self.node_mask = (1 << (levels * (m - 1).bit_length())) - 1

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


def make_commands(tree: FatTree | GeneralizedFatTree, rng: random.Random, bursts: int):
    """Commands and the results the sequential reference expects for them: bursts from all
    nodes and from two hot leaf switches in turn, then a clear and a random permutation."""
    stream = CommandStream(tree)
    for burst in range(bursts):
        nodes = stream.hot_nodes(rng) if burst % 2 else None
        stream.random(rng, BURST, nodes=nodes, releases=0.24, clears=0.01)
    stream.permutation(rng)
    return stream.commands, stream.expected


#: Cycles the directed phase holds the result stream stalled, and commands in flight then.
#: Not the pipeline's timing (that is the hardware's): a sweep wide enough that some stall
#: ends while a CLEAR waits behind commands still in any stage of a pipeline of up to about
#: 16 cycles.
STALLS = range(1, 17)
IN_FLIGHT = (1, 2, 3)


def stalled_clears(
    tree: FatTree | GeneralizedFatTree, rng: random.Random, stalls=STALLS, in_flight=IN_FLIGHT
) -> tuple[list, list, dict[int, int]]:
    """A directed phase for the CLEAR's wait (it must not start while a command is in any
    pipeline stage): for every stall length and count k, a CLEAR, then k requests across the
    root (every level's links), sent back to back while the result stream is stalled for
    that many cycles, then a CLEAR right behind them, then the same k requests again.

    After the second CLEAR the reference grants the repeats exactly as the first time; a
    CLEAR that started while one of the first k still had its update to write leaves that
    connection's links busy, and a repeat is refused. Returns the commands, the results the
    reference expects, and ``holds``: command index -> cycles to hold ``results.ready`` low
    from the cycle that command is first offered (the driver sends this phase without idle
    cycles and with ``ready`` high otherwise).
    """
    stream = CommandStream(tree)
    holds: dict[int, int] = {}
    half = tree.num_nodes // 2  # sources in one half, destinations in the other
    for stall in stalls:
        for k in in_flight:
            stream.clear()
            pairs = [(rng.randrange(half), half + rng.randrange(half)) for _ in range(k)]
            holds[len(stream.commands)] = stall
            for src, dst in pairs:
                stream.schedule(src, dst)
            stream.clear()
            for src, dst in pairs:
                stream.schedule(src, dst)
    return stream.commands, stream.expected, holds


class ResultCheck:
    """Each result against the reference's, field by field, and through a :class:`LinkLedger`
    that does not trust the model (double grants, and releases of links the connection does
    not hold)."""

    def __init__(
        self, tree: FatTree | GeneralizedFatTree, expected: list[tuple], scoreboard: Scoreboard
    ):
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
