"""The selector model's cover points (docs/selector.md, "Coverage"): counting them leaves the
model's behaviour alone, the counts agree with what was sent, the points follow the width,
and the steering frames close what random frames leave (on the RTL:
tests/test_selector_cocotb.py)."""

import random

from fattree.sim.benches.selector import random_frames
from fattree.sim.checks.selector import hole_frames, stimulus
from fattree.sim.models.selector import SelectorModel


def _run(model, frames):
    return [model.step(start, word) for start, word in stimulus(frames)]


def test_counting_does_not_change_the_model():
    rng = random.Random(4)
    frames = [[rng.getrandbits(5) for _ in range(rng.choice([1, 2, 3, 6]))] for _ in range(300)]
    plain, counted = SelectorModel(5), SelectorModel(5)
    coverage = counted.start_coverage()
    assert _run(plain, frames) == _run(counted, frames)
    points = {name: p["bins"] for name, p in coverage.as_dict()["points"].items()}
    assert coverage.holes() == []  # 300 frames of every length reach every bin at 5 wires
    # One decision per wire of every whole frame and of the closing frame (no M bit); every
    # message goes to one branch's wire.
    whole = [f for f in frames if len(f) >= 2]
    assert sum(points["decide"].values()) == 5 * (len(whole) + 1)
    sent = sum(bin(f[0]).count("1") for f in whole)
    assert points["decide"]["one"] + points["decide"]["zero"] == sent
    assert sum(points["one"].values()) + sum(points["zero"].values()) == sent
    assert sum(points["frame"].values()) == sum(points["load/one"].values()) == len(whole) + 1
    # Every frame but the last (closed by the closing frame) has its length counted.
    cut = points["length"]["cut, idle"] + points["length"]["cut, messages lost"]
    assert cut == len(frames) - len(whole)
    assert sum(points["length"].values()) == len(frames)


def test_the_points_follow_the_width():
    one = {p.name: p.bins for p in SelectorModel(1).cover_points()}
    assert one["load/one"] == ("0", "all") and one["frame"] == ("no message", "one branch")
    assert one["one"] == ("W0",)
    wide = {p.name: p.bins for p in SelectorModel(8).cover_points()}
    assert wide["load/zero"] == ("0", "some", "all") and wide["zero"][-1] == "W7"
    assert wide["frame"][-1] == "both branches"


def test_a_copy_runs_on_its_own():
    model = SelectorModel(3)
    model.start_coverage()
    _run(model, [[0b111, 0b101, 0b010]])
    before = model.coverage.as_dict(), model.out
    twin = model.clone()
    _run(twin, [[0b111, 0b111]])
    assert (model.coverage.as_dict(), model.out) == before
    assert twin.coverage.as_dict() != before[0]


def test_hole_frames_close_the_holes_each_as_tried():
    # The bench's random frames at 8 wires never fill a branch nor cut a frame; every frame
    # hole_frames yields was tried on a copy, so run on the model it closes a hole, and
    # together they close all.
    model = SelectorModel(8)
    coverage = model.start_coverage()
    _run(model, random_frames(random.Random(1), 8, 200))
    assert {"load/one:all", "load/zero:all", "length:cut, messages lost"} <= set(coverage.holes())
    steered = 0
    for frame in hole_frames(model, random.Random(2), tries=2000):
        holes = len(coverage.holes())
        _run(model, [frame])
        assert len(coverage.holes()) < holes
        steered += 1
    assert coverage.holes() == [] and steered > 0
