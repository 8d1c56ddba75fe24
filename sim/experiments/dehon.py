"""DeHon (1993): the lost tables of components and channel capacities, from the generator.

``dehon-components`` counts RN1 routers per layer and channel capacities per level of the
2-wide and 8-wide unit trees, and the unit trees and RN1 of fat-trees of 1.. unit-tree
stages, all from :mod:`fattree.spec.rn1_tree` (the capacities from the generated wiring,
the same objects the networks' RTL will be elaborated from); docs/dehon.md has the
derivation and the paper's claims beside them.

``dehon-faults`` counts the pairs of endpoints still connected under faults: dead routers of
the bidelta network, or dead unit-tree stacks, links and routers of the two-stage fat-tree
(:meth:`fattree.spec.rn1_tree.FatTreeNetwork.connected`), random against regular wiring.
``dehon-latency`` counts routers per connection and measures head cycles on the models.

``dehon-open-probability`` drives the cycle-exact bidelta model
(:class:`fattree.sim.models.rn1.RN1BideltaModel`, the RTL's reference) with random traffic at
several loads and measures how often a connection opens on the first try.
"""

from __future__ import annotations

import argparse
import random

from ...spec.rn1 import BLOCKED, CONNECTED, DROP, STATUS, ctrl_of, data_of, word
from ...spec.rn1_bidelta import ENDPOINT_LINKS, SIZES
from ...spec.rn1_tree import UNIT_WIDTHS, WIRED_STAGES, fat_tree, fat_tree_network, unit_tree
from ..models.rn1 import RN1BideltaModel
from . import Experiment, Result, counted, int_list, positive_int

__all__ = ["EXPERIMENTS"]


def _stages(text: str) -> list[int]:
    values = int_list(text)
    if any(v > 6 for v in values):
        raise argparse.ArgumentTypeError(f"stages must be 1..6, not {text!r}")
    return values


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stages",
        type=_stages,
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


def _loads(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a comma list of numbers, not {text!r}"
        ) from None
    if not values or any(not 0 < v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"loads must be in (0, 1], not {text!r}")
    return values


def _open_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--endpoints", type=int, choices=SIZES[1:3], default=16, help="bidelta size"
    )
    parser.add_argument(
        "--loads",
        type=_loads,
        default=[0.01, 0.02, 0.05, 0.1, 0.2, 0.5],
        help="probability per cycle that an idle input starts a transmission",
    )
    parser.add_argument("--cycles", type=positive_int, default=2000, help="cycles per load")
    parser.add_argument("--length", type=positive_int, default=8, help="bytes per transmission")
    parser.add_argument("--seed", type=int, default=1, help="network and traffic seed")


def open_probability(endpoints, load, cycles, length, seed):
    """Drive :class:`RN1BideltaModel` for ``cycles`` with senders on every network input
    (an idle one starts a transmission of ``length`` bytes to a random other endpoint with
    probability ``load`` per cycle, closes it with DROP and waits for the status; a blocked
    one is sent again after 0..3 idle cycles) and receivers that answer CONNECTED the cycle
    they see the close. Returns ``(first tries, first tries opened, tries, tries opened)``."""
    model = RN1BideltaModel(endpoints, seed)
    net = model.net
    rng = random.Random(seed)
    n = ENDPOINT_LINKS * endpoints
    # Per sender: queued words, waiting flag, retry words, whether the try is a first one.
    words = [[] for _ in range(n)]
    waiting = [False] * n
    retry = [None] * n
    gap = [0] * n
    first = [True] * n
    prev_out = [0] * n
    counts = [0, 0, 0, 0]
    for _ in range(cycles):
        o_fwd, i_bk = model.o_fwd, model.i_bk
        i_fwd = [0] * n
        for c in range(n):
            if waiting[c]:
                w = i_bk[c]
                if not ctrl_of(w) and data_of(w) in STATUS:
                    waiting[c] = False
                    opened = data_of(w) == CONNECTED
                    counts[2] += 1
                    counts[3] += opened
                    if first[c]:
                        counts[0] += 1
                        counts[1] += opened
                    if data_of(w) == BLOCKED:
                        first[c], gap[c] = False, rng.randint(0, 3)
                    else:
                        retry[c], first[c] = None, True
                continue
            if not words[c]:
                if gap[c]:
                    gap[c] -= 1
                    continue
                if retry[c] is None:
                    if rng.random() >= load:
                        continue
                    own = c // ENDPOINT_LINKS
                    dest = rng.choice([e for e in range(endpoints) if e != own])
                    data = [rng.getrandbits(8) for _ in range(length - 1)]
                    retry[c] = [word(1, net.head(dest, rng.getrandbits(8)))] + [
                        word(1, b) for b in data
                    ]
                words[c] = retry[c] + [word(0, DROP)]
            i_fwd[c] = words[c].pop(0)
            if not words[c]:
                waiting[c] = True
        # Receivers: CONNECTED in the cycle a transmission's close arrives.
        o_bk = [
            word(0, CONNECTED) if not ctrl_of(o_fwd[c]) and ctrl_of(prev_out[c]) else 0
            for c in range(n)
        ]
        prev_out = o_fwd
        model.step(i_fwd, o_bk)
    return tuple(counts)


def _open_run(args, progress=lambda text: None) -> Result:
    rows = []
    for load in counted(progress, args.loads):
        first, first_ok, tries, ok = open_probability(
            args.endpoints, load, args.cycles, args.length, args.seed
        )
        rows.append(
            [
                load,
                first,
                first_ok / first if first else None,
                tries,
                ok / tries if tries else None,
                ok / (args.cycles * ENDPOINT_LINKS * args.endpoints),
            ]
        )
    return Result(
        "dehon-open-probability",
        {k: getattr(args, k) for k in ("endpoints", "loads", "cycles", "length", "seed")},
        ["load", "first tries", "P(open, first try)", "tries", "P(open)", "opened/input/cycle"],
        rows,
        notes=[
            "cycle-exact bidelta model (the RTL's reference): random destinations, DROP-closed "
            "transmissions, blocked ones sent again after 0..3 cycles; a try counts when its "
            "status arrives",
        ],
    )


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
        type=_stages,
        default=[1, 2, 3],
        help="unit-tree stages of the fat-trees (default 1..3)",
    )


def _latency_run(args, progress=lambda text: None) -> Result:
    from ...spec.rn1 import head_for
    from ...spec.rn1_bidelta import bidelta
    from ...spec.rn1_tree import SUBTREES, WIRED_STAGES
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
    from ...spec.rn1_tree import fat_tree_network

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
        "dehon-components",
        "DeHon: RN1 and channel capacities of unit trees and unit-tree fat-trees",
        _args,
        _run,
    ),
    Experiment(
        "dehon-faults",
        "DeHon/Leighton: pairs still connected under faults (bidelta routers; fat-tree stacks, "
        "links, routers), random vs regular wiring",
        _faults_args,
        _faults_run,
    ),
    Experiment(
        "dehon-latency",
        "DeHon: routers and cycles per connection, fat-tree (stage skipping) against bidelta",
        _latency_args,
        _latency_run,
    ),
    Experiment(
        "dehon-open-probability",
        "DeHon: probability that a connection opens on the first try (bidelta model)",
        _open_args,
        _open_run,
    ),
]
