"""DeHon (1993) and Leighton: pairs of endpoints still connected under faults
(``dehon-faults``): dead routers of the bidelta network, or dead unit-tree stacks, links and
routers of the two-stage fat-tree (:meth:`fattree.spec.rn1_tree.FatTreeNetwork.connected`),
random against regular wiring.
"""

from __future__ import annotations

import argparse
import random

from ...spec.rn1_bidelta import SIZES
from ...spec.rn1_tree import fat_tree_network
from . import Experiment, Result, counted, int_list, positive_int

__all__ = ["EXPERIMENTS"]


def _faults_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--network",
        choices=("bidelta", "fat-tree"),
        default="bidelta",
        help="bidelta (dead routers) or the 2-stage fat-tree of unit trees (dead unit-tree "
        "stacks, links and routers; random, regular and non-dispersed wiring)",
    )
    parser.add_argument("--endpoints", type=int, choices=SIZES[1:3], default=64)
    parser.add_argument(
        "--faults",
        type=int_list,
        default=None,
        help="dead routers (bidelta; default 1,2,4,8,16) or dead links and routers "
        "(fat-tree; default 16,64,256), e.g. 1,2,4",
    )
    parser.add_argument(
        "--trials",
        type=positive_int,
        default=None,
        help="random fault sets per point (default 20; fat-tree 5)",
    )
    parser.add_argument("--seed", type=int, default=1, help="wiring and fault seed")


def _faults_run(args, progress=lambda text: None) -> Result:
    from ...spec.rn1_bidelta import bidelta

    if getattr(args, "network", "bidelta") == "fat-tree":
        return _fat_tree_faults(args, progress)
    faults_list = args.faults or [1, 2, 4, 8, 16]
    trials = args.trials or 20

    nets = {
        "random": bidelta(args.endpoints, args.seed),
        "regular": bidelta(args.endpoints, args.seed, random_wiring=False),
    }
    routers = [
        (j, r)
        for j in range(nets["random"].stages)
        for r in range(nets["random"].routers_per_stage)
    ]
    pairs = args.endpoints**2
    rows = []
    for faults in counted(progress, faults_list):
        rng = random.Random(args.seed * 1000 + faults)
        sets = [set(rng.sample(routers, min(faults, len(routers)))) for _ in range(trials)]
        row = [faults]
        for net in nets.values():
            fractions = [sum(map(sum, net.connected(dead))) / pairs for dead in sets]
            row += [sum(fractions) / len(fractions), min(fractions)]
        rows.append(row)
    return Result(
        "dehon-faults",
        {"endpoints": args.endpoints, "faults": faults_list, "trials": trials, "seed": args.seed},
        ["dead routers", "random: pairs", "random: worst", "regular: pairs", "regular: worst"],
        rows,
        notes=[
            "fraction of (source, destination) endpoint pairs with a path that avoids the dead "
            "routers (either of the source's two outputs; a head may take either output of "
            "its direction), mean and worst over the trials; the same fault sets for both "
            "wirings of the bidelta network",
        ],
    )


#: The fat-tree wirings compared: random (seeded unit trees, dispersion in random order),
#: regular (unit trees and dispersion in order), and the same parts not dispersed (a child's
#: top links to the parent trees in blocks of eight).
FAT_WIRINGS = ("random", "regular", "not dispersed")


def fat_tree_wirings(seed: int) -> dict:

    return {
        "random": fat_tree_network(2, seed),
        "regular": fat_tree_network(2, None),
        "not dispersed": fat_tree_network(2, None, dispersed=False),
    }


def fat_tree_fault_rows(nets: dict, faults: list[int], trials: int, seed: int, progress):
    """Rows of :func:`_fat_tree_faults`: ``[what, count, mean, worst, ...]`` per wiring,
    the fraction of ordered pairs of distinct processing nodes still connected."""
    import itertools

    first = next(iter(nets.values()))
    n = first.nodes
    pairs = n * (n - 1)

    def score(**faults_):
        values = [net.connected(**faults_).sum() / pairs for net in nets.values()]
        return values

    def row(what, count, sets):
        per = [score(**f) for f in sets]
        out = [what, count]
        for w in range(len(nets)):
            xs = [p[w] for p in per]
            out += [sum(xs) / len(xs), min(xs)]
        return out

    rows = []
    parents = first.stage_trees(2)
    for k in counted(progress, range(1, len(parents) + 1)):
        combos = [{"stacks": [(2, p) for p in c]} for c in itertools.combinations(parents, k)]
        rows.append(row("parent stacks", k, combos))
    leaves = first.stage_trees(1)
    rows.append(row("leaf stacks", 1, [{"stacks": [(1, x)]} for x in leaves]))
    # The same parts fail in every wiring: a link is named by the router output (or node
    # output) it leaves, whatever the wiring connects it to; links out of swallows are the
    # same channels as the links into them, and the root's open top links connect no pair.
    ends = sorted(
        src
        for src, dst in first.links
        if src[:2] != ("out", "sw") and src[0] != "top_down" and dst[0] != "top_up"
    )
    routers = sorted(first.routers)
    for count in counted(progress, faults):
        rng = random.Random(seed * 1000 + count)
        link_sets = [{"links": rng.sample(ends, min(count, len(ends)))} for _ in range(trials)]
        rows.append(row("links", count, link_sets))
        router_sets = [
            {"dead": rng.sample(routers, min(count, len(routers)))} for _ in range(trials)
        ]
        rows.append(row("routers", count, router_sets))
    return rows


def _fat_tree_faults(args, progress) -> Result:
    faults = args.faults or [16, 64, 256]
    trials = args.trials or 5
    nets = fat_tree_wirings(args.seed)
    rows = fat_tree_fault_rows(nets, faults, trials, args.seed, progress)
    columns = ["faults", "count"]
    for name in nets:
        columns += [f"{name}: pairs", f"{name}: worst"]
    return Result(
        "dehon-faults",
        {"network": "fat-tree", "faults": faults, "trials": trials, "seed": args.seed},
        columns,
        rows,
        notes=[
            "2-stage fat-tree (4096 nodes, 64 leaf and 4 parent unit trees): fraction of "
            "ordered pairs of distinct nodes with a path that avoids the faults (either of the "
            "source's links, either output of each direction), mean and worst over the sets; "
            "parent stacks: every choice of that many of the 4 parent unit trees; leaf "
            "stacks: each of the 64; links and routers: random sets, the same parts in every "
            "wiring",
            "the paper: with proper dispersion any unit-tree stack but a leaf one can go and "
            "the fat-tree stays functionally complete; a leaf stack takes its own 64 nodes "
            "(1 - (2 * 64 * 4095 - 64 * 63) / (4096 * 4095) = 0.96890 of the pairs left)",
        ],
    )


EXPERIMENTS = [
    Experiment(
        "dehon-faults",
        "DeHon/Leighton: pairs still connected under faults (bidelta routers; fat-tree stacks, "
        "links, routers), random vs regular wiring",
        _faults_args,
        _faults_run,
    ),
]
