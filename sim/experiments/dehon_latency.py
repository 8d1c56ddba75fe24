"""DeHon (1993): routers and cycles per connection (``dehon-latency``): the fat-tree's stage
skipping against the bidelta network, counted from the generator and measured as head cycles
on the cycle-exact models.
"""

from __future__ import annotations

import argparse

from ...spec.rn1 import DROP, ctrl_of, word
from ...spec.rn1_bidelta import ENDPOINT_LINKS
from ...spec.rn1_tree import WIRED_STAGES
from ..models.rn1 import RN1BideltaModel
from . import Experiment, Result, counted
from .dehon import stages_list

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
        ],
        extra={"swallows": {f"{n}/{level}": k for (n, level), k in swallows.items()}},
    )


EXPERIMENTS = [
    Experiment(
        "dehon-latency",
        "DeHon: routers and cycles per connection, fat-tree (stage skipping) against bidelta",
        _latency_args,
        _latency_run,
    ),
]
