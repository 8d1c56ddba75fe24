"""Off-line schedules (Theorem 1, Corollary 2), switch settings and headers."""

import random
from fractions import Fraction

import numpy as np
import pytest

from fattree.sim.models.leiserson_schedule import (
    check_messages,
    frame_bits,
    ideal_capacities,
    is_one_cycle,
    layout_capacities,
    load_factor,
    loads,
    message_set,
    plan_cycle,
    random_messages,
    schedule_corollary2,
    schedule_theorem1,
    split_matching_tracing,
    theorem1_bound,
)
from fattree.sim.models.leiserson_tree import deliver
from fattree.spec.bits import lg
from fattree.spec.capacities import TreeLayout, universal_capacities


def test_loads_and_load_factor_by_hand():
    # 4 leaves, capacities (root, level 1, leaves) = (2, 2, 1).
    caps = ideal_capacities(4, (2, 2, 1))
    messages = [(0, 1), (0, 2), (0, 3), (1, 3)]
    load = loads(4, messages)
    n = 4
    assert load[n + 0] == 3  # leaf 0's up channel: three messages
    assert load[2] == 3  # up from node 2 (leaves 0,1) to the root: (0,2), (0,3), (1,3)
    assert load[2 * n + 3] == 3  # down into node 3
    assert load[2 * n + n + 3] == 2  # down into leaf 3
    assert load_factor(4, messages, caps) == Fraction(3, 1)
    assert not is_one_cycle(4, messages, caps)
    assert is_one_cycle(4, [(0, 1), (1, 0), (2, 3)], caps)


def test_message_errors():
    with pytest.raises(ValueError, match=r"^message 1 goes from leaf 2 to itself; it never"):
        check_messages(4, [(0, 1), (2, 2)])
    with pytest.raises(ValueError, match=r"^message endpoints must be leaves 0..3$"):
        check_messages(4, [(0, 4)])


@pytest.mark.parametrize("seed", range(5))
def test_split_halves_every_channel(seed):
    rng = random.Random(seed)
    n = 32
    # Left-to-right through the root: sources in 0..15, destinations in 16..31.
    messages = [(rng.randrange(16), 16 + rng.randrange(16)) for _ in range(rng.randint(2, 90))]
    array = np.array(messages)
    a, b = split_matching_tracing(n, array, list(range(len(messages))))
    assert sorted(a + b) == list(range(len(messages)))
    whole = loads(n, messages)
    half_a, half_b = loads(n, [messages[i] for i in a]), loads(n, [messages[i] for i in b])
    assert (half_a <= -(-whole // 2)).all() and (half_b <= -(-whole // 2)).all()


def cases():
    rng = random.Random(11)
    for n in (8, 16, 64):
        lo = next(w for w in range(1, n + 1) if w**3 >= n * n)
        for w in (n, lo):
            caps = ideal_capacities(n, universal_capacities(n, w))
            yield f"random-{n}-{w}", n, caps, random_messages(n, 3 * n, rng)
            yield f"perm-{n}-{w}", n, caps, message_set("permutation", n, rng)
            yield f"bitrev-{n}-{w}", n, caps, message_set("bit-reversal", n, None)


@pytest.mark.parametrize(("name", "n", "caps", "messages"), list(cases()), ids=lambda x: "")
def test_theorem1(name, n, caps, messages):
    cycles = schedule_theorem1(n, messages, caps)
    assert sorted(i for c in cycles for i in c) == list(range(len(messages)))
    for cycle in cycles:
        assert is_one_cycle(n, [messages[i] for i in cycle], caps)
    lam = load_factor(n, messages, caps)
    assert len(cycles) >= lam  # the lower bound
    assert len(cycles) <= theorem1_bound(n, messages, caps)
    assert len(cycles) <= lg(n) * max(1, 2 * lam)


@pytest.mark.parametrize("n", [8, 32])
def test_corollary2(n):
    rng = random.Random(n)
    caps = ideal_capacities(n, [c + 2 * lg(n) for c in universal_capacities(n)])
    messages = random_messages(n, 8 * n, rng)
    cycles = schedule_corollary2(n, messages, caps)
    assert sorted(i for c in cycles for i in c) == list(range(len(messages)))
    for cycle in cycles:
        assert is_one_cycle(n, [messages[i] for i in cycle], caps)
    lam_prime = load_factor(n, messages, caps.minus(lg(n)))
    assert len(cycles) <= max(1, 2 * lam_prime)
    with pytest.raises(ValueError, match=r"^Corollary 2 needs every capacity above lg n = 3; "):
        schedule_corollary2(8, messages[:3], ideal_capacities(8, universal_capacities(8)))


@pytest.mark.parametrize(("leaves", "w"), [(8, 8), (8, 4), (16, 16), (16, 7)])
def test_hardware_schedule_headers_deliver(leaves, w):
    # Schedule under the alpha-derated capacities of the real switches, set the switches,
    # write headers, and let the tree model read the headers back: every message arrives at
    # its destination exactly once, with its data, and no two messages share a vertex.
    layout = TreeLayout.universal(leaves, w)
    caps = layout_capacities(layout)
    rng = random.Random(leaves * w)
    messages = random_messages(leaves, 3 * leaves, rng) + message_set("permutation", leaves, rng)
    cycles = schedule_theorem1(leaves, messages, caps)
    assert load_factor(leaves, messages, caps) > 1
    seen = []
    for cycle in cycles:
        plan = plan_cycle(layout, messages, cycle)
        frames, sent = {}, {}
        for mp in plan.messages:
            wire = sum(1 for key in frames if key[0] == mp.src)
            data = rng.getrandbits(8)
            frames[(mp.src, wire)] = frame_bits(mp, data, 8)
            sent[(mp.src, wire)] = (mp.index, data)
        result = deliver(layout, frames)
        assert result.lost == [] and result.collisions == []
        for arrival in result.arrivals:
            index, data = sent[(arrival.src, arrival.src_wire)]
            assert arrival.where == ("leaf", messages[index][1])
            assert arrival.bits == (1, *[(data >> (7 - b)) & 1 for b in range(8)])
            seen.append(index)
    assert sorted(seen) == list(range(len(messages)))


def test_overloaded_cycle_is_refused():
    layout = TreeLayout.universal(8)
    messages = [(0, 4), (1, 5), (2, 6), (3, 7), (0, 5), (1, 4)]
    # Leaf 0 has one wire: two messages from it cannot share a delivery cycle.
    with pytest.raises(RuntimeError, match=r"^leaf 0 sends more than 1 messages$"):
        plan_cycle(layout, messages, [0, 4])


def test_experiments_from_the_command_line(capsys, tmp_path):
    import json

    from fattree.scripts.main import main

    plot = tmp_path / "d.png"
    argv = ["experiment", "offline-schedule", "--sizes", "3,4", "--json", "--plot", str(plot)]
    assert main(argv) == 0
    assert plot.stat().st_size > 0
    data = json.loads(capsys.readouterr().out)
    assert data["columns"][:7] == [
        "n",
        "profile",
        "pattern",
        "trial",
        "messages",
        "lambda",
        "d_thm1",
    ]
    assert len(data["rows"]) == 2 * 3 * 3
    for row in data["rows"]:
        assert row[5] <= row[6] <= row[8]  # lambda <= d <= Theorem 1 bound
        assert row[5] <= row[9] <= row[6]  # packing never adds a cycle
    assert main(["experiment", "concentrator", "--r", "12,30", "--seeds", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [row[:3] for row in data["rows"]] == [[12, 8, "exhaustive"], [30, 20, "sampled"]]
    assert all(0.75 <= row[3] <= row[5] <= 1 for row in data["rows"])
    assert main(["experiment", "concentrator", "--r", "6"]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith("r must be at least 10 for a random (r, 2r/3) graph, not 6")


def test_compact_keeps_every_message_and_capacity():
    from fattree.sim.models.leiserson_schedule import compact, lca_level

    rng = random.Random(4)
    n = 32
    caps = ideal_capacities(n, universal_capacities(n))
    messages = message_set("permutation", n, rng)
    cycles = schedule_theorem1(n, messages, caps)
    packed = compact(n, messages, cycles, caps)
    assert sorted(i for c in packed for i in c) == list(range(len(messages)))
    assert all(is_one_cycle(n, [messages[i] for i in c], caps) for c in packed)
    # A permutation on w = n is one-cycle (lambda = 1): packing finds the single cycle that
    # Theorem 1's level-by-level schedule spreads over one cycle per level of LCAs.
    levels = {lca_level(n, a, b) for a, b in messages}
    assert load_factor(n, messages, caps) == 1
    assert len(cycles) == len(levels) > 1 and len(packed) == 1


def test_message_set_patterns():
    # Bit reversal is the one definition of fattree.spec.traffic; an unknown name is an error.
    assert message_set("bit-reversal", 8, None) == [(1, 4), (3, 6), (4, 1), (6, 3)]
    with pytest.raises(ValueError, match=r"^pattern must be 'random', 'permutation' or "):
        message_set("transpose", 8, None)


# -- the root's external channel (OUTSIDE) ------------------------------------------------


def test_outside_endpoint_errors():
    from fattree.sim.models.leiserson_schedule import OUTSIDE

    with pytest.raises(ValueError, match=r"^message endpoints must be leaves 0..3$"):
        check_messages(4, [(OUTSIDE, 1)])  # only where the root's channel is meant
    with pytest.raises(ValueError, match=r"^message endpoints must be leaves 0..3 or OUTSIDE"):
        check_messages(4, [(-2, 1)], outside=True)
    with pytest.raises(ValueError, match=r"^message 0 goes from outside to itself; it never"):
        check_messages(4, [(OUTSIDE, OUTSIDE)], outside=True)
    layout = TreeLayout.universal(4)  # root channel: 4 wires
    with pytest.raises(RuntimeError, match=r"^outside sends more than 4 messages$"):
        plan_cycle(layout, [(OUTSIDE, k % 4) for k in range(5)], list(range(5)))
    with pytest.raises(RuntimeError, match=r"^two messages given the same source wire$"):
        plan_cycle(layout, [(OUTSIDE, 0), (OUTSIDE, 1)], [0, 1], {0: 2, 1: 2})


def test_outside_headers_by_hand():
    # 4 leaves, capacities (4, 2, 1). From outside to leaf 2: at the root's U input the
    # address bit 1 goes right (node 3), at node 3's U input 0 goes left (leaf 2); the root's
    # R cascade (6 -> 2) and node 3's L cascade (3 -> 1) add their decision bits. From leaf 1
    # to outside: 1 (up) at node 2 and at the root, no decision bits (identity cascades).
    from fattree.sim.models.leiserson_schedule import OUTSIDE

    layout = TreeLayout.universal(4)
    messages = [(OUTSIDE, 2), (1, OUTSIDE)]
    plan = plan_cycle(layout, messages, [0, 1], {0: 3})
    into, out = plan.messages
    root_r = layout.cascade(0, "R").decision_bits
    node_l = layout.cascade(1, "L").decision_bits
    assert [h[:2] + h[3:4] for h in into.hops] == [(1, "U", "R"), (3, "U", "L")]
    assert into.hops[0][2] == 3  # the wire asked for
    assert len(into.header) == 2 + sum(root_r) + sum(node_l)
    assert into.header[0] == 1 and into.header[1 + sum(root_r)] == 0
    assert [h[:2] + h[3:4] for h in out.hops] == [(2, "R", "U"), (1, "L", "U")]
    assert out.header == [1, 1]


@pytest.mark.parametrize(("leaves", "w"), [(4, 4), (8, 8), (8, 4), (16, 7)])
def test_outside_traffic_is_routed_and_delivered(leaves, w):
    # First-fit packing over the hardware's switches, random source wires; the tree model
    # reads the headers back: messages from outside reach their leaf, messages to outside
    # leave at the root, every message exactly once, with its data, no vertex shared.
    from fattree.sim.models.leiserson_schedule import (
        OUTSIDE,
        external_messages,
        schedule_first_fit,
    )

    layout = TreeLayout.universal(leaves, w)
    rng = random.Random(leaves + w)
    messages = external_messages(leaves, rng, per_leaf=2)
    assert sum(1 for s, _ in messages if s == OUTSIDE) == 2 * leaves
    assert sum(1 for _, d in messages if d == OUTSIDE) == 2 * leaves
    cycles, wires = schedule_first_fit(layout, messages, rng)
    assert sorted(m for c in cycles for m in c) == list(range(len(messages)))
    root_wires = set()
    seen = []
    for cycle in cycles:
        plan = plan_cycle(layout, messages, cycle, wires)
        frames, sent = {}, {}
        for mp in plan.messages:
            key = (mp.src, wires[mp.index])
            assert key not in frames and mp.hops[0][2] == wires[mp.index]
            data = rng.getrandbits(8)
            frames[key] = frame_bits(mp, data, 8)
            sent[key] = (mp.index, data)
            if mp.src == OUTSIDE:
                root_wires.add(key[1])
        result = deliver(layout, frames)
        assert result.lost == [] and result.collisions == []
        for arrival in result.arrivals:
            index, data = sent[(arrival.src, arrival.src_wire)]
            dst = messages[index][1]
            assert arrival.where == (("root", 0) if dst == OUTSIDE else ("leaf", dst))
            assert arrival.bits == (1, *[(data >> (7 - b)) & 1 for b in range(8)])
            seen.append(index)
    assert sorted(seen) == list(range(len(messages)))
    assert len(root_wires) > 1  # random wires: not only wire 0 of the root's channel


def test_first_fit_without_rng_takes_the_lowest_wires():
    from fattree.sim.models.leiserson_schedule import OUTSIDE, schedule_first_fit

    layout = TreeLayout.universal(8)
    messages = [(OUTSIDE, 1), (OUTSIDE, 6), (0, OUTSIDE), (3, 4)]
    cycles, wires = schedule_first_fit(layout, messages)
    assert cycles == [[0, 1, 2, 3]]
    assert wires == {0: 0, 1: 1, 2: 0, 3: 0}
    # Leaf-to-leaf plans are as before: wires in cycle order.
    assert plan_cycle(layout, messages, [3]).messages[0].hops[0][2] == 0
