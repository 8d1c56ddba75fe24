"""Leiserson (1985), three claims checked across n (sim/experiments/leiserson_claims.py):
header length (section II), the O(lg n) delivery cycle (section II) and Corollary 2."""

import json
import math
import random
from fractions import Fraction

import pytest

from fattree.scripts.main import main
from fattree.sim.experiments.leiserson_claims import (
    COR2_PATTERNS,
    COR2_PROFILES,
    CYCLE_COLUMNS,
    HEADER_COLUMNS,
    check_headers,
    corollary2_capacities,
    corollary2_point,
    corollary2_rows,
    corollary2_sets,
    cycle_time_rows,
    decode_header,
    fit_lg,
    header_rows,
    measure_cycle_rtl,
    shape_layout,
    worst_cycle,
)
from fattree.sim.models.leiserson_schedule import (
    OUTSIDE,
    frame_bits,
    ideal_capacities,
    plan_cycle,
)
from fattree.sim.models.leiserson_tree import Arrival, Delivery, deliver
from fattree.spec.capacities import TreeLayout, ceil_cbrt
from fattree.spec.leiserson_frames import header_bits_bound, latency_bound

MAX_LG = 20


def profiles(n):
    return sorted({n, ceil_cbrt(n * n)}, reverse=True)


# -- (a) header length ------------------------------------------------------------------------


@pytest.mark.parametrize("lgn", range(1, 7))
def test_shapes_give_the_built_decision_bits(lgn):
    # Beyond the built sizes the bounds come from the cascade shapes: they must be the graphs'.
    n = 1 << lgn
    for w in profiles(n):
        built, shapes = TreeLayout.universal(n, w), shape_layout(n, w)
        for level in range(lgn):
            for port in "ULR":
                want = tuple(built.cascade(level, port).decision_bits)
                assert tuple(shapes.cascade(level, port).decision_bits) == want, (n, w, port)
        assert header_bits_bound(shapes) == header_bits_bound(built)
        assert latency_bound(shapes) == latency_bound(built)


@pytest.mark.slow
@pytest.mark.parametrize("lgn", [7, 8])
def test_shapes_give_the_built_decision_bits_up_to_256_leaves(lgn):
    test_shapes_give_the_built_decision_bits(lgn)


@pytest.mark.parametrize("lgn", [*range(1, 6), pytest.param(6, marks=pytest.mark.slow)])
def test_every_header_names_its_destination_in_at_most_2_lg_n_address_bits(lgn):
    # Every ordered pair and every leaf to and from outside, from real delivery cycles.
    n = 1 << lgn
    for w in profiles(n):
        layout = TreeLayout.universal(n, w)
        seen = check_headers(layout)
        assert seen["messages"] == n * (n - 1) + 2 * n
        assert seen["address_max"] == 2 * lgn - 1 <= 2 * lgn  # the paper's 2 lg n
        assert seen["header_max"] == header_bits_bound(layout)  # the bound is reached


@pytest.mark.slow
@pytest.mark.parametrize("lgn", [7, 8])
def test_every_header_up_to_256_leaves(lgn):
    # 256 is the largest leiserson-tree the command line builds (fattree/designs.py).
    test_every_header_names_its_destination_in_at_most_2_lg_n_address_bits(lgn)


def test_the_decoder_agrees_with_the_tree_model():
    # decode_header and the tree model read headers separately: same destination, and the
    # model's arrival carries the M bit and the data only.
    layout = TreeLayout.universal(16)
    messages = [(s, d) for s in range(16) for d in range(16) if s != d]
    messages += [(s, OUTSIDE) for s in range(16)] + [(OUTSIDE, d) for d in range(16)]
    for i, (src, dst) in enumerate(messages):
        mp = plan_cycle(layout, messages, [i]).messages[0]
        address, decision, end = decode_header(layout, src, mp.header)
        assert address + decision == len(mp.header)
        model = deliver(layout, {(src, mp.hops[0][2]): frame_bits(mp, 0xA5, 8)})
        (arrival,) = model.arrivals
        assert end == arrival.where == (("root", 0) if dst == OUTSIDE else ("leaf", dst))
        assert arrival.bits == (1, 1, 0, 1, 0, 0, 1, 0, 1)


def test_a_wrong_header_is_refused():
    layout = TreeLayout.universal(8)
    mp = plan_cycle(layout, [(0, 7)], [0]).messages[0]
    with pytest.raises(ValueError, match="bits left"):
        decode_header(layout, 0, mp.header + [0])
    with pytest.raises(ValueError, match="ends"):
        decode_header(layout, 0, mp.header[:-1])
    # The first address bit flipped: across at leaf 0's parent, to leaf 1, bits left over.
    flipped = [1 - mp.header[0]] + mp.header[1:]
    with pytest.raises(ValueError, match="bits left"):
        decode_header(layout, 0, flipped)
    node_bits = 1 + sum(layout.cascade(2, "R").decision_bits)
    assert decode_header(layout, 0, flipped[:node_bits]) == (1, node_bits - 1, ("leaf", 1))


def test_header_rows_to_2_20():
    rows = header_rows(range(1, MAX_LG + 1), check=3)
    col = {c: i for i, c in enumerate(HEADER_COLUMNS)}
    assert {r[col["n"]] for r in rows} == {1 << k for k in range(1, MAX_LG + 1)}
    for r in rows:
        lgn = int(math.log2(r[col["n"]]))
        assert r[col["address_max"]] == 2 * lgn - 1 < r[col["2lgn"]] == 2 * lgn
        # Section IV's switches: a stage's edge index takes at most ceil(lg 6) = 3 bits and a
        # cascade of ratio <= 3 has at most 3 stages (each cuts to 2/3): <= 9 decision bits
        # a node, so O(lg n) bits in all with the constant 10 per address bit.
        assert r[col["decision_max"]] <= 9 * r[col["address_max"]]
        assert r[col["header_max"]] <= 10 * (2 * lgn - 1)
        if lgn <= 3:
            assert r[col["header_seen"]] == r[col["header_max"]]


# -- (b) the O(lg n) delivery cycle -----------------------------------------------------------


def test_cycle_time_bounds_to_2_20_are_linear_in_lg_n():
    rows = cycle_time_rows(range(1, MAX_LG + 1), data_bits=8, built=4, rtl=False)
    col = {c: i for i, c in enumerate(CYCLE_COLUMNS)}
    for r in rows:
        lgn = int(math.log2(r[col["n"]]))
        assert r[col["T_bound"]] == r[col["latency_max"]] + 8 + 1
        # A node costs 2 cycles (selector) plus b + 1 per stage: at most 2 + 3 * 4 = 14.
        assert r[col["latency_max"]] <= 14 * (2 * lgn - 1)
        if r[col["source"]] == "layout":
            # The worst cycle crosses the root; every path over the root is the longest.
            assert r[col["T_model"]] == r[col["T_bound"]]
    # w = n: each level adds an identity U cascade and the same three-stage L/R cascade, so
    # the time grows by exactly the same number of cycles per doubling of n.
    wn = [r[col["T_bound"]] for r in rows if r[col["profile"]] == "w=n"]
    steps = {b - a for a, b in zip(wn[4:], wn[5:], strict=False)}
    assert len(steps) == 1
    fits = fit_lg(rows, "T_bound")
    assert fits["w=n"]["max_residual"] == 0 and fits["w=n"]["b"] == steps.pop()
    # w = n^(2/3): linear within a few cycles (ceilings), slope at most 14 * 2.
    assert fits["w=n^(2/3)"]["max_residual"] < 8 and fits["w=n^(2/3)"]["b"] <= 28


@pytest.mark.parametrize(
    ("leaves", "w"), [(8, 8), (8, 4), pytest.param(16, 16, marks=pytest.mark.slow)]
)
def test_rtl_delivery_cycle_time_is_the_model_s(leaves, w):
    # First bit in to last bit out on the RTL, its trace equal to the model's cycle by cycle.
    layout = TreeLayout.universal(leaves, w)
    frames, model = worst_cycle(layout, seed=leaves, data_bits=8)
    assert measure_cycle_rtl(leaves, w, frames, model) == latency_bound(layout) + 8 + 1


@pytest.mark.slow
@pytest.mark.parametrize(("leaves", "w"), [(16, 7), (32, 32), (32, 11), (64, 64), (64, 16)])
def test_rtl_delivery_cycle_time_to_64_leaves(leaves, w):
    test_rtl_delivery_cycle_time_is_the_model_s(leaves, w)


def test_rtl_measurement_fails_on_a_wrong_model():
    # The RTL's trace is compared with the model's: a model one cycle late is caught.
    layout = TreeLayout.universal(8)
    frames, model = worst_cycle(layout, seed=3, data_bits=4)
    late = Delivery(
        [Arrival(a.src, a.src_wire, a.where, a.wire, a.latency + 1, a.bits) for a in model.arrivals]
    )
    with pytest.raises(RuntimeError, match="differs from the tree model"):
        measure_cycle_rtl(8, 8, frames, late)


# -- (c) Corollary 2 ----------------------------------------------------------------------------


def _path(n, src, dst):
    """Channels of a message by walking the heap: (node, 'up') and (node, 'down')."""
    a, b = n + src, n + dst
    up, down = [], []
    while a != b:
        up.append((a, "up"))
        down.append((b, "down"))
        a, b = a >> 1, b >> 1
    return up + down


def _loads(n, messages):
    out = {}
    for src, dst in messages:
        for ch in _path(n, src, dst):
            out[ch] = out.get(ch, 0) + 1
    return out


def _cap(n, profile, node):
    return profile[node.bit_length() - 1]


class Args:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def test_corollary2_point_against_a_plain_count():
    rng = random.Random(5)
    for n, prof_name, a in [(16, "flat", 2.0), (32, "floor", 1.5), (64, "floor", 3.0)]:
        profile = corollary2_capacities(n, prof_name, a)
        assert min(profile) >= a * math.log2(n)
        caps = ideal_capacities(n, profile)
        for pattern in COR2_PATTERNS:
            messages = corollary2_sets(pattern, n, profile, rng, 4, 3)
            point = corollary2_point(n, messages, caps)
            load = _loads(n, messages)
            lam = max(Fraction(v, _cap(n, profile, c[0])) for c, v in load.items())
            assert point["lambda"] == lam
            gap = int(math.log2(n))
            lam2 = max(Fraction(v, _cap(n, profile, c[0]) - gap) for c, v in load.items())
            assert point["lambda'"] == lam2
            # The proof: d <= 2 lambda' (a power of two at least lambda'), at least 1.
            assert point["d"] <= max(1, 2 * lam2)


def test_corollary2_excess_is_lg_n_minus_1_at_most():
    # The adversarial set drives the proof's rounding error to its largest value, lg n - 1
    # over cap - lg n in one channel (the paper: "as much as lg n"), within the capacity.
    rng = random.Random(2)
    for lgn in (3, 4, 5, 6, 7):
        n = 1 << lgn
        for a in (1.5, 2.0, 3.0):
            profile = corollary2_capacities(n, "flat", a)
            caps = ideal_capacities(n, profile)
            messages = corollary2_sets("excess", n, profile, rng, 1, 0)
            point = corollary2_point(n, messages, caps)
            assert point["excess"] == lgn - 1, (n, a)


def test_corollary2_rounding_approaches_2a_over_a_minus_1():
    # lambda' just above a power of two P on one channel: d = 2P, lambda = (P cap' + 1)/cap.
    rng = random.Random(4)
    n, a = 64, 2.0
    profile = corollary2_capacities(n, "floor", a)
    cap, gap = profile[-1], 6
    caps = ideal_capacities(n, profile)
    for trial in range(5):
        P = 1 << trial
        point = corollary2_point(n, corollary2_sets("rounding", n, profile, rng, 1, trial), caps)
        assert point["lambda'"] == P + Fraction(1, cap - gap)
        assert point["lambda"] == Fraction(P * (cap - gap) + 1, cap)
        assert point["d"] == 2 * P
    assert 3.95 < 2 * P / float(point["lambda"]) < 4  # "not worse than 4 lambda", tight


def test_corollary2_rows_hold_the_paper_s_bound():
    args = Args(
        sizes=[3, 4, 5, 6],
        a=[1.5, 2.0, 3.0],
        profiles=list(COR2_PROFILES),
        patterns=list(COR2_PATTERNS),
        trials=6,
        per_leaf=6,
        seed=3,
    )
    rows, sets = corollary2_rows(args)
    from fattree.sim.experiments.leiserson_claims import COR2_COLUMNS

    col = {c: i for i, c in enumerate(COR2_COLUMNS)}
    assert len(rows) == 4 * 3 * 2 * 4
    for r in rows:
        assert r[col["over_bound"]] == 0
        assert r[col["excess_max"]] <= r[col["lgn"]] - 1
        if r[col["pattern"]] == "excess":
            assert r[col["excess_max"]] == r[col["lgn"]] - 1
    # "d <= 4 lambda" at a = 2, literally, wherever lambda >= 1/4; below, d = 1.
    for n, _profile, a, _pattern, lam, d, _excess in sets:
        if a == 2.0:
            assert d <= 4 * lam or (d == 1 and lam < 0.25), (n, lam, d)


def test_corollary2_capacities_and_sets_refuse_bad_names():
    with pytest.raises(ValueError, match="profile"):
        corollary2_capacities(8, "tall", 2.0)
    with pytest.raises(ValueError, match="pattern"):
        corollary2_sets("hot", 8, (6,) * 4, random.Random(0), 1, 0)


# -- the command line -----------------------------------------------------------------------------


def test_experiments_from_the_command_line(capsys, tmp_path):
    for argv in (
        ["leiserson-header", "--sizes", "1..5", "--check", "3"],
        ["leiserson-cycle-time", "--sizes", "2..8", "--built", "3", "--data-bits", "4"],
        ["leiserson-corollary2", "--sizes", "3,4", "--trials", "2", "--a", "2"],
    ):
        plot = tmp_path / f"{argv[0]}.png"
        assert main(["experiment", *argv, "--json", "--plot", str(plot)]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["experiment"] == argv[0] and data["rows"]
        assert plot.stat().st_size > 0


@pytest.mark.parametrize(
    "argv",
    [
        ["leiserson-corollary2", "--a", "1"],
        ["leiserson-corollary2", "--a", "nan"],
        ["leiserson-corollary2", "--profiles", "tall"],
        ["leiserson-corollary2", "--sizes", "2"],
        ["leiserson-cycle-time", "--data-bits", "0"],
        ["leiserson-cycle-time", "--sizes", "21"],
        ["leiserson-cycle-time", "--rtl", "--sizes", "6", "--built", "5"],
        ["leiserson-header", "--check", "9"],
    ],
)
def test_bad_options_are_one_line(capsys, argv):
    code = None
    try:
        code = main(["experiment", *argv])
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) >= 1 and "error:" in err[-1]
