"""The hypercube model's cover points (docs/hypercube.md, "Coverage"): counting them leaves
the model's behaviour alone, the counts agree with the model's own totals, the points follow
the parameters, and the bench's hole rounds close what the bench's phases leave (on the RTL:
tests/test_hypercube.py)."""

import random

import pytest

from fattree.sim.checks.hypercube import Stalls, bench_phases, hole_rounds
from fattree.sim.models.hypercube import HypercubeModel, run_model, traffic


def _run(model, steps=1500, seed=3):
    """Random offered traffic (any destination, the sender's own node too) and receivers
    ready 60 % of the cycles; the outputs of every cycle."""
    rng = random.Random(seed)
    n, outputs = model.processors, []
    for _ in range(steps):
        valid = [int(rng.random() < 0.6) for _ in range(n)]
        dest = [rng.randrange(n) for _ in range(n)]
        data = [rng.getrandbits(8) for _ in range(n)]
        ready = [int(rng.random() < 0.6) for _ in range(n)]
        outputs.append(model.step(valid, dest, data, ready))
    return outputs


@pytest.mark.parametrize(("dim", "procs", "buffers"), [(3, 2, 2), (2, 1, 0), (1, 2, 1)])
def test_counting_does_not_change_the_model(dim, procs, buffers):
    plain = HypercubeModel(dim, procs, buffers)
    counted = HypercubeModel(dim, procs, buffers)
    coverage = counted.start_coverage()
    assert _run(plain) == _run(counted)
    assert plain.delivered == counted.delivered and plain.hops == counted.hops
    points = {name: p["bins"] for name, p in coverage.as_dict()["points"].items()}
    assert coverage.holes() == []  # 1500 busy cycles reach every bin at these small points
    # The counts agree with the model's own totals: every crossing is one wire's and one
    # link's; every referral has a reason, and the nodes' counts add up to them.
    for group in ("wire", "link"):
        assert sum(sum(points[f"{group}/W{i}"].values()) for i in range(dim)) == counted.hops
    assert sum(points["refer"].values()) == counted.referrals == points["network"]["referred"]
    assert sum(int(r) * hits for r, hits in points["referrals"].items()) == counted.referrals
    assert sum(points["wire/W0"].values()) >= points["wire/W0"]["refer"] > 0
    # Every message delivered into a receive queue was taken, or is held for its receiver.
    held = counted.held_for_receivers()
    assert sum(points["deliver"].values()) == len(counted.delivered) + held
    assert sum(points["distance"].values()) == sum(points["path"].values())
    assert sum(points["distance"].values()) == len(counted.delivered) + held


def test_the_points_follow_the_parameters():
    def bins(*args):
        return {p.name: p.bins for p in HypercubeModel(*args).cover_points()}

    full = bins(4, 2, 2)
    assert [n for n in full if n.startswith("contend/")] == [f"contend/W{i}" for i in range(4)]
    assert full["contend/W3"] == (
        "buffer over buffer",
        "buffer over arrival",
        "arrival over arrival",
        "network over injection",
        "referral over injection",
        "injection over injection",
    )
    assert full["link/W2"] == tuple(f"N{n}" for n in range(16))
    assert full["deliver"][-1] == "P31" and full["distance"] == ("0", "1", "2", "3", "4")
    assert full["buffer"] == ("0", "1", "2") and full["referrals"] == ("1", "2", "3", "4")
    # One slot: no two buffered messages; one processor: no two heads; one wire: no two
    # arrivals, and a blocked message has no wire left to be referred over.
    small = bins(1, 1, 1)
    assert small["contend/W0"] == (
        "buffer over arrival",
        "network over injection",
        "referral over injection",
    )
    assert small["refer"] == ("at its node",)
    none = bins(2, 2, 0)
    assert "buffer" not in none and "kept" not in none["network"]
    assert none["inject"] == ("delivered", "wire", "waits")


def test_a_copy_runs_on_its_own():
    model = HypercubeModel(2, 2, 1)
    model.start_coverage()
    _run(model, steps=50)
    before = model.coverage.as_dict(), model.outputs(), model.cycle
    twin = model.clone()
    _run(twin, steps=50, seed=9)
    assert (model.coverage.as_dict(), model.outputs(), model.cycle) == before
    assert twin.cycle == model.cycle + 50


def test_stalls_repeat():
    stalls = Stalls(7, 0.5, 8)
    pattern = [stalls(t) for t in range(40)]
    assert pattern == [Stalls(7, 0.5, 8)(t) for t in range(40)]
    assert 0.3 < sum(map(sum, pattern)) / 320 < 0.7
    assert Stalls(7, 0.0, 8)(3) == [1] * 8


def test_hole_rounds_close_the_holes_each_as_tried():
    # The bench's phases at a small point leave holes; every round hole_rounds yields was
    # tried on a copy, so run on the model it closes a hole, and together they close all.
    rng = random.Random(1)
    model = HypercubeModel(2, 2, 1)
    coverage = model.start_coverage()
    for _name, queues in bench_phases(2, 2, 8, rng, frames=12):
        run_model(model, queues)
    assert coverage.holes()
    rounds = 0
    for _name, queues, options in hole_rounds(model, random.Random(2), tries=3000):
        holes = len(coverage.holes())
        start = model.cycle
        run_model(model, queues, rx_ready=lambda c, s=start, r=options["ready"]: r(c - s))
        assert len(coverage.holes()) < holes
        rounds += 1
    assert coverage.holes() == [] and rounds > 0


def test_hotspot_reaches_every_referral_count():
    # Everything to one processor, whose receiver stalls: its node holds full buffers of
    # messages at their node and refers up to one per wire in a cycle.
    model = HypercubeModel(3, 1, 2)
    coverage = model.start_coverage()
    queues = traffic("hotspot", 3, 1, 8, random.Random(1), messages=3)
    run_model(model, queues, rx_ready=Stalls(1, 0.5, 8))
    points = coverage.as_dict()["points"]
    assert min(points["referrals"]["bins"].values()) > 0
    assert points["refer"]["bins"]["at its node"] > 0
    assert points["places"]["bins"]["all taken"] > 0
