"""Functional coverage: the counting (sim/coverage.py), the circuit tree model's cover points,
and ``fattree sim --coverage``'s refusals."""

import random

import pytest

from fattree.scripts.main import main
from fattree.sim.coverage import Coverage, CoverPoint, coverage_table
from fattree.sim.models.circuit_fast import CircuitFastTreeModel


def test_hits_holes_and_the_report():
    cov = Coverage(
        [CoverPoint("fate", ("done", "rejected"), "why"), CoverPoint("w", ("full",), "")]
    )
    cov.hit("fate", "done")
    cov.hit("fate", "done")
    assert cov.holes() == ["fate:rejected", "w:full"]
    report = cov.as_dict()
    assert report["bins"] == 3 and report["hit"] == 1
    assert report["points"]["fate"] == {"why": "why", "bins": {"done": 2, "rejected": 0}}
    table = coverage_table(report)
    assert table.splitlines()[0] == "coverage: 1 of 3 bins hit"
    assert "fate  done 2, rejected HOLE" in table
    with pytest.raises(KeyError, match="no cover bin fate:lost"):
        cov.hit("fate", "lost")  # a model out of step with its declaration fails loudly


def _run(model, steps=3000, seed=5):
    """Random offered traffic (any destination) and receivers ready 70 % of the cycles."""
    rng = random.Random(seed)
    n, outputs = model.leaves, []
    for _ in range(steps):
        valid = [int(rng.random() < 0.5) for _ in range(n)]
        dest = [rng.randrange(n) for _ in range(n)]
        data = [rng.getrandbits(16) for _ in range(n)]
        ready = [int(rng.random() < 0.7) for _ in range(n)]
        outputs.append(model.step(valid, dest, data, ready))
    return outputs


def test_counting_does_not_change_the_model():
    plain = CircuitFastTreeModel(leaves=8)
    counted = CircuitFastTreeModel(leaves=8)
    coverage = counted.start_coverage()
    assert _run(plain) == _run(counted)
    report = coverage.as_dict()
    assert report["hit"] > 0.8 * report["bins"]
    # Every attempt gets one fate; every message done was done at one attempt and one level.
    points = report["points"]
    fates = points["fate"]["bins"]
    assert fates["done"] + fates["rejected"] == sum(counted.attempts) - _in_flight(counted)
    assert sum(points["attempts"]["bins"].values()) == fates["done"]
    assert sum(points["turn"]["bins"].values()) == fates["done"]


def _in_flight(model) -> int:
    return sum(len(ni.flight) for ni in model.nis)


def test_the_points_follow_the_tree_size():
    names = [p.name for p in CircuitFastTreeModel(leaves=16).cover_points()]
    assert [n for n in names if n.startswith("claims/")] == ["claims/L0", "claims/L1", "claims/L2"]
    top = {p.name: p.bins for p in CircuitFastTreeModel(leaves=16).cover_points()}
    assert top["down/L3"] == ("granted",) and top["heads/L3"] == ("1", "2")
    two = {p.name: p.bins for p in CircuitFastTreeModel(leaves=2).cover_points()}
    assert two["down/L0"] == ("granted", "dropped: claimed")
    assert two["claims/L0"] == ("turn over turn",)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["circuit-tree", "--ports", "axis"], "design circuit-tree has no cover points yet on its"),
    ],
)
def test_coverage_refused_where_there_are_no_cover_points(capsys, tmp_path, argv, message):
    assert main(["sim", *argv, "--coverage", "--build-root", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"fattree sim: error: {message}")
