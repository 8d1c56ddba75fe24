"""DeHon (1993): the lost tables of components and channel capacities, from the generator.

``dehon-components`` counts RN1 routers per layer and channel capacities per level of the
2-wide and 8-wide unit trees, and the unit trees and RN1 of fat-trees of 1.. unit-tree
stages, all from :mod:`fattree.spec.rn1_tree` (the capacities from the generated wiring,
the same objects the networks' RTL will be elaborated from); then the bidelta leaf clusters
(12, 48, 192 nodes) and the hybrid fat-trees built on them, from
:mod:`fattree.spec.rn1_hybrid`; docs/dehon.md has the derivations and the paper's claims
beside them.

The other DeHon experiments live beside this one: ``dehon-faults`` (rn1_faults.py),
``dehon-latency`` (rn1_latency.py), ``dehon-open-probability`` (rn1_open_probability.py) and
``dehon-endpoint-retries`` (rn1_endpoint_retries.py).
"""

from __future__ import annotations

import argparse

from ...spec.rn1_hybrid import (
    CLUSTER_SIZES,
    HYBRID_STAGES,
    hybrid_fat_tree,
    hybrid_network,
    leaf_cluster,
)
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
    rows += _hybrid_rows(args, progress)
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
            "leaf clusters: RN1 per layer = per stage, first first; capacity = links each way "
            "of one node / of the cluster to the tree; ratio = the up links over the cluster's "
            "node links (a quarter of the first stage's inputs come from the tree: 1/3)",
            "hybrid fat-trees: the leaf clusters at stage 1, 8-wide unit trees above; unit "
            "trees = stacks per stage (clusters first); capacity = links out of one node's "
            "top per stage; ratio = RN1 per processing node; stages 1 and 2 counted again "
            "from the wiring (hybrid_network) and found equal",
        ],
        extra={
            "unit_trees": {
                str(w): {"layers": t.layer_counts(), "channels": t.channels()}
                for w, t in trees.items()
            }
        },
    )


def _hybrid_rows(args, progress) -> list[list]:
    """Rows of the bidelta leaf clusters and of the hybrid fat-trees over ``args.stages``
    (stage 1: one cluster alone)."""
    rows = []
    for n in CLUSTER_SIZES:
        c = leaf_cluster(n, args.seed)
        layers = c.layer_counts()
        rows.append(
            [
                f"leaf cluster {n}",
                "-",
                n,
                1,
                len(c.routers),
                "/".join(str(v) for v in layers.values()),
                f"2/{c.top}",
                round(c.top / (2 * n), 4),
            ]
        )
    for cluster in counted(progress, CLUSTER_SIZES):
        for n in args.stages:
            counts = hybrid_fat_tree(cluster, n)
            if n in HYBRID_STAGES:
                wired = hybrid_network(cluster, n, args.seed).counts()
                want = [
                    {"trees": s.trees, "routers": s.routers, "top": s.top} for s in counts.stages
                ]
                if [{k: r[k] for k in ("trees", "routers", "top")} for r in wired] != want:
                    raise AssertionError(f"hybrid {cluster} x {n}: {wired} != counts {want}")
            rows.append(
                [
                    f"hybrid fat-tree {cluster}",
                    n,
                    counts.processors,
                    "/".join(str(s.trees) for s in counts.stages),
                    counts.routers,
                    "-",
                    "/".join(str(s.top) for s in counts.stages),
                    round(counts.routers / counts.processors, 4),
                ]
            )
    return rows


EXPERIMENTS = [
    Experiment(
        "dehon-components",
        "DeHon: RN1 and channel capacities of unit trees and unit-tree fat-trees",
        _args,
        _run,
    ),
]
