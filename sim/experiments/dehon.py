"""DeHon (1993): the lost tables of components and channel capacities, from the generator.

``dehon-components`` counts RN1 routers per layer and channel capacities per level of the
2-wide and 8-wide unit trees, and the unit trees and RN1 of fat-trees of 1.. unit-tree
stages, all from :mod:`fattree.spec.rn1_tree` (the capacities from the generated wiring,
the same objects the networks' RTL will be elaborated from); docs/dehon.md has the
derivation and the paper's claims beside them.

The other DeHon experiments live beside this one: ``dehon-faults`` (dehon_faults.py),
``dehon-latency`` (dehon_latency.py), ``dehon-open-probability`` (dehon_open.py) and
``dehon-endpoint-retries`` (rn1_endpoint.py).
"""

from __future__ import annotations

import argparse

from ...spec.rn1_tree import UNIT_WIDTHS, WIRED_STAGES, fat_tree, fat_tree_network, unit_tree
from . import Experiment, Result, counted, int_list

__all__ = ["EXPERIMENTS", "stages_list"]


def stages_list(text: str) -> list[int]:
    """``--stages``: a list of unit-tree stage counts, 1..6."""
    values = int_list(text)
    if any(v > 6 for v in values):
        raise argparse.ArgumentTypeError(f"stages must be 1..6, not {text!r}")
    return values


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stages",
        type=stages_list,
        default=[1, 2, 3],
        help="unit-tree stages of the fat-trees, e.g. 1..3 (default) or 1,4",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="shuffle the unit trees' wiring with this seed (random wiring; default regular)",
    )


def _run(args, progress=lambda text: None) -> Result:
    rows = []
    trees = {}
    for w in counted(progress, UNIT_WIDTHS):
        tree = unit_tree(w, args.seed)
        trees[w] = tree
        layers = tree.layer_counts()
        caps = tree.channels()
        rows.append(
            [
                f"unit tree {w}-wide",
                "-",
                64,
                1,
                sum(layers.values()),
                "/".join(str(v) for v in layers.values()),
                "/".join(str(c["up"]) for c in caps),
                caps[-1]["up"] / caps[0]["up"],
            ]
        )
    for n in counted(progress, args.stages):
        counts = fat_tree(n)
        if n in WIRED_STAGES:
            # The counts against the fat-tree as wired (the objects the model and RTL use).
            wired = fat_tree_network(n, args.seed).counts()
            want = [{"trees": s.trees, "routers": s.routers, "top": s.top} for s in counts.stages]
            if [{k: r[k] for k in ("trees", "routers", "top")} for r in wired] != want:
                raise AssertionError(f"{n} stages: wiring {wired} != counts {want}")
        rows.append(
            [
                "fat-tree",
                n,
                counts.processors,
                "/".join(str(s.trees) for s in counts.stages),
                counts.routers,
                "-",
                "/".join(str(s.top) for s in counts.stages),
                round(counts.routers / counts.processors, 4),
            ]
        )
    return Result(
        "dehon-components",
        {"stages": args.stages, "seed": args.seed},
        [
            "structure",
            "stages",
            "nodes",
            "unit trees",
            "RN1",
            "RN1 per layer",
            "capacity",
            "ratio",
        ],
        rows,
        notes=[
            "unit trees: nodes = subtrees; RN1 per layer top down layer/middle/bottom/up; "
            "capacity = links per logical channel at levels 0..3 (counted from the wiring); "
            "ratio = top capacity / subtree capacity (the paper: 16)",
            "fat-trees: 2-wide unit trees at the processing nodes, 8-wide above; unit trees "
            "per stage leaf first; capacity = links out of one node's top per stage; "
            "ratio = RN1 per processing node; for 1 and 2 stages counted again from the "
            "wiring (fat_tree_network) and found equal",
        ],
        extra={
            "unit_trees": {
                str(w): {"layers": t.layer_counts(), "channels": t.channels()}
                for w, t in trees.items()
            }
        },
    )


EXPERIMENTS = [
    Experiment(
        "dehon-components",
        "DeHon: RN1 and channel capacities of unit trees and unit-tree fat-trees",
        _args,
        _run,
    ),
]
