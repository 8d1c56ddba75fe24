"""Stanfill (1987), section 3.10: the hypercube's many routes (``hypercube-paths``).

"There are many routes connecting any pair of nodes. This leads to added flexibility in
avoiding congestion and traffic jams" (the figure: "A 4-Cube, showing two independent
paths"). Counted exactly, for every pair of nodes of the ``k``-cube: a pair at Hamming
distance ``h`` has ``h!`` shortest paths (the ``h`` dimensions to cross, in any order) and
``k`` node-disjoint paths (Menger: the cube is ``k``-connected; ``h`` of them shortest).

The graph is the cube of :mod:`fattree.spec.hypercube` (node ``n``'s wire ``i`` to
``neighbour(n, i)``), the definitions the router hardware shares; the counts come from the
graph alone, not from the Hamming formula: shortest paths enumerated along breadth-first
distances, disjoint paths as a unit-capacity maximum flow over split nodes (each node but
the ends passes one path), decomposed into paths that are then checked to be disjoint.
"""

from __future__ import annotations

import argparse
import math
from collections import deque

from ...spec.hypercube import neighbour, relative_address
from . import Experiment, Result, counted, lg_sizes

__all__ = [
    "EXPERIMENTS",
    "distances",
    "shortest_paths",
    "disjoint_paths",
    "check_disjoint",
]

#: Largest dimension checked: every pair of the 7-cube takes about a minute.
MAX_PATH_DIM = 7


def _neighbours(node: int, dim: int) -> list[int]:
    return [neighbour(node, wire) for wire in range(dim)]


def distances(dst: int, dim: int) -> list[int]:
    """Breadth-first distance of every node to ``dst`` over the cube's wires."""
    dist = [-1] * (1 << dim)
    dist[dst] = 0
    queue = deque([dst])
    while queue:
        node = queue.popleft()
        for nxt in _neighbours(node, dim):
            if dist[nxt] < 0:
                dist[nxt] = dist[node] + 1
                queue.append(nxt)
    return dist


def shortest_paths(src: int, dst: int, dim: int, dist: list[int] | None = None) -> list:
    """Every shortest path ``src -> dst`` (node lists), each step one wire closer."""
    dist = dist if dist is not None else distances(dst, dim)
    paths = [[src]]
    for _ in range(dist[src]):
        paths = [
            path + [nxt]
            for path in paths
            for nxt in _neighbours(path[-1], dim)
            if dist[nxt] == dist[path[-1]] - 1
        ]
    return paths


def disjoint_paths(src: int, dst: int, dim: int, dist: list[int] | None = None) -> list:
    """A largest set of paths ``src -> dst`` that share no node but their ends: a maximum
    flow of unit capacities (Edmonds-Karp) where node ``v`` is split into ``(v, in)`` ->
    ``(v, out)``, then taken apart into paths. With ``dist`` (distances to ``dst``) only
    the steps one wire closer are allowed: the largest set of disjoint shortest paths."""
    cap: dict[tuple, dict[tuple, int]] = {}

    def arc(a, b):
        cap.setdefault(a, {})[b] = cap.get(a, {}).get(b, 0) + 1
        cap.setdefault(b, {}).setdefault(a, 0)

    for v in range(1 << dim):
        if v not in (src, dst):
            arc((v, "in"), (v, "out"))
        tail = (v, "out") if v not in (src, dst) else (v, "in")
        for w in _neighbours(v, dim):
            if dist is None or dist[w] == dist[v] - 1:
                arc(tail, (w, "in"))
    source, sink = (src, "in"), (dst, "in")
    while True:  # augment along a shortest residual path until none is left
        came = {source: None}
        queue = deque([source])
        while queue and sink not in came:
            a = queue.popleft()
            for b, c in cap[a].items():
                if c > 0 and b not in came:
                    came[b] = a
                    queue.append(b)
        if sink not in came:
            break
        b = sink
        while came[b] is not None:
            a = came[b]
            cap[a][b] -= 1
            cap[b][a] += 1
            b = a
    return _decompose(cap, source, sink, dim, dist)


def _decompose(cap, source, sink, dim, dist) -> list[list[int]]:
    """The flow's paths: follow arcs that carry flow (forward arcs with spare reverse
    capacity) from the source until the sink, using each once."""
    forward = set()
    for v in range(1 << dim):
        tail = (v, "in") if (v, "out") not in cap else (v, "out")
        for w in _neighbours(v, dim):
            if (dist is None or dist[w] == dist[v] - 1) and cap[(w, "in")].get(tail, 0) > 0:
                forward.add((v, w))
    paths = []
    for first in sorted(w for v, w in forward if v == source[0]):
        path = [source[0], first]
        while path[-1] != sink[0]:
            path.append(next(w for v, w in sorted(forward) if v == path[-1]))
        paths.append(path)
    return paths


def check_disjoint(paths: list[list[int]], src: int, dst: int, dim: int) -> bool:
    """The paths run ``src -> dst`` over the cube's wires and share no node but the ends."""
    inner: list[int] = []
    for path in paths:
        if path[0] != src or path[-1] != dst:
            return False
        if any(b not in _neighbours(a, dim) for a, b in zip(path, path[1:], strict=False)):
            return False
        inner += path[1:-1]
    return len(inner) == len(set(inner)) and len({tuple(p) for p in paths}) == len(paths)


def pair_counts(src: int, dst: int, dim: int) -> tuple[int, int, int, int]:
    """``(h, shortest paths, disjoint paths, disjoint shortest paths)`` of one pair, each
    path set checked."""
    h = relative_address(src, dst).bit_count()
    dist = distances(dst, dim)
    shortest = shortest_paths(src, dst, dim, dist)
    if len({tuple(p) for p in shortest}) != len(shortest) or any(len(p) != h + 1 for p in shortest):
        raise AssertionError(f"{src} -> {dst}: shortest paths repeat or have the wrong length")
    disjoint = disjoint_paths(src, dst, dim)
    disjoint_short = disjoint_paths(src, dst, dim, dist)
    for paths in (disjoint, disjoint_short):
        if not check_disjoint(paths, src, dst, dim):
            raise AssertionError(f"{src} -> {dst}: the flow's paths are not disjoint: {paths}")
    return h, len(shortest), len(disjoint), len(disjoint_short)


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dims",
        type=lg_sizes(1, MAX_PATH_DIM),
        default=lg_sizes(1, MAX_PATH_DIM)("1..6"),
        help=f"cube dimensions k (1..{MAX_PATH_DIM}; default 1..6, about 7 s; 7 about 40 s)",
    )


def _dim_rows(dim: int) -> list[list]:
    """Per Hamming distance, over every unordered pair of the ``dim``-cube: the pairs, the
    range of each count, and the paper's value beside it."""
    by_h: dict[int, list[tuple[int, int, int]]] = {}
    for src in range(1 << dim):
        for dst in range(src + 1, 1 << dim):
            h, *counts = pair_counts(src, dst, dim)
            by_h.setdefault(h, []).append(tuple(counts))
    rows = []
    for h, counts in sorted(by_h.items()):
        shortest, disjoint, short_disjoint = zip(*counts, strict=True)
        rows.append(
            [
                dim,
                h,
                len(counts),
                f"{min(shortest)}..{max(shortest)}",
                math.factorial(h),
                f"{min(disjoint)}..{max(disjoint)}",
                dim,
                f"{min(short_disjoint)}..{max(short_disjoint)}",
                all(c == (math.factorial(h), dim, h) for c in counts),
            ]
        )
    return rows


def _run(args, progress=lambda text: None) -> Result:
    dims = list(args.dims)
    rows = [row for dim in counted(progress, dims) for row in _dim_rows(dim)]
    return Result(
        "hypercube-paths",
        {"dims": dims},
        [
            "k",
            "h",
            "pairs",
            "shortest paths",
            "h!",
            "disjoint paths",
            "k (Menger)",
            "disjoint shortest",
            "all as stated",
        ],
        rows,
        notes=[
            "every unordered pair of distinct nodes of the k-cube, grouped by Hamming "
            "distance h; counts as min..max over the pairs: shortest paths enumerated, "
            "node-disjoint paths by maximum flow (all lengths, and shortest ones only), each "
            "flow's paths checked disjoint; all as stated: every pair has h! shortest, k "
            "disjoint and h disjoint shortest paths",
        ],
    )


EXPERIMENTS = [
    Experiment(
        "hypercube-paths",
        "Stanfill 1987 sec. 3.10: shortest (h!) and node-disjoint (k) paths of every pair of "
        "the k-cube",
        _args,
        _run,
    ),
]
