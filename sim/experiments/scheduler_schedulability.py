"""Schedulability ratio of random permutations (Ding et al., section 5, Fig. 9).

For each fat-tree size, ``--trials`` random permutations of all ``w**l`` nodes are scheduled
from an empty network by every algorithm (the same permutations for all of them); the table
gives the mean, minimum and maximum schedulability ratio (granted / requested), next to the
ranges the paper reports, and the mean number of rounds needed to grant every request when
the refused ones are retried round after round.
"""

from __future__ import annotations

import random
import statistics

import numpy as np

from . import Experiment, Result, counted

#: The paper's sizes (Fig. 9): 2-, 3- and 4-level trees of 64 to 4096 nodes.
PAPER_SIZES = [(2, 8), (3, 4), (4, 4), (2, 16), (3, 8), (4, 8), (2, 64), (3, 16)]

#: Section 1 / 5: local scheduling 45-70 %, level-wise 78-95 % (over all sizes; Fig. 9's
#: per-size bars are not in the text we have).
PAPER_RANGES = {"level-wise": "78-95", "greedy": "45-70", "random": "45-70", "optimal": "-"}

COUNTING_NOTE = (
    "every request of the permutation counts, including the ones between two nodes of one "
    "level-0 switch (and fixed points): those use no inter-switch link and are always "
    "granted; the 'non-local' column leaves them out of both numerator and denominator"
)


def _sizes(text: str) -> list[tuple[int, ...]]:
    """``LxW`` (FT(L, W)) or ``LxMxW`` (FT(L, M, W): M children, W parents) items."""
    sizes = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
            # The FT(l, w) message as it was; --help tells of LxMxW.
            raise ValueError(f"--sizes wants LxW items like 3x4, not {item.strip()!r}")
        sizes.append(tuple(int(p) for p in parts))
    return sizes


def add_arguments(parser) -> None:
    parser.add_argument(
        "--trials", type=int, default=100, help="random permutations per size (default 100)"
    )
    parser.add_argument(
        "--sizes",
        default=",".join(f"{levels}x{w}" for levels, w in PAPER_SIZES),
        help="comma-separated LxW fat-trees FT(L, W), or LxMxW for FT(L, M, W) (M children, W "
        "parents; the reference models, not the compiled ones) (default: the paper's eight "
        "sizes)",
    )
    parser.add_argument(
        "--algorithms",
        default="level-wise,greedy,random,optimal",
        help="comma-separated algorithms (default: all four)",
    )
    parser.add_argument(
        "--failure-mode",
        choices=("keep", "release", "both"),
        default="both",
        help="links a refused request took: keep (Fig. 7 as written), release, or both "
        "(default both)",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of permutations and random")
    parser.add_argument(
        "--no-rounds",
        action="store_true",
        help="skip the rounds-to-complete column (faster)",
    )


def _trials(tree, dsts, algorithm: str, mode: str, *, with_rounds: bool):
    """Per permutation: the granted ratio, the granted ratio of non-local requests (if any),
    and (``with_rounds``) the rounds until all are granted.

    The compiled schedulers of :func:`fattree.sim.fast.schedulers.schedule_permutations` do the
    work; the first permutation is scheduled by the reference model too, and every grant of it
    must agree (else ``RuntimeError``), so each run checks the fast path on its own sizes.
    """
    from ..fast.schedulers import schedule_permutations

    if getattr(tree, "m", tree.w) != tree.w:
        return _model_trials(tree, dsts, algorithm, mode, with_rounds=with_rounds)
    kw = {"failure_mode": "keep" if mode == "-" else mode, "seeds": range(len(dsts))}
    fast = schedule_permutations(tree.levels, tree.w, dsts, algorithm, **kw)
    _check_first(tree, dsts[0], algorithm, kw["failure_mode"], fast, rounds=False)
    total = dsts.shape[1]
    granted = fast.granted.sum(axis=1).tolist()
    remote = fast.height > 0
    remote_granted = (fast.granted & remote).sum(axis=1).tolist()
    remote_count = remote.sum(axis=1).tolist()
    ratios = [g / total for g in granted]
    nonlocal_ratios = [g / c for g, c in zip(remote_granted, remote_count, strict=True) if c]
    rounds = []
    if with_rounds:
        multi = schedule_permutations(tree.levels, tree.w, dsts, algorithm, rounds=True, **kw)
        _check_first(tree, dsts[0], algorithm, kw["failure_mode"], multi, rounds=True)
        rounds = (1 + multi.round.max(axis=1)).tolist()
    return ratios, nonlocal_ratios, rounds


def _model_trials(tree, dsts, algorithm: str, mode: str, *, with_rounds: bool):
    """As :func:`_trials`, on the reference models (FT(l, m, w) with m != w, which the
    compiled schedulers do not take)."""
    from ...sim.models.scheduler import schedule

    mode = "keep" if mode == "-" else mode
    ratios, nonlocal_ratios, rounds = [], [], []
    for t, dst in enumerate(dsts.tolist()):
        requests = list(enumerate(dst))
        grants = schedule(tree, requests, algorithm, failure_mode=mode, seed=t)
        ratios.append(sum(g.granted for g in grants) / len(grants))
        remote = [g for g in grants if g.height]
        if remote:
            nonlocal_ratios.append(sum(g.granted for g in remote) / len(remote))
        if with_rounds:
            multi = schedule(tree, requests, algorithm, failure_mode=mode, seed=t, rounds=True)
            rounds.append(1 + max(g.round for g in multi))
    return ratios, nonlocal_ratios, rounds


def _check_first(tree, dst, algorithm: str, mode: str, fast, *, rounds: bool) -> None:
    from ...sim.models.scheduler import schedule

    dst = dst.tolist()
    grants = schedule(
        tree, list(enumerate(dst)), algorithm, failure_mode=mode, seed=0, rounds=rounds
    )
    for k, g in enumerate(grants):
        expected = (g.granted, g.ports, g.height, g.failed_level, g.round)
        if fast.grant(0, k) != expected:
            raise RuntimeError(
                f"fast scheduler disagrees with the model on FT({tree.levels},{tree.w}), "
                f"{algorithm}, {mode}, rounds={rounds}, request {k} -> {dst[k]}: "
                f"{fast.grant(0, k)} != {expected}"
            )


def _trees(args):
    """The checked ``--sizes``, ``--algorithms`` and failure modes, and the trees."""
    from ...sim.models.scheduler import ALGORITHMS
    from ...spec.scheduler import GeneralizedFatTree
    from ...spec.topology import FatTree

    if args.trials < 1:
        raise ValueError(f"--trials must be at least 1, not {args.trials}")
    sizes = _sizes(args.sizes)
    algorithms = [a.strip() for a in args.algorithms.split(",")]
    for a in algorithms:
        if a not in ALGORITHMS:
            raise ValueError(
                f"--algorithms: unknown algorithm {a!r}; known: {', '.join(ALGORITHMS)}"
            )
    modes = ["keep", "release"] if args.failure_mode == "both" else [args.failure_mode]
    trees = [FatTree(*size) if len(size) == 2 else GeneralizedFatTree(*size) for size in sizes]
    for tree in trees:
        if tree.num_nodes > 1 << 16 or tree.num_switches > 1 << 20:
            raise ValueError(f"{_name(tree)} has {tree.num_nodes} nodes; at most 65536")
    return sizes, algorithms, modes, trees


def _permutations(tree, args) -> np.ndarray:
    """``--trials`` random permutations of the nodes (row t: node k sends to [t][k])."""
    rng = random.Random(f"{args.seed}-{_name(tree)}")
    dsts = []
    for _ in range(args.trials):
        dst = list(tree.nodes())
        rng.shuffle(dst)
        dsts.append(dst)
    return np.array(dsts, dtype=np.int64)


def _notes(args, trees) -> list[str]:
    notes = [
        f"{args.trials} random permutations per size (seed {args.seed}), the same for every "
        "algorithm; ratio = granted / requested",
        COUNTING_NOTE,
        "failure mode 'keep': links a refused request took below the level where it failed "
        "stay taken (Fig. 7 as written); 'release': they are given back before the next "
        "request; optimal never fails",
        "greedy/random = local scheduling: up port chosen from the source side only, the "
        "request fails when the mirrored down link is taken",
        "paper %: the overall ranges of sections 1 and 5 (local 45-70 %, level-wise 78-95 %)",
    ]
    if any(getattr(t, "m", t.w) != t.w for t in trees):
        notes.append(
            "FT(l,m,w): m children and w parents per switch, scheduled by the reference "
            "models; no optimal row where w < m (a tapered tree: a permutation may not fit "
            "one round)"
        )
    if not args.no_rounds:
        notes.append(
            "rounds: refused requests retried round after round from an empty network until "
            "all are granted (mean over the trials)"
        )
    return notes


def run(args, progress) -> Result:
    sizes, algorithms, modes, trees = _trees(args)
    columns = [
        "FT(l,w)",
        "nodes",
        "algorithm",
        "failure mode",
        "mean %",
        "min %",
        "max %",
        "non-local %",
        "paper %",
    ]
    if not args.no_rounds:
        columns.append("rounds")
    rows = []
    raw = {}
    for tree in counted(progress, trees):
        name = _name(tree)
        dsts = _permutations(tree, args)
        for algorithm in algorithms:
            if algorithm == "optimal" and tree.w < getattr(tree, "m", tree.w):
                continue  # no one-round optimum to compare with on a tapered tree (note)
            # The optimal scheduler has no failures, so failure modes do not apply to it.
            for mode in ["-"] if algorithm == "optimal" else modes:
                progress(f"{name} ({tree.num_nodes} nodes): {algorithm}, {mode} ...")
                ratios, nonlocal_ratios, rounds = _trials(
                    tree, dsts, algorithm, mode, with_rounds=not args.no_rounds
                )
                row = [
                    name,
                    tree.num_nodes,
                    algorithm,
                    mode,
                    round(100 * statistics.fmean(ratios), 2),
                    round(100 * min(ratios), 2),
                    round(100 * max(ratios), 2),
                    round(100 * statistics.fmean(nonlocal_ratios), 2) if nonlocal_ratios else None,
                    PAPER_RANGES[algorithm],
                ]
                if not args.no_rounds:
                    row.append(round(statistics.fmean(rounds), 2))
                rows.append(row)
                raw[f"{name} {algorithm} {mode}"] = ratios
    return Result(
        name="schedulability",
        params={
            "trials": args.trials,
            "sizes": [list(s) for s in sizes],
            "algorithms": algorithms,
            "failure_modes": modes,
            "seed": args.seed,
        },
        columns=columns,
        rows=rows,
        notes=_notes(args, trees),
        extra={"ratios": raw},
    )


def _name(tree) -> str:
    m = getattr(tree, "m", tree.w)
    if m == tree.w:
        return f"FT({tree.levels},{tree.w})"
    return f"FT({tree.levels},{m},{tree.w})"


def plot(result: Result, path: str) -> None:
    """Fig. 9 style: one bar per algorithm and size (mean), whiskers from min to max; one
    panel per failure mode."""
    import matplotlib.pyplot as plt

    rows = result.rows
    sizes = list(dict.fromkeys(r[0] for r in rows))
    algorithms = list(dict.fromkeys(r[2] for r in rows))
    modes = [m for m in result.params["failure_modes"]]
    fig, axes = plt.subplots(
        1, len(modes), figsize=(6.5 * len(modes), 4.2), squeeze=False, sharey=True
    )
    width = 0.8 / len(algorithms)
    for ax, mode in zip(axes[0], modes, strict=True):
        for k, algorithm in enumerate(algorithms):
            xs, means, lows, highs = [], [], [], []
            for i, size in enumerate(sizes):
                for r in rows:
                    if r[0] == size and r[2] == algorithm and r[3] in (mode, "-"):
                        xs.append(i + (k - (len(algorithms) - 1) / 2) * width)
                        means.append(r[4])
                        lows.append(r[4] - r[5])
                        highs.append(r[6] - r[4])
            ax.bar(xs, means, width, label=algorithm, yerr=[lows, highs], capsize=2)
        ax.set_xticks(range(len(sizes)), sizes, rotation=30)
        ax.set_title(f"failure mode: {mode}")
        ax.set_ylim(0, 105)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("schedulability ratio (%)")
    axes[0][-1].legend(loc="lower left", fontsize=8)
    fig.suptitle(
        f"Random permutations ({result.params['trials']} per size): mean, min-max whiskers"
    )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


EXPERIMENTS = [
    Experiment(
        name="schedulability",
        summary="Ding Fig. 9: schedulability of random permutations, level-wise vs local vs "
        "optimal",
        add_arguments=add_arguments,
        run=run,
        plot=plot,
    )
]
