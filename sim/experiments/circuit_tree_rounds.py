"""What the circuit tree's delivery-round experiments share (Strumpen and Krishnamurthy 2005).

The round-based network (:mod:`fattree.sim.fast.circuit_rounds`) and the cycle-exact one with
immediate retry, measured the same way by ``delivery-rounds``, ``patterns``, ``model-ratios``,
``rounds-vs-m``, ``shifts``, ``fewer-messages`` and ``hot-spots``: the lg n option, min / mean
/ max, the paper's curve fit of Fig. 5, Model I's exact mean, least squares and 95 % intervals.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from ..fast.circuit_rounds import delivery_rounds
from ..models.collision import MODEL_ONE_EXACT_MAX, model_one_distribution
from . import lg_sizes, positive_int

#: The largest lg n the round-based experiments take.
MAX_LG = 24

#: The ``--sizes`` type: lg n values in 1 .. MAX_LG.
lg_n_list = lg_sizes(1, MAX_LG)


def min_mean_max(values: list[int]) -> tuple[int, float, int]:
    """The smallest, the mean and the largest of ``values``."""
    return min(values), float(np.mean(values)), max(values)


def immediate_cycles(n: int, src, dst, length: int, seed: int) -> float:
    """Clock cycles until every message is acknowledged on the cycle-exact network with
    immediate retry, divided by the cycles of one message across the diameter alone
    (section 7's normalisation)."""
    from ..models.circuit import CircuitTreeModel, run_model

    def cycles(pairs) -> int:
        queues = [[] for _ in range(n)]
        for s, d in pairs:
            queues[int(s)].append((int(d), 0))
        return run_model(CircuitTreeModel(n, 1, length, seed, "immediate"), queues)["cycles"]

    return cycles(zip(src, dst, strict=True)) / cycles([(0, n - 1)])


def add_cycle_arguments(p: argparse.ArgumentParser) -> None:
    """``--cycles-max`` and ``--length``: the cycle-exact immediate-retry runs beside."""
    p.add_argument(
        "--cycles-max",
        type=int,
        default=6,
        metavar="LG",
        help="also run the cycle-exact network with immediate retry up to n = 2^LG "
        "(default 6; 0 = never; pure Python, seconds per trial at 2^8)",
    )
    p.add_argument(
        "--length",
        type=positive_int,
        default=2,
        help="data words per message in the cycle-exact runs (default 2)",
    )


def paper_fit(n: int, m: int) -> float:
    """Section 7, item (7): the paper's curve fit ``lg m / 10 + m lg n / 2n + 1``."""
    return math.log2(m) / 10 + m * math.log2(n) / (2 * n) + 1


def mean_ci(values) -> tuple[float, float]:
    """Mean and the half-width of its 95 % interval (normal approximation; 0 for one value)."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return float(values.mean()), 0.0
    return float(values.mean()), float(1.96 * values.std(ddof=1) / math.sqrt(values.size))


def model_one_exact_mean(n: int, m: int) -> float | None:
    """Model I's expected rounds computed exactly (None above ``MODEL_ONE_EXACT_MAX``)."""
    if m > MODEL_ONE_EXACT_MAX:
        return None
    p = model_one_distribution(n, m)
    return float(np.dot(np.arange(1, p.size + 1), p))


def least_squares(columns: list, y) -> tuple[list[float], float]:
    """``y ~ sum c_i columns_i``: the coefficients and the largest absolute residual."""
    a = np.column_stack([np.asarray(c, dtype=float) for c in columns])
    y = np.asarray(y, dtype=float)
    coef = np.linalg.lstsq(a, y, rcond=None)[0]
    return [float(c) for c in coef], float(np.max(np.abs(a @ coef - y)))


def network_rounds(n, src, dst, rng, payload) -> int:
    """Delivery rounds of one message set on the round-based network."""
    return delivery_rounds(n, src, dst, rng, payload=payload).rounds


def message_points(sizes, messages) -> list[tuple[int, int]]:
    """``(n, m)`` for each lg n of ``sizes`` and ``--messages`` (``n/8``, ``n`` or ``both``)."""
    fractions = {"n/8": [8], "n": [1], "both": [8, 1]}[messages]
    return [(2**h, 2**h // f) for f in fractions for h in sizes if 2**h // f >= 1]
