"""Pippenger partial concentrator graphs and their cascades, as plain data (no Amaranth).

Leiserson (Fat-Trees, 1985, section IV) builds a fat-tree node's concentrator switches from
Pippenger's (r, s, alpha) partial concentrator graphs: bipartite graphs with r inputs and
s = 2r/3 outputs, every input of degree at most 6 and every output of degree at most 9, in
which any k <= alpha*s inputs (alpha = 3/4) reach k distinct outputs by vertex-disjoint paths.
Pippenger's proof is probabilistic, so here a graph is drawn from a seeded random
construction and then *verified*; the alpha each graph actually achieves is measured and a
graph below the target is rebuilt with the next seed.

For a bipartite graph, "k inputs reach k outputs by disjoint paths" is a matching, and by
Hall's theorem every set of at most k inputs can be matched iff every set S of at most k
inputs has at least |S| neighbours. So a graph achieves ``k`` (alpha = k/s) when the smallest
Hall violator (|N(S)| < |S|) has k + 1 inputs:

* ``exhaustive`` (r <= :data:`EXHAUSTIVE_MAX_INPUTS`): every subset of inputs is checked, so
  ``k`` is exact;
* ``sampled`` (larger r): greedy adversarial sets (grow S by the input that adds the fewest
  new neighbours, from every start input) and random sets of the target size checked by
  maximum matching. No violator smaller than ``k + 1`` was found; that is evidence, not proof.

Construction choices the paper leaves open (see ``docs/leiserson.md``):

* ``s >= r``: no concentration is needed; the "graph" is the identity (input i -> output i).
* ``r <= 9`` and ``s <= 6``: the complete bipartite graph fits the degree bounds and is a full
  concentrator (alpha = 1), so small switches near the leaves use it.
* otherwise: every input gets ``min(6, s)`` distinct random outputs, output degrees as even
  as possible (at most ``ceil(6r/s)``, so at most 9 exactly when s >= 2r/3), drawn as a random
  configuration with repeated edges swapped away.

A :class:`Cascade` pastes stages outputs to inputs, ``r -> ceil(2r/3) -> ... -> s``, for any
concentration ratio in ``ceil(log_{3/2}(r/s))`` stages (constant depth for a constant ratio).
Since each stage is a partial concentrator on its own, any set of at most
``min(k_stage)`` active inputs is routed stage by stage by any maximum matching.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from fractions import Fraction

from ..params import check_int_range, check_positive_int

__all__ = [
    "MAX_INPUT_DEGREE",
    "MAX_OUTPUT_DEGREE",
    "EXHAUSTIVE_MAX_INPUTS",
    "TARGET_ALPHA",
    "BipartiteGraph",
    "Verification",
    "BuiltStage",
    "Cascade",
    "CascadeRouting",
    "random_partial_concentrator",
    "verify",
    "verify_exhaustive",
    "verify_sampled",
    "build_partial_concentrator",
    "build_cascade",
    "cascade_sizes",
    "max_matching",
]

MAX_INPUT_DEGREE = 6
MAX_OUTPUT_DEGREE = 9
#: Hall's condition is checked on every subset up to this many inputs (2^20 neighbourhoods).
EXHAUSTIVE_MAX_INPUTS = 20
TARGET_ALPHA = Fraction(3, 4)


@dataclass(frozen=True)
class BipartiteGraph:
    """A bipartite graph from ``r`` inputs to ``s`` outputs.

    ``adjacency[i]`` lists input i's outputs; the position of an output in that list is the
    *edge index* a switch decision selects (the decision bits of the message header).
    """

    r: int
    s: int
    adjacency: tuple[tuple[int, ...], ...]
    kind: str = "random"
    seed: int | None = None

    def __post_init__(self):
        if len(self.adjacency) != self.r:
            raise ValueError(f"adjacency has {len(self.adjacency)} rows for {self.r} inputs")
        for i, row in enumerate(self.adjacency):
            if len(set(row)) != len(row):
                raise ValueError(f"input {i} has a repeated edge: {row}")
            if any(not 0 <= j < self.s for j in row):
                raise ValueError(f"input {i} has an edge outside 0..{self.s - 1}: {row}")

    @property
    def input_degree(self) -> int:
        return max((len(row) for row in self.adjacency), default=0)

    @property
    def output_degrees(self) -> list[int]:
        degrees = [0] * self.s
        for row in self.adjacency:
            for j in row:
                degrees[j] += 1
        return degrees

    @property
    def output_degree(self) -> int:
        return max(self.output_degrees, default=0)

    @property
    def decision_bits(self) -> int:
        """Header bits a message spends on this stage: the edge index, MSB first (>= 1)."""
        return max(1, (self.input_degree - 1).bit_length())

    @property
    def edges(self) -> int:
        return sum(len(row) for row in self.adjacency)

    def neighbours(self, inputs) -> set[int]:
        return {j for i in inputs for j in self.adjacency[i]}


def max_matching(graph: BipartiteGraph, inputs, rng=None) -> dict[int, int]:
    """A maximum matching of ``inputs`` into the outputs: ``{input: output}``.

    Kuhn's augmenting paths, inputs tried in sorted order and edges in adjacency order, so the
    result is deterministic; with ``rng`` (a ``random.Random``) both in random order, so that
    every edge gets used, not only the ones the deterministic order prefers.
    """
    owner: dict[int, int] = {}  # output -> input

    def augment(i: int, seen: set[int]) -> bool:
        edges = graph.adjacency[i]
        for j in edges if rng is None else rng.sample(edges, len(edges)):
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    order = sorted(set(inputs))
    for i in order if rng is None else rng.sample(order, len(order)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


def _identity(r: int, s: int) -> BipartiteGraph:
    return BipartiteGraph(r, s, tuple((i,) for i in range(r)), kind="identity")


def _complete(r: int, s: int) -> BipartiteGraph:
    return BipartiteGraph(r, s, tuple(tuple(range(s)) for _ in range(r)), kind="complete")


def random_partial_concentrator(r: int, s: int, seed: int) -> BipartiteGraph:
    """One draw of the random construction (not verified). Needs ``2r/3 <= s < r``."""
    check_positive_int("r", r)
    check_int_range("s", s, 1, r - 1)
    if 3 * s < 2 * r:
        raise ValueError(f"s must be at least 2r/3 = {Fraction(2 * r, 3)} for r = {r}, not {s}")
    rng = random.Random(f"pippenger-{r}-{s}-{seed}")
    degree = min(MAX_INPUT_DEGREE, s)
    total = degree * r
    # Output stubs: every output gets floor(total/s) or ceil(total/s) of them (<= 9).
    stubs = [j for j in range(s) for _ in range(total // s)]
    stubs += rng.sample(range(s), total % s)
    rng.shuffle(stubs)
    rows = [stubs[i * degree : (i + 1) * degree] for i in range(r)]
    # Swap repeated edges away: exchange a repeated stub with a random stub of another input
    # when that makes neither row repeat. Terminates quickly since degree <= s.
    for _ in range(100 * total):
        bad = [(i, k) for i, row in enumerate(rows) for k in range(degree) if row.count(row[k]) > 1]
        if not bad:
            break
        i, k = rng.choice(bad)
        i2, k2 = rng.randrange(r), rng.randrange(degree)
        a, b = rows[i][k], rows[i2][k2]
        if i2 != i and b not in rows[i] and a not in rows[i2]:
            rows[i][k], rows[i2][k2] = b, a
    else:  # pragma: no cover - would need an adversarial RNG
        raise RuntimeError(f"could not remove repeated edges for r={r}, s={s}, seed={seed}")
    return BipartiteGraph(r, s, tuple(tuple(sorted(row)) for row in rows), "random", seed)


@dataclass(frozen=True)
class Verification:
    """What a graph was shown to achieve: every set of at most ``k`` inputs is matchable.

    ``method`` is ``"exhaustive"`` (k exact) or ``"sampled"`` (no smaller violator found).
    ``witness`` is a smallest Hall violator found (``k + 1`` inputs), if any.
    """

    k: int
    s: int
    method: str
    sets_checked: int
    witness: tuple[int, ...] | None = None

    @property
    def alpha(self) -> Fraction:
        return Fraction(self.k, self.s)


def _popcount(values):
    import numpy as np

    return np.bitwise_count(values)


def verify_exhaustive(graph: BipartiteGraph) -> Verification:
    """Hall's condition on every subset of inputs (numpy, 2^r neighbourhood masks)."""
    import numpy as np

    r, s = graph.r, graph.s
    if r > EXHAUSTIVE_MAX_INPUTS:
        raise ValueError(f"exhaustive verification is limited to r <= {EXHAUSTIVE_MAX_INPUTS}")
    if s > 63:
        raise ValueError("exhaustive verification needs s <= 63")
    adj = [sum(1 << j for j in row) for row in graph.adjacency]
    nb = np.zeros(1 << r, dtype=np.uint64)
    for b in range(r):  # masks with top bit b: neighbourhood of the rest OR input b's
        nb[1 << b : 2 << b] = nb[: 1 << b] | np.uint64(adj[b])
    sizes = _popcount(np.arange(1 << r, dtype=np.uint64))
    deficient = _popcount(nb) < sizes
    if not deficient.any():
        return Verification(min(r, s), s, "exhaustive", 1 << r)
    sizes_bad = np.where(deficient, sizes, r + 1)
    mask = int(np.argmin(sizes_bad))
    witness = tuple(i for i in range(r) if mask >> i & 1)
    return Verification(len(witness) - 1, s, "exhaustive", 1 << r, witness)


def verify_sampled(graph: BipartiteGraph, samples: int = 200, seed: int = 0) -> Verification:
    """Search for small Hall violators: greedy adversarial growth and random matchings."""
    rng = random.Random(f"verify-{graph.r}-{graph.s}-{seed}")
    r, s = graph.r, graph.s
    best: tuple[int, ...] | None = None
    checked = 0
    by_output: list[list[int]] = [[] for _ in range(s)]
    for i, row in enumerate(graph.adjacency):
        for j in row:
            by_output[j].append(i)
    starts = list(range(r))
    rng.shuffle(starts)
    limit = s + 1 if best is None else len(best)
    for start in starts[:samples]:
        # Grow S greedily by the input adding the fewest new outputs; candidates are inputs
        # sharing an output with S (others add a full row), ties broken at random.
        chosen = [start]
        in_s = {start}
        nbh = set(graph.adjacency[start])
        while len(nbh) >= len(chosen) and len(chosen) < limit:
            candidates = {i for j in nbh for i in by_output[j]} - in_s
            if not candidates:
                candidates = set(range(r)) - in_s
            cost = {i: len(set(graph.adjacency[i]) - nbh) for i in candidates}
            low = min(cost.values())
            pick = rng.choice(sorted(i for i, c in cost.items() if c == low))
            chosen.append(pick)
            in_s.add(pick)
            nbh.update(graph.adjacency[pick])
        checked += 1
        if len(nbh) < len(chosen) and (best is None or len(chosen) < len(best)):
            best = tuple(sorted(chosen))
            limit = len(best)
    # Random sets just below the best violator (or of the target size) by maximum matching.
    size = min(r, (len(best) - 1) if best else int(TARGET_ALPHA * s))
    for _ in range(samples):
        subset = rng.sample(range(r), size)
        checked += 1
        if len(max_matching(graph, subset)) < size:
            best = _shrink_violator(graph, subset)
            size = len(best) - 1
            if size < 1:
                break
    k = (len(best) - 1) if best else min(r, s)
    return Verification(k, s, "sampled", checked, best)


def _shrink_violator(graph: BipartiteGraph, subset) -> tuple[int, ...]:
    """From an unmatchable set, a Hall violator (inputs reachable by alternating paths)."""
    matching = max_matching(graph, subset)
    owner = {j: i for i, j in matching.items()}
    free = [i for i in subset if i not in matching]
    seen_in, stack = {free[0]}, [free[0]]
    while stack:
        i = stack.pop()
        for j in graph.adjacency[i]:
            k = owner.get(j)
            if k is not None and k not in seen_in:
                seen_in.add(k)
                stack.append(k)
    return tuple(sorted(seen_in))


def verify(graph: BipartiteGraph, samples: int = 200, seed: int = 0) -> Verification:
    """Exhaustive for small r, sampled otherwise; identity and complete graphs are exact."""
    if graph.kind in ("identity", "complete"):
        return Verification(min(graph.r, graph.s), graph.s, "exact", 0)
    if graph.r <= EXHAUSTIVE_MAX_INPUTS:
        return verify_exhaustive(graph)
    return verify_sampled(graph, samples, seed)


@dataclass(frozen=True)
class BuiltStage:
    graph: BipartiteGraph
    verification: Verification
    #: How many seeds were rejected (alpha below target) before this graph.
    rebuilds: int


@functools.lru_cache(maxsize=512)
def build_partial_concentrator(
    r: int,
    s: int | None = None,
    *,
    seed: int = 0,
    target: Fraction = TARGET_ALPHA,
    samples: int = 200,
    max_rebuilds: int = 100,
) -> BuiltStage:
    """A verified (r, s, alpha >= target) partial concentrator; s defaults to ceil(2r/3).

    Seeds ``seed, seed + 1, ...`` are drawn until one verifies; ``rebuilds`` counts the
    rejected ones. Raises ``RuntimeError`` after ``max_rebuilds`` failures.
    """
    check_positive_int("r", r)
    if s is None:
        s = max(1, -(-2 * r // 3))
    check_positive_int("s", s)
    if s >= r:
        graph = _identity(r, s)
        return BuiltStage(graph, verify(graph), 0)
    if r <= MAX_OUTPUT_DEGREE and s <= MAX_INPUT_DEGREE:
        graph = _complete(r, s)
        return BuiltStage(graph, verify(graph), 0)
    if 3 * s < 2 * r:
        raise ValueError(f"s must be at least 2r/3 = {Fraction(2 * r, 3)} for r = {r}, not {s}")
    for attempt in range(max_rebuilds + 1):
        graph = random_partial_concentrator(r, s, seed + attempt)
        verification = verify(graph, samples, seed + attempt)
        if verification.alpha >= target:
            return BuiltStage(graph, verification, attempt)
    raise RuntimeError(
        f"no ({r}, {s}) partial concentrator with alpha >= {target} in {max_rebuilds + 1} seeds"
    )


def cascade_sizes(r: int, s: int) -> list[int]:
    """Stage boundaries ``[r, ceil(2r/3), ..., s]``; ``[r]`` when ``s >= r`` (no stage).

    Once at most 9 wires remain and s <= 6, one complete bipartite stage finishes the job.
    """
    sizes = [r]
    while sizes[-1] > s:
        if sizes[-1] <= MAX_OUTPUT_DEGREE and s <= MAX_INPUT_DEGREE:
            sizes.append(s)  # one complete bipartite stage does the rest
        else:
            sizes.append(max(s, -(-2 * sizes[-1] // 3)))
    return sizes


@dataclass(frozen=True)
class CascadeRouting:
    """The setting of a cascade for one set of active inputs.

    ``choices[t]`` maps each active input of stage t to the edge index it takes;
    ``paths[i]`` is the list of vertices input i visits (stage-0 input, then each stage's
    output), or ``None`` if i was lost; ``outputs[i]`` is its final output.
    """

    choices: list[dict[int, int]]
    paths: dict[int, list[int] | None]

    @property
    def outputs(self) -> dict[int, int | None]:
        return {i: (p[-1] if p else None) for i, p in self.paths.items()}

    @property
    def lost(self) -> list[int]:
        return sorted(i for i, p in self.paths.items() if p is None)


@dataclass(frozen=True)
class Cascade:
    """Partial concentrator stages pasted outputs to inputs: ``r`` inputs to ``s`` outputs."""

    r: int
    s: int
    stages: tuple[BuiltStage, ...] = field(default=())

    @property
    def guaranteed(self) -> int:
        """Every set of at most this many active inputs is routed (alpha-derated capacity)."""
        if not self.stages:
            return min(self.r, self.s)
        return min(stage.verification.k for stage in self.stages)

    @property
    def depth(self) -> int:
        return len(self.stages)

    @property
    def decision_bits(self) -> list[int]:
        return [stage.graph.decision_bits for stage in self.stages]

    @property
    def rebuilds(self) -> int:
        return sum(stage.rebuilds for stage in self.stages)

    def route(self, active, rng=None) -> CascadeRouting:
        """Route ``active`` inputs stage by stage, each by a maximum matching (a random one
        with ``rng``: :func:`max_matching`)."""
        active = sorted(set(active))
        if any(not 0 <= i < self.r for i in active):
            raise ValueError(f"active inputs must be in 0..{self.r - 1}, not {active}")
        paths: dict[int, list[int] | None] = {i: [i] for i in active}
        choices = []
        if not self.stages:
            for i in active:
                if i >= self.s:
                    paths[i] = None
            return CascadeRouting(choices, paths)
        at = {i: i for i in active}  # original input -> its vertex at this stage's inputs
        for stage in self.stages:
            graph = stage.graph
            matching = max_matching(graph, at.values(), rng)
            choice = {v: graph.adjacency[v].index(o) for v, o in matching.items()}
            choices.append(choice)
            for i, v in list(at.items()):
                if v in matching:
                    at[i] = matching[v]
                    paths[i].append(at[i])
                else:
                    paths[i] = None
                    del at[i]
        return CascadeRouting(choices, paths)


@functools.lru_cache(maxsize=256)
def build_cascade(r: int, s: int, *, seed: int = 0, samples: int = 200) -> Cascade:
    """A cascade from ``r`` to ``s`` wires, every stage verified to alpha >= 3/4."""
    check_positive_int("r", r)
    check_positive_int("s", s)
    sizes = cascade_sizes(r, s)
    stages = tuple(
        build_partial_concentrator(a, b, seed=seed + 1000 * t, samples=samples)
        for t, (a, b) in enumerate(zip(sizes, sizes[1:]))  # noqa: B905 - py310
    )
    return Cascade(r, s, stages)
