"""Stanfill's hypercube paths (``hypercube-paths``): h! shortest and k node-disjoint paths
for every pair of the k-cube."""

from __future__ import annotations

import argparse
import math

import pytest

from fattree.sim.experiments import registry
from fattree.sim.experiments.hypercube_paths import (
    check_disjoint,
    disjoint_paths,
    distances,
    pair_counts,
    shortest_paths,
)


def test_distances_are_hamming_distances():
    dist = distances(0b1010, 4)
    assert dist == [(n ^ 0b1010).bit_count() for n in range(16)]


def test_shortest_paths_of_a_3_cube_pair_are_the_six_orders():
    paths = shortest_paths(0b000, 0b111, 3)
    assert len(paths) == 6 and len({tuple(p) for p in paths}) == 6
    assert [0, 1, 3, 7] in paths and [0, 4, 6, 7] in paths


def test_the_max_flow_finds_k_disjoint_paths_and_they_are_disjoint():
    paths = disjoint_paths(0, 0b1111, 4)
    assert len(paths) == 4 and check_disjoint(paths, 0, 0b1111, 4)
    # Neighbours: the wire itself and k - 1 detours of length 3.
    paths = disjoint_paths(0, 1, 4)
    assert sorted(map(len, paths)) == [2, 4, 4, 4] and check_disjoint(paths, 0, 1, 4)
    # Shortest ones only: as many as the dimensions to cross.
    paths = disjoint_paths(0, 0b0111, 4, distances(0b0111, 4))
    assert len(paths) == 3 and all(len(p) == 4 for p in paths)


def test_the_disjointness_check_rejects_shared_nodes():
    assert not check_disjoint([[0, 1, 3], [0, 1, 3]], 0, 3, 2)
    assert not check_disjoint([[0, 1, 3], [0, 2, 0, 1, 3]], 0, 3, 2)
    assert not check_disjoint([[0, 3]], 0, 3, 2)  # not a wire
    assert check_disjoint([[0, 1, 3], [0, 2, 3]], 0, 3, 2)


@pytest.mark.parametrize("dim", [1, 2, 3, 4])
def test_every_pair_has_h_factorial_shortest_and_k_disjoint_paths(dim):
    for src in range(1 << dim):
        for dst in range(src + 1, 1 << dim):
            h = (src ^ dst).bit_count()
            assert pair_counts(src, dst, dim) == (h, math.factorial(h), dim, h)


def test_experiment_rows():
    result = registry()["hypercube-paths"].run(argparse.Namespace(dims=[3, 4]))
    col = {c: i for i, c in enumerate(result.columns)}
    assert [(r[0], r[1], r[col["pairs"]]) for r in result.rows] == [
        (3, 1, 12),
        (3, 2, 12),
        (3, 3, 4),
        (4, 1, 32),
        (4, 2, 48),
        (4, 3, 32),
        (4, 4, 8),
    ]
    assert all(r[col["all as stated"]] for r in result.rows)
    row = result.rows[-1]
    assert row[col["shortest paths"]] == "24..24" and row[col["h!"]] == 24
    assert row[col["disjoint paths"]] == "4..4" and row[col["disjoint shortest"]] == "4..4"


@pytest.mark.slow  # every pair of the 6-cube, about 7 s
def test_every_pair_of_the_6_cube():
    result = registry()["hypercube-paths"].run(argparse.Namespace(dims=[6]))
    assert all(r[-1] for r in result.rows) and sum(r[2] for r in result.rows) == 64 * 63 // 2
