"""Stanfill (1987), section 3.9: the omega network's single paths and its traffic jams
(``omega-paths``).

"There is exactly one path between any input node and any output node [...]. There are,
however, patterns where a traffic jam develops and routing takes much more time. One remedy
to this problem is to send messages via a randomly chosen intermediate processor."

The model here is the network itself, built for this check (the project has no omega
hardware): ``N = 2^n`` terminals, ``n`` stages of ``N / 2`` two-by-two switches, a perfect
shuffle of the wires in front of every stage. Wire layer 0 is the inputs, layer ``t`` the
outputs of stage ``t``; wire ``p`` of layer ``t - 1`` enters stage ``t`` at input
``rotl(p)`` (the shuffle), switch ``rotl(p) // 2``, which may put it out on either of its
wires ``2s`` and ``2s + 1``. Two things are checked:

* the single path, by enumeration: from every input, every way through the switches
  (``2^n`` of them) is followed and each output is reached exactly once (:func:`all_paths`);
  destination-tag routing (stage ``t`` takes output bit ``n - t`` of the destination,
  :func:`route_positions`) gives that path;
* the worst wire load of a permutation (the most messages whose single paths share one
  wire): transpose and bit reversal against random permutations, and the remedy the paper
  names (a random intermediate node, two passes).
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from . import Experiment, Result, counted, lg_sizes, positive_int

__all__ = [
    "EXPERIMENTS",
    "shuffle",
    "switch_outputs",
    "all_paths",
    "route_positions",
    "wire_loads",
    "worst_load",
    "transpose",
    "bit_reversal",
]

#: lg N of the largest network the worst loads are computed for (numpy, 2^20 in seconds).
MAX_LG = 20
#: lg N up to which the single paths are checked by enumeration (N^2 lg N wire visits).
MAX_ENUMERATED = 10


def shuffle(p: int, n: int) -> int:
    """The perfect shuffle of ``2^n`` wires: wire ``p`` goes to position ``rotl(p)`` (its
    top address bit moved to the bottom), as cards interleave in a perfect riffle."""
    return ((p << 1) | (p >> (n - 1))) & ((1 << n) - 1)


def switch_outputs(p: int, n: int) -> tuple[int, int]:
    """The two wires of the next layer that wire ``p`` can reach through one stage: the
    outputs of the switch its shuffled position enters."""
    s = shuffle(p, n) >> 1
    return (2 * s, 2 * s + 1)


def all_paths(src: int, n: int) -> list[list[int]]:
    """Every path from input ``src`` through the ``n`` stages (both outputs of every
    switch), each the wire positions of layers 0..n."""
    paths = [[src]]
    for _ in range(n):
        paths = [path + [q] for path in paths for q in switch_outputs(path[-1], n)]
    return paths


def route_positions(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """Destination-tag routing of messages ``src -> dst`` (arrays): the wire each one takes
    in layers 0..n, shape ``(n + 1, len(src))``. Stage ``t`` shuffles the position and sets
    its low bit to bit ``n - t`` of the destination."""
    mask = (1 << n) - 1
    pos = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    layers = [pos]
    for t in range(1, n + 1):
        pos = ((pos << 1) & mask) | ((dst >> (n - t)) & 1)
        layers.append(pos)
    return np.stack(layers)


def wire_loads(src, dst, n: int) -> np.ndarray:
    """Messages on every wire, shape ``(n + 1, 2^n)``: layer by layer, how many of the
    messages' paths pass each wire."""
    positions = route_positions(src, dst, n)
    return np.stack([np.bincount(layer, minlength=1 << n) for layer in positions])


def worst_load(src, dst, n: int) -> int:
    """The most messages on any one wire."""
    return int(wire_loads(src, dst, n).max())


def transpose(n: int) -> np.ndarray:
    """The transpose of a ``2^(n - n//2)`` by ``2^(n//2)`` matrix stored row by row:
    address ``row . col`` to ``col . row`` (the bits rotated by ``n // 2``)."""
    p = np.arange(1 << n, dtype=np.int64)
    low = n // 2
    return ((p & ((1 << low) - 1)) << (n - low)) | (p >> low)


def bit_reversal(n: int) -> np.ndarray:
    """Address bits in reverse order (the FFT's permutation)."""
    p = np.arange(1 << n, dtype=np.int64)
    out = np.zeros_like(p)
    for b in range(n):
        out |= ((p >> b) & 1) << (n - 1 - b)
    return out


def check_single_paths(n: int) -> tuple[int, int]:
    """Enumerate every path from every input of the ``2^n`` network: ``(pairs, pairs with
    exactly one path that destination-tag routing takes)``."""
    size = 1 << n
    good = 0
    for src in range(size):
        ends: dict[int, list[list[int]]] = {}
        for path in all_paths(src, n):
            ends.setdefault(path[-1], []).append(path)
        dsts = np.arange(size)
        routed = route_positions(np.full(size, src), dsts, n)
        good += sum(
            len(ends.get(d, [])) == 1 and ends[d][0] == routed[:, d].tolist() for d in range(size)
        )
    return size * size, good


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_sizes(2, MAX_LG),
        default=lg_sizes(2, MAX_LG)("4..16"),
        help=f"lg N values (2..{MAX_LG}; default 4..16)",
    )
    p.add_argument(
        "--trials", type=positive_int, default=20, help="random permutations per size (20)"
    )
    p.add_argument("--seed", type=int, default=1, help="seed of the random permutations")
    p.add_argument(
        "--enumerate",
        type=lg_sizes(1, MAX_ENUMERATED),
        default=lg_sizes(1, MAX_ENUMERATED)("1..6"),
        help=f"lg N values whose single paths are checked by enumeration (1..{MAX_ENUMERATED}; "
        "default 1..6)",
    )


def _size_row(n: int, trials: int, rng: np.random.Generator) -> list:
    """One size's row: worst loads of transpose, bit reversal, random permutations (mean
    and max over the trials) and transpose through random intermediates."""
    size = 1 << n
    src = np.arange(size)
    tr = worst_load(src, transpose(n), n)
    br = worst_load(src, bit_reversal(n), n)
    rand = [worst_load(src, rng.permutation(size), n) for _ in range(trials)]
    # The paper's remedy: each message first to a random node, then on to its destination.
    valiant = []
    for _ in range(trials):
        mid = rng.integers(0, size, size)
        valiant.append(max(worst_load(src, mid, n), worst_load(mid, transpose(n), n)))
    root = math.sqrt(size)
    return [
        n,
        size,
        tr,
        tr / root,
        br,
        br / root,
        float(np.mean(rand)),
        max(rand),
        max(valiant),
    ]


def _run(args, progress=lambda text: None) -> Result:
    sizes = list(args.sizes)
    enumerate_sizes = list(getattr(args, "enumerate", None) or [])
    rng = np.random.default_rng(args.seed)
    rows = [_size_row(n, args.trials, rng) for n in counted(progress, sizes)]
    checked = {n: check_single_paths(n) for n in enumerate_sizes}
    notes = [
        "worst load: the most messages whose single paths share one wire (any layer); "
        "transpose: address row.col to col.row (bits rotated by n//2); random: uniform "
        f"random permutations, mean and max over {args.trials}; via random: transpose sent "
        "through a random intermediate node, the worse of the two passes (max over the trials)",
    ]
    for n, (pairs, good) in checked.items():
        notes.append(
            f"N = {1 << n}: {good} of {pairs} (input, output) pairs have exactly one path, "
            "the one destination-tag routing takes (every path enumerated)"
        )
    return Result(
        "omega-paths",
        {"sizes": sizes, "trials": args.trials, "seed": args.seed, "enumerate": enumerate_sizes},
        [
            "lg N",
            "N",
            "transpose",
            "transpose / sqrt N",
            "bit reversal",
            "bit reversal / sqrt N",
            "random: mean",
            "random: max",
            "transpose via random: max",
        ],
        rows,
        notes=notes,
        extra={"single_paths": {str(1 << n): list(v) for n, v in checked.items()}},
    )


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    from . import save_plot

    col = {c: i for i, c in enumerate(result.columns)}
    sizes = [r[col["N"]] for r in result.rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, style in [
        ("transpose", "o-"),
        ("bit reversal", "s--"),
        ("random: max", "^-"),
        ("transpose via random: max", "v-"),
    ]:
        ax.plot(sizes, [r[col[name]] for r in result.rows], style, ms=4, label=name)
    ax.plot(sizes, [math.sqrt(n) for n in sizes], "k:", label="sqrt N")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.yaxis.set_minor_formatter(NullFormatter())  # powers of two only
    ax.set_xlabel("terminals N")
    ax.set_ylabel("worst messages on one wire")
    ax.legend(fontsize=7)
    save_plot(fig, path)


EXPERIMENTS = [
    Experiment(
        "omega-paths",
        "Stanfill 1987 sec. 3.9: the omega network's single paths; worst wire load of "
        "transpose and bit reversal (sqrt N) against random permutations",
        _args,
        _run,
        _plot,
    ),
]
