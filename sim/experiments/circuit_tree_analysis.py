"""Strumpen and Krishnamurthy (2005): the analysis of sections 4-6, checked.

* ``sk-pr-table``: equations (1)-(2), the ``Pr[k, i, j]`` table: the paper's cells beside
  the network's (exact enumeration of the routing rule, small n) and the round-based fast
  simulator (two messages per trial, Wilson 95 % intervals, one chi-square over the table);
  equation (1)'s sum against Lemma 1.
* ``sk-expectations``: equations (3)-(5) against sampled collision tosses (z against the
  exact variance), beside the bounds with ``e^(-m/b)`` and the network's first round.
* ``sk-phases``: the probability of a successful delivery round, Phase I (proof: at least
  1/2) and Phase II (proof: at least ``1 - 2/e``): exact, Model I sampled, the network.
* ``sk-rounds-tail``: Theorem 1: the tail ``Pr[rounds > t]`` (Model I exactly, sampled, and
  the network) against the rounds the proof allows for each epsilon.

A trial on the network runs in its own subtree of a larger tree: a message whose source and
destination lie in one subtree never leaves it, and each subtree has its own routers and
random bits, so one round of the fast simulator runs many independent trials.
"""

from __future__ import annotations

import argparse
import math
from fractions import Fraction

import numpy as np

from ..fast.circuit_rounds import Scratch, random_bits, random_traffic, round_fast
from ..models.balls_bins import (
    P_PHASE_ONE,
    P_PHASE_TWO,
    bounds_3_to_5,
    cell_weight,
    expected_delivered,
    expected_empty,
    expected_rejected,
    occupancies,
    occupancy,
    phase_success,
    phase_success_bound,
    pr_c2_fraction,
    pr_c2_from_table,
    pr_kij,
    pr_kij_network,
    proof_rounds,
    rounds_tail,
    row_sum,
    toss,
    var_empty,
)
from ..models.collision import bins, model_one_rounds
from . import Experiment, Result, counted, lg_sizes

#: Nodes of the tree that holds a batch of independent trials (one fast-simulator round).
PACK_NODES = 2**16
#: Two-sided 95 % normal quantile; |z| beyond CHECK_Z counts as a disagreement.
Z95 = 1.959963984540054
CHECK_Z = 3.29  # two-sided 0.1 %


#: Most trials an option takes (numpy arrays of this many samples stay well under 1 GB).
MAX_TRIALS = 10**7


def _int_in(lo: int, hi: int):
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


def _trials(lo: int):
    """An argparse type: a number of trials in ``lo .. MAX_TRIALS``."""
    return _int_in(lo, MAX_TRIALS)


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


def _mean_ci(values: np.ndarray) -> tuple[float, float, float]:
    mean = float(np.mean(values))
    half = Z95 * float(np.std(values, ddof=1)) / math.sqrt(len(values)) if len(values) > 1 else 0
    return mean, mean - half, mean + half


# -- sk-pr-table --------------------------------------------------------------------------------


def _pt_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lg-n",
        type=int,
        choices=range(2, 13),
        default=5,
        metavar="H",
        help="tree of n = 2^H nodes: cells 0 <= k, i, j < H (default 5; 2..12)",
    )
    p.add_argument(
        "--exact-max",
        type=int,
        default=4,
        metavar="H",
        help="enumerate the network exactly when H <= this (default 4; 5 takes about 20 s)",
    )
    p.add_argument(
        "--trials",
        type=_trials(1),
        default=2000,
        help="simulated pairs per cell on the network (default 2000)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def sample_cell(n: int, k: int, i: int, j: int, trials: int, rng) -> np.ndarray:
    """``trials`` uniform elementary events ``(s1, d1, s2, d2)`` of cell ``(k, i, j)``, with
    ``s1`` uniform too (the v-subtree of x: nodes whose highest bit differing from x is v)."""
    s1 = rng.integers(0, n, trials)
    d1 = s1 ^ (2**i + rng.integers(0, 2**i, trials))
    s2 = s1 ^ (2**k + rng.integers(0, 2**k, trials))
    d2 = s2 ^ (2**j + rng.integers(0, 2**j, trials))
    return np.stack([s1, d1, s2, d2], axis=1).astype(np.int64)


def _pt_run(args, progress) -> Result:
    h = args.lg_n
    n = 2**h
    rng = np.random.default_rng(args.seed)
    cells = [(k, i, j) for k in range(h) for i in range(h) for j in range(h)]
    exact = h <= args.exact_max
    progress(f"sk-pr-table: n = {n}, {len(cells)} cells x {args.trials} pairs on the network")
    hits = np.zeros(len(cells), dtype=np.int64)
    for c, cell in enumerate(counted(progress, cells)):
        for start in range(0, args.trials, 10**6):  # at most 32 MB of pairs at a time
            pairs = sample_cell(n, *cell, min(10**6, args.trials - start), rng)
            hits[c] += int(network_pairs_collide(n, pairs, rng).sum())
    rows, chi2, df, zero_hits, outside, exact_differ = [], 0.0, 0, 0, [], []
    for (k, i, j), x in zip(cells, hits.tolist(), strict=True):
        paper = pr_kij(k, i, j)
        net = pr_kij_network(n, k, i, j) if exact else None
        if net is not None and abs(net - float(paper)) > 1e-12:
            exact_differ.append((k, i, j))
        p = float(paper)
        lo, hi = wilson(x, args.trials)
        if p == 0:
            zero_hits += x
            if x == 0 and (net is None or net == 0):
                continue  # a zero cell that stayed zero: counted in the notes
        else:
            chi2 += (x - args.trials * p) ** 2 / (args.trials * p * (1 - p))
            df += 1
        if not lo <= p <= hi:
            outside.append((k, i, j))
        rows.append([k, i, j, cell_weight(k, i, j), str(paper), p, net, x / args.trials, lo, hi])
    p_value = chi2_sf(chi2, df) if df else 1.0
    table_sum = pr_c2_from_table(n)
    lemma = pr_c2_fraction(n)
    row_ok = all(
        row_sum(n, k) == k * 2**k + Fraction(k + 2, 2) * (n - 2 ** (k + 1)) for k in range(h)
    )
    zero_cells = sum(1 for c in cells if pr_kij(*c) == 0)
    notes = [
        "paper: equation (2); network exact: every event of the cell with s1 = 0 and every "
        "up-port outcome (the routing rule of sim/models/collision.py); network sim: the "
        f"round-based fast simulator, {args.trials} pairs per cell, s1 random, Wilson 95 %",
        f"chi-square over the {df} nonzero cells: {chi2:.2f} on {df} df, p = {p_value:.3g}",
        f"{zero_cells} cells are 0 in equation (2); collisions seen in them: {zero_hits}",
        f"cells outside their 95 % interval: {len(outside)} {outside[:8]}"
        f" (about {0.05 * df:.1f} expected by chance)",
        f"equation (1): sum of the table = {table_sum} = Lemma 1 {lemma}: "
        f"{'equal' if table_sum == lemma else 'DIFFERENT'}; section 4's row sums "
        f"k 2^k + (k+2)/2 (n - 2^(k+1)): {'all equal' if row_ok else 'DIFFERENT'}",
    ]
    if exact:
        notes.append(
            "network exact = equation (2) in every cell"
            if not exact_differ
            else f"network exact differs from equation (2) in {exact_differ}"
        )
    return Result(
        "sk-pr-table",
        {"lg_n": h, "exact_max": args.exact_max, "trials": args.trials, "seed": args.seed},
        ["k", "i", "j", "events", "paper", "paper_f", "net_exact", "net_sim", "ci_low", "ci_high"],
        rows,
        notes,
        {
            "chi2": chi2,
            "df": df,
            "p_value": p_value,
            "zero_cells": zero_cells,
            "zero_cell_collisions": int(zero_hits),
            "outside": outside,
            "exact_differ": exact_differ,
            "eq1_sum": str(table_sum),
            "lemma1": str(lemma),
            "row_sums_ok": row_ok,
        },
    )


def _pt_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    rows = result.rows
    fig, ax = plt.subplots(figsize=(6, 4))
    x = np.arange(len(rows))
    ax.plot(x, [r[5] for r in rows], "_", ms=12, mew=2, label="equation (2)")
    ax.errorbar(
        x,
        [r[7] for r in rows],
        yerr=[[max(0.0, r[7] - r[8]) for r in rows], [max(0.0, r[9] - r[7]) for r in rows]],
        fmt="o",
        ms=3,
        capsize=2,
        label="network, simulated (95 %)",
    )
    ax.set_xticks(x, [f"{r[0]}{r[1]}{r[2]}" for r in rows], rotation=90, fontsize=6)
    ax.set_xlabel("cell k i j")
    ax.set_ylabel("Pr[k, i, j]")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -- sk-expectations -------------------------------------------------------------------------


def _ex_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_sizes(2, 20),
        default=lg_sizes(2, 20)("6,10"),
        help="lg n values (default 6,10); b = 2n/lg n bins",
    )
    p.add_argument(
        "--trials", type=_trials(1), default=20000, help="tosses per point (default 20000)"
    )
    p.add_argument(
        "--network-trials",
        type=_trials(0),
        default=200,
        metavar="T",
        help="first rounds on the network per point (default 200; 0 = none)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _messages(n: int, b: int) -> list[int]:
    return sorted({m for m in (max(2, b // 4), b // 2, b, 2 * b, n // 2, n) if 2 <= m <= n})


def _ex_run(args, progress) -> Result:
    rng = np.random.default_rng(args.seed)
    rows, worst = [], 0.0
    points = [(2**h, m) for h in args.sizes for m in _messages(2**h, bins(2**h))]
    for n, m in counted(progress, points):
        b = bins(n)
        progress(f"sk-expectations: n = {n}, m = {m}, b = {b}")
        delivered = toss(m, b, args.trials, rng)
        mean = float(delivered.mean())
        z = (mean - expected_delivered(m, b)) / math.sqrt(var_empty(m, b) / args.trials)
        worst = max(worst, abs(z))
        be, bd, br = bounds_3_to_5(m, b)
        net = None
        if args.network_trials:
            net = float(network_first_round(n, m, args.network_trials, rng).mean())
        rows.append(
            [
                n,
                b,
                m,
                expected_empty(m, b),
                be,
                b - mean,
                expected_delivered(m, b),
                bd,
                mean,
                expected_rejected(m, b),
                br,
                m - mean,
                z,
                net,
            ]
        )
    notes = [
        f"exact: equations (3)-(5) with b = round(2n/lg n); bound: the paper's e^(-m/b) forms; "
        f"sim: {args.trials} collision tosses per row (D = b - b_e and R = m - D in every toss, "
        "so one z covers all three)",
        f"z = (sim E[D] - exact) / sqrt(Var[b_e]/trials); largest |z| = {worst:.2f} "
        f"({'within' if worst < CHECK_Z else 'BEYOND'} {CHECK_Z}, two-sided 0.1 %)",
        "net_D: messages delivered in the first round of the round-based network "
        f"({args.network_trials} trials), beside Model I's E[D] (the approximation, not a check)",
    ]
    return Result(
        "sk-expectations",
        {
            "sizes": args.sizes,
            "trials": args.trials,
            "network_trials": args.network_trials,
            "seed": args.seed,
        },
        [
            "n",
            "b",
            "m",
            "E[b_e]",
            "be_bound",
            "sim_b_e",
            "E[D]",
            "D_bound",
            "sim_D",
            "E[R]",
            "R_bound",
            "sim_R",
            "z",
            "net_D",
        ],
        rows,
        notes,
        {"max_abs_z": worst},
    )


def _ex_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for n in sorted({r[0] for r in result.rows}):
        rs = [r for r in result.rows if r[0] == n]
        x = [r[2] / r[1] for r in rs]
        (line,) = ax.plot(x, [r[6] / r[1] for r in rs], "-", label=f"E[D]/b, n = {n}")
        ax.plot(x, [r[7] / r[1] for r in rs], ":", color=line.get_color())
        ax.plot(x, [r[8] / r[1] for r in rs], "o", ms=4, color=line.get_color())
        if rs[0][13] is not None:
            ax.plot(x, [r[13] / r[1] for r in rs], "s", ms=4, mfc="none", color=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_xlabel("m / b")
    ax.set_ylabel("delivered / b (line exact, dotted bound, o sim, square network)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -- sk-phases -------------------------------------------------------------------------------


def _ph_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_sizes(2, 14),
        default=lg_sizes(2, 14)("6,10"),
        help="lg n values (default 6,10)",
    )
    p.add_argument(
        "--points",
        type=_int_in(1, 100),
        default=5,
        metavar="K",
        help="m values per phase, 1..100 (default 5)",
    )
    p.add_argument(
        "--trials", type=_trials(1), default=20000, help="Model I tosses per m (default 20000)"
    )
    p.add_argument(
        "--network-trials",
        type=_trials(0),
        default=1000,
        metavar="T",
        help="first rounds on the network per m (default 1000; 0 = none)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _geometric(lo: int, hi: int, count: int) -> list[int]:
    if hi < lo:
        return []
    return sorted({int(round(x)) for x in np.geomspace(lo, hi, count)})


def _succeeded(phase: str, m: int, b: int, delivered: np.ndarray) -> np.ndarray:
    if phase == "I":
        return (b - delivered) < 2 * b / math.e
    return delivered >= m / 2


def _worst_failures(n: int, b: int, minima: dict) -> None:
    """Each phase's largest exact failure probability over every m, into ``minima``."""
    # Every m at once (one pass of the occupancy recursion).
    dists = occupancies(n, b)
    for m in range(2, n + 1):
        d = np.arange(dists[m].size)
        phase = "I" if m > b else "II"
        # The failure mass summed directly keeps its digits where it is tiny.
        fail = float(dists[m][~_succeeded(phase, m, b, d)].sum())
        key = (n, phase)
        if key not in minima or fail > minima[key][1]:
            minima[key] = (m, fail)


def _phase_row(n: int, b: int, m: int, args, rng) -> list:
    """One m: the proof's constant and bound, Model I exactly and sampled, the network."""
    phase, exact = phase_success(m, b)
    d = np.arange(min(m, b) + 1)
    fail = float(occupancy(m, b)[~_succeeded(phase, m, b, d)].sum())
    ok = _succeeded(phase, m, b, toss(m, b, args.trials, rng))
    lo, hi = wilson(int(ok.sum()), args.trials)
    net = net_lo = net_hi = None
    if args.network_trials:
        won = _succeeded(phase, m, b, network_first_round(n, m, args.network_trials, rng))
        net = float(won.mean())
        net_lo, net_hi = wilson(int(won.sum()), args.network_trials)
    constant = P_PHASE_ONE if phase == "I" else P_PHASE_TWO
    bound = phase_success_bound(m, b)
    sim = float(ok.mean())
    return [n, b, m, phase, constant, bound, exact, fail, sim, lo, hi, net, net_lo, net_hi]


def _ph_notes(args, minima: dict, below: list) -> list[str]:
    notes = [
        "Phase I (m > b): success = fewer than 2b/e empty bins (more than b(1-2/e) delivered), "
        "proof: probability >= 1/2; Phase II (m <= b): success = at least m/2 delivered "
        "(alpha = 1/2), proof: >= 1 - 2/e = 0.264",
        "bound_m: the proof's Markov bound at this m before rounding to the constant; exact: "
        f"Model I's occupancy distribution; sim: {args.trials} tosses (Wilson 95 %); net: first "
        f"round of m random messages on the network ({args.network_trials} trials), with b of "
        "Corollary 1",
    ]
    notes += [
        f"n = {n}, Phase {ph}: largest exact failure probability {p:.3g} at m = {m} "
        f"(success {1 - p:.6f})"
        for (n, ph), (m, p) in sorted(minima.items())
    ]
    notes.append(
        "below the proof's constant: " + (str(below) if below else "nowhere (model or network)")
    )
    return notes


def _ph_run(args, progress) -> Result:
    rng = np.random.default_rng(args.seed)
    rows, minima, below = [], {}, []
    for h in counted(progress, args.sizes):
        n = 2**h
        b = bins(n)
        progress(f"sk-phases: n = {n}, b = {b}")
        _worst_failures(n, b, minima)
        for m in _geometric(2, b, args.points) + _geometric(b + 1, n, args.points):
            row = _phase_row(n, b, m, args, rng)
            constant, exact, net_hi = row[4], row[6], row[13]
            if exact < constant or (net_hi is not None and net_hi < constant):
                below.append((n, m))
            rows.append(row)
    notes = _ph_notes(args, minima, below)
    return Result(
        "sk-phases",
        {
            "sizes": args.sizes,
            "points": args.points,
            "trials": args.trials,
            "network_trials": args.network_trials,
            "seed": args.seed,
        },
        [
            "n",
            "b",
            "m",
            "phase",
            "proof",
            "bound_m",
            "exact",
            "exact_fail",
            "sim",
            "sim_lo",
            "sim_hi",
            "net",
            "net_lo",
            "net_hi",
        ],
        rows,
        notes,
        {
            "minima": [
                {"n": n, "phase": ph, "m": m, "fail": p}
                for (n, ph), (m, p) in sorted(minima.items())
            ],
            "below": below,
        },
    )


def _ph_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for n in sorted({r[0] for r in result.rows}):
        rs = [r for r in result.rows if r[0] == n]
        x = [r[2] for r in rs]
        (line,) = ax.plot(x, [r[6] for r in rs], "o-", ms=3, label=f"exact, n = {n}")
        ax.plot(x, [r[5] for r in rs], ":", color=line.get_color(), label=f"proof's bound, {n}")
        if rs[0][11] is not None:
            ax.plot(x, [r[11] for r in rs], "s", ms=4, mfc="none", color=line.get_color())
        ax.axvline(rs[0][1], color=line.get_color(), lw=0.5)
    ax.axhline(P_PHASE_ONE, color="k", ls="--", lw=0.8)
    ax.axhline(P_PHASE_TWO, color="k", ls="-.", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("m (vertical line: b)")
    ax.set_ylabel("Pr[successful round] (square: network)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -- sk-rounds-tail --------------------------------------------------------------------------

#: Largest ``m * min(m, b)`` for which the exact chain is kept in memory (about 40 MB).
EXACT_CELLS = 5_000_000


def _eps_list(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or any(not 0 < v < 1 for v in values):
        raise argparse.ArgumentTypeError(
            f"expected a comma list of epsilons in (0, 1), not {text!r}"
        )
    return values


def _m_list(text: str) -> list[str]:
    values = text.split(",")
    for v in values:
        if v not in ("b", "n") and not (v.isdigit() and int(v) >= 1):
            raise argparse.ArgumentTypeError(
                f"expected a comma list of message counts (integers, b or n), not {text!r}"
            )
    return values


def _rt_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lg-n",
        type=int,
        choices=range(2, 21),
        default=10,
        metavar="H",
        help="n = 2^H nodes (default 10; 2..20)",
    )
    p.add_argument(
        "--messages",
        type=_m_list,
        default=_m_list("2,b,n"),
        help="message counts m, integers or b or n (default 2,b,n)",
    )
    p.add_argument(
        "--eps",
        type=_eps_list,
        default=_eps_list("0.5,0.1,0.01,0.001,1e-6,1e-12"),
        help="epsilons (default 0.5,0.1,0.01,0.001,1e-6,1e-12)",
    )
    p.add_argument(
        "--trials", type=_trials(1), default=2000, help="Model I trials per m (default 2000)"
    )
    p.add_argument(
        "--network-trials",
        type=_trials(0),
        default=500,
        metavar="T",
        help="round-based network trials per m (default 500; 0 = none)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def quantile_from_tail(tail, eps: float) -> int | None:
    """Smallest t with ``Pr[rounds > t] <= eps`` from a tail array (None if not reached)."""
    hit = np.nonzero(np.asarray(tail) <= eps)[0]
    return int(hit[0]) if hit.size else None


def empirical_tail(rounds: np.ndarray) -> np.ndarray:
    """``Pr[rounds > t]`` for ``t = 0 .. max`` from samples."""
    counts = np.bincount(rounds)
    return 1 - np.cumsum(counts) / len(rounds)


def rounds_chi2(samples: np.ndarray, tail: np.ndarray) -> tuple[float, int, float]:
    """Chi-square of sampled rounds against the exact distribution (``-diff`` of the tail),
    neighbouring outcomes pooled until each expects at least 5."""
    pmf = np.concatenate([[1 - tail[0]], -np.diff(tail)])  # pmf[t] = Pr[rounds = t]
    counts = np.bincount(samples, minlength=pmf.size)[: pmf.size]
    expect = pmf * len(samples)
    groups, obs, exp = [], 0.0, 0.0
    for o, e in zip(counts, expect, strict=True):
        obs, exp = obs + o, exp + e
        if exp >= 5:
            groups.append((obs, exp))
            obs, exp = 0.0, 0.0
    if groups and exp > 0:
        o0, e0 = groups.pop()
        groups.append((o0 + obs, e0 + exp))
    stat = sum((o - e) ** 2 / e for o, e in groups)
    df = max(1, len(groups) - 1)
    return stat, df, chi2_sf(stat, df)


def _slopes(rows, ms) -> list[tuple[int, float, float, float]]:
    """Per m, the exact quantile's growth per unit of ``ln(1/eps)`` between the two smallest
    epsilons (the coefficient Theorem 1 puts on ``ln(1/eps)``)."""
    out = []
    for m in ms:
        pts = sorted((r[1], r[2]) for r in rows if r[0] == m and r[2] is not None)
        if len(pts) >= 2 and pts[0][0] < pts[1][0]:
            (e1, q1), (e2, q2) = pts[1], pts[0]
            out.append((m, (q2 - q1) / math.log(e1 / e2), e1, e2))
    return out


def _rt_run(args, progress) -> Result:
    n = 2**args.lg_n
    b = bins(n)
    ms = sorted({b if v == "b" else n if v == "n" else int(v) for v in args.messages})
    if ms[-1] > n:
        raise ValueError(f"--messages must be at most n = {n}, not {ms[-1]}")
    rng = np.random.default_rng(args.seed)
    rows, notes, extra = [], [], {"fits": []}
    for m in counted(progress, ms):
        progress(f"sk-rounds-tail: n = {n}, m = {m}, b = {b}")
        model = np.array([model_one_rounds(n, m, rng) for _ in range(args.trials)])
        sim_tail = empirical_tail(model)
        net_tail = None
        if args.network_trials:
            net_tail = empirical_tail(network_rounds(n, m, args.network_trials, rng))
        tail = rounds_tail(m, b) if m * min(m, b) <= EXACT_CELLS else None
        if tail is not None:
            stat, df, p = rounds_chi2(model, tail)
            mean = float(tail[:-1].sum())  # E[rounds] = sum over t of Pr[rounds > t]
            notes.append(
                f"m = {m}: Model I exact mean {mean:.3f} rounds, sampled {model.mean():.3f}; "
                f"chi-square sampled vs exact {stat:.1f} on {df} df, p = {p:.3g}"
            )
            extra["fits"].append({"m": m, "chi2": stat, "df": df, "p": p})
        for eps in args.eps:
            bound = proof_rounds(n, m, eps)
            q_exact = quantile_from_tail(tail, eps) if tail is not None else None
            reliable = eps * args.trials >= 10
            q_sim = quantile_from_tail(sim_tail, eps) if reliable else None
            q_net = None
            if net_tail is not None and eps * args.network_trials >= 10:
                q_net = quantile_from_tail(net_tail, eps)
            beyond = None
            if tail is not None:
                beyond = float(tail[bound.total]) if bound.total < tail.size else 0.0
            rows.append(
                [
                    m,
                    eps,
                    q_exact,
                    q_sim,
                    q_net,
                    bound.total,
                    round(bound.r1, 2),
                    round(bound.r2, 2),
                    beyond,
                    None if q_exact is None else bound.total / max(q_exact, 1),
                ]
            )
    slopes = _slopes(rows, ms)
    notes += [
        f"m = {m}: exact quantile grows by {sl:.3g} rounds per unit of ln(1/eps) "
        f"(eps {e1:g} -> {e2:g}); the proof's coefficient of ln(1/eps): "
        f"{(8 if m > b else 0) + 4 / P_PHASE_TWO:.2f}"
        for m, sl, e1, e2 in slopes
    ]
    extra["slopes"] = [{"m": m, "slope": sl, "eps": [e1, e2]} for m, sl, e1, e2 in slopes]
    notes[:0] = [
        f"n = {n}, b = {b}; q_*: smallest t with Pr[rounds > t] <= eps: exact (Model I's "
        f"Markov chain), sampled Model I ({args.trials} trials), round-based network "
        f"({args.network_trials} trials); sampled quantiles only where eps x trials >= 10",
        "proof: rounds Theorem 1's proof allows at 1 - eps (Phase I and II at eps/2 each, "
        "p_s = 1/2 and 1 - 2/e; docs/circuit_tree.md derives it); Pr_beyond: exact "
        "Pr[rounds > proof] (0: below 1e-300)",
    ]
    return Result(
        "sk-rounds-tail",
        {
            "lg_n": args.lg_n,
            "messages": args.messages,
            "eps": args.eps,
            "trials": args.trials,
            "network_trials": args.network_trials,
            "seed": args.seed,
        },
        [
            "m",
            "eps",
            "q_exact",
            "q_model",
            "q_net",
            "proof",
            "proof_I",
            "proof_II",
            "Pr_beyond",
            "proof/q",
        ],
        rows,
        notes,
        extra,
    )


def _rt_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for m in sorted({r[0] for r in result.rows}):
        rs = [r for r in result.rows if r[0] == m]
        eps = [r[1] for r in rs]
        (line,) = ax.plot(
            [r[2] if r[2] is not None else np.nan for r in rs], eps, "o-", ms=3, label=f"m = {m}"
        )
        ax.plot([r[5] for r in rs], eps, "--", color=line.get_color())
        net = [(r[4], r[1]) for r in rs if r[4] is not None]
        if net:
            ax.plot(*zip(*net, strict=True), "s", ms=4, mfc="none", color=line.get_color())
    ax.set_yscale("log")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("rounds t (solid: Model I exact, dashed: the proof, square: network)")
    ax.set_ylabel("epsilon = Pr[rounds > t]")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


EXPERIMENTS = [
    Experiment(
        "sk-pr-table",
        "Strumpen-Krishnamurthy eqs. (1)-(2): the Pr[k, i, j] table vs the network",
        _pt_args,
        _pt_run,
        _pt_plot,
    ),
    Experiment(
        "sk-expectations",
        "Strumpen-Krishnamurthy eqs. (3)-(5): E[b_e], E[D], E[R] vs sampled tosses",
        _ex_args,
        _ex_run,
        _ex_plot,
    ),
    Experiment(
        "sk-phases",
        "Strumpen-Krishnamurthy section 6: Phase I (>= 1/2) and II (>= 1 - 2/e) success",
        _ph_args,
        _ph_run,
        _ph_plot,
    ),
    Experiment(
        "sk-rounds-tail",
        "Strumpen-Krishnamurthy Theorem 1: the rounds tail vs O(lg m + ln 1/eps), constants",
        _rt_args,
        _rt_run,
        _rt_plot,
    ),
]
