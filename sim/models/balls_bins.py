"""The analysis of Strumpen and Krishnamurthy (2005), sections 4-6, as exact computations.

* Equations (1)-(2): :func:`pr_kij` is the paper's table ``Pr[k, i, j]`` (the collision
  probability of ``m1: 0 -> i-subtree`` and ``m2: k-subtree -> j-subtree``);
  :func:`pr_c2_from_table` sums it by equation (1); :func:`pr_kij_network` measures every
  cell on the network's routing rule by exact enumeration (the rule of
  :mod:`fattree.sim.models.collision`).
* Equations (3)-(5): :func:`expected_empty`, :func:`expected_delivered`,
  :func:`expected_rejected` (exact, and the paper's ``e^{-m/b}`` bounds);
  :func:`var_empty`; :func:`occupancy` is the whole distribution of the number of nonempty
  bins (delivered balls) of one collision toss; :func:`toss` samples it.
* Theorem 1: :func:`rounds_tail` is Model I's exact distribution of delivery rounds (a
  Markov chain on the number of pending balls whose step is :func:`occupancy`);
  :func:`phase_success` is the exact probability of a "successful delivery round" of Phase
  I (fewer than ``2b/e`` empty bins) or Phase II (at least ``m/2`` delivered);
  :func:`proof_rounds` is the number of rounds the proof's Markov and Chernoff steps give
  (docs/circuit_tree.md, "The analysis, checked", derives the constants).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...params import check_int_range, check_positive_int, check_power_of_two
from ...spec.bits import common_level, lg
from .collision import _joint_port_choices, collide

__all__ = [
    "pr_kij",
    "pr_kij_table",
    "cell_weight",
    "row_sum",
    "pr_c2_from_table",
    "pr_c2_fraction",
    "pr_kij_network",
    "cell_members",
    "expected_empty",
    "expected_delivered",
    "expected_rejected",
    "var_empty",
    "bounds_3_to_5",
    "occupancy",
    "occupancies",
    "toss",
    "phase_success",
    "phase_success_bound",
    "rounds_tail",
    "ProofRounds",
    "proof_rounds",
    "P_PHASE_ONE",
    "P_PHASE_TWO",
    "MAX_CELLS",
]

#: Section 6.1: a Phase I round is successful with probability at least 1/2 (Markov).
P_PHASE_ONE = 0.5
#: Section 6.2: with alpha = 1/2, a Phase II round is successful w.p. at least 1 - 2/e.
P_PHASE_TWO = 1 - 2 / math.e


# -- equations (1)-(2) -----------------------------------------------------------------------


def _check_cell(n: int, k: int, i: int, j: int) -> int:
    h = lg(n)
    for name, value in (("k", k), ("i", i), ("j", j)):
        check_int_range(name, value, 0, h - 1)
    return h


def pr_kij(k: int, i: int, j: int) -> Fraction:
    """Equation (2): ``(j+2)/2^(i+1)`` for ``j < i = k`` (row ``i = k``), ``(i+2)/2^(k+1)``
    for ``i < j = k`` (column ``j = k``), ``(k+2)/2^(i+1)`` for ``i = j > k`` (diagonal),
    else 0. The cells do not depend on n (both messages stay in the subtree of
    ``2^(max(k, i, j)+1)`` nodes around node 0)."""
    for name, value in (("k", k), ("i", i), ("j", j)):
        check_int_range(name, value, 0)
    if i == k and j < k:
        return Fraction(j + 2, 2 ** (i + 1))
    if j == k and i < k:
        return Fraction(i + 2, 2 ** (k + 1))
    if i == j and i > k:
        return Fraction(k + 2, 2 ** (i + 1))
    return Fraction(0)


def pr_kij_table(n: int) -> dict[tuple[int, int, int], Fraction]:
    """Every cell ``(k, i, j)`` of an n-node tree, ``0 <= k, i, j < lg n``."""
    h = lg(n)
    return {(k, i, j): pr_kij(k, i, j) for k in range(h) for i in range(h) for j in range(h)}


def cell_weight(k: int, i: int, j: int) -> int:
    """Elementary events in a cell: ``2^k`` sources of m2, ``2^i`` destinations of m1,
    ``2^j`` destinations of m2 (equation (1)'s weights)."""
    return 2 ** (k + i + j)


def row_sum(n: int, k: int) -> Fraction:
    """``sum_i 2^i sum_j 2^j Pr[k, i, j]``, and the paper's closed form of it in section 4
    is ``k 2^k + (k + 2)/2 (n - 2^(k+1))``; a test checks they agree."""
    h = lg(n)
    check_int_range("k", k, 0, h - 1)
    return sum((2 ** (i + j) * pr_kij(k, i, j) for i in range(h) for j in range(h)), Fraction(0))


def pr_c2_from_table(n: int) -> Fraction:
    """Equation (1): ``1/(n-1)^3 sum_k 2^k sum_i 2^i sum_j 2^j Pr[k, i, j]``."""
    h = lg(n)
    total = sum((2**k * row_sum(n, k) for k in range(h)), Fraction(0))
    return total / (n - 1) ** 3


def pr_c2_fraction(n: int) -> Fraction:
    """Lemma 1's closed form as an exact fraction: ``(n^2 (lg n/2 - 2/3) + 2/3)/(n-1)^3``."""
    h = lg(n)
    return (n * n * (Fraction(h, 2) - Fraction(2, 3)) + Fraction(2, 3)) / (n - 1) ** 3


def cell_members(n: int, k: int, i: int, j: int):
    """The elementary events of a cell with ``s1 = 0``: ``(d1, s2, d2)`` with ``d1`` in the
    i-subtree of 0, ``s2`` in its k-subtree and ``d2`` in the j-subtree of ``s2`` (the
    v-subtree of x is the nodes whose highest bit differing from x is bit v)."""
    _check_cell(n, k, i, j)
    for d1 in range(2**i, 2 ** (i + 1)):
        for s2 in range(2**k, 2 ** (k + 1)):
            for low in range(2**j):
                yield d1, s2, s2 ^ (2**j + low)


def pr_kij_network(n: int, k: int, i: int, j: int, *, per_pair: bool = False):
    """A cell measured on the network's routing rule: the collision probability averaged
    over the cell's elementary events and every up-port outcome (exact enumeration).

    With ``per_pair=True``, a dict ``(s2, d2) -> probability`` averaged over ``d1`` only
    (the paper's "renumbering" step says these are all equal; they are in the row and
    diagonal cells, not in the column cells, whose average is still right)."""
    _check_cell(n, k, i, j)
    sums: dict[tuple[int, int], float] = {}
    for d1, s2, d2 in cell_members(n, k, i, j):
        l1, l2 = common_level(0, d1), common_level(s2, d2)
        hit = sum(
            w
            for w, p1, p2 in _joint_port_choices(n, 0, l1, s2, l2)
            if collide(d1, l1, p1, d2, l2, p2)
        )
        sums[(s2, d2)] = sums.get((s2, d2), 0.0) + hit
    if per_pair:
        return {key: value / 2**i for key, value in sums.items()}
    return sum(sums.values()) / cell_weight(k, i, j)


# -- equations (3)-(5): one collision toss of m balls into b bins ------------------------------


def _check_toss(m: int, b: int) -> None:
    check_int_range("m", m, 0)
    check_positive_int("b", b)


def expected_empty(m: int, b: int) -> float:
    """Equation (3): ``E[b_e] = b (1 - 1/b)^m``."""
    _check_toss(m, b)
    return b * (1 - 1 / b) ** m


def expected_delivered(m: int, b: int) -> float:
    """Equation (4): ``E[D] = b (1 - (1 - 1/b)^m)``."""
    return b - expected_empty(m, b)


def expected_rejected(m: int, b: int) -> float:
    """Equation (5): ``E[R] = m - E[D]``."""
    return m - expected_delivered(m, b)


def var_empty(m: int, b: int) -> float:
    """``Var[b_e] = b (1-1/b)^m + b (b-1) (1-2/b)^m - b^2 (1-1/b)^(2m)`` (pairs of
    indicator variables; ``D = b - b_e`` and ``R = m - D`` have the same variance)."""
    _check_toss(m, b)
    q1, q2 = (1 - 1 / b) ** m, (1 - 2 / b) ** m
    return max(0.0, b * q1 + b * (b - 1) * q2 - (b * q1) ** 2)


def bounds_3_to_5(m: int, b: int) -> tuple[float, float, float]:
    """The paper's bounds: ``E[b_e] <= b e^(-m/b)``, ``E[D] >= b (1 - e^(-m/b))``,
    ``E[R] <= m - b (1 - e^(-m/b))``."""
    _check_toss(m, b)
    empty = b * math.exp(-m / b)
    return empty, b - empty, m - (b - empty)


def occupancy(m: int, b: int) -> np.ndarray:
    """``p[d]`` = probability that ``m`` balls tossed into ``b`` bins fill exactly ``d`` of
    them (``d = 0 .. min(m, b)``): the delivered messages of a Model I round.

    Ball by ball: a ball lands in one of the ``d`` filled bins w.p. ``d/b`` (sums of
    positive terms only, so tail probabilities keep their relative precision)."""
    _check_toss(m, b)
    return occupancies(m, b)[m]


#: Largest ``m * min(m, b)`` the exact computations take (about 800 MB of float64).
MAX_CELLS = 10**8


def occupancies(m: int, b: int) -> list[np.ndarray]:
    """:func:`occupancy` for every ``0 .. m`` balls, computed in one pass."""
    _check_toss(m, b)
    if m * min(m, b) > MAX_CELLS:
        raise ValueError(
            f"m and b too large for the exact distribution (m * min(m, b) = "
            f"{m * min(m, b)} > {MAX_CELLS}): m = {m}, b = {b}"
        )
    p = np.zeros(min(m, b) + 1)
    p[0] = 1.0
    out = [p[:1].copy()]
    d = np.arange(p.size, dtype=float)
    for r in range(1, m + 1):
        width = min(r, b) + 1
        grown = p[:width] * (d[:width] / b)
        grown[1:] += p[: width - 1] * ((b - d[: width - 1]) / b)
        p[:width] = grown
        out.append(p[:width].copy())
    return out


def toss(m: int, b: int, trials: int, rng: np.random.Generator) -> np.ndarray:
    """Delivered balls (nonempty bins) of ``trials`` independent collision tosses of
    ``m`` balls into ``b`` bins: Model I's round, sampled (``rng.integers`` per ball)."""
    _check_toss(m, b)
    check_positive_int("trials", trials)
    out = np.empty(trials, dtype=np.int64)
    chunk = max(1, 2_000_000 // max(m + b, 1))
    for start in range(0, trials, chunk):
        t = min(chunk, trials - start)
        where = rng.integers(0, b, size=(t, m)) + (np.arange(t) * b)[:, None]
        filled = np.bincount(where.ravel(), minlength=t * b).reshape(t, b) > 0
        out[start : start + t] = filled.sum(axis=1)
    return out


# -- Phases I and II, and Theorem 1 ------------------------------------------------------------


def phase_success(m: int, b: int) -> tuple[str, float]:
    """``(phase, probability)`` that one round of ``m`` balls in ``b`` bins is a successful
    delivery round: Phase I (``m > b``): fewer than ``2b/e`` empty bins, i.e. more than
    ``b(1-2/e)`` delivered; Phase II (``2 <= m <= b``): at least ``m/2`` delivered
    (``alpha = 1/2``). Exact, from :func:`occupancy`."""
    check_int_range("m", m, 2)
    check_positive_int("b", b)
    p = occupancy(m, b)
    d = np.arange(p.size)
    if m > b:
        return "I", float(p[(b - d) < 2 * b / math.e].sum())
    return "II", float(p[d >= m / 2].sum())


def phase_success_bound(m: int, b: int) -> float:
    """The proof's lower bound on :func:`phase_success` before it is rounded to a constant:
    Phase I ``1 - e^(1 - m/b)/2`` (Markov on ``b_e`` with ``E[b_e] <= b e^(-m/b)``,
    ``t = 2b/e``), at least 1/2; Phase II ``1 - (1 - b/m (1 - e^(-m/b)))/(1 - alpha)``
    with ``alpha = 1/2``, at least ``1 - 2/e``."""
    check_int_range("m", m, 2)
    check_positive_int("b", b)
    if m > b:
        return 1 - math.exp(1 - m / b) / 2
    return 1 - 2 * (1 - b / m * (1 - math.exp(-m / b)))


def rounds_tail(m: int, b: int, *, max_rounds: int = 200, floor: float = 1e-300) -> np.ndarray:
    """Model I exactly: ``tail[t] = Pr[rounds > t]`` for ``t = 0, 1, ..`` until the tail
    falls below ``floor`` (or ``max_rounds``). The pending balls are a Markov chain; a
    round of ``r`` pending balls delivers ``d`` with probability ``occupancy(r, b)[d]``.
    The tail is the mass not yet absorbed, summed directly (no ``1 - x`` cancellation)."""
    check_positive_int("m", m)
    check_positive_int("b", b)
    check_positive_int("max_rounds", max_rounds)
    steps = occupancies(m, b)
    pending = np.zeros(m + 1)
    pending[m] = 1.0
    tail = [1.0]
    for _ in range(max_rounds):
        moved = np.zeros(m + 1)
        for r in np.nonzero(pending[1:])[0] + 1:
            p = steps[r]
            moved[r - p.size + 1 : r + 1] += pending[r] * p[::-1]
        moved[0] = 0.0  # delivered: absorbed
        pending = moved
        tail.append(float(pending.sum()))
        if tail[-1] < floor:
            break
    return np.array(tail)


def _check_epsilon(eps) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"eps must be a number between 0 and 1, not {eps!r}")
    if not 0 < eps < 1:
        raise ValueError(f"eps must be between 0 and 1 (exclusive), not {eps!r}")
    return float(eps)


@dataclass(frozen=True)
class ProofRounds:
    """The rounds the proof of Theorem 1 allows (section 6), with its parts."""

    b: int
    #: Phase I's successful rounds, equation (6) (0 when ``m <= b``).
    s1: float
    #: Phase I's rounds ``(2 S - 4 ln eps')/p_s``, ``p_s = 1/2``.
    r1: float
    #: Phase II's successful rounds: ``floor(lg m') + 1`` for the ``m' = min(m, b)``
    #: messages left (the paper writes ``lg m``; the last message needs its own round).
    s2: int
    #: Phase II's rounds ``(2 S - 4 ln eps')/p_s``, ``p_s = 1 - 2/e``.
    r2: float
    #: ``ceil(r1 + r2)``: all m delivered within this many rounds w.p. at least 1 - eps.
    total: int


def proof_rounds(n: int, m: int, eps: float) -> ProofRounds:
    """Theorem 1 with the proof's constants: Phase I and Phase II each at ``eps' = eps/2``
    (the union bound joins them; the paper proves each phase at ``1 - eps`` and adds)."""
    check_power_of_two("n", n, 4)
    check_int_range("m", m, 1, n)
    eps = _check_epsilon(eps)
    b = max(1, round(2 * n / lg(n)))  # Corollary 1, as Model I rounds it
    log_term = 4 * math.log(2 / eps)  # -4 ln(eps/2)
    if m > b:
        s1 = (m / b - 1) / (1 - 2 / math.e)
        r1 = (2 * s1 + log_term) / P_PHASE_ONE
        left = b
    else:
        s1 = r1 = 0.0
        left = m
    s2 = left.bit_length()  # floor(lg m') + 1
    r2 = (2 * s2 + log_term) / P_PHASE_TWO
    return ProofRounds(b, s1, r1, s2, r2, math.ceil(r1 + r2))
