"""Strumpen and Krishnamurthy (2005), equations (1)-(2): the table ``Pr[k, i, j]``.

``sk-pr-table``: the paper's cells beside the network's (exact enumeration of the routing
rule, small n) and the round-based fast simulator (two messages per trial, Wilson 95 %
intervals, one chi-square over the table); equation (1)'s sum against Lemma 1.
"""

from __future__ import annotations

import argparse
from fractions import Fraction

import numpy as np

from ..models.balls_bins import (
    cell_weight,
    pr_c2_fraction,
    pr_c2_from_table,
    pr_kij,
    pr_kij_network,
    row_sum,
)
from . import Experiment, Result, counted, save_plot
from .circuit_tree_sampling import chi2_sf, network_pairs_collide, trial_count, wilson


def _args(p: argparse.ArgumentParser) -> None:
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
        type=trial_count(1),
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


def _run(args, progress) -> Result:
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


def _plot(result: Result, path: str) -> None:
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
    save_plot(fig, path)


EXPERIMENTS = [
    Experiment(
        "sk-pr-table",
        "Strumpen-Krishnamurthy eqs. (1)-(2): the Pr[k, i, j] table vs the network",
        _args,
        _run,
        _plot,
    )
]
