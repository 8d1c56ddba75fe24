"""The scheduler's results against the sequential reference, order for order (its contract:
one result per request, in request order), shared by the native and the AXI4-Stream benches.

* :class:`Packer` packs requests and unpacks results by the fields of
  :mod:`fattree.spec.scheduler`;
* :func:`make_commands` draws the command stream and the results the reference expects;
* :func:`stalled_clears` adds a directed phase: commands held in the pipeline by a stalled
  result stream, then a CLEAR right behind them;
* :class:`ResultCheck` compares each result field by field and keeps a :class:`LinkLedger`
  that does not trust the model (no link granted twice);
* :class:`CoverFeed` gives each command, as the hardware takes it, to a reference model that
  counts the cover points (docs/scheduler.md, "Coverage"), and :func:`hole_rounds` makes the
  rounds of commands that close what the bench's phases left, each tried on a copy first.
"""

from __future__ import annotations

import random

from ...spec.scheduler import (
    GeneralizedFatTree,
    Op,
    field_offsets,
    pipeline_latency,
    request_fields,
    result_fields,
)
from ...spec.topology import FatTree
from ..coverage import closing_rounds
from ..models.scheduler import SchedulerModel
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
    "CoverFeed",
    "hole_rounds",
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


class CoverFeed:
    """A level-wise ``keep`` reference model counting the cover points, fed each command in
    the cycle the hardware takes it (:meth:`take`; a CLEAR with the cycle it was first
    offered), and the connections it established (for the steering rounds' releases)."""

    def __init__(self, tree: FatTree | GeneralizedFatTree):
        self.model = SchedulerModel(tree, "level-wise", "keep")
        self.coverage = self.model.start_coverage()
        self.zeros = (0,) * (self.model.tree.levels - 1)
        #: Granted connections not yet released: ``(src, dst, ports)``.
        self.established: list[tuple[int, int, tuple[int, ...]]] = []

        self.last_at = 0  # the cycle of the last command taken

    def take(self, command: tuple, at: int) -> tuple:
        """Apply ``(op, src, dst, ports)`` taken at cycle ``at``; the result it expects."""
        self.last_at = at
        return apply_command(self.model, command, at, self.established)


def apply_command(
    model: SchedulerModel, command: tuple, at: int | None, established: list
) -> tuple:
    """``command`` on ``model`` at cycle ``at``, keeping ``established`` up to date; the
    result ``(op, src, dst, granted, ports)`` the hardware must give."""
    op, src, dst, ports = command
    zeros = (0,) * (model.tree.levels - 1)
    if op == Op.CLEAR:
        model.clear(at=at)
        established.clear()
        return (Op.CLEAR, 0, 0, 1, zeros)
    height = model.tree.common_level(src, dst)
    if op == Op.RELEASE:
        model.release(src, dst, ports[:height], at=at)
        established.remove((src, dst, tuple(ports[:height])))
        return (Op.RELEASE, src, dst, 1, tuple(ports))
    g = model.request(src, dst, at=at)
    if g.granted and g.height:
        established.append((src, dst, g.ports))
    return (Op.SCHEDULE, src, dst, int(g.granted), g.port_vector(model.tree.levels))


def hole_rounds(feed: CoverFeed, rng: random.Random, tries: int):
    """Rounds of commands that close the holes of ``feed.coverage``, one at a time (the caller
    sends each back to back, with the result stream ready, once every earlier result is out,
    and feeds ``feed`` before the next is drawn). A candidate is, after a CLEAR half of the
    time, up to ``2 w + 2`` commands: requests from one pool of nodes to another, one to
    three such pairs of three pools (each the nodes of one, two, ``m`` or all leaf switches)
    to a round, enough to fill rows, or leave them no common port, and be refused;
    now and then a release of an established connection (also one the round made) or a CLEAR
    behind them. It is tried
    on a copy of the model, taken one command per cycle (a CLEAR's followers once every row
    is written), and kept only if it hits a hole."""
    model, tree = feed.model, feed.model.tree
    latency = pipeline_latency(tree.levels)
    clear_cycles = latency + max(tree.switch_counts[: tree.levels - 1]) + 1
    leaves = tree.switch_count(0)

    def pool() -> list[int]:
        switches = rng.sample(range(leaves), min(rng.choice((1, 2, tree.m, leaves)), leaves))
        return [s * tree.m + p for s in switches for p in range(tree.m)]

    def candidate() -> list[tuple]:
        # Built on a copy of the model, so a release may tear down a connection the round
        # itself established.
        twin, open_ = model.clone(), list(feed.established)
        pools = [pool() for _ in range(3)]
        pairs = [(rng.choice(pools), rng.choice(pools)) for _ in range(rng.randint(1, 3))]
        commands = []
        if rng.random() < 0.5:
            commands.append((Op.CLEAR, 0, 0, feed.zeros))
            apply_command(twin, commands[-1], None, open_)
        for _ in range(rng.randint(1, 2 * tree.w + 2)):
            roll = rng.random()
            if roll < 0.05:
                commands.append((Op.CLEAR, 0, 0, feed.zeros))
            elif roll < 0.2 and open_:
                src, dst, ports = open_[rng.randrange(len(open_))]
                commands.append((Op.RELEASE, src, dst, ports + feed.zeros[len(ports) :]))
            else:
                src, dst = (rng.choice(nodes) for nodes in rng.choice(pairs))
                commands.append((Op.SCHEDULE, src, dst, feed.zeros))
            apply_command(twin, commands[-1], None, open_)
        return commands

    def reach(commands: list[tuple]):
        twin, established = model.clone(), list(feed.established)
        at = feed.last_at + latency
        for command in commands:
            at += 1
            apply_command(twin, command, at, established)
            if command[0] == Op.CLEAR:
                at += clear_cycles  # the commands behind it wait for it
        return twin.coverage

    for _, commands in closing_rounds(model, tries, candidate, reach):
        yield commands
