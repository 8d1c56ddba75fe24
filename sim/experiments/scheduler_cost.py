"""Cost per request of the level-wise scheduler (Ding et al., sections 4 and 6, Table 1).

Section 4 says: "The complexity of a conventional algorithm is O(2 l log_l N), while the
complexity of our algorithm is O(l log_l N)". Made concrete per request, per tree:

* **switch visits** on random permutations, from the reference models: level-wise (Fig. 7)
  visits each level once, allocating the up and the down link together, until granted (``H``
  visits) or refused (``f + 1``, refused at level ``f``); the conventional local scheduler
  (``greedy``) climbs ``H`` levels and comes down ``H`` (``2 H``), or stops where it fails.
  Worst cases ``l - 1`` and ``2 (l - 1)``: the factor 2 of the claim.
* **cycles** of our pipeline: a command is taken every clock (initiation interval 1), its
  result comes ``latency = 4 (l - 1) + 3`` cycles later (:func:`fattree.spec.scheduler.
  pipeline_latency`; tests/test_scheduler_cost.py measures it on the RTL), so ``R`` requests
  take ``R - 1 + latency`` cycles: one cycle per request, whatever ``l`` and ``N``, plus the
  fill.
* **Table 1**: the paper's "all requests" column is exactly ``N/2`` times its "single
  request" column (480 = 32 x 15, 4352 = 256 x 17, 38912 = 2048 x 19 ns), i.e. ``N/2``
  requests at one per clock, the pipeline fill not counted. The same column for ours, from
  the Fmax measured in docs/scheduler.md (ECP5 medians over nextpnr seeds), both that way
  and with the fill.
"""

from __future__ import annotations

import argparse
import random
import statistics

from . import Experiment, Result, counted

#: Table 1 (Stratix II, three-level trees): nodes -> (switch, ns per request, ns all).
PAPER_TABLE1 = {64: ("4x4", 15, 480), 512: ("8x8", 17, 4352), 4096: ("16x16", 19, 38912)}

#: Our ECP5 Fmax, MHz, medians over nextpnr seeds, from docs/scheduler.md ("Synthesis"):
#: (levels, m, w) -> (MHz, how measured). The 4-level tree's figure is from the table
#: there measured over five seeds on the previous form of the pipeline's forwarding.
MEASURED_FMAX = {
    (3, 4, 4): (207.9, "ECP5 LFE5U-85F, median of seeds 1-3"),
    (3, 8, 8): (152.6, "ECP5 LFE5U-85F, median of seeds 1-3"),
    (3, 16, 16): (175.5, "ECP5 LFE5U-85F, median of seeds 1-3"),
    (4, 8, 8): (166.2, "ECP5 LFE5U-85F, median of seeds 1-5, previous forwarding"),
    (3, 8, 4): (197.9, "ECP5 LFE5U-85F, median of seeds 1-3"),
    (3, 4, 8): (187.6, "ECP5 LFE5U-85F, median of seeds 1-3"),
}

DEFAULT_SIZES = "2x8,3x4,4x4,2x16,3x8,4x8,3x16,3x4x2,3x2x4,3x8x4,3x4x8"


def _sizes(text: str) -> list[tuple[int, int, int]]:
    """``LxW`` (FT(L, W)) or ``LxMxW`` (FT(L, M, W)) items, comma-separated."""
    sizes = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
            raise argparse.ArgumentTypeError(
                f"--sizes wants LxW or LxMxW items like 3x4 or 3x4x2, not {item.strip()!r}"
            )
        levels, *mw = (int(p) for p in parts)
        m, w = (mw[0], mw[0]) if len(mw) == 1 else mw
        if not 2 <= levels <= 6 or not 2 <= m <= 64 or not 2 <= w <= 64:
            raise argparse.ArgumentTypeError(
                f"--sizes: levels 2..6 and m, w 2..64, not {item.strip()!r}"
            )
        if m**levels > 1 << 16 or m ** (levels - 1) * w > 1 << 20 or w ** (levels - 1) > 1 << 16:
            raise argparse.ArgumentTypeError(
                f"--sizes: {item.strip()!r} is too big for this experiment (at most 65536 nodes)"
            )
        sizes.append((levels, m, w))
    return sizes


def _fmax(text: str) -> dict[tuple[int, int, int], float]:
    """``LxW=MHz`` or ``LxMxW=MHz`` items, comma-separated."""
    out = {}
    for item in text.split(","):
        size, _, mhz = item.partition("=")
        try:
            value = float(mhz)
        except ValueError:
            value = 0.0
        if not value > 0 or value != value or value == float("inf"):
            raise argparse.ArgumentTypeError(f"--fmax wants LxW=MHz items, not {item.strip()!r}")
        out[_sizes(size)[0]] = value
    return out


def add_arguments(parser) -> None:
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=_sizes(DEFAULT_SIZES),
        help="comma-separated LxW (FT(L, W)) or LxMxW (FT(L, M, W)) trees "
        f"(default {DEFAULT_SIZES})",
    )
    parser.add_argument(
        "--trials", type=int, default=10, help="random permutations per size (default 10)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the permutations")
    parser.add_argument(
        "--fmax",
        type=_fmax,
        default={},
        help="our Fmax in MHz for sizes, e.g. 3x16=175.5 (default: docs/scheduler.md's ECP5 "
        "medians for FT(3, 4), FT(3, 8), FT(3, 16), FT(4, 8), FT(3, 8, 4), FT(3, 4, 8))",
    )


def visits(grant, algorithm: str) -> int:
    """Switch levels a scheduler examined for one request (see the module docstring)."""
    height = grant.height
    if algorithm == "level-wise":
        return height if grant.granted else grant.failed_level + 1
    if grant.granted:
        return 2 * height
    if len(grant.ports) < height:  # refused on the way up, at level failed_level
        return grant.failed_level + 1
    return height + (height - grant.failed_level)  # down from the top to the failing level


def run(args, progress) -> Result:
    from ...spec.scheduler import GeneralizedFatTree, pipeline_latency
    from ..models.scheduler import schedule

    if args.trials < 1:
        raise ValueError(f"--trials must be at least 1, not {args.trials}")
    fmax = {k: v[0] for k, v in MEASURED_FMAX.items()} | args.fmax
    rng = random.Random(args.seed)
    rows, identity = [], {}
    for levels, m, w in counted(progress, args.sizes):
        tree = GeneralizedFatTree(levels, m, w)
        n = tree.num_nodes
        per = {"level-wise": [], "greedy": []}
        for _ in range(args.trials):
            dst = list(tree.nodes())
            rng.shuffle(dst)
            requests = list(zip(tree.nodes(), dst, strict=True))
            for algorithm, counts in per.items():
                counts += [visits(g, algorithm) for g in schedule(tree, requests, algorithm)]
        lw, local = statistics.fmean(per["level-wise"]), statistics.fmean(per["greedy"])
        latency = pipeline_latency(levels)
        half = n // 2
        cycles = half - 1 + latency
        paper = PAPER_TABLE1.get(n) if (levels, m) == (3, w) else None
        if paper:
            identity[n] = paper[2] == half * paper[1]
        mhz = fmax.get((levels, m, w))
        ns = 1000 / mhz if mhz else None
        rows.append(
            [
                tree.name(),
                n,
                round(lw, 3),
                levels - 1,
                round(local, 3),
                2 * (levels - 1),
                round(local / lw, 3) if lw else "-",
                latency,
                cycles,
                round(cycles / half, 4),
                paper[1] if paper else "-",
                paper[2] if paper else "-",
                ("yes" if identity[n] else "no") if paper else "-",
                mhz or "-",
                round(ns, 2) if ns else "-",
                round(half * ns, 1) if ns else "-",
                round(cycles * ns, 1) if ns else "-",
            ]
        )
    notes = [
        f"visits: switch levels examined per request, mean over {args.trials} random "
        f"permutations of all nodes (seed {args.seed}), every request counted (H = 0 ones "
        "visit none); level-wise keep mode, conventional = the local greedy scheduler; worst "
        "cases l-1 and 2(l-1), the paper's O(l log_l N) and O(2 l log_l N) with log_l N read "
        "as the number of levels",
        "our pipeline: one command per clock (II = 1), result after latency = 4(l-1)+3 "
        "cycles; N/2 requests (Table 1's count) take N/2 - 1 + latency cycles",
        "Table 1 (Stratix II): all = N/2 x single in every row (480 = 32 x 15, 4352 = 256 x "
        "17, 38912 = 2048 x 19 ns): N/2 requests at one per clock, no pipeline fill; the text's "
        "'less than 40 ms' for all 4096 requests is 38.9 us in the table (a factor 1000, and "
        "N/2 = 2048 requests, not 4096)",
        "our ns: N/2 x (1000 / Fmax) as Table 1 counts, and (N/2 - 1 + latency) / Fmax with "
        "the fill; Fmax from docs/scheduler.md (ECP5 medians over nextpnr seeds) or --fmax",
    ]
    return Result(
        name="scheduler-cost",
        params={
            "sizes": [list(s) for s in args.sizes],
            "trials": args.trials,
            "seed": args.seed,
            "fmax": {"x".join(map(str, k)): v for k, v in sorted(fmax.items())},
        },
        columns=[
            "FT",
            "N",
            "lw visits",
            "lw max",
            "local visits",
            "local max",
            "local/lw",
            "latency",
            "cycles N/2",
            "cycles/req",
            "paper ns/req",
            "paper ns all",
            "all=N/2*req",
            "our MHz",
            "our ns/req",
            "our ns N/2",
            "our ns N/2+fill",
        ],
        rows=rows,
        notes=notes,
        extra={"table1_identity": identity},
    )


def plot(result: Result, path: str) -> None:
    """Switch visits per request (level-wise, local, the two worst cases) and our cycles per
    request for N/2 requests, per tree."""
    import matplotlib.pyplot as plt

    rows = result.rows
    names = [r[0] for r in rows]
    xs = range(len(rows))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
    ax1.bar([x - 0.2 for x in xs], [r[2] for r in rows], 0.4, label="level-wise (measured)")
    ax1.bar([x + 0.2 for x in xs], [r[4] for r in rows], 0.4, label="local greedy (measured)")
    ax1.plot(xs, [r[3] for r in rows], "k_", markersize=14, label="l - 1")
    ax1.plot(xs, [r[5] for r in rows], "r_", markersize=14, label="2 (l - 1)")
    ax1.set_xticks(list(xs), names, rotation=30)
    ax1.set_ylabel("switch levels visited per request")
    ax1.legend(fontsize=8)
    ax2.bar(list(xs), [r[9] for r in rows])
    ax2.set_xticks(list(xs), names, rotation=30)
    ax2.set_ylabel("our cycles per request (N/2 requests, fill included)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


EXPERIMENTS = [
    Experiment(
        name="scheduler-cost",
        summary="Ding sec. 4/6, Table 1: switch visits and cycles per request, level-wise vs "
        "conventional, our pipeline vs the paper's table",
        add_arguments=add_arguments,
        run=run,
        plot=plot,
    )
]
