"""Pippenger partial concentrator graphs: structure, verification, rebuilds, cascades."""

import itertools
import random
from fractions import Fraction

import pytest

from fattree.spec.concentrator_graph import (
    BipartiteGraph,
    build_cascade,
    build_partial_concentrator,
    cascade_sizes,
    max_matching,
    random_partial_concentrator,
    verify,
    verify_exhaustive,
    verify_sampled,
)


def brute_force_k(graph):
    """Largest k such that every set of at most k inputs has a perfect matching."""
    for size in range(1, graph.r + 1):
        for subset in itertools.combinations(range(graph.r), size):
            if len(max_matching(graph, subset)) < size:
                return size - 1
    return graph.r


@pytest.mark.parametrize("r", [12, 15, 21, 30, 61, 96])
def test_random_graph_degrees(r):
    s = -(-2 * r // 3)
    graph = random_partial_concentrator(r, s, seed=3)
    assert (graph.r, graph.s) == (r, s)
    assert all(len(row) == 6 and len(set(row)) == 6 for row in graph.adjacency)
    assert graph.output_degree <= 9
    assert sum(graph.output_degrees) == 6 * r
    assert graph.decision_bits == 3


@pytest.mark.parametrize("seed", range(4))
def test_exhaustive_matches_brute_force(seed):
    # Small sparse graphs with violators at various sizes: the numpy subset scan agrees
    # with trying every subset by maximum matching.
    rng = random.Random(seed)
    r, s = 10, 7
    rows = tuple(tuple(sorted(rng.sample(range(s), rng.randint(1, 3)))) for _ in range(r))
    graph = BipartiteGraph(r, s, rows)
    result = verify_exhaustive(graph)
    assert result.k == brute_force_k(graph)
    if result.witness:
        assert len(graph.neighbours(result.witness)) < len(result.witness)


def test_sampled_finds_planted_violator():
    # Inputs 0..4 all live on outputs 0..3: a Hall violator of 5 inputs.
    r, s = 45, 30
    graph = random_partial_concentrator(r, s, seed=1)
    rows = list(graph.adjacency)
    for i in range(5):
        rows[i] = (0, 1, 2, 3)
    planted = BipartiteGraph(r, s, tuple(rows))
    result = verify_sampled(planted, samples=60)
    assert result.k <= 4
    assert len(planted.neighbours(result.witness)) < len(result.witness)


@pytest.mark.parametrize("r", [12, 18, 27, 40, 60])
def test_built_stage_reaches_target(r):
    built = build_partial_concentrator(r)
    assert built.verification.alpha >= Fraction(3, 4)
    # A random set of k inputs really is matched.
    rng = random.Random(r)
    k = built.verification.k
    for _ in range(20):
        subset = rng.sample(range(r), k)
        assert len(max_matching(built.graph, subset)) == k


def test_rebuild_count_is_the_number_of_rejected_seeds():
    # With an unreachable target every seed is rejected and the error says how many.
    with pytest.raises(RuntimeError, match=r"no \(30, 20\) partial concentrator .* in 3 seeds"):
        build_partial_concentrator(30, 20, target=Fraction(1), max_rebuilds=2)
    # With a target between, the count equals the seeds whose verified alpha falls short.
    built = build_partial_concentrator(15, 10, target=Fraction(9, 10), max_rebuilds=50)
    rejected = [
        seed
        for seed in range(built.rebuilds)
        if verify(random_partial_concentrator(15, 10, seed)).alpha < Fraction(9, 10)
    ]
    assert len(rejected) == built.rebuilds
    assert built.verification.alpha >= Fraction(9, 10)


def test_small_and_identity_stages():
    assert build_partial_concentrator(6, 2).graph.kind == "complete"
    assert build_partial_concentrator(6, 2).verification.k == 2
    assert build_partial_concentrator(4, 4).graph.kind == "identity"


def test_errors():
    with pytest.raises(ValueError, match=r"^s must be at least 2r/3 = 20/3 for r = 10, not 5$"):
        random_partial_concentrator(10, 5, seed=0)
    with pytest.raises(ValueError, match=r"^s must be at least 2r/3 = 20 for r = 30, not 12$"):
        build_partial_concentrator(30, 12)
    with pytest.raises(TypeError, match=r"^r must be a positive integer, not 2.5$"):
        build_partial_concentrator(2.5)


def test_cascade_depth_is_constant_for_a_constant_ratio():
    depths = {len(cascade_sizes(3 * c, c)) - 1 for c in range(4, 400)}
    assert max(depths) <= 3
    assert cascade_sizes(24, 8) == [24, 16, 11, 8]
    assert cascade_sizes(8, 8) == [8]


@pytest.mark.parametrize(("r", "s"), [(24, 8), (12, 4), (36, 12), (3, 1), (16, 16)])
def test_cascade_routes_disjoint_paths(r, s):
    cascade = build_cascade(r, s)
    rng = random.Random(r * 100 + s)
    for _ in range(30):
        active = rng.sample(range(r), rng.randint(0, cascade.guaranteed))
        routing = cascade.route(active)
        assert routing.lost == []
        outputs = [routing.outputs[i] for i in active]
        assert len(set(outputs)) == len(outputs) and all(0 <= o < s for o in outputs)
        for t, stage in enumerate(cascade.stages):
            at_stage = [routing.paths[i][t] for i in active]
            assert len(set(at_stage)) == len(at_stage)  # vertex-disjoint at every stage
            for i in active:
                v, w = routing.paths[i][t], routing.paths[i][t + 1]
                assert stage.graph.adjacency[v][routing.choices[t][v]] == w


def test_congested_cascade_loses_the_excess_only():
    cascade = build_cascade(24, 8)
    routing = cascade.route(range(24))
    delivered = [o for o in routing.outputs.values() if o is not None]
    assert len(delivered) == len(set(delivered)) == 8
    assert len(routing.lost) == 16
