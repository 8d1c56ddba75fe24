"""Functional coverage of Leiserson's fat-tree (docs/leiserson.md, "Coverage"): the cover
points of one delivery cycle through a :class:`~fattree.spec.capacities.TreeLayout`, counted
by :class:`TreeCounter` as a tree model routes each message.

Per node level ``j`` (0 = the root): the selector's turns (from which input port to which
output port), and per concentrator stage of the node's cascades the edge each message takes
(its decision bits) or an edge index the stage lacks (the message is lost there). Per
channel level ``c`` (0 = the root's external channel, ``levels`` = the leaves' channels, as
:attr:`TreeLayout.capacities` numbers them): the messages one channel carries in one delivery
cycle, up and down, from one up to the channel's capacity.
"""

from __future__ import annotations

from collections import Counter

from ...spec.capacities import TreeLayout
from ..coverage import Coverage, CoverPoint

__all__ = ["tree_points", "load_bins", "TreeCounter"]

TURNS = ("U>L", "U>R", "L>U", "L>R", "R>U", "R>L")


def load_bins(cap: int) -> tuple[str, ...]:
    """One message, more but fewer than the capacity, the channel full."""
    return ("1",) * (cap > 1) + ("part",) * (cap > 2) + ("full",)


def _stages(layout: TreeLayout):
    """``(level, direction, t, graph)`` of every concentrator stage: ``down`` is the L and R
    cascades (the same graphs), ``up`` the U cascade."""
    for j in range(layout.levels):
        for direction, port in (("up", "U"), ("down", "L")):
            for t, stage in enumerate(layout.cascade(j, port).stages):
                yield j, direction, t, stage.graph


def tree_points(
    layout: TreeLayout, *, external: bool = True, online: bool = False, exact=None
) -> list[CoverPoint]:
    """The cover points of ``layout``'s tree (the module's docstring); without the root's
    external channel (``external`` False: a tree whose root has no ports) no turn at the root
    involves its U port, the root's U cascade carries nothing and level 0 has no channel.
    ``online``: the switches are set as messages arrive (``leiserson-online``): a stage's
    bins are the edges in the order the greedy tries them, and ``lost`` (every edge's output
    already taken), not ``lacking``.
    ``exact``: per point name the bins a search found reachable; the point keeps only
    those."""
    points = [
        CoverPoint(
            f"turn/L{j}",
            TURNS if j or external else ("L>R", "R>L"),
            f"the selectors of level {j}: a message from each input port (U from the parent, "
            "L and R from the children) to each of the two others by its address bit",
        )
        for j in range(layout.levels)
    ]
    reach = _online_reach(layout) if online else {}
    for j, direction, t, graph in _stages(layout):
        if j == 0 and direction == "up" and not external:
            continue  # the root's U cascade leads only to the external channel
        edges = tuple(f"e{e}" for e in range(max(map(len, graph.adjacency))))
        if online:
            most, lossy = reach[j, direction, t]
            edges = edges[:most]
            why = (
                f"stage {t} of the {direction} concentrator at level {j}: the greedy takes "
                "each edge (in adjacency order, the earlier ones taken), or loses the message "
                "with every edge's output taken (the channel at its capacity for it)"
            )
            losses = ("lost",) * lossy
        else:
            why = (
                f"stage {t} of the {direction} concentrator at level {j}: every edge its "
                "decision bits can set, and an index its input lacks (the message is lost)"
            )
            short = any(len(row) < 1 << graph.decision_bits for row in graph.adjacency)
            losses = ("lacking",) * short
        points.append(CoverPoint(f"edge/L{j}/{direction}/S{t}", edges + losses, why))
        if online and t == 0:
            points.append(
                CoverPoint(
                    f"arrive/L{j}/{direction}",
                    ("alone", "together"),
                    f"messages reaching the {direction} concentrator at level {j} in one "
                    "cycle: alone, or together (the first input of the delivery cycle's "
                    "rotated order chooses first)",
                )
            )
    for c in range(0 if external else 1, layout.levels + 1):
        for direction in ("up", "down"):
            points.append(
                CoverPoint(
                    f"load/C{c}/{direction}",
                    load_bins(layout.cap(c)),
                    f"messages on one {direction} channel of level {c} (capacity "
                    f"{layout.cap(c)}) in one delivery cycle, up to the channel full",
                )
            )
    if exact:
        points = [
            CoverPoint(p.name, tuple(b for b in p.bins if b in exact[p.name]), p.why)
            if p.name in exact
            else p
            for p in points
        ]
    return points


def _online_reach(layout: TreeLayout) -> dict[tuple[int, str, int], tuple[int, bool]]:
    """Per stage of the on-line tree: how many of an input's edges the greedy can try, and
    whether it can lose a message there. A stage sees at most ``A`` messages at once: the
    active inputs of the cascade (at the root's L and R cascades only the other child's
    channel, the root having no external port), then no more than the stage before let
    through. The ``k``-th edge is taken only with ``k`` others taken first, and an input
    loses its message only with all its edges taken, so by fewer than ``A`` others."""
    reach = {}
    for j in range(layout.levels):
        for direction, port in (("up", "U"), ("down", "L")):
            cascade = layout.cascade(j, port)
            first = range(cascade.r)
            if j == 0 and port != "U":  # the root: only the R (or L) group carries messages
                offset = layout.group_offset(0, port, "R")
                first = range(offset, offset + layout.cap(1))
            active = len(first)
            for t, stage in enumerate(cascade.stages):
                graph = stage.graph
                degrees = [len(graph.adjacency[v]) for v in (first if t == 0 else range(graph.r))]
                reach[j, direction, t] = (min(max(degrees), active), min(degrees) < active)
                active = min(active, graph.s)
    return reach


class TreeCounter:
    """Counts :func:`tree_points` into ``coverage`` for one delivery cycle at a time: call
    :meth:`begin`, then what each message meets, then :meth:`end`."""

    def __init__(self, coverage: Coverage, layout: TreeLayout):
        self.coverage, self.layout = coverage, layout
        self.loads: Counter = Counter()

    def begin(self) -> None:
        self.loads.clear()

    def enter(self, leaf: int | None) -> None:
        """A message sent by ``leaf`` (None: entering on ``root_i``)."""
        if leaf is None:
            self.loads[0, "down", 0] += 1
        else:
            self.loads[self.layout.levels, "up", leaf] += 1

    def turn(self, level: int, in_port: str, port: str) -> None:
        self.coverage.hit(f"turn/L{level}", f"{in_port}>{port}")

    def edge(self, level: int, port: str, t: int, choice: int | None, degree: int) -> None:
        """The edge a message took at a stage (None: lost, every edge's output taken)."""
        direction = "up" if port == "U" else "down"
        name = f"edge/L{level}/{direction}/S{t}"
        if choice is None:
            self.coverage.hit(name, "lost")
        else:
            self.coverage.hit(name, f"e{choice}" if choice < degree else "lacking")

    def arrive(self, level: int, port: str, count: int) -> None:
        """``count`` messages at a cascade's first stage in one cycle."""
        direction = "up" if port == "U" else "down"
        self.coverage.hit(f"arrive/L{level}/{direction}", "alone" if count == 1 else "together")

    def passed(self, node: int, port: str) -> None:
        """A message through the cascade in front of ``node``'s output ``port``."""
        level = node.bit_length() - 1
        if port == "U":
            self.loads[level, "up", node] += 1
        else:
            self.loads[level + 1, "down", 2 * node + (port == "R")] += 1

    def end(self) -> None:
        for (c, direction, _), load in self.loads.items():
            cap = self.layout.cap(c)
            name = "full" if load == cap else "1" if load == 1 else "part"
            if load > cap:
                raise ValueError(f"{load} messages on a channel of capacity {cap}")
            self.coverage.hit(f"load/C{c}/{direction}", name)
