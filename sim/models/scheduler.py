"""Reference schedulers for FT(l, w) and FT(l, m, w) fat-trees (Ding et al., SC'06, sections
4-5), and an optimal off-line one.

Every function and class takes a :class:`~fattree.spec.topology.FatTree` FT(l, w) or a
:class:`~fattree.spec.scheduler.GeneralizedFatTree` FT(l, m, w) (``m`` children, ``w``
parents per switch): the link state has ``w`` bits per switch and
``m**(l-1-h) * w**h`` switches on level ``h``; a node is on leaf switch ``node div m``.

A *request* is a pair (source node, destination node); scheduling it means choosing the up
ports ``P_0 .. P_{H-1}`` (``H`` = lowest common level of the two nodes) so that every link of
its route is free, and then marking those links taken. By Theorem 2 the route is
``Ulink(h, s_h, P_h)`` up and ``Dlink(h, d_h, P_h)`` down (see :mod:`fattree.spec.topology`).
Requests between nodes of one leaf switch (``H = 0``) use no inter-switch link and are always
granted (the leaf crossbar connects them).

Algorithms (``ALGORITHMS``):

``level-wise``
    Fig. 7: at each level ``h`` take the lowest ``i`` with ``Ulink(h, s_h)[i] AND
    Dlink(h, d_h)[i]``; the request fails at the first level where that AND is zero.
``greedy``
    The local scheduler: climb choosing the lowest free *up* port at each switch (the source
    side only; fail if a switch has none), then come down the mirrored path, failing at the
    first ``Dlink`` that is taken.
``random``
    As ``greedy`` but a uniformly random free up port (``random.Random(seed)``).
``optimal``
    Off-line: any partial permutation is routed without conflict in one round (a full
    FT(l, w) is rearrangeable, and so is FT(l, m, w) with ``w >= m``), by bipartite edge
    colouring level by level; see :func:`optimal_ports`. Refused for ``w < m`` (a tapered
    tree, where a permutation may need more than one round and a maximum one-round subset is
    not what edge colouring finds).

Failure modes (``FAILURE_MODES``), for links a request took before it failed:

``keep``
    They stay taken, as Fig. 7 is written (lines 7-8 clear the bits, nothing sets them back).
``release``
    They are given back before the next request is scheduled.

Order: the models schedule request by request, in the order given, each one through all its
levels before the next (the order the pipelined hardware sees). For ``level-wise`` with
``keep`` this gives exactly the result of Fig. 7's level-by-level loop
(:func:`level_wise_by_level`): level ``h`` only ever sees the requests that reached it, in
the same order, and nothing a higher level does changes it. With ``release`` the two orders
differ; the models use request by request.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ...spec.scheduler import GeneralizedFatTree, general_tree
from ...spec.topology import FatTree, Link
from ..coverage import Coverage, CoverPoint
from .scheduler_coverage import SchedulerCounter, cover_points

__all__ = [
    "ALGORITHMS",
    "FAILURE_MODES",
    "Grant",
    "LinkState",
    "SchedulerModel",
    "schedule",
    "level_wise_by_level",
    "optimal_ports",
    "optimal_rounds",
    "bipartite_edge_colouring",
    "check_partial_permutation",
    "permutation_conflict",
]

ALGORITHMS = ("level-wise", "greedy", "random", "optimal")
FAILURE_MODES = ("keep", "release")


@dataclass(frozen=True)
class Grant:
    """The outcome of one request.

    ``ports`` holds ``P_0 .. P_{H-1}`` when ``granted``; for a refused request it holds the
    ports chosen below the level where it failed (``failed_level``). ``round`` numbers the
    round of a multi-round schedule (0 otherwise).
    """

    src: int
    dst: int
    granted: bool
    ports: tuple[int, ...]
    height: int
    failed_level: int | None = None
    round: int = 0

    def port_vector(self, levels: int) -> tuple[int, ...]:
        """``P_0 .. P_{levels-2}``, zero where unused: the hardware's result field."""
        return self.ports + (0,) * (levels - 1 - len(self.ports))


def _check_choice(name: str, value, choices: Sequence[str]) -> str:
    if value not in choices:
        known = ", ".join(choices)
        raise ValueError(f"{name} must be one of {known}, not {value!r}")
    return value


class LinkState:
    """``Ulink(h, t)`` and ``Dlink(h, t)`` availability vectors, bit ``i`` = port ``i``, 1 =
    free (the paper's convention), for the link levels ``0 .. l-2`` (``tree``: a ``FatTree``
    or a ``GeneralizedFatTree``; level ``h`` has a vector per switch of that level)."""

    def __init__(self, tree: FatTree | GeneralizedFatTree):
        self.tree = general_tree(tree)
        self.full = (1 << self.tree.w) - 1
        self.clear()

    def clear(self) -> None:
        counts = self.tree.switch_counts
        self.up = [[self.full] * counts[h] for h in range(self.tree.levels - 1)]
        self.down = [[self.full] * counts[h] for h in range(self.tree.levels - 1)]

    def vectors(self, direction: str) -> list[list[int]]:
        return self.up if direction == "up" else self.down

    def is_free(self, link: Link) -> bool:
        return bool(self.vectors(link.direction)[link.level][link.switch] >> link.port & 1)

    def take(self, link: Link) -> None:
        self.vectors(link.direction)[link.level][link.switch] &= ~(1 << link.port)

    def give(self, link: Link) -> None:
        self.vectors(link.direction)[link.level][link.switch] |= 1 << link.port

    def taken(self) -> set[Link]:
        return {
            Link(direction, h, t, i)
            for direction in ("up", "down")
            for h, row in enumerate(self.vectors(direction))
            for t, bits in enumerate(row)
            for i in range(self.tree.w)
            if not bits >> i & 1
        }


def _lowest(bits: int) -> int:
    return (bits & -bits).bit_length() - 1


class SchedulerModel:
    """On-line scheduler: one request at a time against the current link state.

    Parameters
    ----------
    tree : FatTree or GeneralizedFatTree
        FT(l, w), or FT(l, m, w); :attr:`tree` is always the ``GeneralizedFatTree``.
    algorithm : {"level-wise", "greedy", "random"}
        ``"optimal"`` is off-line only (see :func:`schedule`).
    failure_mode : {"keep", "release"}
    seed : int
        Seed of the ``random`` algorithm's ``random.Random``.

    Notes
    -----
    ``at`` of :meth:`request`, :meth:`release` and :meth:`clear` is the cycle the pipelined
    hardware took the command (a CLEAR: first offered it); only coverage reads it.
    """

    #: What :meth:`start_coverage` counts into (None: not counted).
    coverage: Coverage | None = None
    _counter: SchedulerCounter | None = None

    def __init__(
        self,
        tree: FatTree | GeneralizedFatTree,
        algorithm: str = "level-wise",
        failure_mode: str = "keep",
        seed: int = 0,
    ):
        self.tree = general_tree(tree)
        _check_choice("algorithm", algorithm, ALGORITHMS[:3])
        self.algorithm = algorithm
        self.failure_mode = _check_choice("failure_mode", failure_mode, FAILURE_MODES)
        self.rng = random.Random(seed)
        self.state = LinkState(self.tree)

    def cover_points(self) -> list[CoverPoint]:
        """The situations of Fig. 7 and of its pipeline (docs/scheduler.md, "Coverage")."""
        return cover_points(self.tree)

    def start_coverage(self) -> Coverage:
        """Count hits in :meth:`cover_points` from now on; the :class:`Coverage` to read.
        Only of the hardware's scheduler: level-wise, ``keep``."""
        if (self.algorithm, self.failure_mode) != ("level-wise", "keep"):
            raise ValueError(
                "cover points are the hardware's scheduler's: level-wise with keep, not "
                f"{self.algorithm} with {self.failure_mode}"
            )
        self._counter = SchedulerCounter(self.tree)
        self.coverage = self._counter.coverage
        return self.coverage

    def clone(self) -> SchedulerModel:
        """An independent copy in the same state (its coverage too), to try commands on."""
        return copy.deepcopy(self)

    def clear(self, at: int | None = None) -> None:
        """Every link free again."""
        self.state.clear()
        if self._counter is not None:
            self._counter.clear(at)

    def request(self, src: int, dst: int, at: int | None = None) -> Grant:
        tree = self.tree
        height = tree.common_level(src, dst)
        if self.algorithm == "level-wise":
            ports, taken, failed = self._level_wise(src, dst, height, at)
        else:
            ports, taken, failed = self._local(src, dst, height)
        if failed is not None and self.failure_mode == "release":
            for link in taken:
                self.state.give(link)
        if self._counter is not None:
            self._counter.command("schedule", height, failed is None, at)
        return Grant(src, dst, failed is None, tuple(ports), height, failed)

    def _level_wise(self, src: int, dst: int, height: int, at: int | None = None):
        tree, up, down = self.tree, self.state.up, self.state.down
        s, d = src // tree.m, dst // tree.m
        ports, taken = [], []
        for h in range(height):
            avail = up[h][s] & down[h][d]
            if self._counter is not None:
                port = _lowest(avail) if avail else None
                self._counter.level(h, s, d, up[h][s], down[h][d], port, at)
            if not avail:
                return ports, taken, h
            i = _lowest(avail)
            up[h][s] &= ~(1 << i)
            down[h][d] &= ~(1 << i)
            taken += [Link("up", h, s, i), Link("down", h, d, i)]
            ports.append(i)
            s, d = tree.next_switch(h, s, i), tree.next_switch(h, d, i)
        return ports, taken, None

    def _local(self, src: int, dst: int, height: int):
        tree, state = self.tree, self.state
        s = src // tree.m
        ports, taken = [], []
        for h in range(height):
            free = state.up[h][s]
            if not free:
                return ports, taken, h
            if self.algorithm == "greedy":
                i = _lowest(free)
            else:
                i = self.rng.choice([p for p in range(tree.w) if free >> p & 1])
            link = Link("up", h, s, i)
            state.take(link)
            taken.append(link)
            ports.append(i)
            s = tree.next_switch(h, s, i)
        # Down the mirrored path, top first, as the message travels.
        for link in tree.down_path(dst, ports):
            if not state.is_free(link):
                return ports, taken, link.level
            state.take(link)
            taken.append(link)
        return ports, taken, None

    def release(self, src: int, dst: int, ports: Sequence[int], at: int | None = None) -> None:
        """Tear down an established connection: its up and down links become free.

        Raises ``ValueError`` if one of them is not taken (the connection does not exist).
        """
        links = self.tree.route(src, dst, ports)[1:-1]
        for link in links:
            if self.state.is_free(link):
                raise ValueError(
                    f"connection {src} -> {dst} with ports {tuple(ports)} is not established: "
                    f"{link} is free"
                )
        for link in links:
            self.state.give(link)
        if self._counter is not None:
            rows = [(link.direction, link.level, link.switch) for link in links]
            self._counter.access("release", rows, at, write=True)
            self._counter.command("release", len(ports), True, at)


def permutation_conflict(
    requests: Sequence[tuple[int, int]],
) -> tuple[int, str, int, int] | None:
    """The first request that makes ``requests`` not a partial permutation, as ``(k, role,
    node, earlier)``: request ``k``'s ``role`` (``"source"`` or ``"destination"``) ``node``
    already appears in request ``earlier``; None if every node sends and receives at most
    once (in one round each node has one cable to its leaf switch)."""
    sources: dict[int, int] = {}
    destinations: dict[int, int] = {}
    for k, (src, dst) in enumerate(requests):
        if src in sources:
            return k, "source", src, sources[src]
        if dst in destinations:
            return k, "destination", dst, destinations[dst]
        sources[src], destinations[dst] = k, k
    return None


def check_partial_permutation(tree, requests: Sequence[tuple[int, int]]) -> None:
    """Raise ``ValueError`` unless the nodes exist and :func:`permutation_conflict` finds
    nothing."""
    for src, dst in requests:
        tree.common_level(src, dst)  # range checks with the parameter's name
    conflict = permutation_conflict(requests)
    if conflict:
        k, role, node, earlier = conflict
        verb = "sends" if role == "source" else "receives"
        raise ValueError(f"request {k}: {role} {node} already {verb} in request {earlier}")


def level_wise_by_level(tree, requests: Sequence[tuple[int, int]]) -> list[Grant]:
    """Fig. 7 in the paper's loop order: all requests at level 0, then the survivors at level
    1, and so on (``keep`` mode: a refused request keeps the links it took)."""
    tree = general_tree(tree)
    state = LinkState(tree)
    current = [(k, src // tree.m, dst // tree.m) for k, (src, dst) in enumerate(requests)]
    heights = [tree.common_level(src, dst) for src, dst in requests]
    ports: list[list[int]] = [[] for _ in requests]
    failed: list[int | None] = [None] * len(requests)
    for h in range(tree.levels - 1):
        survivors = []
        for k, s, d in current:
            if heights[k] <= h:
                continue
            avail = state.up[h][s] & state.down[h][d]
            if not avail:
                failed[k] = h
                continue
            i = _lowest(avail)
            state.up[h][s] &= ~(1 << i)
            state.down[h][d] &= ~(1 << i)
            ports[k].append(i)
            survivors.append((k, tree.next_switch(h, s, i), tree.next_switch(h, d, i)))
        current = survivors
    return [
        Grant(src, dst, failed[k] is None, tuple(ports[k]), heights[k], failed[k])
        for k, (src, dst) in enumerate(requests)
    ]


def bipartite_edge_colouring(edges: Sequence[tuple[object, object]], colours: int) -> list[int]:
    """Colour the edges of a bipartite multigraph (``(left, right)`` pairs) with ``colours``
    colours so that edges sharing an end differ (Konig: possible iff every vertex has degree
    at most ``colours``). Alternating-path recolouring, O(edges * vertices).
    """
    left: dict[object, dict[int, int]] = {}
    right: dict[object, dict[int, int]] = {}
    colour = [-1] * len(edges)

    def free(at: dict[int, int]) -> int:
        for c in range(colours):
            if c not in at:
                return c
        raise ValueError(
            f"a vertex has more than {colours} edges, so {colours} colours are not enough"
        )

    for e, (u, v) in enumerate(edges):
        at_u, at_v = left.setdefault(u, {}), right.setdefault(v, {})
        a, b = free(at_u), free(at_v)
        if a in at_v:
            # Swap a and b along the a/b path from v. It alternates right -a-> left -b->
            # right ...; it enters left vertices through a-edges only, and u has no a-edge,
            # so it never reaches u: afterwards a is free at both ends.
            path, x, c, on_right = [], v, a, True
            while True:
                f = (right if on_right else left)[x].get(c)
                if f is None:
                    break
                path.append(f)
                x = edges[f][0] if on_right else edges[f][1]
                on_right, c = not on_right, b if c == a else a
            for f in path:
                del left[edges[f][0]][colour[f]]
                del right[edges[f][1]][colour[f]]
            for f in path:
                colour[f] = b if colour[f] == a else a
                left[edges[f][0]][colour[f]] = f
                right[edges[f][1]][colour[f]] = f
        colour[e] = a
        at_u[a] = e
        at_v[a] = e
    return colour


def optimal_ports(tree, requests: Sequence[tuple[int, int]]) -> list[tuple[int, ...]]:
    """Conflict-free port vectors for a partial permutation (every node sends at most once
    and receives at most once): the full FT(l, w) is rearrangeable, and so is FT(l, m, w)
    with ``w >= m`` (each switch has ``m <= w`` down links, so the degree bound below holds
    with ``m`` in place of ``w``). ``ValueError`` for ``w < m``.

    Level by level, the requests that climb above level ``h`` form a bipartite multigraph
    from their level-``h`` source switch ``s_h`` to their destination switch ``d_h``; an edge
    colouring with ``w`` colours gives ``P_h``. It exists because every vertex has degree at
    most ``w``: by induction every link below level ``h`` carries at most one request, and a
    switch has ``w`` down links (at level 0: ``w`` nodes, each sending once). Distinct
    colours at ``s_h`` mean distinct ``Ulink(h, s_h, P_h)``, at ``d_h`` distinct
    ``Dlink(h, d_h, P_h)``, so no link is used twice.
    """
    tree = _rearrangeable(tree)
    check_partial_permutation(tree, requests)
    w = tree.w
    heights = [tree.common_level(src, dst) for src, dst in requests]
    ports: list[list[int]] = [[] for _ in requests]
    at = [(src // tree.m, dst // tree.m) for src, dst in requests]
    for h in range(tree.levels - 1):
        active = [k for k, height in enumerate(heights) if height > h]
        if not active:
            break
        colours = bipartite_edge_colouring([at[k] for k in active], w)
        for k, c in zip(active, colours, strict=True):
            ports[k].append(c)
            s, d = at[k]
            at[k] = (tree.next_switch(h, s, c), tree.next_switch(h, d, c))
    return [tuple(p) for p in ports]


def _rearrangeable(tree) -> GeneralizedFatTree:
    tree = general_tree(tree)
    if tree.w < tree.m:
        raise ValueError(
            f"the optimal scheduler needs w >= m; {tree.name()} has fewer parents than "
            f"children per switch, so a permutation may not fit in one round"
        )
    return tree


def optimal_rounds(tree, requests: Sequence[tuple[int, int]]) -> list[Grant]:
    """Any request multiset in the fewest rounds possible: ``D`` rounds, ``D`` the largest
    number of requests one node sends or receives.

    Lower bound: a node has one cable to its leaf switch, so it sends (receives) at most one
    message per round. Upper bound: colour the bipartite multigraph sources -> destinations
    with ``D`` colours (Konig); each colour class is a partial permutation, which
    :func:`optimal_ports` routes in one round. Returns grants in request order, all granted,
    ``round`` = colour.
    """
    tree = _rearrangeable(tree)
    for src, dst in requests:
        tree.common_level(src, dst)
    if not requests:
        return []
    load = max(
        max(_counts(src for src, _ in requests).values()),
        max(_counts(dst for _, dst in requests).values()),
    )
    colours = bipartite_edge_colouring(list(requests), load)
    grants: list[Grant | None] = [None] * len(requests)
    for r in range(load):
        members = [k for k, c in enumerate(colours) if c == r]
        vectors = optimal_ports(tree, [requests[k] for k in members])
        for k, ports in zip(members, vectors, strict=True):
            src, dst = requests[k]
            grants[k] = Grant(src, dst, True, ports, len(ports), None, r)
    return grants  # type: ignore[return-value]


def _counts(items: Iterable[int]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for x in items:
        counts[x] = counts.get(x, 0) + 1
    return counts


def schedule(
    tree: FatTree | GeneralizedFatTree,
    requests: Sequence[tuple[int, int]],
    algorithm: str = "level-wise",
    *,
    failure_mode: str = "keep",
    seed: int = 0,
    rounds: bool = False,
) -> list[Grant]:
    """Schedule ``requests`` (``(src, dst)`` pairs) from an empty network.

    With ``rounds=False`` the requests must be a partial permutation and are scheduled in
    one round: the grants say which succeeded. With ``rounds=True`` any multiset is accepted
    and scheduled round after round until everything is granted: ``optimal`` uses the
    minimum (:func:`optimal_rounds`); the others, in each round, take the pending requests in
    order whose source and destination are still unused in that round, schedule them from an
    empty network, and leave the refused ones for the next round.
    """
    _check_choice("algorithm", algorithm, ALGORITHMS)
    _check_choice("failure_mode", failure_mode, FAILURE_MODES)
    requests = [tuple(r) for r in requests]
    if not rounds:
        check_partial_permutation(tree, requests)
        if algorithm == "optimal":
            return [
                Grant(src, dst, True, ports, len(ports))
                for (src, dst), ports in zip(requests, optimal_ports(tree, requests), strict=True)
            ]
        model = SchedulerModel(tree, algorithm, failure_mode, seed)
        return [model.request(src, dst) for src, dst in requests]
    if algorithm == "optimal":
        return optimal_rounds(tree, requests)
    model = SchedulerModel(tree, algorithm, failure_mode, seed)
    pending = list(range(len(requests)))
    grants: list[Grant | None] = [None] * len(requests)
    r = 0
    while pending:
        model.clear()
        sources: set[int] = set()
        destinations: set[int] = set()
        left = []
        for k in pending:
            src, dst = requests[k]
            if src in sources or dst in destinations:
                left.append(k)
                continue
            sources.add(src)
            destinations.add(dst)
            g = model.request(src, dst)
            if g.granted:
                grants[k] = Grant(src, dst, True, g.ports, g.height, None, r)
            else:
                left.append(k)
        pending, r = left, r + 1
    return grants  # type: ignore[return-value]
