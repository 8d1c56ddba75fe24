"""Stanfill's omega network (``omega-paths``): one path per pair, and the worst wire loads of
transpose and bit reversal (sqrt N) against random permutations."""

from __future__ import annotations

import argparse
import math
import random

import numpy as np
import pytest

from fattree.sim.experiments import registry
from fattree.sim.experiments.omega_paths import (
    all_paths,
    bit_reversal,
    check_single_paths,
    route_positions,
    shuffle,
    switch_outputs,
    transpose,
    wire_loads,
    worst_load,
)


def test_the_shuffle_is_the_perfect_riffle():
    # 8 wires: the top half interleaves with the bottom half (0 4 1 5 2 6 3 7 read back).
    assert [shuffle(p, 3) for p in range(8)] == [0, 2, 4, 6, 1, 3, 5, 7]
    assert sorted(shuffle(p, 5) for p in range(32)) == list(range(32))
    assert switch_outputs(5, 3) == (2, 3)  # 5 -> position 3, switch 1


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_every_pair_has_exactly_one_path_the_routed_one(n):
    size = 1 << n
    assert check_single_paths(n) == (size * size, size * size)
    # Spelled out for one input: 2^n ways through the switches, one to each output.
    ends = sorted(path[-1] for path in all_paths(3 % size, n))
    assert ends == list(range(size))


def test_destination_tag_routing_follows_the_wires():
    n = 6
    rng = random.Random(1)
    for _ in range(200):
        src, dst = rng.randrange(64), rng.randrange(64)
        path = route_positions(np.array([src]), np.array([dst]), n)[:, 0].tolist()
        assert path[0] == src and path[-1] == dst
        assert all(b in switch_outputs(a, n) for a, b in zip(path, path[1:], strict=False))


def _loads_by_walking(src, dst, n):
    """Wire loads counted message by message from the enumerated single paths."""
    loads = np.zeros((n + 1, 1 << n), dtype=int)
    for s, d in zip(src, dst, strict=True):
        (path,) = [p for p in all_paths(int(s), n) if p[-1] == d]
        for layer, wire in enumerate(path):
            loads[layer, wire] += 1
    return loads


@pytest.mark.parametrize("n", [4, 5])
def test_loads_equal_the_enumerated_paths(n):
    src = np.arange(1 << n)
    perms = [transpose(n), bit_reversal(n), np.random.default_rng(2).permutation(1 << n)]
    for dst in perms:
        assert (wire_loads(src, dst, n) == _loads_by_walking(src, dst, n)).all()


def test_the_permutations():
    assert transpose(4).tolist()[0b0110] == 0b1001  # row 01, column 10 -> row 10, column 01
    assert bit_reversal(4).tolist()[0b0001] == 0b1000
    for n in (4, 5, 6):
        assert sorted(transpose(n).tolist()) == list(range(1 << n))
        assert sorted(bit_reversal(n).tolist()) == list(range(1 << n))


@pytest.mark.parametrize("n", range(4, 13))
def test_transpose_and_bit_reversal_put_sqrt_n_messages_on_one_wire(n):
    src = np.arange(1 << n)
    # 2^floor(n/2): sqrt N at even lg N, sqrt(N/2) at odd.
    assert worst_load(src, transpose(n), n) == 2 ** (n // 2)
    assert worst_load(src, bit_reversal(n), n) == 2 ** (n // 2)


def test_experiment_rows():
    args = argparse.Namespace(sizes=[4, 8, 12], trials=5, seed=1, enumerate=[3])
    result = registry()["omega-paths"].run(args)
    col = {c: i for i, c in enumerate(result.columns)}
    for row in result.rows:
        n = row[col["lg N"]]
        assert row[col["transpose / sqrt N"]] == pytest.approx(1.0)
        assert row[col["bit reversal"]] == math.isqrt(1 << n)
        # Random permutations: a handful, far under sqrt N once N is large.
        assert 2 <= row[col["random: mean"]] <= row[col["random: max"]] <= n
        assert row[col["transpose via random: max"]] <= n
    assert result.rows[-1][col["random: max"]] < 64 / 4
    assert result.extra["single_paths"] == {"8": [64, 64]}


def test_experiment_plot(tmp_path):
    pytest.importorskip("matplotlib")
    experiment = registry()["omega-paths"]
    result = experiment.run(argparse.Namespace(sizes=[4, 5], trials=2, seed=1, enumerate=[]))
    experiment.plot(result, str(tmp_path / "omega.png"))
    assert (tmp_path / "omega.png").stat().st_size > 0
