"""DeHon (1993): routers and cycles per connection (``dehon-latency``): the fat-tree's stage
skipping against the bidelta network and the hybrid fat-trees (bidelta leaf clusters under
unit trees), counted from the generator and measured as head cycles on the cycle-exact
models; and the locality structure of each: how many endpoints lie within each distance.
"""

from __future__ import annotations

import argparse

from ...spec.rn1 import DROP, ctrl_of, word
from ...spec.rn1_bidelta import ENDPOINT_LINKS
from ...spec.rn1_tree import WIRED_STAGES
from ..models.rn1 import RN1BideltaModel
from . import Experiment, Result, counted
from .rn1_components import stages_list

__all__ = ["EXPERIMENTS"]


def fat_tree_routers(level: int) -> int:
    """Routers a connection crosses in a fat-tree of unit-tree stages between two nodes whose
    lowest common node is at tree level ``level``: one up router per unit-tree stage up to
    stage ``ceil(level / 3)`` (the last one crosses over), then one down router per level."""
    return -(-level // 3) + level


def head_cycles(model, channel: int, head: int, limit: int = 64) -> int:
    """Cycles from a head entering ``channel`` of an idle network ``model`` to its arrival on
    an output channel (the model is the RTL's cycle-exact reference)."""
    n = model.channels
    for cycle in range(limit):
        if any(ctrl_of(w) for w in model.o_fwd):
            return cycle
        i_fwd = [0] * n
        if cycle == 0:
            i_fwd[channel] = word(1, head)
        elif cycle == 1:
            i_fwd[channel] = word(0, DROP)
        model.step(i_fwd, [0] * n)
    raise RuntimeError(f"the head did not arrive in {limit} cycles")


def fat_tree_head_cycles(model, src: int, dest: int, limit: int = 64) -> int:
    """Cycles from the first head byte of node ``src`` entering an idle fat-tree ``model``
    (:class:`fattree.sim.models.rn1.RN1FatTreeModel`) to the first word arriving at node
    ``dest``: the head bytes of :meth:`FatTreeNetwork.heads`, one data byte, DROP."""
    words = [word(1, h) for h in model.net.heads(src, dest)] + [word(1, 0), word(0, DROP)]
    n = model.channels
    for cycle in range(limit):
        if any(ctrl_of(model.o_fwd[2 * dest + k]) for k in range(ENDPOINT_LINKS)):
            return cycle
        i_fwd = [0] * n
        i_fwd[2 * src] = words[cycle] if cycle < len(words) else 0
        model.step(i_fwd, [0] * n)
    raise RuntimeError(f"the head did not arrive in {limit} cycles")


def _latency_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stages",
        type=stages_list,
        default=[1, 2, 3],
        help="unit-tree stages of the fat-trees (default 1..3)",
    )


def _latency_run(args, progress=lambda text: None) -> Result:
    from ...spec.rn1 import head_for
    from ...spec.rn1_bidelta import bidelta
    from ...spec.rn1_tree import SUBTREES
    from ..models.rn1 import RN1FatTreeModel, RN1UnitTreeModel

    rows = []
    # Measured on the models: a 2-wide unit tree (one-stage fat-tree) and bidelta networks.
    tree = RN1UnitTreeModel(2, 1)
    for level in counted(progress, (1, 2, 3)):
        dest = 3 << 2 * (level - 1)  # lowest common node with subtree 0 at this level
        head = head_for(tree.tree.route(0, dest))
        cycles = head_cycles(RN1UnitTreeModel(2, 1), 0, head)
        rows.append(
            [
                "fat-tree",
                1,
                64,
                level,
                3 * 4 ** (level - 1),
                fat_tree_routers(level),
                2 * level,
                cycles,
            ]
        )
    swallows = {}
    for n in args.stages:
        if n == 1:
            continue
        model = RN1FatTreeModel(2, None) if n in WIRED_STAGES else None
        for level in counted(progress, range(1, 3 * n + 1)):
            dest = 3 << 2 * (level - 1)
            swallows[n, level] = 2 * (-(-level // 3) - 1)
            cycles = None
            if model is not None:
                model.reset()
                cycles = fat_tree_head_cycles(model, 0, dest)
            rows.append(
                [
                    "fat-tree",
                    n,
                    SUBTREES**n,
                    level,
                    3 * 4 ** (level - 1),
                    fat_tree_routers(level),
                    2 * level,
                    cycles,
                ]
            )
    for size in (16, 64, 256):
        net = bidelta(size)
        cycles = None
        if size <= 64:
            model = RN1BideltaModel(size, 1)
            cycles = head_cycles(model, 0, net.head(size - 1))
        rows.append(["bidelta", "-", size, "all", size - 1, net.stages, None, cycles])
    rows += _hybrid_rows(args.stages, progress)
    groups: dict[str, list] = {}
    for r in rows:
        groups.setdefault(f"{r[0]} {r[2]}", []).append(r)
    locality = {name: locality_steps(group) for name, group in groups.items()}
    return Result(
        "dehon-latency",
        {"stages": args.stages},
        [
            "network",
            "stages",
            "endpoints",
            "level",
            "endpoints there",
            "routers",
            "naive",
            "head cycles",
        ],
        rows,
        notes=[
            "level: lowest common tree level of source and destination (fat-trees); endpoints "
            "there: how many lie at that level from one endpoint (3 * 4^(level-1)); routers: "
            "crossed by a connection (stage skipping: one up router per unit-tree stage); "
            "naive: a fat-tree with one up router per level (2 * level); head cycles: measured "
            "on the cycle-exact model (one cycle per router), where built",
            "2 stages: one head byte per unit tree crossed; each link into another unit tree "
            "passes a swallow (one cycle, and its dropped byte one more), so head cycles = "
            "routers + 2 * swallows, with 2 swallows from level 4 on",
            "hybrid N: leaf clusters of N nodes (stage 1: one cluster), 8-wide unit trees "
            "above; level 'cluster': inside the source's cluster, level L >= 1: clusters whose "
            "lowest common node is L tree levels above them (3 per unit-tree stage); one head "
            "byte per stack crossed, a swallow on every link between stacks (2 per stage "
            "climbed); bidelta N (counted): log4 N stages, over one head byte from N = 1024",
            "locality (endpoints within R routers, R:count): "
            + "; ".join(
                f"{name}: " + ", ".join(f"{r}:{k}" for r, k in steps)
                for name, steps in locality.items()
            ),
        ],
        extra={
            "swallows": {f"{n}/{level}": k for (n, level), k in swallows.items()},
            "locality": {name: [list(x) for x in steps] for name, steps in locality.items()},
        },
    )


def _hybrid_rows(stages: list[int], progress) -> list[list]:
    """``dehon-latency`` rows of the hybrid fat-trees of 12, 48 and 192-node leaf clusters
    over ``stages`` (1: one cluster), measured on :class:`RN1HybridModel` where wired (the
    192-node cluster alone; clusters of 12 and 48 under one unit-tree stage), and of the
    bidelta networks of the same sizes (the next power of four), counted."""
    from ...spec.rn1_hybrid import HYBRID_STAGES, hybrid_locality
    from ..models.rn1 import RN1HybridModel

    rows, bideltas, counted_sizes = [], [], set()
    for cluster in counted(progress, (12, 48, 192)):
        for n in stages:
            wired = n == 1 or (n in HYBRID_STAGES and cluster < 192)
            model = RN1HybridModel(cluster, n) if wired else None
            nodes = cluster * 64 ** (n - 1)
            for row in hybrid_locality(cluster, n):
                level = 3 * (row["stage"] - 2) + row["level"] if row["stage"] > 1 else 0
                # Node 0 to the last node of its cluster, or to the first node of the cluster
                # whose lowest common node with cluster 0 is ``level`` levels up.
                dest = cluster - 1 if level == 0 else cluster * (3 << 2 * (level - 1))
                cycles = None
                if model is not None:
                    model.reset()
                    cycles = fat_tree_head_cycles(model, 0, dest)
                    swallows = len(model.net.route(0, dest)) - 1
                    if sum(map(len, model.net.route(0, dest))) != row["routers"] or (
                        swallows != row["swallows"]
                    ):
                        raise AssertionError(f"hybrid {cluster} x {n}: {row} != route")
                rows.append(
                    [
                        f"hybrid {cluster}",
                        n,
                        nodes,
                        "cluster" if level == 0 else level,
                        row["endpoints"],
                        row["routers"],
                        None,
                        cycles,
                    ]
                )
            size = 4 ** -(-(nodes.bit_length() - 1) // 2)  # the next power of four
            if size > 256 and size not in counted_sizes:  # the rows above: 16 .. 256
                counted_sizes.add(size)
                stages_ = (size.bit_length() - 1) // 2
                bideltas.append(
                    ["bidelta (counted)", "-", size, "all", size - 1, stages_, None, None]
                )
    return rows + sorted(bideltas, key=lambda r: r[2])


def locality_steps(rows: list[list]) -> list[tuple[int, int]]:
    """``(routers, endpoints within that many routers)`` of one network's rows."""
    within, total = [], 0
    for r in sorted(rows, key=lambda r: r[5]):
        total += r[4]
        if within and within[-1][0] == r[5]:
            within[-1] = (r[5], total)
        else:
            within.append((r[5], total))
    return within


EXPERIMENTS = [
    Experiment(
        "dehon-latency",
        "DeHon: routers and cycles per connection, fat-tree (stage skipping) against bidelta",
        _latency_args,
        _latency_run,
    ),
]
