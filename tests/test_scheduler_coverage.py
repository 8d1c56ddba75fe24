"""The scheduler model's cover points (docs/scheduler.md, "Coverage"): counting them leaves
the model's decisions alone, the counts agree with the results, the points follow the tree
(bins the tree cannot reach are left out, and random traffic never hits one of those), and
the steering rounds close what the bench's phases leave (on the RTL:
tests/test_scheduler_rtl.py)."""

import random

import pytest

from fattree.sim.checks.scheduler import (
    CoverFeed,
    apply_command,
    hole_rounds,
    make_commands,
    stalled_clears,
)
from fattree.sim.models.scheduler import SchedulerModel
from fattree.spec.scheduler import GeneralizedFatTree, Op, pipeline_latency


def _feed_all(tree, commands, *, rng, feed=None, at=0, idle=0.3):
    """``commands`` into a :class:`CoverFeed`, one per cycle, or two with the probability
    ``idle`` (a CLEAR's followers after it is done); the feed, its results and the last
    cycle."""
    feed = feed or CoverFeed(tree)
    results = []
    for command in commands:
        at += 1 + (rng.random() < idle)
        results.append(feed.take(command, at))
        if command[0] == Op.CLEAR:
            at += 2 * pipeline_latency(tree.levels)
    return feed, results, at


def test_counting_does_not_change_the_results():
    tree = GeneralizedFatTree(3, 4, 4)
    commands, expected = make_commands(tree, random.Random(3), 30)
    feed, results, _ = _feed_all(tree, commands, rng=random.Random(4))
    assert results == expected  # the sequential reference's results, with counting on
    points = {name: p["bins"] for name, p in feed.coverage.as_dict()["points"].items()}
    schedules = [r for r in results if r[0] == Op.SCHEDULE]
    granted = [r for r in schedules if r[3]]
    assert sum(points["granted"].values()) == len(granted)
    # Every request across leaf switches is decided at level 0; each port found is one pick.
    across = [r for r in schedules if tree.common_level(r[1], r[2]) > 0]
    assert sum(points["level/L0"].values()) == len(across)
    for h in (0, 1):
        assert points[f"level/L{h}"]["port found"] == sum(points[f"port/L{h}"].values())
    releases = sum(r[0] == Op.RELEASE for r in results)
    assert sum(points["release"].values()) == releases
    assert sum(points["clear"].values()) == sum(r[0] == Op.CLEAR for r in results)


def test_only_the_hardware_scheduler_is_covered():
    tree = GeneralizedFatTree(2, 2, 2)
    with pytest.raises(ValueError, match="level-wise with keep, not greedy with keep"):
        SchedulerModel(tree, "greedy").start_coverage()
    with pytest.raises(ValueError, match="not level-wise with release"):
        SchedulerModel(tree, "level-wise", "release").start_coverage()


def _bins(levels, m, w):
    return {
        p.name: p.bins for p in CoverFeed(GeneralizedFatTree(levels, m, w)).model.cover_points()
    }


def test_the_points_follow_the_tree():
    full = _bins(3, 4, 4)
    assert full["level/L0"] == (
        "port found",
        "refused: up full",
        "refused: down full",
        "refused: both full",
        "refused: no common",
    )
    # Above level 0 with w >= m a row in the way has a free port: only the AND refuses.
    assert full["level/L1"] == ("port found", "refused: no common")
    assert full["port/L1"] == ("P0", "P1", "P2", "P3") and "full/L1" in full
    assert full["raw/L1"] == ("1", "2", "3", "4", "memory", "cleared")
    assert full["granted"] == ("H0", "H1", "H2") and full["release"] == ("H1", "H2")
    # Two halves at the top (m = 2): the rows there are always equal.
    assert _bins(2, 2, 2)["level/L0"] == ("port found", "refused: both full")
    wide = _bins(3, 2, 4)
    assert wide["level/L1"] == ("port found",) and wide["port/L1"] == ("P0", "P1")
    assert "full/L1" not in wide
    # Tapered (w < m): rows fill above level 0 too.
    assert _bins(3, 4, 2)["level/L1"] == full["level/L0"]
    assert _bins(4, 2, 4)["port/L1"] == ("P0", "P1", "P2")


@pytest.mark.parametrize(
    "levels, m, w", [(2, 2, 2), (3, 2, 2), (3, 2, 4), (3, 4, 2), (4, 2, 2), (4, 2, 4), (3, 4, 4)]
)
def test_random_traffic_never_hits_a_bin_left_out(levels, m, w):
    # Coverage raises on an undeclared bin: hot and random traffic with many refusals and
    # releases finds none of the bins _reachable leaves out.
    tree = GeneralizedFatTree(levels, m, w)
    rng = random.Random(levels * 100 + m * 10 + w)
    commands, _ = make_commands(tree, rng, 60)
    feed, _, _ = _feed_all(tree, commands, rng=rng)
    assert len(feed.coverage.holes()) < feed.coverage.as_dict()["bins"] / 3


def test_a_copy_runs_on_its_own():
    tree = GeneralizedFatTree(3, 2, 2)
    feed, _, at = _feed_all(tree, make_commands(tree, random.Random(1), 2)[0], rng=random.Random(1))
    before = feed.coverage.as_dict(), feed.model.state.taken()
    twin = feed.model.clone()
    for k in range(8):
        apply_command(twin, (Op.SCHEDULE, k, 7 - k, (0, 0)), at + k + 1, [])
    assert (feed.coverage.as_dict(), feed.model.state.taken()) == before
    assert twin.coverage.as_dict() != before[0]


@pytest.mark.parametrize("levels, m, w", [(3, 4, 4), (4, 2, 2), (3, 4, 2)])
def test_hole_rounds_close_the_holes_each_as_tried(levels, m, w):
    # A few bursts and the stalled clears leave holes; every round hole_rounds yields was
    # tried on a copy, so taken as the bench takes it, it closes one, and together all.
    tree = GeneralizedFatTree(levels, m, w)
    rng = random.Random(1)
    commands, _ = make_commands(tree, rng, 2)
    more, _, _ = stalled_clears(tree, rng)
    feed, _, at = _feed_all(tree, commands + more, rng=rng)
    assert feed.coverage.holes()
    rounds = 0
    for commands in hole_rounds(feed, random.Random(2), tries=2000):
        holes = len(feed.coverage.holes())
        # Sent once every earlier result is out, back to back.
        at = feed.last_at + 2 * pipeline_latency(levels)
        _feed_all(tree, commands, rng=random.Random(0), feed=feed, at=at, idle=0)
        assert len(feed.coverage.holes()) < holes
        rounds += 1
    assert feed.coverage.holes() == [] and rounds > 0
