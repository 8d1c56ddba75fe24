"""The Leiserson tree model's cover points (docs/leiserson.md, "Coverage"): counting them
leaves the model's waves alone, the counts agree with the routes, the points follow the
layout, the filling sets fill every channel, and drops fall on every stage that can drop
(on the RTL: tests/test_leiserson_tree.py)."""

import random

import pytest

from fattree.sim.models.leiserson_coverage import load_bins
from fattree.sim.models.leiserson_schedule import (
    dropping_header,
    filling_sets,
    layout_capacities,
    message_set,
    plan_cycle,
    schedule_first_fit,
    schedule_theorem1,
)
from fattree.sim.models.leiserson_tree import LeisersonTreeModel, delivery_waves
from fattree.spec.capacities import TreeLayout


def test_load_bins():
    assert load_bins(1) == ("full",) and load_bins(2) == ("1", "full")
    assert load_bins(8) == ("1", "part", "full")


def test_counting_does_not_change_the_waves():
    layout = TreeLayout.universal(8)
    messages = message_set("random", 8, random.Random(1))
    schedule = schedule_theorem1(8, messages, layout_capacities(layout))
    plain = delivery_waves(layout, messages, schedule, random.Random(2), random_switches=True)
    model = LeisersonTreeModel(layout)
    coverage = model.start_coverage()
    counted = model.delivery_waves(messages, schedule, random.Random(2), random_switches=True)
    assert [(w.drive, w.expect) for w in plain] == [(w.drive, w.expect) for w in counted]
    points = {name: p["bins"] for name, p in coverage.as_dict()["points"].items()}
    # Every message enters once on its leaf's channel and is delivered on its destination's.
    assert points["load/C3/up"]["full"] == len(messages) == points["load/C3/down"]["full"]
    # It turns once, at the node below which both its leaves are.
    turns = sum(n for j in range(3) for k, n in points[f"turn/L{j}"].items() if "U" not in k)
    assert turns == len(messages)


def test_the_points_follow_the_layout():
    names = {p.name: p.bins for p in LeisersonTreeModel(TreeLayout.universal(16)).cover_points()}
    assert names["edge/L0/down/S2"] == ("e0", "e1", "e2", "e3", "e4", "e5", "lacking")
    assert names["edge/L1/down/S1"] == ("e0", "e1", "e2", "e3")  # every input has 4 edges
    assert names["load/C0/up"] == ("1", "part", "full") and "edge/L0/up/S0" not in names
    assert len(names) == 4 + 7 + 10 and sum(map(len, names.values())) == 84
    # A root channel narrower than the leaves: the U cascades concentrate too.
    narrow = {p.name for p in LeisersonTreeModel(TreeLayout.universal(16, 8)).cover_points()}
    assert "edge/L0/up/S0" in narrow


@pytest.mark.parametrize(("leaves", "w"), [(4, None), (16, None), (16, 8), (32, None)])
def test_filling_sets_fill_every_channel(leaves, w):
    layout = TreeLayout.universal(leaves, w)
    model = LeisersonTreeModel(layout)
    coverage = model.start_coverage()
    rng = random.Random(3)
    for _name, messages in filling_sets(leaves):
        cycles, wires = schedule_first_fit(layout, messages, rng)
        model.delivery_waves(messages, cycles[:1], rng, wires=wires)
    points = coverage.as_dict()["points"]
    full = [name for name in points if name.startswith("load/")]
    assert all(points[name]["bins"]["full"] for name in full), points


def test_drops_fall_on_every_stage_that_can_drop():
    # Each message of a set sent with a dropping header: the stage is chosen by the
    # message's index, so every stage whose inputs lack an edge loses some.
    layout = TreeLayout.universal(16)
    model = LeisersonTreeModel(layout)
    coverage = model.start_coverage()
    rng = random.Random(5)
    messages = message_set("random", 16, rng)
    schedule = schedule_theorem1(16, messages, layout_capacities(layout))
    model.delivery_waves(messages, schedule, rng, drop=set(range(len(messages))))
    points = coverage.as_dict()["points"]
    lacking = [name for name, p in points.items() if "lacking" in p["bins"]]
    assert len(lacking) == 5 and all(points[name]["bins"]["lacking"] for name in lacking)
    plan = plan_cycle(layout, messages, schedule[0])
    assert any(dropping_header(layout, mp) != mp.header for mp in plan.messages)


def test_the_stream_model_has_no_external_channel():
    # The stream top has no port at the root: no turn there involves U, no channel level 0;
    # its streams' handshakes come on top.
    from fattree.sim.models.leiserson_stream import LeisersonStreamModel

    points = {p.name: p.bins for p in LeisersonStreamModel(TreeLayout.universal(16)).cover_points()}
    assert points["turn/L0"] == ("L>R", "R>L") and "load/C0/up" not in points
    assert points["cycle"] == ("started", "waits: running", "waits: received")
    assert points["tx"] == ("taken", "refused: running") and points["rx"] == ("taken", "stalled")
    assert sum(map(len, points.values())) == 84 - 4 - 6 + 7


def test_online_points_leave_out_what_the_greedy_cannot_do_at_the_root():
    # 16 leaves: the root's L and R cascades (24 -> 16 -> 11 -> 8) see only the other
    # child's 8 wires. The search of every set of them at every turn finds the greedy never
    # past edge 3 at the first stage, never losing there, and never filling the channel:
    # some message of 8 across the root is always lost on the way.
    from fattree.sim.models.leiserson_online import LeisersonOnlineModel

    points = {p.name: p.bins for p in LeisersonOnlineModel(TreeLayout.universal(16)).cover_points()}
    assert points["edge/L0/down/S0"] == ("e0", "e1", "e2", "e3")
    assert points["edge/L0/down/S1"][-2:] == ("e5", "lost")
    assert points["load/C1/down"] == ("1", "part") and points["load/C1/up"][-1] == "full"
    assert points["arrive/L0/down"] == ("alone", "together") and "lacking" not in str(points)
    # Below the root every input group carries messages: the bound leaves every edge.
    assert points["edge/L1/down/S0"] == ("e0", "e1", "e2", "e3", "e4", "e5", "lost")


def test_root_search_finds_what_it_says():
    # Every (sources, turn) the search gives makes its bin when routed on its own.
    from fattree.sim.coverage import Coverage
    from fattree.sim.models.leiserson_coverage import TreeCounter
    from fattree.sim.models.leiserson_online import LeisersonOnlineModel, root_search, route_cycle

    layout = TreeLayout.universal(8)
    found = root_search(layout)
    points = LeisersonOnlineModel(layout).cover_points()
    for name, bins in found.items():
        for b, (sources, turn) in bins.items():
            coverage = Coverage(points)
            route_cycle(
                layout,
                {i: i + 4 for i in sources},
                turn=turn,
                counter=TreeCounter(coverage, layout),
            )
            assert coverage.hits[name][b] > 0, (name, b)
    assert set(found["load/C1/down"]) == {"1", "part", "full"}


def test_online_counting_does_not_change_the_model():
    from fattree.sim.models.leiserson_online import LeisersonOnlineModel

    layout = TreeLayout.universal(8)
    plain, counted = LeisersonOnlineModel(layout), LeisersonOnlineModel(layout)
    coverage = counted.start_coverage()
    rng = random.Random(6)
    for _ in range(600):
        tx = [
            (rng.randrange(8), rng.getrandbits(8)) if rng.random() < 0.3 else None for _ in range(8)
        ]
        ready = [int(rng.random() < 0.7) for _ in range(8)]
        assert plain.outputs() == counted.outputs()
        plain.tick(tx, ready)
        counted.tick(tx, ready)
    points = coverage.as_dict()["points"]
    sends = sum(points["send"]["bins"].values())
    assert sends == sum(len(r.outcomes) for r in counted.results) > 0
    assert points["arrival"]["bins"]["refused: register full"] == counted.refused
    assert points["tx"]["bins"]["to itself"] > 0
