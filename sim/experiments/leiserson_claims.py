"""Leiserson (1985): three claims of sections II and III, each checked across n.

* ``leiserson-header`` (section II: "a bit string of length at most 2 lg n is sufficient to
  represent the destination of any message"): the address bits of our headers (one per node on
  the path) and the concentrator decision bits interleaved with them (section IV), per n; at
  the sizes we build, every ordered pair of leaves and every leaf to and from the external
  interface, each header decoded node by node as the hardware reads it.
* ``leiserson-cycle-time`` (section II: "the time required for an entire delivery cycle in a
  fat-tree of n processors is O(lg n)"): cycles from the first bit in (``start``) to the last
  bit out of a delivery cycle, from the timing model of the nodes (the same bounds the stream
  ports use, :mod:`fattree.spec.leiserson_frames`) to 2^20 leaves, from the tree model on a
  real delivery cycle where the layout is built, and with ``--rtl`` from the RTL of
  ``leiserson-tree`` in amaranth.sim at 8..64 leaves; fitted to a + b lg n.
* ``leiserson-corollary2`` (section III, Corollary 2: capacities of at least a lg n give
  d = O(a/(a-1) lambda), "not worse than 4 lambda" at 2 lg n): many random and adversarial
  message sets per n, profile and a; the error the proof allows (up to lg n over the
  fictitious capacity cap - lg n) measured in every delivery cycle.

Above the sizes whose layout is built (the Pippenger graphs of a 2^20-leaf tree take far too
long to draw and verify), the bounds come from the cascade shapes alone: the decision bits of
a stage follow from its input and output counts by the construction's rules
(:func:`stage_decision_bits`); the tests check them against the built graphs.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from dataclasses import dataclass

import numpy as np

from ...spec.bits import lg
from ...spec.capacities import TreeLayout, ceil_cbrt, universal_capacities
from ...spec.concentrator_graph import MAX_INPUT_DEGREE, MAX_OUTPUT_DEGREE, cascade_sizes
from ...spec.leiserson_frames import cycle_length, header_bits_bound, latency_bound
from ..models.leiserson_schedule import (
    OUTSIDE,
    Capacities,
    channels_of,
    check_messages,
    frame_bits,
    ideal_capacities,
    layout_capacities,
    load_factor,
    message_set,
    plan_cycle,
    random_messages,
    schedule_corollary2,
    schedule_first_fit,
    schedule_theorem1,
)
from ..models.leiserson_tree import deliver
from . import Experiment, Result, counted, lg_sizes

__all__ = [
    "stage_decision_bits",
    "shape_layout",
    "decode_header",
    "header_rows",
    "cycle_time_rows",
    "measure_cycle_rtl",
    "corollary2_sets",
    "corollary2_point",
]

#: lg n of the largest tree the bounds are computed for (the issue's 2^20).
MAX_LG = 20
#: lg n up to which a layout (every Pippenger graph, verified) may be built: 2^8 leaves take
#: about 12 s with w = n on the shared machine, 2^9 about 50 s.
MAX_BUILT = 8
#: Leaves of the RTL runs (``--rtl``): 64 leaves take about a minute in amaranth.sim.
RTL_SIZES = (3, 4, 5, 6)


def _profiles(n: int) -> list[tuple[str, int]]:
    """The two universal profiles of the docs: w = n and w = n^(2/3) (one row when equal)."""
    low = ceil_cbrt(n * n)
    return [("w=n", n)] + ([("w=n^(2/3)", low)] if low != n else [])


# -- shapes: the bounds without building the graphs ---------------------------------------------


def stage_decision_bits(r: int, s: int) -> int:
    """Decision bits of the stage ``r -> s`` that the construction makes
    (:func:`fattree.spec.concentrator_graph.build_partial_concentrator`), from its size alone:
    complete bipartite when r <= 9 and s <= 6 (input degree s), otherwise random with input
    degree min(6, s); the edge index takes ``max(1, ceil(lg degree))`` bits."""
    complete = r <= MAX_OUTPUT_DEGREE and s <= MAX_INPUT_DEGREE
    degree = s if complete else min(MAX_INPUT_DEGREE, s)
    return max(1, (degree - 1).bit_length())


@dataclass(frozen=True)
class _CascadeShape:
    r: int
    s: int
    decision_bits: tuple[int, ...]


@dataclass(frozen=True)
class _ShapeLayout(TreeLayout):
    """A :class:`TreeLayout` whose cascades are shapes only: enough for the frame bounds of
    :mod:`fattree.spec.leiserson_frames`, which read nothing but ``decision_bits``."""

    def cascade(self, level: int, port: str) -> _CascadeShape:  # type: ignore[override]
        r, s = sum(self.group_widths(level, port)), self.out_width(level, port)
        sizes = cascade_sizes(r, s)
        bits = tuple(stage_decision_bits(a, b) for a, b in zip(sizes, sizes[1:], strict=False))
        return _CascadeShape(r, s, bits)


def shape_layout(leaves: int, w: int) -> TreeLayout:
    """The universal layout of ``leaves`` and ``w`` with shapes instead of graphs."""
    return _ShapeLayout(leaves, universal_capacities(leaves, w))


def _layout(n: int, w: int, built: int, seed: int) -> tuple[TreeLayout, str]:
    if lg(n) <= built:
        return TreeLayout.universal(n, w, seed), "layout"
    return shape_layout(n, w), "shapes"


# -- leiserson-header ---------------------------------------------------------------------------


def decode_header(layout: TreeLayout, src: int, header: list[int]) -> tuple[int, int, tuple]:
    """Read ``header`` from ``src`` (a leaf or :data:`OUTSIDE`) as the nodes do: at each node one
    address bit (on L/R inputs 1 = up, 0 = across; on U inputs 1 = right, 0 = left), then the
    decision bits of the chosen output's cascade. Returns (address bits, decision bits, where
    the message leaves the tree: ``("leaf", j)`` or ``("root", 0)``); ``ValueError`` if the
    header ends inside a node or has bits left over."""
    n = layout.leaves
    if src == OUTSIDE:
        node, in_port = 1, "U"
    else:
        node, in_port = (n + src) >> 1, "LR"[(n + src) & 1]
    pos = address = decision = 0
    while True:
        if pos >= len(header):
            raise ValueError(f"header of {len(header)} bits ends before node {node}")
        bit = header[pos]
        pos, address = pos + 1, address + 1
        if in_port == "U":
            port = "R" if bit else "L"
        else:
            port = "U" if bit else ("R" if in_port == "L" else "L")
        bits = sum(layout.cascade(node.bit_length() - 1, port).decision_bits)
        if pos + bits > len(header):
            raise ValueError(f"header of {len(header)} bits ends inside node {node}")
        pos, decision = pos + bits, decision + bits
        if port == "U":
            if node == 1:
                end = ("root", 0)
                break
            node, in_port = node >> 1, "LR"[node & 1]
            continue
        child = 2 * node + (port == "R")
        if child >= n:
            end = ("leaf", child - n)
            break
        node, in_port = child, "U"
    if pos != len(header):
        raise ValueError(f"header has {len(header) - pos} bits left at its destination")
    return address, decision, end


def _path_nodes(n: int, src: int, dst: int) -> int:
    """Nodes on the path (one address bit each): 2h - 1 between leaves whose common ancestor
    is h levels up, lg n to or from the external interface."""
    if OUTSIDE in (src, dst):
        return lg(n)
    return 2 * (src ^ dst).bit_length() - 1


def _all_headers(layout: TreeLayout):
    """(src, dst, header) of every ordered pair of leaves and every leaf to and from the
    external interface, each from a real delivery cycle: the XOR permutations i -> i ^ k cover
    the pairs, scheduled by Theorem 1 under the hardware's capacities; the external ones are
    packed first-fit."""
    n = layout.leaves
    caps = layout_capacities(layout)
    for k in range(1, n):
        messages = [(i, i ^ k) for i in range(n)]
        for cycle in schedule_theorem1(n, messages, caps):
            for mp in plan_cycle(layout, messages, cycle).messages:
                yield mp.src, mp.dst, mp.header
    messages = [(i, OUTSIDE) for i in range(n)] + [(OUTSIDE, i) for i in range(n)]
    cycles, wires = schedule_first_fit(layout, messages)
    for cycle in cycles:
        for mp in plan_cycle(layout, messages, cycle, wires).messages:
            yield mp.src, mp.dst, mp.header


def check_headers(layout: TreeLayout) -> dict:
    """Every header of :func:`_all_headers` decoded: it must lead to its destination and spend
    one address bit per path node. Returns the counts and maxima; ``RuntimeError`` on any
    header that does not, so a wrong figure is never reported."""
    n = layout.leaves
    count, address_max, header_max = 0, 0, 0
    seen = set()
    for src, dst, header in _all_headers(layout):
        address, _decision, end = decode_header(layout, src, header)
        want = ("root", 0) if dst == OUTSIDE else ("leaf", dst)
        if end != want or address != _path_nodes(n, src, dst):
            raise RuntimeError(
                f"{n} leaves: the header of {src} -> {dst} leads to {end} with {address} "
                f"address bits (wanted {want}, {_path_nodes(n, src, dst)})"
            )
        seen.add((src, dst))
        count += 1
        address_max = max(address_max, address)
        header_max = max(header_max, len(header))
    if len(seen) != n * (n - 1) + 2 * n:
        raise RuntimeError(f"{n} leaves: {len(seen)} pairs decoded, not {n * (n - 1) + 2 * n}")
    return {"messages": count, "address_max": address_max, "header_max": header_max}


def header_rows(sizes, check: int, seed: int = 0, progress=lambda _s: None) -> list[list]:
    rows = []
    for lgn in counted(progress, sizes):
        n = 1 << lgn
        for name, w in _profiles(n):
            layout, source = _layout(n, w, check, seed)
            bound = header_bits_bound(layout)
            address = 2 * lgn - 1  # the longest path turns at the root
            measured = check_headers(layout) if source == "layout" else None
            rows.append(
                [
                    n,
                    name,
                    w,
                    2 * lgn,
                    address,
                    bound - address,
                    bound,
                    round(bound / lgn, 3),
                    None if measured is None else measured["messages"],
                    None if measured is None else measured["address_max"],
                    None if measured is None else measured["header_max"],
                    source,
                ]
            )
        progress(f"n={n}")
    return rows


HEADER_COLUMNS = [
    "n",
    "profile",
    "w",
    "2lgn",
    "address_max",
    "decision_max",
    "header_max",
    "header/lgn",
    "decoded",
    "address_seen",
    "header_seen",
    "source",
]


def _h_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_sizes(1, MAX_LG),
        default=lg_sizes(1, MAX_LG)(f"1..{MAX_LG}"),
        metavar="LGN",
        help=f"lg n values, A..B or comma list, 1..{MAX_LG} (default 1..{MAX_LG})",
    )
    p.add_argument(
        "--check",
        type=lg_sizes(1, MAX_BUILT),
        default=[6],
        metavar="LGN",
        help=f"decode every header of every pair up to this lg n, 1..{MAX_BUILT} (default 6; "
        "8 takes a few minutes)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the concentrator graphs")


def _h_run(args, progress) -> Result:
    check = max(args.check)
    rows = header_rows(args.sizes, check, args.seed, progress)
    return Result(
        "leiserson-header",
        {"sizes": args.sizes, "check": check, "seed": args.seed},
        HEADER_COLUMNS,
        rows,
        notes=[
            "paper (section II): at most 2 lg n bits name the destination of any message",
            "address_max: one address bit per node on the longest path (2 lg n - 1 nodes); "
            "decision_max: the concentrator decision bits interleaved with them (section IV)",
            "header_max: fattree.spec.leiserson_frames.header_bits_bound (M bit and data not "
            "counted); source 'shapes': from the cascade shapes, the graphs not built",
            "decoded: headers of every ordered leaf pair and every leaf to/from outside, from "
            "real delivery cycles, decoded node by node to their destination",
        ],
    )


def _h_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    col = {name: i for i, name in enumerate(result.columns)}
    fig, ax = plt.subplots(figsize=(6, 4))
    for profile in sorted({r[col["profile"]] for r in result.rows}):
        rows = [r for r in result.rows if r[col["profile"]] == profile]
        lgn = [math.log2(r[col["n"]]) for r in rows]
        ax.plot(lgn, [r[col["header_max"]] for r in rows], "o-", label=f"header bits, {profile}")
    rows = [r for r in result.rows if r[col["profile"]] == "w=n"]
    lgn = [math.log2(r[col["n"]]) for r in rows]
    ax.plot(lgn, [r[col["address_max"]] for r in rows], "s-", label="address bits (both)")
    ax.plot(lgn, [r[col["2lgn"]] for r in rows], "k:", label="2 lg n (paper)")
    ax.set_xlabel("lg n")
    ax.set_ylabel("bits per message")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


# -- leiserson-cycle-time -----------------------------------------------------------------------


def _ones(bits: int) -> int:
    return (1 << bits) - 1


def worst_cycle(layout: TreeLayout, seed: int, data_bits: int):
    """A delivery cycle that crosses the root: the first cycle Theorem 1 gives a random
    permutation (its root level comes first), under the hardware's capacities. Returns the
    frames ``{(leaf, wire): bits}`` with data all ones (so the last bit out is visible on the
    wire) and the tree model's :class:`Delivery` of them."""
    n = layout.leaves
    rng = random.Random(seed)
    messages = message_set("permutation", n, rng)
    while not any((a ^ b) >> (lg(n) - 1) for a, b in messages):  # none crosses the root
        messages = message_set("permutation", n, rng)
    cycle = schedule_theorem1(n, messages, layout_capacities(layout))[0]
    plan = plan_cycle(layout, messages, cycle)
    frames = {
        (mp.src, mp.hops[0][2]): frame_bits(mp, _ones(data_bits), data_bits) for mp in plan.messages
    }
    model = deliver(layout, frames)
    if model.lost or model.collisions or len(model.arrivals) != len(frames):
        raise RuntimeError(f"model: lost {model.lost}, collisions {model.collisions}")
    return frames, model


def _expected(n: int, model, length: int) -> list[list[int]]:
    expect = [[0] * n for _ in range(length)]
    for a in model.arrivals:
        for k, b in enumerate(a.bits):
            expect[a.latency + k][a.where[1]] |= b << a.wire
    return expect


def measure_cycle_rtl(leaves: int, w: int, frames, model, seed: int = 0) -> int:
    """Drive ``frames`` (all starting with ``start``, cycle 0) into ``leiserson-tree`` of
    ``leaves`` and ``w`` (``start_lead`` 0, graph ``seed``) in amaranth.sim; compare every
    leaf's receive wires and ``root_o`` cycle by cycle with the tree model's ``model``; return
    the cycles from the first bit in (cycle 0) to the last bit out, inclusive. A differing RTL
    raises ``RuntimeError``."""
    from ..checks.experiment_runs import leiserson_tree_trace

    n = leaves
    length = max(a.latency + len(a.bits) for a in model.arrivals) + 4
    expect = _expected(n, model, length)
    seen = leiserson_tree_trace(leaves, w, seed, frames, length)
    for t in range(length):
        if seen[t] != expect[t] + [0]:
            raise RuntimeError(
                f"RTL of {leaves} leaves, w = {w} differs from the tree model in cycle {t}: "
                f"recv/root_o {seen[t]}, model {expect[t] + [0]}"
            )
    return 1 + max(t for t in range(length) if any(seen[t]))


def cycle_time_rows(
    sizes, data_bits: int, built: int, rtl: bool, seed: int = 0, progress=lambda _s: None
) -> list[list]:
    rows = []
    for lgn in counted(progress, sizes):
        n = 1 << lgn
        for name, w in _profiles(n):
            start = time.process_time()
            layout, source = _layout(n, w, built, seed)
            latency = latency_bound(layout)
            t_model = t_rtl = messages = None
            if source == "layout":
                frames, model = worst_cycle(layout, seed + lgn, data_bits)
                messages = len(frames)
                t_model = max(a.latency + len(a.bits) for a in model.arrivals)
                if rtl and lgn in RTL_SIZES:
                    t_rtl = measure_cycle_rtl(n, w, frames, model, seed)
            rows.append(
                [
                    n,
                    name,
                    w,
                    2 * lgn - 1,
                    header_bits_bound(layout),
                    latency,
                    latency + data_bits + 1,
                    messages,
                    t_model,
                    t_rtl,
                    cycle_length(layout, data_bits),
                    source,
                ]
            )
            progress(
                f"n={n} {name}: bound {latency + data_bits + 1}, model {t_model}, RTL {t_rtl} "
                f"({time.process_time() - start:.1f} s CPU)"
            )
    return rows


CYCLE_COLUMNS = [
    "n",
    "profile",
    "w",
    "path_nodes",
    "header_max",
    "latency_max",
    "T_bound",
    "messages",
    "T_model",
    "T_rtl",
    "cycle_length",
    "source",
]


def fit_lg(rows, column: str, min_lg: int = 3) -> dict[str, dict[str, float]]:
    """Least-squares ``value = a + b lg n`` per profile over the rows with lg n >= ``min_lg``,
    with the largest residual."""
    col = {name: i for i, name in enumerate(CYCLE_COLUMNS)}
    out = {}
    for profile in sorted({r[col["profile"]] for r in rows}):
        pts = [
            (lg(r[col["n"]]), r[col[column]])
            for r in rows
            if r[col["profile"]] == profile and lg(r[col["n"]]) >= min_lg
        ]
        if len(pts) < 2:
            continue
        x, y = np.array(pts, dtype=float).T
        b, a = np.polyfit(x, y, 1)
        out[profile] = {
            "a": round(float(a), 3),
            "b": round(float(b), 3),
            "max_residual": round(float(np.abs(y - (a + b * x)).max()), 3),
            "points": len(pts),
        }
    return out


def _int_in(lo: int, hi: int, what: str):
    """An argparse type for an integer in ``lo .. hi``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = lo - 1
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected {what} {lo}..{hi}, not {text!r}")
        return value

    return parse


def _t_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_sizes(1, MAX_LG),
        default=lg_sizes(1, MAX_LG)(f"1..{MAX_LG}"),
        metavar="LGN",
        help=f"lg n values, A..B or comma list, 1..{MAX_LG} (default 1..{MAX_LG})",
    )
    p.add_argument(
        "--data-bits",
        type=_int_in(1, 64, "data bits"),
        default=8,
        metavar="D",
        help="data bits per message, 1..64 (default 8)",
    )
    p.add_argument(
        "--built",
        type=lg_sizes(1, MAX_BUILT),
        default=[6],
        metavar="LGN",
        help=f"build the layout and run a delivery cycle through the tree model up to this "
        f"lg n, 1..{MAX_BUILT} (default 6); above, the bounds come from the cascade shapes",
    )
    p.add_argument(
        "--rtl",
        action="store_true",
        help="also run that delivery cycle on the RTL (leiserson-tree, amaranth.sim) at 8, 16, "
        "32 and 64 leaves of --sizes, both profiles (about 2 minutes)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the graphs and the traffic")


def _t_run(args, progress) -> Result:
    data_bits, built = args.data_bits, max(args.built)
    if args.rtl and built < max((s for s in args.sizes if s in RTL_SIZES), default=0):
        raise ValueError(f"--rtl needs --built of at least the RTL sizes, not {built}")
    rows = cycle_time_rows(args.sizes, data_bits, built, args.rtl, args.seed, progress)
    fits = {"T_bound": fit_lg(rows, "T_bound"), "cycle_length": fit_lg(rows, "cycle_length")}
    notes = [
        "paper (section II): a delivery cycle in a fat-tree of n processors takes O(lg n) time",
        "T = cycles from start (every M bit in, cycle 0) to the last data bit out, inclusive; "
        "T_bound = latency_max + data_bits + 1 (the longest path: every path over the root)",
        "T_model: the first Theorem 1 cycle of a random permutation (it crosses the root), "
        "data all ones, through the tree model; T_rtl: the same frames on the RTL, "
        "compared with the model cycle by cycle",
        "cycle_length: what leiserson-stream spends per delivery cycle (latency_max + 1 + "
        "header_max + data_bits)",
    ]
    for column, per_profile in fits.items():
        for profile, f in per_profile.items():
            notes.append(
                f"fit {column} ({profile}, lg n >= 3): {f['a']} + {f['b']} lg n, "
                f"max residual {f['max_residual']}"
            )
    params = {"sizes": args.sizes, "data_bits": data_bits, "built": built, "seed": args.seed}
    if args.rtl:
        params["rtl"] = True
    return Result("leiserson-cycle-time", params, CYCLE_COLUMNS, rows, notes, {"fits": fits})


def _t_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    col = {name: i for i, name in enumerate(result.columns)}
    fig, ax = plt.subplots(figsize=(6, 4))
    for profile in sorted({r[col["profile"]] for r in result.rows}):
        rows = [r for r in result.rows if r[col["profile"]] == profile]
        x = [math.log2(r[col["n"]]) for r in rows]
        ax.plot(x, [r[col["T_bound"]] for r in rows], "-", label=f"T bound, {profile}")
        ax.plot(x, [r[col["cycle_length"]] for r in rows], ":", label=f"stream cycle, {profile}")
        for key, marker in (("T_model", "o"), ("T_rtl", "x")):
            pts = [(math.log2(r[col["n"]]), r[col[key]]) for r in rows if r[col[key]]]
            if pts:
                ax.scatter(*zip(*pts, strict=True), marker=marker, label=f"{key}, {profile}")
    ax.set_xlabel("lg n")
    ax.set_ylabel("cycles per delivery cycle")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


# -- leiserson-corollary2 -----------------------------------------------------------------------

COR2_PROFILES = ("floor", "flat")
COR2_PATTERNS = ("random", "permutation", "rounding", "excess")
#: The largest a accepted (the bound 2a/(a-1) is already 2.13 there).
MAX_A = 16.0
#: Bounds of --trials and --per-leaf: a set of 64 n messages at 2^16 leaves is 4 M messages.
MAX_TRIALS = 10_000
MAX_PER_LEAF = 64


def corollary2_capacities(n: int, profile: str, a: float) -> tuple[int, ...]:
    """Capacities with every channel at least a lg n: ``floor`` raises the universal w = n
    profile to ceil(a lg n), ``flat`` has ceil(a lg n) at every level."""
    low = math.ceil(a * lg(n))
    if profile == "flat":
        return (low,) * (lg(n) + 1)
    if profile != "floor":
        raise ValueError(f"profile must be one of {', '.join(COR2_PROFILES)}, not {profile!r}")
    return tuple(max(c, low) for c in universal_capacities(n, n))


def _balanced(rng, leaves: list[int], count: int) -> list[int]:
    """``count`` destinations spread evenly over ``leaves`` (each at most one more than any
    other), in a random order."""
    order = list(leaves)
    rng.shuffle(order)
    out = [order[i % len(order)] for i in range(count)]
    rng.shuffle(out)
    return out


def corollary2_sets(
    pattern: str, n: int, caps: tuple[int, ...], rng, per_leaf: int, trial: int
) -> list[tuple[int, int]]:
    """One message set of ``pattern`` on ``n`` leaves with capacities ``caps``:

    * ``random``: k n random messages, k drawn from 1..``per_leaf``;
    * ``permutation``: a random permutation, fixed points left out;
    * ``rounding``: a random leaf s sends P (cap - lg n) + 1 messages, P = 2^(trial mod 5),
      spread evenly over the other leaves: lambda' = P + 1/(cap - lg n) on s's channel, just
      above a power of two, so d = 2P while lambda = (P (cap - lg n) + 1)/cap: d/lambda
      approaches 2 cap/(cap - lg n), which is 4 at cap = 2 lg n;
    * ``excess``: a random leaf s sends (cap' - 1) P + 1 messages over the root and one
      message to each lower level's other subtree (cap' = cap - lg n, P the least power of two
      >= lg n): each of the lg n splits through s's up channel leaves one message over in
      part 0, so delivery cycle 0 carries cap' + lg n - 1 messages there, the most the
      proof's error allows (lg n - 1 over cap', within cap).
    """
    levels = lg(n)
    if pattern == "random":
        return random_messages(n, rng.randint(1, per_leaf) * n, rng)
    if pattern == "permutation":
        return message_set("permutation", n, rng)
    source = rng.randrange(n)
    gap = caps[levels] - levels  # cap' of s's up channel
    if pattern == "rounding":
        count = (1 << (trial % 5)) * gap + 1
        others = [j for j in range(n) if j != source]
        return [(source, j) for j in _balanced(rng, others, count)]
    if pattern != "excess":
        raise ValueError(f"pattern must be one of {', '.join(COR2_PATTERNS)}, not {pattern!r}")
    parts = 1 << (levels - 1).bit_length()  # least power of two >= lg n
    messages = []
    for h in range(1, levels + 1):  # the ancestor h levels above s; its other subtree
        subtree = [source ^ (1 << (h - 1)) ^ r for r in range(1 << (h - 1))]
        count = (gap - 1) * parts + 1 if h == levels else 1
        messages += [(source, j) for j in _balanced(rng, subtree, count)]
    rng.shuffle(messages)
    return messages


def cycle_loads(n: int, messages, cycles) -> np.ndarray:
    """``(d, channels)`` loads: row t is load(M_t, c) for every channel id."""
    chans = channels_of(n, check_messages(n, messages))
    index = np.empty(len(messages), dtype=np.int64)
    for t, cycle in enumerate(cycles):
        index[np.asarray(cycle, dtype=np.int64)] = t
    width = 4 * n
    flat = (index[:, None] * width + chans)[chans >= 0]
    return np.bincount(flat, minlength=len(cycles) * width).reshape(len(cycles), width)


def corollary2_point(n: int, messages, caps: Capacities) -> dict:
    """Corollary 2's schedule of ``messages``, checked (every message once, no cycle above the
    real capacity), with lambda, lambda' (against cap - lg n), d, the most any cycle puts on a
    channel over cap - lg n (``excess``; the proof allows up to lg n), and Theorem 1's d."""
    gap = lg(n)
    cycles = schedule_corollary2(n, messages, caps)
    if sorted(i for c in cycles for i in c) != list(range(len(messages))):
        raise RuntimeError("Corollary 2 schedule does not deliver every message exactly once")
    loads = cycle_loads(n, messages, cycles)
    cap = caps.array()
    used = loads > 0
    if (loads > cap).any():
        raise RuntimeError("Corollary 2 schedule has a delivery cycle above the capacities")
    excess = int((loads - (cap - gap))[used].max()) if used.any() else None
    return {
        "lambda": load_factor(n, messages, caps),
        "lambda'": load_factor(n, messages, caps.minus(gap)),
        "d": len(cycles),
        "excess": excess,
        "d_thm1": len(schedule_theorem1(n, messages, caps)),
    }


COR2_COLUMNS = [
    "n",
    "profile",
    "a",
    "cap_min",
    "pattern",
    "sets",
    "lambda_min",
    "lambda_max",
    "d_min",
    "d_max",
    "d/lambda_max",
    "bound",
    "over_bound",
    "tiny_lambda",
    "excess_max",
    "lgn",
    "d_thm1/lambda_max",
    "cpu_s",
]


SET_COLUMNS = ["n", "profile", "a", "pattern", "lambda", "d", "excess"]


def _a_list(text: str) -> list[float]:
    """A comma list of a values, each a number with 1 < a <= :data:`MAX_A`."""
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or any(not (1 < v <= MAX_A) for v in values):  # also refuses nan
        raise argparse.ArgumentTypeError(
            f"expected a comma list of numbers a with 1 < a <= {MAX_A:g}, not {text!r}"
        )
    return values


def _choices(kind: str, known: tuple[str, ...]):
    def parse(text: str) -> list[str]:
        values = [v.strip() for v in text.split(",") if v.strip()]
        if not values or any(v not in known for v in values):
            raise argparse.ArgumentTypeError(
                f"expected a comma list of {kind} ({', '.join(known)}), not {text!r}"
            )
        return values

    return parse


def _c_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_sizes(3, 16),
        default=lg_sizes(3, 16)("3..8"),
        metavar="LGN",
        help="lg n values, A..B or comma list, 3..16 (default 3..8; 3..14 takes a few minutes)",
    )
    p.add_argument(
        "--a",
        type=_a_list,
        default=[1.5, 2.0, 3.0],
        metavar="LIST",
        help=f"values of a (every capacity >= a lg n), 1 < a <= {MAX_A:g} (default 1.5,2,3)",
    )
    p.add_argument(
        "--profiles",
        type=_choices("profiles", COR2_PROFILES),
        default=list(COR2_PROFILES),
        help="floor (universal w = n raised to ceil(a lg n)) and/or flat (ceil(a lg n) "
        "everywhere) (default both)",
    )
    p.add_argument(
        "--patterns",
        type=_choices("patterns", COR2_PATTERNS),
        default=list(COR2_PATTERNS),
        help=f"comma list of {', '.join(COR2_PATTERNS)} (default all)",
    )
    p.add_argument(
        "--trials",
        type=_int_in(1, MAX_TRIALS, "trials"),
        default=10,
        help=f"message sets per point and pattern, 1..{MAX_TRIALS} (default 10)",
    )
    p.add_argument(
        "--per-leaf",
        type=_int_in(1, MAX_PER_LEAF, "messages per leaf"),
        default=8,
        help=f"random sets have k n messages, k drawn from 1..this, at most {MAX_PER_LEAF} "
        "(default 8)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def corollary2_rows(args, progress=lambda _s: None) -> tuple[list[list], list[list]]:
    rng = random.Random(args.seed)
    rows, sets = [], []
    points = [(lgn, p, a) for lgn in args.sizes for p in args.profiles for a in args.a]
    for lgn, profile, a in counted(progress, points):
        n = 1 << lgn
        profile_caps = corollary2_capacities(n, profile, a)
        caps = ideal_capacities(n, profile_caps)
        bound = 2 * a / (a - 1)
        for pattern in args.patterns:
            start = time.process_time()
            found = []
            for trial in range(args.trials):
                messages = corollary2_sets(pattern, n, profile_caps, rng, args.per_leaf, trial)
                if not messages:
                    continue  # an identity permutation: nothing to deliver
                point = corollary2_point(n, messages, caps)
                found.append(point)
                lam = point["lambda"]
                sets.append([n, profile, a, pattern, float(lam), point["d"], point["excess"]])
            lams = [p["lambda"] for p in found]
            over = [p for p in found if p["d"] > bound * p["lambda"]]
            rows.append(
                [
                    n,
                    profile,
                    a,
                    min(profile_caps),
                    pattern,
                    len(found),
                    float(min(lams)),
                    float(max(lams)),
                    min(p["d"] for p in found),
                    max(p["d"] for p in found),
                    round(max(float(p["d"] / p["lambda"]) for p in found), 4),
                    round(bound, 4),
                    sum(bound * p["lambda"] >= 1 for p in over),
                    len(over) - sum(bound * p["lambda"] >= 1 for p in over),
                    max(p["excess"] for p in found),
                    lgn,
                    round(max(float(p["d_thm1"] / p["lambda"]) for p in found), 4),
                    round(time.process_time() - start, 2),
                ]
            )
            progress(
                f"n={n} {profile} a={a:g} {pattern}: d/lambda <= {rows[-1][10]} "
                f"(bound {bound:.3g}), excess {rows[-1][14]} (lg n {lgn})"
            )
    return rows, sets


def _c_run(args, progress) -> Result:
    rows, sets = corollary2_rows(args, progress)
    return Result(
        "leiserson-corollary2",
        {
            "sizes": args.sizes,
            "a": args.a,
            "profiles": args.profiles,
            "patterns": args.patterns,
            "trials": args.trials,
            "per_leaf": args.per_leaf,
            "seed": args.seed,
        },
        COR2_COLUMNS,
        rows,
        notes=[
            "paper (Corollary 2): cap >= a lg n everywhere gives d = O(a/(a-1) lambda); the "
            "proof gives d <= 2 lambda' <= 2a/(a-1) lambda, 'not worse than 4 lambda' at a = 2",
            "bound = 2a/(a-1); over_bound: sets with d > bound * lambda although bound * "
            "lambda >= 1 (a violation); tiny_lambda: d = 1 > bound * lambda (no schedule has "
            "fewer than one cycle)",
            "excess_max: max over cycles and channels of load - (cap - lg n); the proof allows "
            "up to lg n, the real capacity is never exceeded (checked)",
            "d_thm1: Theorem 1 on the same set, for comparison; ideal concentrators",
        ],
        extra={
            "set_columns": ["n", "profile", "a", "pattern", "lambda", "d", "excess"],
            "sets": sets,
        },
    )


def _c_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    sets = result.extra["sets"]
    for a in sorted({s[2] for s in sets}):
        pts = [(s[4], s[5]) for s in sets if s[2] == a]
        ax.scatter(*zip(*pts, strict=True), s=6, label=f"a = {a:g}")
        low, top = min(p[0] for p in pts), max(p[0] for p in pts)
        ratio = 2 * a / (a - 1)
        ax.plot([low, top], [ratio * low, ratio * top], ":", label=f"d = {ratio:.3g} lambda")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("load factor lambda")
    ax.set_ylabel("delivery cycles d (Corollary 2)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


EXPERIMENTS = [
    Experiment(
        "leiserson-header",
        "Leiserson section II: address bits per message (at most 2 lg n) and header length",
        _h_args,
        _h_run,
        _h_plot,
    ),
    Experiment(
        "leiserson-cycle-time",
        "Leiserson section II: the O(lg n) time of one delivery cycle, bounds, model and RTL",
        _t_args,
        _t_run,
        _t_plot,
    ),
    Experiment(
        "leiserson-corollary2",
        "Leiserson Corollary 2: cap >= a lg n gives d <= 2a/(a-1) lambda, across n",
        _c_args,
        _c_run,
        _c_plot,
    ),
]
