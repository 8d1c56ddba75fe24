"""Collision models of Strumpen and Krishnamurthy (2005), sections 4 and 5.

* :func:`pr_c2` is Lemma 1's closed form of the two-message collision probability.
* :func:`pr_c2_exact` measures the same probability on the network's routing rule by
  enumerating every source, destination and up-port choice (small n);
  :func:`pr_c2_monte_carlo` samples it, with a confidence interval (any n up to 2^20+).
* :func:`model_one_rounds` and :func:`model_two_rounds` are the balls-and-bins Models I and
  II: delivery rounds of m messages tossed into ``b = 2n / lg n`` collision bins.
* :func:`model_one_distribution` is Model I's rounds distribution computed exactly (a Markov
  chain over the balls left, with the occupancy law of one toss), not sampled: the
  independent check of :func:`model_one_rounds` and of the experiments built on it.

The routing rule (shared with :mod:`fattree.sim.fast.circuit_rounds` and the hardware): a
message from ``src`` to ``dst`` climbs to level ``L``, the highest bit in which they differ,
turns there and descends. On its way up, the router at level ``l`` sends it out of up port
``p_l = r XOR src_l``, where ``r`` is that router's random bit for the round and ``src_l``
says whether it came in on port a (0) or b (1): one message alone takes a uniformly random
port, two arriving together take different ports. The router a message meets at level ``v``
is fixed by its subtree and its up choices below ``v`` (``sum p_i 2^i`` for ``i < v``), on
the way up and on the way down alike (the down path mirrors the up path). A message claims
one outgoing downstream wire per level ``v = L .. 0``, identified by
``(dst >> v, p_0 .. p_{v-1})``. Two messages collide when they need the same downstream wire
in the same round: one of them is rejected. (With circuits held to the end of the round, as
here, sharing a downstream wire is exactly the collision; see
:mod:`fattree.sim.fast.circuit_rounds` for the timing that can release a wire earlier.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...params import check_int_range, check_positive_int, check_power_of_two
from ...spec.bits import common_level, lg

__all__ = [
    "pr_c2",
    "pr_c2_bounds",
    "bins",
    "collide",
    "pr_c2_exact",
    "pr_c2_monte_carlo",
    "Estimate",
    "model_one_rounds",
    "model_two_rounds",
    "model_one_distribution",
    "MODEL_ONE_EXACT_MAX",
]


def pr_c2(n: int) -> float:
    """Lemma 1: ``(n^2 (lg n / 2 - 2/3) + 2/3) / (n - 1)^3``."""
    h = lg(n)
    return (n * n * (h / 2 - 2 / 3) + 2 / 3) / (n - 1) ** 3


def pr_c2_bounds(n: int) -> tuple[float, float]:
    """Lemma 1's bounds ``(lg n / 3n, lg n / 2n)``."""
    h = lg(n)
    return h / (3 * n), h / (2 * n)


def bins(n: int) -> int:
    """Corollary 1: the number of collision bins ``b = 2n / lg n``, rounded, at least 1."""
    return max(1, round(2 * n / lg(n)))


def _down_wires(dst: int, level: int, ports: tuple[int, ...]) -> set[tuple[int, int, int]]:
    """The downstream wires a message claims: ``(v, dst >> v, index of its level-v router)``."""
    wires = set()
    for v in range(level + 1):
        index = sum(p << i for i, p in enumerate(ports[:v]))
        wires.add((v, dst >> v, index))
    return wires


def collide(dst1: int, level1: int, ports1, dst2: int, level2: int, ports2) -> bool:
    """Whether two messages of one round, with their up-port choices, need a common
    downstream wire (so one of them is rejected)."""
    return bool(_down_wires(dst1, level1, tuple(ports1)) & _down_wires(dst2, level2, tuple(ports2)))


def _joint_port_choices(n: int, s1: int, l1: int, s2: int, l2: int):
    """Every joint outcome of the routers' random bits for two messages sent together, as
    ``(weight, ports1, ports2)``; a router both messages pass uses one bit for both."""
    outcomes = [(1.0, (), ())]
    for level in range(max(l1, l2)):
        grown = []
        for weight, p1, p2 in outcomes:
            up1, up2 = level < l1, level < l2
            i1 = sum(p << i for i, p in enumerate(p1))
            i2 = sum(p << i for i, p in enumerate(p2))
            shared = up1 and up2 and (s1 >> (level + 1)) == (s2 >> (level + 1)) and i1 == i2
            b1, b2 = (s1 >> level) & 1, (s2 >> level) & 1
            if shared:
                for r in (0, 1):
                    grown.append((weight / 2, p1 + (r ^ b1,), p2 + (r ^ b2,)))
            else:
                choices1 = (0, 1) if up1 else (None,)
                choices2 = (0, 1) if up2 else (None,)
                w = weight / (len(choices1) * len(choices2))
                for r1 in choices1:
                    for r2 in choices2:
                        grown.append(
                            (
                                w,
                                p1 if r1 is None else p1 + (r1 ^ b1,),
                                p2 if r2 is None else p2 + (r2 ^ b2,),
                            )
                        )
        outcomes = grown
    return outcomes


def pr_c2_exact(n: int, *, all_sources: bool = False) -> float:
    """Two-message collision probability of the network, by exact enumeration.

    Averages over destinations ``d1 != s1``, sources ``s2 != s1``, destinations ``d2 != s2``
    (Lemma 1's sample space of ``(n - 1)^3`` events) and every up-port choice. ``s1`` is
    fixed at node 0 as in the paper's proof, or averaged over all nodes with
    ``all_sources=True`` (the tree's symmetry makes the two equal; a test checks it).
    """
    lg(n)
    sources = range(n) if all_sources else [0]
    total = 0.0
    for s1 in sources:
        for d1 in range(n):
            if d1 == s1:
                continue
            l1 = common_level(s1, d1)
            for s2 in range(n):
                if s2 == s1:
                    continue
                for d2 in range(n):
                    if d2 == s2:
                        continue
                    l2 = common_level(s2, d2)
                    for weight, p1, p2 in _joint_port_choices(n, s1, l1, s2, l2):
                        if collide(d1, l1, p1, d2, l2, p2):
                            total += weight
    return total / (len(sources) * (n - 1) ** 3)


@dataclass(frozen=True)
class Estimate:
    """A Monte Carlo estimate with its 95 % confidence interval (normal approximation)."""

    value: float
    low: float
    high: float
    samples: int


def pr_c2_monte_carlo(n: int, samples: int, rng: np.random.Generator) -> Estimate:
    """Two-message collision probability of the network, sampled.

    Draws ``samples`` pairs of messages from Lemma 1's sample space (any ``s1``) and one
    outcome of the routers' random bits for each, applying the shared-router rule."""
    h = lg(n)
    check_positive_int("samples", samples)
    s1 = rng.integers(0, n, samples, dtype=np.int64)
    d1 = (s1 + 1 + rng.integers(0, n - 1, samples, dtype=np.int64)) % n
    s2 = (s1 + 1 + rng.integers(0, n - 1, samples, dtype=np.int64)) % n
    d2 = (s2 + 1 + rng.integers(0, n - 1, samples, dtype=np.int64)) % n
    l1, l2 = common_level(s1, d1), common_level(s2, d2)
    idx1 = np.zeros(samples, dtype=np.int64)  # up-path router index (sum p_i 2^i so far)
    idx2 = np.zeros(samples, dtype=np.int64)
    hit = np.zeros(samples, dtype=bool)
    for v in range(h):
        # Down wires at level v: both messages descend through level v, same (dst >> v,
        # router index): collision.
        both = (v <= l1) & (v <= l2)
        hit |= both & ((d1 >> v) == (d2 >> v)) & (idx1 == idx2)
        if v == h - 1:
            break
        up1, up2 = v < l1, v < l2
        shared = up1 & up2 & ((s1 >> (v + 1)) == (s2 >> (v + 1))) & (idx1 == idx2)
        r1 = rng.integers(0, 2, samples, dtype=np.int64)
        r2 = np.where(shared, r1, rng.integers(0, 2, samples, dtype=np.int64))
        idx1 = np.where(up1, idx1 | ((r1 ^ ((s1 >> v) & 1)) << v), idx1)
        idx2 = np.where(up2, idx2 | ((r2 ^ ((s2 >> v) & 1)) << v), idx2)
    p = float(hit.mean())
    half = 1.96 * math.sqrt(max(p * (1 - p), 1e-300) / samples)
    return Estimate(p, max(0.0, p - half), min(1.0, p + half), samples)


def _check_model_args(n: int, m: int) -> None:
    check_power_of_two("n", n, 2)
    check_int_range("m", m, 1, n)


def model_one_rounds(n: int, m: int, rng: np.random.Generator, *, b: int | None = None) -> int:
    """Model I: delivery rounds until ``m`` balls are delivered.

    Each round tosses the remaining balls into ``b`` collision bins (Corollary 1's
    ``2n / lg n`` by default); every nonempty bin delivers one ball, the rest are retried.
    """
    _check_model_args(n, m)
    b = bins(n) if b is None else check_positive_int("b", b)
    remaining, rounds = m, 0
    while remaining:
        occupied = np.count_nonzero(np.bincount(rng.integers(0, b, remaining), minlength=b))
        remaining -= int(occupied)
        rounds += 1
    return rounds


def model_two_rounds(n: int, m: int, rng: np.random.Generator, *, b: int | None = None) -> int:
    """Model II: Model I after a destination toss.

    The ``m`` balls first go into ``n`` destination bins; in every collision toss all balls
    of one destination land in the same collision bin (they would surely collide). Each
    nonempty collision bin delivers one ball, chosen uniformly among the balls in it.
    """
    _check_model_args(n, m)
    b = bins(n) if b is None else check_positive_int("b", b)
    counts = np.bincount(rng.integers(0, n, m), minlength=n)
    counts = counts[counts > 0].astype(np.int64)
    rounds = 0
    while counts.size:
        where = rng.integers(0, b, counts.size)
        # A ball chosen uniformly in each bin: exponential race, rate = balls of the group.
        key = rng.exponential(size=counts.size) / counts
        order = np.lexsort((key, where))
        first = np.ones(order.size, dtype=bool)
        first[1:] = where[order][1:] != where[order][:-1]
        counts[order[first]] -= 1
        counts = counts[counts > 0]
        rounds += 1
    return rounds


#: Largest m :func:`model_one_distribution` takes (its occupancy table is about m * b floats).
MODEL_ONE_EXACT_MAX = 8192


def model_one_distribution(
    n: int, m: int, *, b: int | None = None, tail: float = 1e-12
) -> np.ndarray:
    """Model I's number of delivery rounds, exactly: ``p[t - 1] = Pr[rounds = t]``.

    One toss of ``r`` balls into ``b`` bins leaves ``k`` bins occupied with the occupancy
    law ``q_r(k)``, built ball by ball (``q_r(k) = q_{r-1}(k) k/b + q_{r-1}(k-1) (b-k+1)/b``);
    ``k`` balls are delivered and ``r - k`` tossed again. The chain over the balls left is
    run until less than ``tail`` of the mass is still undelivered (that remainder is left
    off, so the sum falls short of 1 by at most ``tail``).
    """
    _check_model_args(n, m)
    check_int_range("m", m, 1, MODEL_ONE_EXACT_MAX)
    b = bins(n) if b is None else check_positive_int("b", b)
    if not (isinstance(tail, float) and 0 < tail < 1):
        raise ValueError(f"tail must be a float between 0 and 1, not {tail!r}")
    # occupancy[r][k]: Pr[k bins occupied | r balls], k = 0 .. min(r, b).
    occupancy = [np.ones(1)]
    for r in range(1, m + 1):
        prev = occupancy[-1]
        top = min(r, b)
        k = np.arange(top + 1, dtype=float)
        q = np.zeros(top + 1)
        q[: prev.size] += prev * k[: prev.size] / b
        q[1:] += prev[:top] * (b - k[1:] + 1) / b
        occupancy.append(q)
    left = np.zeros(m + 1)  # Pr[r balls still undelivered]
    left[m] = 1.0
    done, probabilities = 0.0, []
    while 1.0 - done > tail:
        nxt = np.zeros(m + 1)
        nxt[0] = left[0]
        for r in np.flatnonzero(left[1:]) + 1:
            q = occupancy[r]
            # k occupied bins deliver k balls: r - k remain, for k = 1 .. min(r, b).
            nxt[r - np.arange(1, q.size)] += left[r] * q[1:]
        probabilities.append(nxt[0] - done)
        done = nxt[0]
        left = nxt
    return np.array(probabilities)
