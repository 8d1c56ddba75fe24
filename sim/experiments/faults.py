"""Faults in the circuit-switched trees: delivered fraction and delivery time against the
number of dead links or routers and where they sit.

``faults``: every node sends ``--messages`` messages to random other nodes (its queue, in
order); ``k`` faults of one place are drawn at random (:mod:`fattree.spec.faults`):

* ``up``: dead up-links ``Ulink(l, t, p)`` between routers, any level;
* ``down``: dead down-links ``Dlink(l, t, p)`` between routers, any level;
* ``eject``: dead eject links, leaf router to node (the one way into a node);
* ``router``: dead routers, any level.

The cycle-exact model (:class:`fattree.sim.models.circuit.CircuitTreeModel`, with the same
faults the hardware takes) runs until every node has sent its queue or is stuck. A message's
time runs from the cycle its interface takes it (transmit handshake) to the cycle its
receiver takes it (receive handshake). The protocol has no time-out: a message into a dead
link is neither acknowledged nor rejected, and one to a node that cannot be reached is
rejected for ever, so a message not delivered within ``--limit`` cycles of being taken is
counted **timed out**, and the rest of its sender's queue, which that interface never takes,
**never sent**; both are undelivered. ``to_cut_off`` counts the messages addressed to a node
whose eject link is dead (by an ``eject`` fault or a dead leaf router): no route reaches it.

``--network circuit-tree`` runs the same on the fast circuit tree
(:class:`fattree.sim.models.circuit_fast.CircuitFastTreeModel`, ``--window`` messages in
flight per node; it has no retry strategy: an attempt not acknowledged is sent again after
its fate delay), with one more place, ``ack1``: the ``ack`` wire of random link directions
stuck at 1. Its bookkeeping (:class:`~fattree.sim.models.circuit_fault_run.FastFaultRun`)
adds ``acknowledged`` (``tx_done`` pulses, one per message), ``false_ack`` (acknowledged but
never delivered: lost, and never sent again) and ``resent`` (attempts not acknowledged).

``--rtl`` repeats one small point per place (``--rtl-leaves``, one fault) on the generated
Verilog (cocotb, :mod:`fattree.sim.benches.circuit_faults`), in lock step with the model,
and puts its figures beside the model's. Results and discussion: docs/circuit_tree.md and
docs/circuit_tree_fast.md, "Faults".
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from ...spec.faults import Fault, format_faults, tree_links
from ...spec.topology import FatTree
from ..models.circuit import CircuitTreeModel
from ..models.circuit_fast import CircuitFastTreeModel
from ..models.circuit_fault_run import FastFaultRun, FaultRun, fault_queues
from . import Experiment, Result, counted

__all__ = ["PLACES", "FAST_PLACES", "NETWORKS", "draw_faults", "run_point", "EXPERIMENTS"]

PLACES = ("up", "down", "eject", "router")
#: The fast tree's places: also ``ack1``, an ``ack`` wire stuck at 1 on any link direction.
FAST_PLACES = (*PLACES, "ack1")
NETWORKS = ("circuit-tree-paper", "circuit-tree")
RETRIES = ("immediate", "round", "backoff")
#: Data bits of the experiment's messages: each message's data is its number (unique).
WIDTH, LENGTH = 8, 2


def draw_faults(place: str, count: int, leaves: int, rng: random.Random) -> tuple[Fault, ...]:
    """``count`` distinct faults of ``place`` in a ``leaves``-node tree, at random."""
    tree = FatTree(leaves.bit_length() - 1, 2)
    if place in ("up", "down"):
        pool = [Fault(place, lk.level, lk.switch, lk.port) for lk in tree.up_links()]
    elif place == "eject":
        pool = [Fault("eject", 0, n) for n in range(leaves)]
    elif place == "ack1":
        pool = [_stuck_ack(lk) for lk in tree_links(leaves)]
    else:
        pool = [Fault("router", lv, t) for lv in range(tree.levels) for t in range(leaves // 2)]
    if count > len(pool):
        raise ValueError(
            f"--faults: a {leaves}-leaf tree has {len(pool)} {place} places, not {count}"
        )
    return tuple(rng.sample(pool, count))


def _stuck_ack(link) -> Fault:
    """``ack`` stuck at 1 on a link direction (:class:`fattree.spec.topology.Link`)."""
    if link.direction in ("inject", "eject"):
        return Fault(link.direction, 0, 2 * link.switch + link.port, 0, "stuck1", "ack")
    return Fault(link.direction, link.level, link.switch, link.port, "stuck1", "ack")


def cut_off(faults, leaves: int) -> set[int]:
    """Nodes no route reaches: their eject link is dead (or their leaf router)."""
    nodes = set()
    for f in faults:
        if f.kind == "dead" and f.where == "eject":
            nodes.add(f.switch)
        elif f.kind == "dead" and f.where == "router" and f.level == 0:
            nodes |= {2 * f.switch, 2 * f.switch + 1}
    return nodes


def run_point(leaves, retry, faults, queues, limit, seed=1, *, window=None) -> dict:
    """One run on the model; its :meth:`FaultRun.figures`. With ``window`` the fast circuit
    tree's model (``retry`` is then not used) and :class:`FastFaultRun`."""
    if window is None:
        model = CircuitTreeModel(leaves, WIDTH, LENGTH, seed, retry, faults)
        run = FaultRun(queues, limit)
    else:
        model = CircuitFastTreeModel(leaves, WIDTH, LENGTH, seed, window, faults)
        run = FastFaultRun(queues, limit)
    while not run.finished:
        valid, dest, data = run.inputs()
        out = model.step(valid, dest, data)
        run.observe(valid, out.tx_ready, out.rx_valid, out.rx_data, out.tx_done, out.tx_reject)
    return run.figures()


# -- the command line ------------------------------------------------------------------------


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--network",
        default=NETWORKS[0],
        help=f"{' or '.join(NETWORKS)} (default {NETWORKS[0]})",
    )
    p.add_argument(
        "--leaves",
        default="64,256",
        help="comma list of node counts, powers of two 4..1024 (default 64,256)",
    )
    p.add_argument(
        "--faults", default="0,1,4,16", help="comma list of fault counts (default 0,1,4,16)"
    )
    p.add_argument(
        "--places",
        default=None,
        help=f"comma list of {', '.join(PLACES)} (circuit-tree: also ack1, an ack wire "
        "stuck at 1) (default all)",
    )
    p.add_argument("--messages", default="2", help="messages per node (default 2)")
    p.add_argument(
        "--retry",
        default=None,
        help="circuit-tree-paper: immediate, round or backoff (default backoff)",
    )
    p.add_argument(
        "--window",
        default=None,
        help="circuit-tree: messages in flight per node, 1, 2, 4, 8 or 16 (default 8)",
    )
    p.add_argument(
        "--limit", default="1500", help="cycles a taken message may take to arrive (default 1500)"
    )
    p.add_argument("--trials", default="1", help="fault draws per point, summed (default 1)")
    p.add_argument("--seed", default="1", help="traffic, fault draw and LFSR seed (default 1)")
    p.add_argument(
        "--rtl", action="store_true", help="cross-check one small point per place on the RTL"
    )
    p.add_argument("--rtl-leaves", default="8", help="nodes of the RTL points (default 8)")
    p.add_argument(
        "--simulator", default="verilator", help="verilator or icarus (default verilator)"
    )
    p.add_argument("--build-root", default=None, help="build folder root (default build/)")


def _ints(name: str, text: str, lo: int, hi: int) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"--{name} wants a comma list of integers, not {text!r}") from None
    bad = [v for v in values if not lo <= v <= hi]
    if bad:
        raise ValueError(f"--{name} must be {lo}..{hi}, not {bad[0]}")
    return list(dict.fromkeys(values))


def _network(args) -> tuple[str, str | None, int | None, tuple[str, ...]]:
    """The network and its own options: ``(network, retry, window, places)``."""
    if args.network not in NETWORKS:
        raise ValueError(f"--network must be one of {', '.join(NETWORKS)}, not {args.network!r}")
    if args.network == "circuit-tree-paper":
        if args.window is not None:
            raise ValueError("--window is for circuit-tree (circuit-tree-paper has one message)")
        retry = "backoff" if args.retry is None else args.retry
        if retry not in RETRIES:
            raise ValueError(f"--retry must be one of {', '.join(RETRIES)}, not {retry!r}")
        return args.network, retry, None, PLACES
    if args.retry is not None:
        raise ValueError(
            "--retry is for circuit-tree-paper (circuit-tree sends an attempt again when its "
            "fate delay passes without an acknowledgement)"
        )
    window = 8 if args.window is None else _ints("window", args.window, 1, 16)[0]
    if window & (window - 1):
        raise ValueError(f"--window must be a power of two, not {window}")
    return args.network, None, window, FAST_PLACES


def options(args) -> dict:
    """The checked options (ValueError with a one-line message for a bad one)."""
    network, retry, window, known = _network(args)
    leaves = _ints("leaves", args.leaves, 4, 1024)
    rtl_leaves = _ints("rtl-leaves", args.rtl_leaves, 4, 32)
    for name, values in (("leaves", leaves), ("rtl-leaves", rtl_leaves)):
        odd = [v for v in values if v & (v - 1)]
        if odd:
            raise ValueError(f"--{name} must be powers of two, not {odd[0]}")
    if network == "circuit-tree" and max(leaves) > 256:
        raise ValueError(f"--leaves: circuit-tree is built for 4..256, not {max(leaves)}")
    places = [v.strip() for v in (args.places or ",".join(known)).split(",")]
    bad = [v for v in places if v not in known]
    if bad:
        raise ValueError(f"--places wants a comma list of {', '.join(known)}, not {bad[0]!r}")
    if args.simulator not in ("verilator", "icarus"):
        raise ValueError(f"--simulator must be verilator or icarus, not {args.simulator!r}")
    return {
        "network": network,
        "leaves": leaves,
        "faults": _ints("faults", args.faults, 0, 4096),
        "places": list(dict.fromkeys(places)),
        "messages": _ints("messages", args.messages, 1, 64)[0],
        "retry": retry,
        "window": window,
        "limit": _ints("limit", args.limit, 1, 10**7)[0],
        "trials": _ints("trials", args.trials, 1, 100)[0],
        "seed": _ints("seed", args.seed, 1, (1 << 16) - 1)[0],
        "rtl": bool(args.rtl),
        "rtl_leaves": rtl_leaves[0],
        "simulator": args.simulator,
    }


COLUMNS = [
    "leaves",
    "place",
    "faults",
    "source",
    "messages",
    "to_cut_off",
    "delivered",
    "fraction",
    "of_sent",
    "timed_out",
    "never_sent",
    "mean",
    "p99",
]


#: The fast tree's columns: its acknowledgements beside its deliveries.
FAST_COLUMNS = [*COLUMNS[:11], "acknowledged", "false_ack", "resent", "mean", "p99"]
#: The figures a point sums over its fault draws, per network.
SUMMED = ("messages", "delivered", "timed_out", "never_sent")
FAST_SUMMED = (*SUMMED, "acknowledged", "false_ack", "resent")


def _fast(opts) -> bool:
    return opts["network"] == "circuit-tree"


def _row(opts, leaves, place, count, source, fig, cut) -> list:
    """A row of the table from a run's figures (or a point's sums)."""
    values = {
        **fig,
        "leaves": leaves,
        "place": place,
        "faults": count,
        "source": source,
        "to_cut_off": cut,
        "fraction": fig["delivered"] / fig["messages"],
        "of_sent": fig["delivered"] / (fig["messages"] - fig["never_sent"]),
    }
    return [values[c] for c in (FAST_COLUMNS if _fast(opts) else COLUMNS)]


def _model_run(opts, leaves, faults, queues) -> dict:
    window = opts["window"] if _fast(opts) else None
    return run_point(
        leaves, opts["retry"], faults, queues, opts["limit"], opts["seed"], window=window
    )


def _point(opts, leaves, place, count, progress) -> list:
    """The model's row of one point: ``trials`` fault draws, figures summed (times pooled)."""
    sums = dict.fromkeys(FAST_SUMMED if _fast(opts) else SUMMED, 0)
    times_mean, n_times, p99s, cut = 0.0, 0, [], 0
    for trial in range(opts["trials"]):
        rng = random.Random(f"{opts['seed']}/{leaves}/{place}/{count}/{trial}")
        faults = draw_faults(place, count, leaves, rng)
        queues = fault_queues(leaves, opts["messages"], rng)
        progress(f"faults: {leaves} leaves, {count} {place}, trial {trial + 1}")
        fig = _model_run(opts, leaves, faults, queues)
        for key in sums:
            sums[key] += fig[key]
        dead = cut_off(faults, leaves)
        cut += sum(1 for q in queues for dest, _ in q if dest in dead)
        if fig["delivered"]:
            times_mean += fig["mean"] * fig["delivered"]
            n_times += fig["delivered"]
            p99s.append(fig["p99"])
    sums["mean"] = times_mean / n_times if n_times else None
    sums["p99"] = max(p99s) if p99s else None
    return _row(opts, leaves, place, count, "model", sums, cut)


def rtl_point(opts, place, progress, root=None) -> tuple[list, list, dict]:
    """One fault of ``place`` at ``rtl_leaves`` on the RTL in lock step with the model: the
    RTL's row, the model's row (the same run alone) and the bench's speed."""
    from ..checks.experiment_runs import circuit_tree_bench

    leaves = opts["rtl_leaves"]
    rng = random.Random(f"{opts['seed']}/rtl/{leaves}/{place}")
    faults = draw_faults(place, 1, leaves, rng)
    traffic_seed = rng.getrandbits(32)
    queues = fault_queues(leaves, opts["messages"], random.Random(traffic_seed))
    params = {"leaves": leaves, "width": WIDTH, "length": LENGTH, "seed": opts["seed"]}
    if _fast(opts):
        params["window"] = opts["window"]
    else:
        params["retry"] = opts["retry"]
    params["faults"] = format_faults(faults)
    progress(f"faults: RTL ({opts['simulator']}), {leaves} leaves, {params['faults']}")
    result = circuit_tree_bench(
        "fattree.sim.benches.circuit_faults",
        params,
        opts["simulator"],
        seed=opts["seed"],
        bench={"messages": opts["messages"], "limit": opts["limit"], "traffic": traffic_seed},
        root=root,
        design=opts["network"],
    )
    got = result.summary.get("figures")
    if not result.passed or got is None:
        raise RuntimeError(f"the fault bench failed ({params['faults']}); see {result.log}")
    model = _model_run(opts, leaves, faults, queues)
    dead = cut_off(faults, leaves)
    cut = sum(1 for q in queues for dest, _ in q if dest in dead)
    name = f"{place} ({params['faults']})"
    speed = {
        "faults": params["faults"],
        "cycles": got["cycles"],
        "cycle_mismatches": result.summary.get("cycle_mismatches"),
        "build_seconds": result.build_seconds,
        "test_seconds": result.test_seconds,
    }
    return (
        _row(opts, leaves, name, 1, "rtl", got, cut),
        _row(opts, leaves, name, 1, "model", model, cut),
        speed,
    )


def _run(args, progress) -> Result:
    opts = options(args)
    rows, rtl, differ = [], [], []
    points = [
        (leaves, place, count)
        for leaves in opts["leaves"]
        for place in opts["places"]
        for count in opts["faults"]
        if not (count == 0 and place != opts["places"][0])
    ]
    for leaves, place, count in counted(progress, points):
        rows.append(_point(opts, leaves, "none" if count == 0 else place, count, progress))
    if opts["rtl"]:
        for place in opts["places"]:
            root = Path(args.build_root) if args.build_root else None
            rtl_row, model_row, speed = rtl_point(opts, place, progress, root)
            rows += [rtl_row, model_row]
            rtl.append(speed)
            if rtl_row[4:] != model_row[4:]:
                differ.append(place)
    how = f"retry {opts['retry']}"
    if _fast(opts):
        how = f"circuit-tree, window {opts['window']}"
    notes = [
        f"random traffic, {opts['messages']} messages per node, {how}; "
        f"{opts['trials']} fault draws per point, counts summed; times in cycles from "
        "transmit handshake to receive handshake (mean over the delivered, p99: the worst "
        "draw's); a message not delivered within "
        f"{opts['limit']} cycles of being taken is timed out, its sender's later ones never sent",
        "to_cut_off: messages addressed to a node whose eject link is dead (no route); "
        "fraction: delivered / messages; of_sent: delivered / (messages - never_sent)",
    ]
    if _fast(opts):
        notes.append(
            "acknowledged: tx_done pulses (one per message); false_ack: acknowledged, never "
            "delivered (per sender, acknowledged - delivered): lost and never sent again; "
            "resent: attempts not acknowledged (tx_reject), each sent again"
        )
    if opts["rtl"]:
        notes.append(
            "RTL (cocotb, in lock step with the model) and model figures are equal"
            if not differ
            else f"RTL and model differ for {', '.join(differ)}"
        )
    return Result(
        "faults",
        opts,
        FAST_COLUMNS if _fast(opts) else COLUMNS,
        rows,
        notes,
        extra={"rtl_equals_model": None if not opts["rtl"] else not differ, "rtl": rtl},
    )


def _plot(result: Result, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    col = {c: i for i, c in enumerate(result.columns)}
    # The sweep's rows (not the RTL cross-check's, whose place names their fault).
    rows = [
        r
        for r in result.rows
        if r[col["source"]] == "model" and r[col["place"]] in (*FAST_PLACES, "none")
    ]
    sizes = list(dict.fromkeys(r[col["leaves"]] for r in rows))
    places = [p for p in FAST_PLACES if any(r[col["place"]] == p for r in rows)]
    fig, axes = plt.subplots(2, len(sizes), figsize=(4.2 * len(sizes), 6.4), squeeze=False)
    for j, leaves in enumerate(sizes):
        top, bottom = axes[0][j], axes[1][j]
        base = [r for r in rows if r[col["leaves"]] == leaves and r[col["faults"]] == 0]
        for k, place in enumerate(places):
            color, what = f"C{k}", "ack stuck at 1" if place == "ack1" else f"dead {place}"
            pts = base + [
                r for r in rows if r[col["leaves"]] == leaves and r[col["place"]] == place
            ]
            pts.sort(key=lambda r: r[col["faults"]])
            x = [r[col["faults"]] for r in pts]
            frac = [r[col["fraction"]] for r in pts]
            top.plot(x, frac, "o-", color=color, ms=4, label=f"{what}")
            sent = [r[col["of_sent"]] for r in pts]
            top.plot(x, sent, "x:", color=color, ms=4, label=f"{what}, of sent")
            y = [r[col["mean"]] for r in pts]
            bottom.plot(x, y, "o-", color=color, ms=4, label=f"{what}, mean")
            y = [r[col["p99"]] for r in pts]
            bottom.plot(x, y, "x:", color=color, ms=4, label=f"{what}, p99")
        top.set_title(f"{leaves} leaves")
        top.set_ylabel("delivered fraction")
        bottom.set_ylabel("delivery time (cycles)")
        bottom.set_xlabel("faults")
        counts = sorted({r[col["faults"]] for r in rows if r[col["leaves"]] == leaves})
        for ax in (top, bottom):
            ax.set_xscale("symlog", linthresh=1)
            ax.set_xticks(counts, [str(c) for c in counts])
        bottom.set_yscale("log")
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=6, ncol=2)
    axes[1][0].legend(fontsize=6, ncol=2)
    p = result.params
    what, how = "dead links and routers", f"retry {p['retry']}"
    if p.get("network") == "circuit-tree":
        what, how = "dead links and routers, stuck acks", f"circuit-tree, window {p['window']}"
    fig.suptitle(
        f"{what}: {p['messages']} random messages per node, "
        f"{how}, limit {p['limit']} cycles (model)",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


EXPERIMENTS = [
    Experiment(
        "faults",
        "circuit trees: delivered fraction and delivery time against dead links and routers "
        "(--network circuit-tree: also stuck acknowledgements)",
        _args,
        _run,
        _plot,
    )
]
