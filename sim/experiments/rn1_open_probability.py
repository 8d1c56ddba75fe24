"""DeHon (1993): the probability of opening a connection on the first try (section lost with
its figures): ``dehon-open-probability`` drives the cycle-exact models of the bidelta network
(:class:`fattree.sim.models.rn1.RN1BideltaModel`, the RTL's reference) and of the fat-tree of
unit trees (:class:`fattree.sim.models.rn1.RN1FatTreeModel`, 1 or 2 stages) with random
traffic at several loads, uniform or local (destinations inside the sender's level-``L``
subtree with some probability, the locality the paper says a fat-tree is built for).

:func:`make_network` and :func:`answer_closes` are shared with ``dehon-faults --delivery``.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass

from ...spec.rn1 import BLOCKED, CONNECTED, DROP, STATUS, ctrl_of, data_of, word
from ...spec.rn1_bidelta import ENDPOINT_LINKS, SIZES
from ...spec.rn1_hybrid import CLUSTER_SIZES, hybrid_network
from ...spec.rn1_tree import WIRED_STAGES
from ..models.rn1 import RN1BideltaModel, RN1FatTreeModel, RN1SparseNetworkModel
from . import Experiment, Result, counted, positive_int

__all__ = [
    "EXPERIMENTS",
    "make_network",
    "answer_closes",
    "measure_open",
    "measure_open_rtl",
    "open_probability",
]

#: Networks of the experiments (the hybrid fat-tree: bidelta leaf clusters under unit trees).
NETWORKS = ("bidelta", "fat-tree", "hybrid")
#: Cycles a run may take after its last start for every status to come back (a circuit
#: holds for a few tens of cycles; more means a sender would wait for ever: a model bug).
DRAIN = 10_000


def _fractions(what: str):
    def parse(text: str) -> list[float]:
        try:
            values = [float(x) for x in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a comma list of numbers, not {text!r}"
            ) from None
        low_ok = what == "local"  # a probability of local traffic may be 0; a load may not
        if not values or any(not (0 <= v <= 1 if low_ok else 0 < v <= 1) for v in values):
            span = "[0, 1]" if low_ok else "(0, 1]"
            raise argparse.ArgumentTypeError(f"{what} must be in {span}, not {text!r}")
        return values

    return parse


_loads = _fractions("loads")


def make_network(
    network: str,
    endpoints: int,
    stages: int,
    seed: int,
    random_wiring=True,
    dead=(),
    links=(),
    cluster: int = 12,
):
    """``(model, nodes, heads)``: the cycle-exact model of ``network`` (``"bidelta"`` of
    ``endpoints``; ``"fat-tree"`` of ``stages`` unit-tree stages; ``"hybrid"``: leaf clusters
    of ``cluster`` nodes, alone or under a stage of unit trees; wired with ``seed`` or
    regularly), configured around the ``dead`` routers and ``links``; ``heads(src, dest,
    fill)`` gives the head bytes of a route (one for the bidelta network, one per stack
    crossed on the trees). Processing node ``e``'s links are channels ``2e``, ``2e + 1``."""
    if network == "bidelta":
        model = RN1BideltaModel(endpoints, seed, random_wiring, dead, links)
        net = model.net
        return model, endpoints, lambda src, dest, fill: [net.head(dest, fill)]
    wiring = seed if random_wiring else None
    if network == "hybrid":
        # RN1HybridModel's wiring, with the faults (the network model's addition) given.
        net = hybrid_network(cluster, stages, wiring, seed, True)
        model = RN1SparseNetworkModel(
            net.routers, net.links, net.inputs, net.outputs, net.swallows, dead, links
        )
        model.net = net
        return model, net.nodes, net.heads
    if network != "fat-tree":
        raise ValueError(f"network must be one of {', '.join(NETWORKS)}, not {network!r}")
    model = RN1FatTreeModel(stages, wiring, seed, True, dead, links)
    return model, model.net.nodes, model.net.heads


def answer_closes(o_fwd, prev_out) -> list[int]:
    """Receivers that are always ready: CONNECTED on the backward link in the cycle a
    transmission's close (``ctrl`` falling) arrives."""
    return [
        word(0, CONNECTED) if not ctrl_of(w) and ctrl_of(p) else 0
        for w, p in zip(o_fwd, prev_out, strict=True)
    ]


def pick_destination(rng, src: int, nodes: int, local: float, level: int) -> int:
    """A random node other than ``src``: with probability ``local`` inside ``src``'s
    level-``level`` subtree (the ``4^level`` nodes numbered alike but for the low ``2 level``
    bits), otherwise any."""
    size = 4**level if local and rng.random() < local else nodes
    base = src // size * size
    d = base + rng.randrange(size - 1)
    return d if d < src else d + 1


def measure_open(
    network: str,
    endpoints: int,
    load: float,
    cycles: int,
    length: int,
    seed: int,
    stages: int = 1,
    local: float = 0.0,
    level: int = 1,
    active: int | None = None,
    count_decisions: bool = False,
    cluster: int = 12,
    random_wiring: bool = True,
) -> dict:
    """Drive the model for ``cycles`` with senders on every link of ``active`` nodes (all by
    default; else a seeded random sample of that many): an idle one starts a transmission
    (the head bytes, then ``length - 1`` data bytes) to a destination of
    :func:`pick_destination` with probability ``load`` per cycle, closes it with DROP and
    waits for the status; a blocked one is sent again after 0..3 idle cycles. Receivers
    answer CONNECTED at the close. After ``cycles`` no transmission starts and the run goes
    on until every status is back, so every try started is counted.

    Returns counts: ``first``, ``first_ok`` (first tries, and those that opened), ``tries``,
    ``ok``, ``cycles`` (run), and with ``count_decisions`` the model's own events:
    ``heads_in`` (heads the routers behind the senders' links decided) and ``blocked``
    (heads any router blocked). ``random_wiring=False``: the regular wiring (the fat-tree
    RTL's)."""
    model, nodes, heads = make_network(
        network, endpoints, stages, seed, random_wiring, cluster=cluster
    )
    traffic = _Traffic(
        model.channels, nodes, heads, load, cycles, length, seed, local, level, active
    )
    counts = traffic.counts
    if count_decisions:
        # The router input each sender's link enters (the bidelta and unit-tree links go
        # straight into routers).
        entry = {
            a: (b, pb)
            for (kind, a, _), (dkind, b, pb) in model._links
            if kind == "edge" and dkind == "router" and a in traffic.words
        }
        counts["heads_in"] = counts["blocked"] = 0
    while traffic.running:
        model.step(*traffic.cycle(model.o_fwd, model.i_bk))
        if count_decisions:
            counts["blocked"] += sum(d == "blocked" for d in model.decisions)
            counts["heads_in"] += sum(
                router.decisions[port] in ("blocked",) or isinstance(router.decisions[port], tuple)
                for router, port in entry.values()
            )
    counts["cycles"] = traffic.cycles_run
    return counts


#: ``(network, nodes)`` ``--rtl`` runs in amaranth.sim: the bidelta network of 4 and 16 and
#: the one-stage fat-tree (52 routers: about 20 s to start and 0.06 s a cycle on this machine,
#: measured with another engineer's load beside it). Not bidelta 64 (no faster than the
#: fat-tree, and not needed) and not the hybrid (no RTL of its own at one stage).
RTL_NETWORKS = (("bidelta", 4), ("bidelta", 16), ("fat-tree", 64))


def measure_open_rtl(
    endpoints: int,
    load: float,
    cycles: int,
    length: int,
    seed: int,
    local: float = 0.0,
    level: int = 1,
    active: int | None = None,
    wiring_seed: int | None = None,
    network: str = "bidelta",
) -> dict:
    """:func:`measure_open` on the RTL (``RN1Bidelta`` of the same ``endpoints`` and seed, or
    ``RN1FatTree`` of one stage, whose wiring is the regular one, in amaranth.sim): the same
    senders and receivers, the same traffic, the same counts (``first``, ``first_ok``,
    ``tries``, ``ok``, ``cycles``). ``wiring_seed`` (default ``seed``) builds the RTL of
    another wiring (bidelta) and LFSR seeds under the same traffic: a network the model does
    not describe, for the tests."""
    from ..checks.experiment_runs import rn1_network_run

    if (network, endpoints) not in RTL_NETWORKS:
        raise ValueError(f"--rtl runs {_rtl_names()} in amaranth.sim, not {network} {endpoints}")
    wiring = seed if wiring_seed is None else wiring_seed

    def traffic_for(n, heads):
        # The heads come from the definitions (the model's make_network gives the same ones).
        return _Traffic(n, endpoints, heads, load, cycles, length, seed, local, level, active)

    traffic = rn1_network_run(network, endpoints, wiring, traffic_for)
    counts = traffic.counts
    counts["cycles"] = traffic.cycles_run
    return counts


class _Traffic:
    """The senders and receivers of :func:`measure_open`, one cycle at a time, apart from
    what they drive (a model or the RTL in amaranth.sim): the same seed gives the same
    stimulus rule on both, so their counts can be compared."""

    def __init__(self, n, nodes, heads, load, cycles, length, seed, local, level, active):
        if not 1 <= level or 4**level > nodes:
            raise ValueError(f"level must be 1..{_max_level(nodes)}, not {level}")
        self.rng = rng = random.Random(seed)
        if active is None or active >= nodes:
            senders = list(range(ENDPOINT_LINKS * nodes))
        else:
            chosen = sorted(rng.sample(range(nodes), active))
            senders = [ENDPOINT_LINKS * e + k for e in chosen for k in range(ENDPOINT_LINKS)]
        self.n, self.nodes, self.heads, self.senders = n, nodes, heads, senders
        self.load, self.cycles, self.length, self.local, self.level = (
            load,
            cycles,
            length,
            local,
            level,
        )
        self.words = {c: [] for c in senders}
        self.waiting = dict.fromkeys(senders, False)
        self.retry = dict.fromkeys(senders)
        self.gap = dict.fromkeys(senders, 0)
        self.first = dict.fromkeys(senders, True)
        self.prev_out = [0] * n
        self.counts = dict.fromkeys(("first", "first_ok", "tries", "ok"), 0)
        self.cycles_run = 0

    @property
    def running(self) -> bool:
        """Starts still allowed, or a status still under way."""
        return self.cycles_run < self.cycles or any(self.waiting.values())

    def cycle(self, o_fwd, i_bk) -> tuple[list[int], list[int]]:
        """``(i_fwd, o_bk)`` to drive this cycle, from the network's outputs ``o_fwd`` and
        ``i_bk`` of this cycle (counting the statuses that came back)."""
        if self.cycles_run >= self.cycles + DRAIN:
            raise RuntimeError(f"statuses still missing {DRAIN} cycles after the last start")
        rng, counts, words, waiting = self.rng, self.counts, self.words, self.waiting
        retry, gap, first = self.retry, self.gap, self.first
        starting = self.cycles_run < self.cycles
        i_fwd = [0] * self.n
        for c in self.senders:
            if waiting[c]:
                w = i_bk[c]
                if not ctrl_of(w) and data_of(w) in STATUS:
                    waiting[c] = False
                    opened = data_of(w) == CONNECTED
                    counts["tries"] += 1
                    counts["ok"] += opened
                    if first[c]:
                        counts["first"] += 1
                        counts["first_ok"] += opened
                    if data_of(w) == BLOCKED:
                        first[c], gap[c] = False, rng.randint(0, 3)
                    else:
                        retry[c], first[c] = None, True
                continue
            if not words[c]:
                if not starting:
                    continue
                if gap[c]:
                    gap[c] -= 1
                    continue
                if retry[c] is None:
                    if rng.random() >= self.load:
                        continue
                    own = c // ENDPOINT_LINKS
                    dest = pick_destination(rng, own, self.nodes, self.local, self.level)
                    fill = rng.getrandbits(8)
                    data = [rng.getrandbits(8) for _ in range(self.length - 1)]
                    retry[c] = [word(1, h) for h in self.heads(own, dest, fill)] + [
                        word(1, b) for b in data
                    ]
                words[c] = retry[c] + [word(0, DROP)]
            i_fwd[c] = words[c].pop(0)
            if not words[c]:
                waiting[c] = True
        o_bk = answer_closes(o_fwd, self.prev_out)
        self.prev_out = o_fwd
        self.cycles_run += 1
        return i_fwd, o_bk


def open_probability(endpoints, load, cycles, length, seed):
    """:func:`measure_open` on the bidelta network: ``(first tries, first tries opened,
    tries, tries opened)``."""
    c = measure_open("bidelta", endpoints, load, cycles, length, seed)
    return c["first"], c["first_ok"], c["tries"], c["ok"]


def network_list(text: str) -> list[str]:
    """``--network``: a comma list of :data:`NETWORKS` (a row set each)."""
    values = text.split(",")
    if not text or any(v not in NETWORKS for v in values):
        raise argparse.ArgumentTypeError(
            f"networks are {', '.join(NETWORKS)} (comma list), not {text!r}"
        )
    return list(dict.fromkeys(values))


def _open_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--network",
        type=network_list,
        default=["bidelta"],
        help="comma list of bidelta, fat-tree (of --stages unit-tree stages) and hybrid "
        "(leaf clusters of --cluster nodes, alone or under --stages 2)",
    )
    parser.add_argument(
        "--endpoints",
        type=int,
        choices=SIZES[1:3],
        default=None,
        help="bidelta size (default 16 alone, 64 beside a tree)",
    )
    parser.add_argument(
        "--stages",
        type=int,
        choices=WIRED_STAGES,
        default=1,
        help="fat-tree unit-tree stages, 1 (64 nodes) or 2 (4096); hybrid: 1 (one cluster) "
        "or 2 (64 clusters under unit trees)",
    )
    parser.add_argument(
        "--cluster",
        type=int,
        choices=CLUSTER_SIZES,
        default=12,
        help="hybrid leaf cluster nodes",
    )
    parser.add_argument(
        "--loads",
        type=_loads,
        default=[0.01, 0.02, 0.05, 0.1, 0.2, 0.5],
        help="probability per cycle that an idle input starts a transmission",
    )
    parser.add_argument(
        "--local",
        type=_fractions("local"),
        default=[0.0],
        help="probabilities that a destination lies in the sender's level-LEVEL subtree "
        "(comma list, a row each; default 0: uniform)",
    )
    parser.add_argument(
        "--level",
        type=positive_int,
        default=1,
        help="subtree level of local traffic (4^LEVEL nodes; 1 .. 3 per stage)",
    )
    parser.add_argument("--cycles", type=positive_int, default=2000, help="cycles per load")
    parser.add_argument(
        "--active",
        type=positive_int,
        default=None,
        help="nodes with senders (a seeded random sample; default all)",
    )
    parser.add_argument("--length", type=positive_int, default=8, help="bytes per transmission")
    parser.add_argument("--seed", type=int, default=1, help="network and traffic seed")
    parser.add_argument(
        "--rtl",
        action="store_true",
        help="also run the RTL in amaranth.sim (bidelta 16: seconds per load at --cycles 300; "
        "fat-tree 64, stages 1, regular wiring: about a minute) under the same traffic: its "
        "counts must equal the model's",
    )


class RTLMismatch(ValueError):
    """The RTL's counts differ from the model's (a ValueError, so the command line gives the
    one line and a non-zero exit)."""


_COUNTS = ("first", "first_ok", "tries", "ok", "cycles")


def _rtl_names() -> str:
    return ", ".join(f"{net} {nodes}" for net, nodes in RTL_NETWORKS)


def networks_asked(args) -> list[tuple[str, int, int]]:
    """``(network, nodes, stages)`` of every network the options name, in their order (an
    option that does not fit them: a ValueError naming it)."""
    names = getattr(args, "network", ["bidelta"])
    names = [names] if isinstance(names, str) else names
    stages = getattr(args, "stages", None)
    cluster = getattr(args, "cluster", 12)
    endpoints = args.endpoints
    if endpoints is not None and "bidelta" not in names:
        raise ValueError("--endpoints is the bidelta network's: add bidelta to --network")
    if names == ["bidelta"] and stages not in (None, 1):
        raise ValueError("--stages is the trees': not with --network bidelta alone")
    stages = stages or 1
    out = []
    for name in names:
        if name == "bidelta":
            out.append(("bidelta", endpoints or (64 if len(names) > 1 else 16), 1))
        elif name == "fat-tree":
            out.append(("fat-tree", 64**stages, stages))
        else:
            out.append(("hybrid", cluster * 64 ** (stages - 1), stages))
    return out


@dataclass(frozen=True)
class _OpenOptions:
    """The options of a run that are not per point, checked against the networks asked."""

    nets: list[tuple[str, int, int]]
    local: list[float]
    level: int
    active: int | None
    cluster: int
    rtl: bool


def _open_options(args) -> _OpenOptions:
    """The run's networks and options (a ValueError naming an option that does not fit)."""
    nets = networks_asked(args)
    level = getattr(args, "level", 1)
    active = getattr(args, "active", None)
    for _, nodes, _ in nets:
        if 4**level > nodes:
            raise ValueError(f"--level must be 1..{_max_level(nodes)}, not {level}")
        if active is not None and active > nodes:
            raise ValueError(f"--active must be 1..{nodes}, not {active}")
    rtl = getattr(args, "rtl", False)
    if rtl:
        for network, nodes, _ in nets:
            if (network, nodes) not in RTL_NETWORKS:
                raise ValueError(f"--rtl runs only {_rtl_names()}, not {network} {nodes}")
    local = getattr(args, "local", [0.0])
    return _OpenOptions(nets, local, level, active, getattr(args, "cluster", 12), rtl)


def _rtl_columns(args, options: _OpenOptions, model: dict, network, nodes, local, load):
    """The model's and the RTL's counts at one point, as the ``--rtl`` columns show them;
    :class:`RTLMismatch` if they differ."""
    rtl = measure_open_rtl(
        nodes,
        load,
        args.cycles,
        args.length,
        args.seed,
        local,
        options.level,
        options.active,
        network=network,
    )
    model_counts = [model[k] for k in _COUNTS]
    rtl_counts = [rtl[k] for k in _COUNTS]
    if rtl_counts != model_counts:
        raise RTLMismatch(
            f"RTL and model differ at load {load}, local {local}: "
            f"{'/'.join(_COUNTS)} RTL {rtl_counts}, model {model_counts}"
        )
    return ["/".join(map(str, model_counts)), "/".join(map(str, rtl_counts))]


def _open_row(args, options: _OpenOptions, network, nodes, stages, local, load) -> list:
    """One row: the model's counts at one network, locality and load (and the RTL's)."""
    c = measure_open(
        network,
        nodes,
        load,
        args.cycles,
        args.length,
        args.seed,
        stages,
        local,
        options.level,
        options.active,
        cluster=options.cluster,
        # The fat-tree RTL is regularly wired: with --rtl its model rows are too.
        random_wiring=not (options.rtl and network == "fat-tree"),
    )
    links = ENDPOINT_LINKS * (options.active if options.active is not None else nodes)
    extra = []
    if options.rtl:
        extra = _rtl_columns(args, options, c, network, nodes, local, load)
    return [
        network,
        nodes,
        stages if network != "bidelta" else None,
        local,
        load,
        c["first"],
        c["first_ok"] / c["first"] if c["first"] else None,
        c["tries"],
        c["ok"] / c["tries"] if c["tries"] else None,
        c["ok"] / (args.cycles * links),
        *extra,
    ]


def _open_params(args, options: _OpenOptions) -> dict:
    """The result's ``params``: the options as given, the networks by name."""
    keys = ("endpoints", "loads", "cycles", "length", "seed")
    params = {k: getattr(args, k) for k in keys}
    params.update(
        network=[n for n, _, _ in options.nets],
        stages=getattr(args, "stages", 1),
        cluster=options.cluster,
        local=options.local,
        level=options.level,
        active=options.active,
    )
    if options.rtl:
        # Only with --rtl, so the output of every other command stays as it was.
        params["rtl"] = True
    return params


def _open_notes(args, options: _OpenOptions) -> list[str]:
    """What the table counts, and how (the sample of senders, the RTL's agreement)."""
    level = options.level
    notes = [
        "cycle-exact models (the RTL's reference): senders on both links of every node "
        "(or of --active nodes), DROP-closed transmissions, blocked ones sent again after "
        "0..3 cycles, receivers always ready; after --cycles no transmission starts and "
        "every status still under way is waited for and counted",
        f"local: probability that a destination lies in the sender's level-{level} subtree "
        f"({4**level} nodes, numbered alike but for the low {2 * level} bits; on the bidelta "
        "network the same nodes, which are no closer there)",
    ]
    if options.active is not None:
        notes.append(f"senders on {options.active} nodes only (a random sample, seed {args.seed})")
    if options.rtl:
        notes.append(
            "--rtl: the same senders, receivers and traffic on the RTL (same seed) in "
            "amaranth.sim; counts are first tries/opened/tries/opened/cycles, and the run "
            "stops with an error if the RTL's differ from the model's: every row here agrees"
        )
        if any(n == "fat-tree" for n, _, _ in options.nets):
            notes.append("--rtl: the fat-tree rows are its regular (dispersed) wiring, the RTL's")
    return notes


_OPEN_COLUMNS = (
    "network",
    "nodes",
    "stages",
    "local",
    "load",
    "first tries",
    "P(open, first try)",
    "tries",
    "P(open)",
    "opened/link/cycle",
)


def _open_run(args, progress=lambda text: None) -> Result:
    """``dehon-open-probability``: a row per network, locality and load."""
    options = _open_options(args)
    points = [(n, q, p) for n in options.nets for q in options.local for p in args.loads]
    rows = [
        _open_row(args, options, network, nodes, stages, local, load)
        for (network, nodes, stages), local, load in counted(progress, points)
    ]
    columns = [*_OPEN_COLUMNS, *(("model counts", "RTL counts") if options.rtl else ())]
    return Result(
        "dehon-open-probability",
        _open_params(args, options),
        columns,
        rows,
        notes=_open_notes(args, options),
    )


def _max_level(nodes: int) -> int:
    level = 0
    while 4 ** (level + 1) <= nodes:
        level += 1
    return level


def _open_plot(result: Result, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    col = {c: i for i, c in enumerate(result.columns)}
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    series = dict.fromkeys(
        (r[col["network"]], r[col["nodes"]], r[col["stages"]], r[col["local"]]) for r in result.rows
    )
    for k, key in enumerate(series):
        network, nodes, stages, local = key
        pts = [r for r in result.rows if (r[0], r[1], r[2], r[3]) == key]
        label = f"{network} {nodes}" + (f" ({stages} st.)" if stages else "")
        label += f", local {local:g}" if local else ", uniform"
        style = {"fat-tree": "o-", "hybrid": "^-."}.get(network, "s--")
        x = [r[col["load"]] for r in pts]
        y = [r[col["P(open, first try)"]] for r in pts]
        ax.plot(x, y, style, color=f"C{k % 10}", ms=4, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("load (starts per idle link per cycle)")
    ax.set_ylabel("P(open, first try)")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("DeHon: opening a connection (cycle-exact models)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


EXPERIMENTS = [
    Experiment(
        "dehon-open-probability",
        "DeHon: probability that a connection opens on the first try (bidelta, fat-tree and "
        "hybrid models; uniform or local traffic)",
        _open_args,
        _open_run,
        _open_plot,
    ),
]
