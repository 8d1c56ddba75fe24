"""What the circuit tree's analysis experiments share (Strumpen and Krishnamurthy 2005,
sections 4-6: ``sk-pr-table``, ``sk-expectations``, ``sk-phases``, ``sk-rounds-tail``).

Trials on the network packed side by side: a trial runs in its own subtree of a larger tree;
a message whose source and destination lie in one subtree never leaves it, and each subtree
has its own routers and random bits, so one round of the fast simulator runs many
independent trials. Beside them, the statistics the experiments check with (Wilson
intervals, the chi-square tail) and the types of their trial options.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from ..fast.circuit_rounds import Scratch, random_bits, random_traffic, round_fast

#: Nodes of the tree that holds a batch of independent trials (one fast-simulator round).
PACK_NODES = 2**16
#: Two-sided 95 % normal quantile; |z| beyond CHECK_Z counts as a disagreement.
Z95 = 1.959963984540054
CHECK_Z = 3.29  # two-sided 0.1 %


#: Most trials an option takes (numpy arrays of this many samples stay well under 1 GB).
MAX_TRIALS = 10**7


def int_in(lo: int, hi: int):
    """An argparse type: an integer in ``lo .. hi``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer in {lo}..{hi}, not {text!r}")
        return value

    return parse


def trial_count(lo: int):
    """An argparse type: a number of trials in ``lo .. MAX_TRIALS``."""
    return int_in(lo, MAX_TRIALS)


# -- statistics -------------------------------------------------------------------------------


def wilson(hits: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (good near 0 and 1, unlike the
    normal approximation)."""
    if trials <= 0:
        return 0.0, 1.0
    p = hits / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    # The interval contains p; rounding can put an end a hair past it at 0 or all hits.
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def chi2_sf(x: float, df: int) -> float:
    """``Pr[chi^2_df > x]``: the regularised upper incomplete gamma ``Q(df/2, x/2)`` (series
    below ``a + 1``, Lentz's continued fraction above)."""
    if df < 1:
        raise ValueError(f"df must be a positive integer, not {df!r}")
    if x <= 0:
        return 1.0
    a, y = df / 2, x / 2
    log_front = a * math.log(y) - y - math.lgamma(a)
    if y < a + 1:
        term = total = 1 / a
        ap = a
        for _ in range(10_000):
            ap += 1
            term *= y / ap
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1 - total * math.exp(log_front))
    tiny = 1e-300
    bb = y + 1 - a
    c, d = 1 / tiny, 1 / bb
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        bb += 2
        d = an * d + bb
        d = tiny if abs(d) < tiny else d
        c = bb + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return min(1.0, math.exp(log_front) * h)


# -- the network, many trials per fast-simulator round ------------------------------------------


class _Packer:
    """Runs trials of ``n0``-node traffic side by side in a ``PACK_NODES``-node tree."""

    def __init__(self, n0: int, rng: np.random.Generator):
        self.n0 = n0
        self.nodes = max(PACK_NODES, n0)
        self.per_round = self.nodes // n0
        self.rng = rng
        self.scratch = Scratch(self.nodes)

    def run(self, src: np.ndarray, dst: np.ndarray, trial: np.ndarray) -> np.ndarray:
        """Delivered mask of messages ``src -> dst`` (nodes of one n0-node tree), each in its
        own ``trial`` (0 .. per_round-1), all trials in one round."""
        offset = trial.astype(np.int64) * self.n0
        bits = random_bits(self.nodes, self.rng)
        return round_fast(self.nodes, src + offset, dst + offset, bits, scratch=self.scratch)


def network_pairs_collide(n0: int, pairs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each row ``(s1, d1, s2, d2)`` of ``pairs``: whether the two messages, alone in an
    ``n0``-node network, do not both get through one round (a collision)."""
    packer = _Packer(n0, rng)
    out = np.empty(len(pairs), dtype=bool)
    for start in range(0, len(pairs), packer.per_round):
        chunk = pairs[start : start + packer.per_round]
        t = np.arange(len(chunk))
        src = np.concatenate([chunk[:, 0], chunk[:, 2]])
        dst = np.concatenate([chunk[:, 1], chunk[:, 3]])
        delivered = packer.run(src, dst, np.concatenate([t, t]))
        out[start : start + len(chunk)] = ~(delivered[: len(chunk)] & delivered[len(chunk) :])
    return out


def network_first_round(n: int, m: int, trials: int, rng: np.random.Generator) -> np.ndarray:
    """Messages delivered in the first round of ``m`` random messages (distinct random
    sources, random destinations) on an n-node network, for each of ``trials`` trials."""
    packer = _Packer(n, rng)
    out = np.empty(trials, dtype=np.int64)
    for start in range(0, trials, packer.per_round):
        count = min(packer.per_round, trials - start)
        traffic = [random_traffic(n, m, rng) for _ in range(count)]
        src = np.concatenate([s for s, _ in traffic])
        dst = np.concatenate([d for _, d in traffic])
        trial = np.repeat(np.arange(count), m)
        delivered = packer.run(src, dst, trial)
        out[start : start + count] = np.bincount(trial[delivered], minlength=count)
    return out


def network_rounds(n: int, m: int, trials: int, rng: np.random.Generator) -> np.ndarray:
    """Round-based delivery of ``m`` random messages on the network (rejected messages
    retried next round), ``trials`` times side by side: rounds until all are delivered."""
    packer = _Packer(n, rng)
    out = np.empty(trials, dtype=np.int64)
    for start in range(0, trials, packer.per_round):
        count = min(packer.per_round, trials - start)
        traffic = [random_traffic(n, m, rng) for _ in range(count)]
        src = np.concatenate([s for s, _ in traffic])
        dst = np.concatenate([d for _, d in traffic])
        trial = np.repeat(np.arange(count), m)
        done = np.zeros(count, dtype=np.int64)
        rounds = 0
        while src.size:
            rounds += 1
            delivered = packer.run(src, dst, trial)
            src, dst, trial = src[~delivered], dst[~delivered], trial[~delivered]
            finished = np.ones(count, dtype=bool)
            finished[trial] = False
            done[finished & (done == 0)] = rounds
        out[start : start + count] = done
    return out
