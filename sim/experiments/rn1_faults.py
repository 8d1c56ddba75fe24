"""DeHon (1993) and Leighton: pairs of endpoints still connected under faults
(``dehon-faults``): dead routers of the bidelta network, or dead unit-tree stacks, links and
routers of the two-stage fat-tree (:meth:`fattree.spec.rn1_tree.FatTreeNetwork.connected`),
random against regular wiring (the bidelta network: two regular wirings, a router's two
links of a direction on one router of the next stage or on two).
"""

from __future__ import annotations

import argparse
import itertools
import random
from collections import Counter
from dataclasses import dataclass, field

from ...spec.lfsr import LFSRModel
from ...spec.rn1 import BLOCKED, CONNECTED, DROP, STATUS, ctrl_of, data_of, word
from ...spec.rn1_bidelta import ENDPOINT_LINKS, SIZES
from ...spec.rn1_endpoint import BACKOFF_CAP, LFSR_WIDTH, RETRY, backoff_cycles, endpoint_seed
from ...spec.rn1_hybrid import CLUSTER_SIZES, hybrid_network
from ...spec.rn1_tree import WIRED_STAGES, fat_tree_network
from . import Experiment, Result, counted, int_list, positive_int
from .rn1_open_probability import DRAIN, answer_closes, make_network

__all__ = ["EXPERIMENTS"]


def _faults_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--network",
        choices=("bidelta", "fat-tree", "hybrid"),
        default="bidelta",
        help="bidelta (dead routers), or the 2-stage fat-tree of unit trees or hybrid "
        "fat-tree of --cluster-node leaf clusters (dead unit-tree stacks, links and routers; "
        "random, regular and non-dispersed wiring); with --delivery also --stages 1",
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
    parser.add_argument(
        "--worst",
        type=positive_int,
        default=None,
        help="bidelta: also the worst-placed faults, every set of up to that many dead "
        "routers searched (default 1; 2 is 1128 sets at 64 endpoints, ~45 s)",
    )
    parser.add_argument(
        "--delivery",
        action="store_true",
        help="run traffic on the cycle-exact model around the faults until every message is "
        "delivered or given up (bidelta, or the fat-tree of --stages 1|2)",
    )
    parser.add_argument(
        "--stages",
        type=int,
        choices=WIRED_STAGES,
        default=None,
        help="with --delivery: fat-tree unit-tree stages (default 1; 2 is 4096 nodes, slow)",
    )
    parser.add_argument(
        "--cluster",
        type=int,
        choices=CLUSTER_SIZES,
        default=None,
        help="with --network hybrid: leaf cluster nodes (default 12)",
    )
    parser.add_argument(
        "--kind",
        choices=KINDS,
        default=None,
        help="with --delivery: dead routers (default), links (fat-tree, hybrid) or whole "
        "non-leaf unit-tree stacks (--stages 2)",
    )
    parser.add_argument(
        "--retry",
        type=_retries,
        default=None,
        help="with --delivery: the senders' retry strategies, comma list of immediate, round "
        "(wait until no node has a transmission under way), backoff (binary exponential, "
        "the endpoints' rule); default immediate",
    )
    parser.add_argument(
        "--pattern",
        type=_patterns,
        default=None,
        help="with --delivery: random, permutation or both (comma list; default both)",
    )
    parser.add_argument(
        "--messages",
        type=positive_int,
        default=None,
        help="with --delivery: messages per sending node (default 2; random destinations, or "
        "that many random permutations one after the other)",
    )
    parser.add_argument(
        "--give-up",
        type=positive_int,
        default=None,
        help="with --delivery: tries after which a message is given up and reported (64)",
    )
    parser.add_argument(
        "--length",
        type=positive_int,
        default=None,
        help="with --delivery: bytes per transmission after the head bytes, plus one (4)",
    )
    parser.add_argument(
        "--senders",
        type=positive_int,
        default=None,
        help="with --delivery: nodes that send (a seeded random sample; default all)",
    )


#: What ``--delivery --kind`` kills.
KINDS = ("routers", "links", "stacks")

#: Options of ``--delivery`` (default None: what was not given).
DELIVERY_OPTIONS = (
    "stages",
    "senders",
    "kind",
    "retry",
    "pattern",
    "messages",
    "give_up",
    "length",
)
#: Their defaults in a delivery run.
DELIVERY_DEFAULTS = {
    "kind": "routers",
    "retry": ["immediate"],
    "pattern": ["random", "permutation"],
    "messages": 2,
    "give_up": 64,
    "length": 4,
}


def _faults_run(args, progress=lambda text: None) -> Result:
    if getattr(args, "delivery", False):
        if getattr(args, "worst", None) is not None:
            raise ValueError("--worst is the connectivity rows': not with --delivery")
        return _delivery_run(args, progress)
    for option in DELIVERY_OPTIONS:  # given without --delivery: refused, not ignored
        if getattr(args, option, None) is not None:
            raise ValueError(f"--{option.replace('_', '-')} goes with --delivery")
    network = getattr(args, "network", "bidelta")
    if getattr(args, "worst", None) is not None and network != "bidelta":
        raise ValueError("--worst is the bidelta rows' (the trees' stacks: every choice)")
    if getattr(args, "cluster", None) is not None and network != "hybrid":
        raise ValueError("--cluster is the hybrid fat-tree's: with --network hybrid")
    if network in ("fat-tree", "hybrid"):
        return _fat_tree_faults(args, progress)
    faults_list = args.faults or [1, 2, 4, 8, 16]
    trials = args.trials or 20

    nets = bidelta_wirings(args.endpoints, args.seed)
    routers = [
        (j, r)
        for j in range(nets["random"].stages)
        for r in range(nets["random"].routers_per_stage)
    ]
    worst = getattr(args, "worst", None) or 1
    if worst > 3:  # 17296 sets of 3 at 64 endpoints already; more would run for hours
        raise ValueError(f"--worst must be 1..3, not {worst}")
    pairs = args.endpoints**2
    rows = []
    for faults in counted(progress, faults_list):
        rng = random.Random(args.seed * 1000 + faults)
        sets = [set(rng.sample(routers, min(faults, len(routers)))) for _ in range(trials)]
        row = [faults]
        per_wiring = []
        for net in nets.values():
            fractions = [sum(map(sum, net.connected(dead))) / pairs for dead in sets]
            per_wiring.append(fractions)
            row += [sum(fractions) / len(fractions), min(fractions)]
        for net in nets.values():
            # Worst-placed: the least connected of every set of this many dead routers.
            row.append(
                min(
                    sum(map(sum, net.connected(set(dead)))) / pairs
                    for dead in itertools.combinations(routers, faults)
                )
                if faults <= worst
                else None
            )
        row += paired_difference(per_wiring[0], per_wiring[-1])
        rows.append(row)
    return Result(
        "dehon-faults",
        {
            "endpoints": args.endpoints,
            "faults": faults_list,
            "trials": trials,
            "worst": worst,
            "seed": args.seed,
        },
        ["dead routers"]
        + [f"{name}: {what}" for name in nets for what in ("pairs", "worst")]
        + [f"{name}: worst-placed" for name in nets]
        + ["random - regular apart", "s.e."],
        rows,
        notes=[
            "fraction of (source, destination) endpoint pairs with a path that avoids the dead "
            "routers (either of the source's two outputs; a head may take either output of "
            "its direction), mean and worst over the trials; the same fault sets for every "
            "wiring of the bidelta network; worst-placed: the minimum over every set of "
            f"that many routers (up to --worst {worst})",
            "random: a router's two links of a direction dealt at random onto two routers of "
            "the next stage; regular: in order, both onto one router; regular apart: in "
            "order, round-robin onto two routers",
            "random - regular apart: the mean over the trials of the difference of the two "
            "fractions on the same fault set, with its standard error (s.e.)",
        ],
    )


def paired_difference(a: list[float], b: list[float]) -> list[float | None]:
    """Mean of ``a[i] - b[i]`` and its standard error (None from fewer than two pairs)."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    mean = sum(diffs) / len(diffs)
    if len(diffs) < 2:
        return [mean, None]
    variance = sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)
    return [mean, (variance / len(diffs)) ** 0.5]


#: The bidelta wirings compared, in the order of the columns.
BIDELTA_WIRINGS = ("random", "regular", "regular apart")


def bidelta_wirings(endpoints: int, seed: int) -> dict:
    """The bidelta network of ``endpoints`` in each of :data:`BIDELTA_WIRINGS` (``seed``
    draws the random one): random (Leighton's, a direction's links kept apart), regular
    (every group dealt in order: a router's two links of a direction enter one router) and
    regular apart (dealt round-robin: they enter two routers, as the random wiring's do)."""
    from ...spec.rn1_bidelta import bidelta

    return {
        "random": bidelta(endpoints, seed),
        "regular": bidelta(endpoints, seed, random_wiring=False),
        "regular apart": bidelta(endpoints, seed, random_wiring=False, apart=True),
    }


#: The fat-tree wirings compared: random (seeded unit trees, dispersion in random order),
#: regular (unit trees and dispersion in order), and the same parts not dispersed (a child's
#: top links to the parent trees in blocks of eight).
FAT_WIRINGS = ("random", "regular", "not dispersed")


def fat_tree_wirings(seed: int, cluster: int | None = None) -> dict:
    """The three wirings of the 2-stage fat-tree (``cluster`` None) or of the 2-stage hybrid
    fat-tree of ``cluster``-node leaf clusters."""
    if cluster is not None:
        return {
            "random": hybrid_network(cluster, 2, seed),
            "regular": hybrid_network(cluster, 2, None),
            "not dispersed": hybrid_network(cluster, 2, None, dispersed=False),
        }
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
    hybrid = getattr(args, "network", "fat-tree") == "hybrid"
    cluster = (getattr(args, "cluster", None) or 12) if hybrid else None
    nets = fat_tree_wirings(args.seed, cluster)
    rows = fat_tree_fault_rows(nets, faults, trials, args.seed, progress)
    columns = ["faults", "count"]
    for name in nets:
        columns += [f"{name}: pairs", f"{name}: worst"]
    first = next(iter(nets.values()))
    params = {"network": "hybrid" if hybrid else "fat-tree", "faults": faults, "trials": trials}
    if hybrid:
        params["cluster"] = cluster
        n, c = first.nodes, cluster
        parents = len(first.stage_trees(2))
        return Result(
            "dehon-faults",
            {**params, "seed": args.seed},
            columns,
            rows,
            notes=[
                f"2-stage hybrid fat-tree ({n} nodes, 64 leaf clusters of {c} under {parents} "
                "8-wide unit trees): fraction of ordered pairs of distinct nodes with a path "
                "that avoids the faults, mean and worst over the sets; parent stacks: every "
                "choice; leaf stacks: each cluster; links and routers: random sets, the same "
                "parts in every wiring",
                f"a cluster removed takes its own {c} nodes "
                f"({1 - (2 * c * (n - 1) - c * (c - 1)) / (n * (n - 1)):.5f} of the pairs left)",
            ],
        )
    return Result(
        "dehon-faults",
        {**params, "seed": args.seed},
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


# -- delivery under faults: the cycle-exact models configured around dead parts -----------

#: Traffic of ``--delivery``.
PATTERNS = ("random", "permutation")


def _patterns(text: str) -> list[str]:
    values = text.split(",")
    if not text or any(v not in PATTERNS for v in values):
        raise argparse.ArgumentTypeError(
            f"patterns are {', '.join(PATTERNS)} (comma list), not {text!r}"
        )
    return list(dict.fromkeys(values))


def _retries(text: str) -> list[str]:
    values = text.split(",")
    if not text or any(v not in RETRY for v in values):
        raise argparse.ArgumentTypeError(
            f"retry strategies are {', '.join(RETRY)} (comma list), not {text!r}"
        )
    return list(dict.fromkeys(values))


def traffic(pattern: str, senders: list[int], nodes: int, messages: int, rng) -> dict:
    """Per sending node, its destinations in order: ``messages`` uniform random other nodes,
    or its image under ``messages`` random permutations drawn one after the other (without
    fixed points, so no node sends to itself; with fewer senders than nodes, distinct
    destinations drawn from all nodes)."""
    if pattern == "random":
        return {
            e: [d + (d >= e) for d in (rng.randrange(nodes - 1) for _ in range(messages))]
            for e in senders
        }
    out = {e: [] for e in senders}
    for _ in range(messages):
        images = rng.sample(range(nodes), len(senders))
        while any(d == e for e, d in zip(senders, images, strict=True)):
            rng.shuffle(images)
        for e, d in zip(senders, images, strict=True):
            out[e].append(d)
    return out


@dataclass
class _Sender:
    """One sending node of :func:`deliver`: the messages it has left and the one under way."""

    node: int
    links: list[int]  # its links the network did not disable
    queue: list[int]  # destinations still to send, the next one last
    lfsr: LFSRModel
    turn: int = 0  # which usable link the next try takes
    started: int = 0  # cycle of the message's first head
    message: tuple | None = None  # (dest, words, tries) of the message under way
    sending: list = field(default_factory=list)  # words of the try not sent yet
    waiting: int | None = None  # channel whose status the node waits for
    pending: bool = False  # a try waits for the strategy to let it start
    wait: int = 0  # back-off cycles left

    @property
    def busy(self) -> bool:
        """A message is still to be sent or under way."""
        return bool(self.queue) or self.message is not None

    @property
    def transmitting(self) -> bool:
        """A try is under way: sending its words, or waiting for its status."""
        return bool(self.sending and not self.pending) or self.waiting is not None


class _Delivery:
    """The senders, receivers and counts of one :func:`deliver` run, cycle by cycle."""

    def __init__(self, model, nodes, heads, plan, length, give_up, seed, retry):
        self.nodes, self.heads, self.plan = nodes, heads, plan
        self.length, self.give_up, self.retry = length, give_up, retry
        self.rng = random.Random(seed)
        self.counts = {"delivered": [], "given_up": [], "tries": 0, "latency": 0, "last": 0}
        dead = set(model.dead_channels)
        self.senders = []
        for e in plan:
            links = [k for k in range(ENDPOINT_LINKS) if ENDPOINT_LINKS * e + k not in dead]
            queue = list(reversed(plan[e])) if links else []
            if not links:  # both links disabled: every message given up unsent
                self.counts["given_up"] += [(e, d) for d in plan[e]]
            lfsr = LFSRModel(LFSR_WIDTH, seed=endpoint_seed(seed, e))
            self.senders.append(_Sender(e, links, queue, lfsr))
        self.cycle = 0
        self.go = False  # rounds: no try was under way in the last cycle
        self.receiving: dict[int, list] = {}  # bytes arriving on each node link
        self.arrivals: list[tuple] = []  # (node, bytes) of every transmission that arrived
        self.confirmed: list[tuple] = []  # (dest, bytes) of every message confirmed

    def cycle_bound(self) -> int:
        """Cycles after which messages still under way mean the run is stuck: every message
        needs at most give_up tries of a few tens of cycles each."""
        most = max(map(len, self.plan.values()), default=0) * self.give_up
        bound = (most + 1) * DRAIN // 100
        if self.retry == "backoff":  # and the longest back-off before every try
            bound += most * backoff_cycles(BACKOFF_CAP, (1 << BACKOFF_CAP) - 1)
        return bound

    def send(self, i_bk: list, i_fwd: list) -> None:
        """Every sender's cycle: its status taken, its next message or try started, its next
        word onto ``i_fwd``; then ``go`` for the next cycle and the LFSRs clocked."""
        for sender in self.senders:
            if sender.waiting is not None and not self._status(sender, i_bk[sender.waiting]):
                continue
            if sender.message is None:
                if not sender.queue:
                    continue
                self._next_message(sender)
            if sender.sending and sender.pending:
                self._let_start(sender)
            if sender.sending and not sender.pending:
                self._send_word(sender, i_fwd)
        self.go = not any(sender.transmitting for sender in self.senders)
        if self.retry == "backoff":
            for sender in self.senders:
                sender.lfsr.clock()

    def _status(self, sender: _Sender, w: int) -> bool:
        """The word back on the channel the sender waits on: False until it is a status;
        then the message is confirmed, given up, or made ready to be sent again."""
        if ctrl_of(w) or data_of(w) not in STATUS:
            return False
        dest, words, tries = sender.message
        sender.waiting = None
        if data_of(w) == CONNECTED:
            self.counts["delivered"].append((sender.node, dest))
            self.confirmed.append((dest, tuple(data_of(x) for x in words[-self.length : -1])))
            self.counts["tries"] += tries
            self.counts["latency"] += self.cycle - sender.started
            self.counts["last"] = self.cycle
            sender.message = None
        elif data_of(w) == BLOCKED and tries >= self.give_up:
            self.counts["given_up"].append((sender.node, dest))
            sender.message = None
        else:
            sender.sending = list(words)
            sender.pending = True
            if self.retry == "backoff":  # tries so far: the BLOCKED in a row
                sender.wait = backoff_cycles(min(tries, BACKOFF_CAP), sender.lfsr.state)
        return True

    def _next_message(self, sender: _Sender) -> None:
        """The sender's next message: its head bytes, then data bytes that name it (source,
        its number) so the arrivals can be matched to the messages confirmed, then DROP."""
        e = sender.node
        dest = sender.queue.pop()
        fill = self.rng.getrandbits(8)
        words = [word(1, h) for h in self.heads(e, dest, fill)]
        tag = [e >> 8, e & 255, len(self.plan[e]) - len(sender.queue) - 1]
        tag += [self.rng.getrandbits(8) for _ in range(self.length - 1)]
        words += [word(1, b & 255) for b in tag[: self.length - 1]]
        words.append(word(0, DROP))
        sender.message = (dest, words, 0)
        sender.sending = list(words)
        sender.pending, sender.wait = True, 0
        sender.started = self.cycle

    def _let_start(self, sender: _Sender) -> None:
        """The retry strategy lets a try start: at once, when ``go`` is high, or when the
        back-off has run out."""
        if self.retry == "round":
            sender.pending = not self.go
        elif sender.wait:
            sender.wait -= 1
        else:
            sender.pending = False

    def _send_word(self, sender: _Sender, i_fwd: list) -> None:
        """The try's next word onto the sender's link; after the last, wait for its status.
        A node's bytes of one try go out on one link: the turn moves after the close."""
        c = ENDPOINT_LINKS * sender.node + sender.links[sender.turn % len(sender.links)]
        i_fwd[c] = sender.sending.pop(0)
        if not sender.sending:
            dest, words, tries = sender.message
            sender.message = (dest, words, tries + 1)
            sender.waiting = c
            sender.turn += 1

    def receive(self, o_fwd: list, prev_out: list) -> None:
        """What reaches the nodes' links: a transmission's bytes after its last head byte
        (which only routes), recorded when it closes."""
        for c in range(ENDPOINT_LINKS * self.nodes):
            w, p = o_fwd[c], prev_out[c]
            if ctrl_of(w) and not ctrl_of(p):
                self.receiving[c] = []
            elif ctrl_of(w):
                self.receiving[c].append(data_of(w))
            elif ctrl_of(p):
                self.arrivals.append((c // ENDPOINT_LINKS, tuple(self.receiving[c])))

    def wrong(self) -> int:
        """Transmissions that arrived but were not confirmed, or were confirmed but did not
        arrive once at their destination with their bytes (a blocked transmission is
        discarded before it reaches anyone)."""
        got, want = Counter(self.arrivals), Counter(self.confirmed)
        return (got - want).total() + (want - got).total()


def deliver(
    model,
    nodes: int,
    heads,
    plan: dict,
    length: int,
    give_up: int,
    seed: int,
    retry: str = "immediate",
) -> dict:
    """Run ``plan`` (node -> destinations) on ``model`` (of ``nodes`` processing nodes)
    until every message is delivered or given up. A node sends one message at a time, as
    the endpoints do: the head bytes, ``length - 1`` data bytes (the first three name the
    message) and DROP on one of its links, then waits for the status; CONNECTED: the next
    message; BLOCKED: sent again on its other link (every try takes the link the last one
    did not, skipping a link the network disabled) when ``retry`` lets it, as the endpoints'
    strategies (:class:`fattree.sim.models.rn1_endpoint.RN1EndpointModel`): ``immediate``
    in the cycle the status arrives; ``round`` when ``go`` is high, one cycle after a cycle
    in which no node had a try under way (a first try waits for it too); ``backoff`` after
    :func:`~fattree.spec.rn1_endpoint.backoff_cycles` for the BLOCKED in a row, from the
    node's 16-bit LFSR (seeded by :func:`~fattree.spec.rn1_endpoint.endpoint_seed`,
    clocked every cycle). After ``give_up`` tries the message is given up. A node with both
    links disabled gives up its messages unsent. Receivers answer CONNECTED at the close.

    Returns ``delivered`` and ``given_up`` (lists of ``(src, dest)``), ``tries`` (of the
    delivered messages), ``latency`` (their cycles from first head to CONNECTED, summed),
    ``last`` (the cycle the last CONNECTED came back; 0 if none), ``cycles`` (the run) and
    ``wrong``: transmissions that reached a node but were not confirmed, or confirmed but
    did not arrive there with their bytes (0 unless the model is wrong)."""
    if retry not in RETRY:
        raise ValueError(f"retry must be one of {', '.join(RETRY)}, not {retry!r}")
    run = _Delivery(model, nodes, heads, plan, length, give_up, seed, retry)
    bound = run.cycle_bound()
    prev_out = [0] * model.channels
    while any(sender.busy for sender in run.senders):
        o_fwd = model.o_fwd
        i_fwd = [0] * model.channels
        run.send(model.i_bk, i_fwd)
        run.receive(o_fwd, prev_out)
        o_bk = answer_closes(o_fwd, prev_out)
        prev_out = o_fwd
        model.step(i_fwd, o_bk)
        run.cycle += 1
        if run.cycle > bound:
            raise RuntimeError(f"messages still under way after {bound} cycles")
    return {**run.counts, "cycles": run.cycle, "wrong": run.wrong()}


def _fault_names(network: str, model, kind: str) -> list:
    """What ``--kind`` may kill in ``model``: router keys, or links named by their source
    end (router outputs and node links; not the root's open top links, which connect no
    pair)."""
    if kind == "routers":
        return sorted(model.routers)
    if kind == "stacks":
        if network == "bidelta" or model.net.stages < 2:
            raise ValueError("--kind stacks: the trees' non-leaf unit-tree stacks (--stages 2)")
        return [(2, t) for t in model.net.stage_trees(2)]
    if network == "bidelta":
        raise ValueError(
            "--kind links: the bidelta rows kill routers only (use --network fat-tree)"
        )
    net = model.net
    return sorted(
        src
        for src, dst in net.links
        if src[:2] != ("out", "sw") and src[0] != "top_down" and dst[0] != "top_up"
    )


def _reachable(network: str, model, dead, links, stacks=()):
    """``[src][dst]`` of the definitions' path search for the same faults (independent of
    the model: :meth:`Bidelta.connected`, :meth:`FatTreeNetwork.connected`)."""
    if network == "bidelta":
        return model.net.connected(set(dead))
    if stacks:
        return model.net.connected(stacks=stacks)
    return model.net.connected(dead=dead, links=links)


def _delivery_options(args):
    """``args`` with the delivery defaults filled in, and the network they name: ``(args,
    network, stages, cluster, endpoints)``."""
    args = argparse.Namespace(**vars(args))
    for option, value in DELIVERY_DEFAULTS.items():
        if getattr(args, option, None) is None:
            setattr(args, option, value)
    network = getattr(args, "network", "bidelta")
    stages = args.stages
    cluster = getattr(args, "cluster", None)
    if cluster is not None and network != "hybrid":
        raise ValueError("--cluster is the hybrid fat-tree's: with --network hybrid")
    cluster = cluster or 12
    if network == "bidelta":
        if stages is not None:
            raise ValueError("--stages is the trees': not with --network bidelta")
        endpoints = args.endpoints
    else:
        stages = stages or 1
        endpoints = 64**stages if network == "fat-tree" else cluster * 64 ** (stages - 1)
    return args, network, stages, cluster, endpoints


def _fault_set(kind: str, names: list, faults: int, probe, rng) -> tuple[list, list, list]:
    """``faults`` random parts of ``names``: the dead routers, cut links and dead stacks."""
    chosen = rng.sample(names, min(faults, len(names)))
    dead = chosen if kind == "routers" else []
    cut = chosen if kind == "links" else []
    stacks = chosen if kind == "stacks" else []
    if stacks:  # a stack removed: every router of it (the links into it are disabled)
        dead = sorted(k for k in probe.routers if k[:2] in set(stacks))
    return dead, cut, stacks


def _delivery_counts(res: dict, plan: dict, reach) -> list:
    """One run's counts: sets, messages, delivered, without a path, given up without and
    with a path, cycles to deliver and to finish, tries, latency."""
    if res["wrong"]:
        raise RuntimeError(f"{res['wrong']} transmissions delivered wrongly")
    no_path = sum(1 for s, d in res["given_up"] if not reach[s][d])
    return [
        1,
        sum(map(len, plan.values())),
        len(res["delivered"]),
        sum(1 for s in plan for d in plan[s] if not reach[s][d]),
        no_path,
        len(res["given_up"]) - no_path,
        res["last"],
        res["cycles"],
        res["tries"],
        res["latency"],
    ]


def _delivery_rows(sums: dict) -> list[list]:
    """The summed counts of each point as a row: totals, and means over the sets."""
    rows = []
    for (faults, wiring, pattern, retry), counts in sums.items():
        k, sent, ok, unreached, no_path, lost, last, cyc, tries, latency = counts
        rows.append(
            [
                faults,
                wiring,
                pattern,
                retry,
                k,
                sent,
                ok,
                unreached,
                no_path,
                lost,
                last / k,
                cyc / k,
                tries / ok if ok else None,
                latency / ok if ok else None,
            ]
        )
    return rows


def _delivery_run(args, progress) -> Result:
    args, network, stages, cluster, endpoints = _delivery_options(args)
    kind = args.kind
    faults_list = [0] + (args.faults or [1, 2, 4, 8])
    trials = args.trials or 2
    wirings = ("random", "regular")
    probe, nodes, _ = make_network(network, endpoints, stages or 1, args.seed, cluster=cluster)
    names = _fault_names(network, probe, kind)
    if args.senders is not None and args.senders > nodes:
        raise ValueError(f"--senders must be 1..{nodes}, not {args.senders}")
    points = [(f, t) for f in faults_list for t in range(1 if f == 0 else trials)]
    sums: dict[tuple, list] = {}
    for faults, trial in counted(progress, points):
        rng = random.Random(args.seed * 1000 + faults * 7919 + trial)
        dead, cut, stacks = _fault_set(kind, names, faults, probe, rng)
        senders = sorted(rng.sample(range(nodes), args.senders or nodes))
        plans = {p: traffic(p, senders, nodes, args.messages, rng) for p in args.pattern}
        for wiring in wirings:
            model, _, heads = make_network(
                network, endpoints, stages or 1, args.seed, wiring == "random", dead, cut, cluster
            )
            reach = _reachable(network, model, dead, cut, stacks)
            for (pattern, plan), retry in itertools.product(plans.items(), args.retry):
                model.reset()
                res = deliver(
                    model, nodes, heads, plan, args.length, args.give_up, args.seed + trial, retry
                )
                got = _delivery_counts(res, plan, reach)
                key = (faults, wiring, pattern, retry)
                sums[key] = [a + b for a, b in zip(sums.get(key, [0] * len(got)), got, strict=True)]
    rows = _delivery_rows(sums)
    if network == "bidelta":
        label = f"bidelta {endpoints}"
    elif network == "fat-tree":
        label = f"fat-tree, {stages} stage{'s' if stages > 1 else ''}"
    else:
        label = f"hybrid fat-tree, {cluster}-node clusters, {stages} stage{'s' * (stages > 1)}"
    return Result(
        "dehon-faults",
        {
            "delivery": True,
            "network": network,
            "endpoints": endpoints,
            "stages": stages,
            "cluster": cluster if network == "hybrid" else None,
            "kind": kind,
            "retry": args.retry,
            "faults": faults_list,
            "trials": trials,
            "pattern": args.pattern,
            "messages": args.messages,
            "give_up": args.give_up,
            "senders": args.senders,
            "length": args.length,
            "seed": args.seed,
        },
        [
            f"dead {kind}",
            "wiring",
            "pattern",
            "retry",
            "sets",
            "messages",
            "delivered",
            "no path",
            "given up: no path",
            "given up: with a path",
            "cycles to deliver",
            "cycles to finish",
            "tries per delivered",
            "latency per delivered",
        ],
        rows,
        notes=[
            f"{label} ({nodes} nodes), cycle-exact model configured around the faults: the "
            "ports facing a dead router or link are disabled (a head finds no enabled output "
            "of its direction: BLOCKED, and the sender retries); "
            f"{args.senders or nodes} sending nodes, {args.messages} messages each, one at a "
            f"time, every try on the other link, retried {' / '.join(args.retry)}, given up "
            f"after {args.give_up} tries"
            + (", a dead stack: every router of a non-leaf unit tree" if kind == "stacks" else ""),
            "no path: messages whose pair the definitions' path search (connected()) finds cut "
            "off; given up: no path must equal it, given up: with a path should be 0; cycles "
            "to deliver: when the last CONNECTED came back; to finish: the run, give-ups "
            "included (means over the sets); latency: cycles from a delivered message's first "
            "head to its CONNECTED; messages and the counts after it: totals over "
            "the sets; the same fault sets and traffic for both wirings",
        ],
    )


EXPERIMENTS = [
    Experiment(
        "dehon-faults",
        "DeHon/Leighton: pairs still connected under faults (bidelta routers; fat-tree stacks, "
        "links, routers), random vs regular wirings",
        _faults_args,
        _faults_run,
    ),
]
