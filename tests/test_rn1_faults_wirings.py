"""The bidelta network's regular wiring that keeps a direction's two links apart
(``bidelta(..., random_wiring=False, apart=True)``) and the three wirings of ``dehon-faults``."""

from __future__ import annotations

import argparse
import hashlib
from collections import Counter

import pytest

from fattree.sim.experiments import registry
from fattree.sim.experiments.rn1_faults import BIDELTA_WIRINGS, bidelta_wirings
from fattree.spec.rn1_bidelta import bidelta

# The wirings as they were before the option came: seed 1, (random, regular) per size.
DIGESTS = {
    4: ("594283fa3bb2d1d3", "22c6c8dff7acdf77"),
    16: ("b0b3e57e6033778f", "dbf41aaf839ca1d6"),
    64: ("dce9d269ffb78f68", "bd62060f9da6e06a"),
    256: ("9f72b761556d7cd2", "3a86517fb4cd3818"),
}


def _digest(net) -> str:
    return hashlib.sha256(repr(net.links).encode()).hexdigest()[:16]


@pytest.mark.parametrize("n", sorted(DIGESTS))
def test_the_default_and_the_old_regular_wiring_are_unchanged(n):
    assert (_digest(bidelta(n, 1)), _digest(bidelta(n, 1, False))) == DIGESTS[n]
    # apart changes nothing in the random wiring (it always keeps the links apart).
    assert bidelta(n, 1, apart=True).links == bidelta(n, 1).links


def _next_routers(net):
    """Per (stage, router, direction) below the last stage, the routers its two links
    enter."""
    sink_of = net.sink_of()
    return {
        (j, r, d): [sink_of["out", j, r, 2 * d + k][2] for k in (0, 1)]
        for j in range(net.stages - 1)
        for r in range(net.routers_per_stage)
        for d in range(4)
    }


@pytest.mark.parametrize("n", [16, 64, 256])
def test_regular_apart_puts_a_directions_links_on_two_routers(n):
    apart = _next_routers(bidelta(n, 1, False, apart=True))
    assert all(a != b for a, b in apart.values())
    # The old regular wiring puts them on one router, everywhere.
    assert all(a == b for a, b in _next_routers(bidelta(n, 1, False)).values())
    # In order, not drawn: the seed does not matter.
    assert bidelta(n, 1, False, apart=True).links == bidelta(n, 7, False, apart=True).links


@pytest.mark.parametrize("n", [4, 16, 64])
def test_regular_apart_is_a_whole_wiring_that_routes(n):
    net = bidelta(n, 1, False, apart=True)
    sources = Counter(src for src, _ in net.links)
    sinks = Counter(dst for _, dst in net.links)
    assert set(sources.values()) == {1} and set(sinks.values()) == {1}
    assert len(sinks) == len(bidelta(n, 1).links)
    assert all(map(all, net.connected(set())))
    # Any one dead router leaves every pair connected (N = 4 is one router).
    for j in range(net.stages if n > 4 else 0):
        for r in range(net.routers_per_stage):
            assert all(map(all, net.connected({(j, r)}))), (j, r)


def test_apart_must_be_a_bool():
    with pytest.raises(TypeError, match="apart must be True or False, not 1"):
        bidelta(16, 1, False, apart=1)


def test_the_experiment_compares_three_wirings_on_the_same_faults():
    assert tuple(bidelta_wirings(16, 1)) == BIDELTA_WIRINGS
    args = argparse.Namespace(endpoints=64, faults=[2, 8], trials=12, seed=1)
    result = registry()["dehon-faults"].run(args)
    col = {c: i for i, c in enumerate(result.columns)}
    assert result.columns[0] == "dead routers" and len(result.columns) == 12
    two, eight = result.rows
    # Two dead routers: the wiring that keeps a direction's links apart loses no pair in
    # these sets; the old regular one loses some.
    assert two[col["regular apart: pairs"]] == 1 > two[col["regular: pairs"]]
    # Eight: both wirings that keep the links apart keep clearly more pairs than the old one.
    old = eight[col["regular: pairs"]]
    assert eight[col["random: pairs"]] > old + 0.05
    assert eight[col["regular apart: pairs"]] > old + 0.05
    assert [eight[col[f"{w}: worst-placed"]] for w in BIDELTA_WIRINGS] == [None] * 3
    # The paired difference is the difference of the means.
    random_mean, apart_mean = eight[col["random: pairs"]], eight[col["regular apart: pairs"]]
    assert eight[col["random - regular apart"]] == pytest.approx(random_mean - apart_mean)
    assert eight[col["s.e."]] > 0


def test_paired_difference():
    from fattree.sim.experiments.rn1_faults import paired_difference

    assert paired_difference([1.0], [0.5]) == [0.5, None]
    mean, se = paired_difference([1.0, 0.8, 0.6], [0.9, 0.8, 0.4])
    # Differences 0.1, 0, 0.2: mean 0.1, sample deviation 0.1, s.e. 0.1 / sqrt 3.
    assert mean == pytest.approx(0.1) and se == pytest.approx(0.1 / 3**0.5)
