"""Every network with stream endpoints side by side: what it delivers per LUT.

``noc-compare``: per network (:data:`fattree.sim.load_networks.NETWORKS`) and message length,
at one size (16 endpoints by default), on the RTL under Verilator (or Icarus) and on the
cycle-exact model with the same draws:

* the **zero-load latency**: every ordered pair of endpoints (a sample of them above 16
  endpoints) sends one message with the network to itself
  (:class:`fattree.sim.network_load.ZeroLoad`), mean cycles from offer to the ``rx``
  handshake of its last beat;
* the **saturation throughput** per traffic pattern: the highest accepted throughput over a
  sweep of offered loads (:class:`fattree.sim.network_load.NetworkLoad`, messages per
  endpoint per cycle);
* beside them the synthesis figures of the same design and parameters (ECP5 LFE5U-85F, LUT4,
  FF, Fmax as the median over nextpnr seeds), from :data:`DATA_FILE` or ``--synth FILE``,
  and what they give: payload Gbit/s per endpoint and per 1,000 LUT4.

Two rows per network and length, ``rtl`` and ``model``; a note says whether they are equal.
Kapre's BFT figures are reference rows (:data:`REFERENCES`). Definitions and the reading of
the table: docs/noc_compare.md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from pathlib import Path

from ..load_networks import NETWORKS, RETRY_NETWORKS, LoadNetwork, lengths_of, load_network
from ..network_load import LOAD_PATTERNS, NetworkLoad, Point, ZeroLoad
from . import Experiment, Result, counted, int_list
from .load_latency import _choices as _comma

DATA_FILE = Path(__file__).parent / "data" / "noc_synthesis.json"

DEFAULT_NETWORKS = "circuit-tree-paper,circuit-tree,rn1-bidelta-stream,hypercube,leiserson-online"
DEFAULT_PATTERNS = "random,transpose,bit-reversal,hotspot"
#: Offered loads as fractions of what an endpoint's link can take: a network whose link
#: moves one word per cycle is offered ``f / length`` messages per endpoint per cycle.
DEFAULT_FRACTIONS = "0.05,0.1,0.2,0.4,0.7,1"
#: Quiet cycles between the messages of the zero-load run.
ZERO_LOAD_GAP = 64

#: Cycles a message of ``length`` words takes to leave its endpoint at the link's rate.
LINK_CYCLES = {
    "circuit-tree-paper": lambda p: p,
    "circuit-tree": lambda p: p,
    "rn1-bidelta-stream": lambda p: p,
    "rn1-fat-tree": lambda p: p,
    "hypercube": lambda p: 1,  # its links carry a whole message per cycle
    "leiserson-online": lambda p: 8 * p,  # bit-serial
}

#: Kapre's butterfly fat-trees (the bft-flow RTL), 16 PEs, 8-bit data, single-word packets,
#: synthesised with this project's ECP5 flow (LFE5U-85F, Yosys, nextpnr) and driven with the
#: same open-loop traffic draws (seed 1, warm-up 400, window 2000), measured side by side with
#: the circuit tree: BFT3 has pi switches at every level (full bisection), BFT0 t switches
#: only (a plain tree).
REFERENCES = (
    {
        "network": "BFT3 (Kapre)",
        "zero_load": 5.6,
        "random": 0.558,
        "transpose": 0.25,
        "bit-reversal": 0.25,
        "luts": 7040,
        "fmax": 112.1,
    },
    {"network": "BFT0 (Kapre)", "random": 0.158, "luts": 2354, "fmax": 137.5},
)


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--networks",
        default=DEFAULT_NETWORKS,
        help=f"comma list of {', '.join(NETWORKS)} (default {DEFAULT_NETWORKS})",
    )
    p.add_argument("--nodes", default="16", help="endpoints (default 16)")
    p.add_argument(
        "--lengths",
        default="2",
        help="message lengths in 8-bit words, N, A..B or a comma list (default 2)",
    )
    p.add_argument(
        "--patterns",
        default=DEFAULT_PATTERNS,
        help=f"comma list of {', '.join(LOAD_PATTERNS)} (default {DEFAULT_PATTERNS})",
    )
    p.add_argument(
        "--fractions",
        default=DEFAULT_FRACTIONS,
        help="offered loads as fractions of an endpoint link's capacity, in (0, 1]"
        f" (default {DEFAULT_FRACTIONS})",
    )
    p.add_argument("--cycles", default="2000", help="measurement window in cycles (default 2000)")
    p.add_argument("--warmup", default="400", help="warm-up cycles (default 400)")
    p.add_argument("--seed", default="1", help="traffic seed (default 1)")
    p.add_argument(
        "--retry",
        default="immediate",
        help=f"retry strategy of {', '.join(RETRY_NETWORKS)}: immediate, round or backoff"
        " (default immediate; the packaged synthesis figures are for immediate)",
    )
    p.add_argument(
        "--simulator", default="verilator", help="verilator or icarus (default verilator)"
    )
    p.add_argument("--model-only", action="store_true", help="skip the RTL: the models alone")
    p.add_argument(
        "--synth",
        default=None,
        metavar="FILE",
        help="synthesis figures: the JSON of `fattree sweep synth --json` or of `fattree synth"
        " --json` (default: the measurements packaged with fattree)",
    )
    p.add_argument("--build-root", default=None, help="where the RTL is built")


def _positive(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"--{name} wants a positive integer, not {text!r}")
    return value


def _fractions(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"--fractions wants a comma list of numbers, not {text!r}") from None
    if any(not 0 < v <= 1 for v in values):
        raise ValueError(f"--fractions must be above 0 and at most 1, not {text!r}")
    return values


def options(args) -> dict:
    """The checked options (ValueError with a one-line message for a bad one)."""
    try:
        lengths = int_list(args.lengths)
    except argparse.ArgumentTypeError as error:
        raise ValueError(f"--lengths: {error}") from None
    if args.simulator not in ("verilator", "icarus"):
        raise ValueError(f"--simulator must be verilator or icarus, not {args.simulator!r}")
    opts = {
        "networks": _comma("networks", args.networks, tuple(NETWORKS)),
        "nodes": _positive("nodes", args.nodes),
        "lengths": lengths,
        "patterns": _comma("patterns", args.patterns, LOAD_PATTERNS),
        "fractions": _fractions(args.fractions),
        "cycles": _positive("cycles", args.cycles),
        "warmup": _positive("warmup", args.warmup) if args.warmup != "0" else 0,
        "seed": _positive("seed", args.seed),
        "retry": args.retry,
        "simulator": args.simulator,
        "model_only": bool(args.model_only),
        "synth": args.synth,
    }
    for name in opts["networks"]:  # every network and length built before any work
        for length in lengths_of(name, lengths):
            load_network(name, opts["nodes"], length, opts["retry"])
    return opts


def zero_load_pairs(nodes: int, seed: int) -> list[tuple[int, int]]:
    """Every ordered pair of distinct endpoints up to 16 endpoints; above, 4 destinations
    per source drawn at random (uniform over the others)."""
    if nodes <= 16:
        return [(s, d) for s in range(nodes) for d in range(nodes) if s != d]
    rng = random.Random(seed)
    pairs = []
    for s in range(nodes):
        for d in rng.sample([d for d in range(nodes) if d != s], 4):
            pairs.append((s, d))
    return pairs


def load_points(net: LoadNetwork, opts: dict) -> list[Point]:
    per_message = LINK_CYCLES[net.name](net.length)
    return [
        Point(pattern, f / per_message, opts["warmup"], opts["cycles"], opts["seed"])
        for pattern in opts["patterns"]
        for f in opts["fractions"]
    ]


def _drive(model, run: NetworkLoad) -> dict:
    while not run.finished:
        tx, ready = run.inputs()
        run.observe(*model.cycle(tx, ready))
    return run.figures()


def model_figures(net: LoadNetwork, opts: dict) -> dict:
    """The zero-load run and every load point on the model, each from reset."""
    pairs = zero_load_pairs(net.nodes, opts["seed"])
    zero = ZeroLoad(net.nodes, net.word_bits, net.beats, pairs, ZERO_LOAD_GAP)
    points = [
        _drive(net.model(), NetworkLoad(net.nodes, net.word_bits, net.beats, p))
        for p in load_points(net, opts)
    ]
    return {"zero_load": _drive(net.model(), zero), "points": points}


def rtl_figures(net: LoadNetwork, opts: dict, progress, root=None) -> dict:
    """The same runs on the RTL, in one simulator run."""
    from ..checks.experiment_runs import network_load_bench

    pts = load_points(net, opts)
    progress(f"noc-compare: RTL ({opts['simulator']}), {net.name}, {net.length} words")
    bench = {
        "network": net.name,
        "nodes": net.nodes,
        "length": net.length,
        "retry": net.params.get("retry", "immediate"),
        "zero_load": {"pairs": zero_load_pairs(net.nodes, opts["seed"]), "gap": ZERO_LOAD_GAP},
        "points": [p.as_dict() for p in pts],
    }
    result = network_load_bench(net.design, net.params, opts["simulator"], bench, root)
    summary = result.summary
    if not result.passed or len(summary.get("points", [])) != len(pts):
        raise RuntimeError(f"the load bench failed on {net.name}; see {result.log}")
    return {
        "zero_load": summary["zero_load"],
        "points": [r["figures"] for r in summary["points"]],
        "cycles_per_second": summary.get("cycles_per_second"),
    }


# -- synthesis figures ------------------------------------------------------------------------

RETRY_NAMES = ("immediate", "round", "backoff")


def _normal(key: str, value):
    if key == "retry" and isinstance(value, int) and 0 <= value < len(RETRY_NAMES):
        return RETRY_NAMES[value]
    return value


def _synth_records(data) -> list[dict]:
    """``{design, params, luts, ffs, fmax_mhz, seed}`` per run, from the packaged data file
    (``{"points": [...]}``), ``fattree sweep synth --json`` (``{"runs": [...]}``) or
    ``fattree synth --json`` (one run)."""
    if isinstance(data, dict) and "points" in data:
        return [
            {
                "design": p["design"],
                "params": p["params"],
                "luts": p["luts"],
                "ffs": p["ffs"],
                "fmax_mhz": p["fmax_mhz"],
                "seed": p["nextpnr_seed"],
            }
            for p in data["points"]
            if p.get("family", "ecp5") == "ecp5"
        ]
    runs = data["runs"] if isinstance(data, dict) and "runs" in data else [data]
    records = []
    for run in runs:
        job, result = (run["job"], run["result"]) if "job" in run else ({}, run)
        if not result or result.get("family", job.get("family")) not in ("ecp5", None):
            continue
        params = job.get("params", result.get("params"))
        records.append(
            {
                "design": job.get("name", result.get("design")),
                "params": dict(params),
                "luts": result["resources"]["luts"],
                "ffs": result["resources"]["ffs"],
                "fmax_mhz": result["fmax_mhz"],
                "seed": job.get("seed", result.get("seed")),
            }
        )
    return records


def load_synthesis(path: Path | str | None = None) -> list[dict]:
    """The synthesis runs of ``path`` (default :data:`DATA_FILE`); ``ValueError`` (one line)
    if it cannot be read."""
    path = Path(path) if path else DATA_FILE
    try:
        return _synth_records(json.loads(path.read_text()))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not a synthesis JSON file"
        raise ValueError(f"cannot read {path}: {reason}") from None


def synthesis_of(net: LoadNetwork, records: list[dict]) -> dict | None:
    """LUT4, FF and the median Fmax over the seeds of the runs of ``net``'s design and
    parameters (None if there are none)."""
    want = {k: _normal(k, v) for k, v in net.params.items()}
    runs = [
        r
        for r in records
        if r["design"] == net.design
        and all(_normal(k, r["params"].get(k)) == v for k, v in want.items())
    ]
    if not runs:
        return None
    placed = [r["fmax_mhz"] for r in runs if r["fmax_mhz"] is not None]
    return {
        "luts": runs[0]["luts"],
        "ffs": runs[0]["ffs"],
        "fmax": round(statistics.median(placed), 1) if placed else None,
        "seeds": sorted(r["seed"] for r in runs),
    }


def payload_rates(nodes: int, bits: int, rate: float | None, synth: dict | None) -> tuple:
    """Payload Gbit/s per endpoint and per 1,000 LUT4 at ``rate`` messages per endpoint per
    cycle of ``bits`` payload bits each, at the design's Fmax."""
    if rate is None or not synth or not synth["fmax"]:
        return None, None
    per_node = rate * bits * synth["fmax"] / 1000
    return round(per_node, 3), round(nodes * per_node / (synth["luts"] / 1000), 3)


# -- the table --------------------------------------------------------------------------------


def columns(patterns) -> list[str]:
    """The table's columns with a saturation column per pattern of ``patterns``."""
    return [
        "network",
        "nodes",
        "length",
        "source",
        "zero_load",
        *patterns,
        "worst_share",
        "wait_max",
        "bits_per_node",
        "luts",
        "ffs",
        "fmax",
        "gbps_per_node",
        "gbps_per_klut",
        "gbps_per_klut_perm",
    ]


def _row(net: LoadNetwork, source: str, figures: dict, opts: dict, synth) -> list:
    per_point = figures["points"]
    saturation, at = {}, {}
    for k, p in enumerate(load_points(net, opts)):
        accepted = per_point[k]["accepted"]
        if accepted >= saturation.get(p.pattern, 0.0):
            saturation[p.pattern], at[p.pattern] = accepted, per_point[k]
    random_rate = saturation.get("random")
    # Starvation at random traffic's saturation point: the worst-served source, the longest
    # wait in the network.
    starved = at.get("random", {})
    perm = [saturation[p] for p in ("transpose", "bit-reversal") if p in saturation]
    per_node, per_klut = payload_rates(net.nodes, net.payload_bits, random_rate, synth)
    _, perm_klut = payload_rates(net.nodes, net.payload_bits, min(perm, default=None), synth)
    return [
        net.name,
        net.nodes,
        net.length,
        source,
        figures["zero_load"]["mean"],
        *(saturation.get(p) for p in opts["patterns"]),
        starved.get("worst_share"),
        starved.get("wait_max"),
        None if random_rate is None else round(random_rate * net.payload_bits, 3),
        *(synth.get(k) if synth else None for k in ("luts", "ffs", "fmax")),
        per_node,
        per_klut,
        perm_klut,
    ]


def _reference_rows(opts: dict) -> list[list]:
    rows = []
    for ref in REFERENCES:
        synth = {"luts": ref["luts"], "ffs": None, "fmax": ref["fmax"]}
        bits = 8
        per_node, per_klut = payload_rates(16, bits, ref["random"], synth)
        perm = ref.get("transpose")
        _, perm_klut = payload_rates(16, bits, perm, synth)
        rows.append(
            [
                ref["network"],
                16,
                1,
                "reference",
                ref.get("zero_load"),
                *(ref.get(p) for p in opts["patterns"]),
                None,
                None,
                round(ref["random"] * bits, 3),
                ref["luts"],
                None,
                ref["fmax"],
                per_node,
                per_klut,
                perm_klut,
            ]
        )
    return rows


def _run(args, progress) -> Result:
    opts = options(args)
    records = load_synthesis(opts["synth"])
    root = Path(args.build_root) if args.build_root else None
    nets = [
        load_network(name, opts["nodes"], length, opts["retry"])
        for name in opts["networks"]
        for length in lengths_of(name, opts["lengths"])
    ]
    rows, differ, missing, speeds = [], [], [], {}
    for net in counted(progress, nets):
        synth = synthesis_of(net, records)
        if synth is None:
            missing.append(f"{net.name} ({net.length} word{'s' * (net.length > 1)})")
        label = f"{net.name}/{net.length}"
        progress(f"noc-compare: model, {net.name}, {net.length} words")
        model = model_figures(net, opts)
        if not opts["model_only"]:
            rtl = rtl_figures(net, opts, progress, root)
            speeds[label] = rtl.pop("cycles_per_second")
            rows.append(_row(net, "rtl", rtl, opts, synth))
            if rtl != model:
                differ.append(label)
        rows.append(_row(net, "model", model, opts, synth))
    rows += _reference_rows(opts)
    return Result(
        "noc-compare",
        dict(opts),
        columns(opts["patterns"]),
        rows,
        _notes(opts, differ, missing),
        extra={"rtl_equals_model": None if opts["model_only"] else not differ, "rtl": speeds},
    )


def _notes(opts: dict, differ: list[str], missing: list[str]) -> list[str]:
    notes = [
        "zero_load: mean cycles from offer to the rx handshake of the last beat, one message in"
        " the network at a time, every ordered pair (a sample above 16 endpoints);"
        f" {', '.join(opts['patterns'])}: saturation throughput, the highest accepted messages"
        " per endpoint per cycle over the offered loads; bits_per_node: payload bits per"
        " endpoint per cycle at saturation, uniform random",
        "worst_share, wait_max: at uniform random traffic's saturation point, the worst-served"
        " source's deliveries over the mean source's, and the longest cycles any message spent"
        " in the network (accepted to delivered, or still in flight when the window ends)",
        "luts, ffs: Yosys on the ECP5 (LUT4, flip-flops); fmax: MHz, median over nextpnr seeds;"
        " gbps_per_node, gbps_per_klut: delivered payload at saturation at that Fmax, uniform"
        " random, per endpoint and per 1,000 LUT4; gbps_per_klut_perm: the same for the worse"
        " of transpose and bit reversal",
        "reference rows: Kapre's BFT3 (pi switches at every level) and BFT0 (t switches only),"
        " bft-flow's RTL, 16 PEs, 8-bit single-word packets, the same traffic draws and ECP5"
        " flow, measured side by side with the circuit tree (docs/noc_compare.md)",
    ]
    if not opts["model_only"]:
        notes.append(
            "RTL and model figures are equal for every network"
            if not differ
            else f"RTL and model differ for {', '.join(differ)}"
        )
    if missing:
        notes.append(
            f"no synthesis figures for {', '.join(missing)}: run `fattree sweep synth DESIGN"
            " -p ... -f ecp5 --seeds 1..3 --json > FILE` and pass --synth FILE"
        )
    return notes


def _plot(result: Result, path: str) -> None:
    """Two panels against message length, one line per network: payload bits per endpoint
    per cycle at saturation, and Gbit/s per 1,000 LUT4 (where synthesis figures are known);
    the references as dashed lines."""
    import matplotlib.pyplot as plt

    from . import save_plot

    col = {c: i for i, c in enumerate(result.columns)}
    measured = [r for r in result.rows if r[col["source"]] in ("rtl", "model")]
    source = "rtl" if any(r[col["source"]] == "rtl" for r in measured) else "model"
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    panels = (
        ("bits_per_node", "payload bits per endpoint per cycle"),
        ("gbps_per_klut", "delivered payload, Gbit/s per 1,000 LUT4"),
    )
    names = list(dict.fromkeys(r[col["network"]] for r in measured))
    colour = {name: f"C{k}" for k, name in enumerate(names)}  # one colour per network
    for ax, (figure, label) in zip(axes, panels, strict=True):
        for name in names:
            rows = [
                r
                for r in measured
                if r[col["network"]] == name
                and r[col["source"]] == source
                and r[col[figure]] is not None
            ]
            if rows:
                x = [r[col["length"]] for r in rows]
                y = [r[col[figure]] for r in rows]
                ax.plot(x, y, "o-", label=name, color=colour[name])
        refs = [r for r in result.rows if r[col["source"]] == "reference" and r[col[figure]]]
        for k, r in enumerate(refs):
            ax.axhline(r[col[figure]], ls="--", lw=1, color="grey")
            where = "bottom" if k % 2 == 0 else "top"  # two close lines: labels above, below
            ax.annotate(r[col["network"]], (1, r[col[figure]]), fontsize=7, va=where)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message length (8-bit words)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.suptitle(f"uniform random, {result.params['nodes']} endpoints, ECP5 ({source})")
    save_plot(fig, path)


EXPERIMENTS = [
    Experiment(
        "noc-compare",
        "every network with stream endpoints: zero-load latency, saturation throughput,"
        " LUTs, Fmax and payload per LUT, RTL and model, beside Kapre's BFT",
        _args,
        _run,
        _plot,
    )
]
