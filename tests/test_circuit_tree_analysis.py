"""Strumpen and Krishnamurthy (2005), sections 4-6: the table Pr[k, i, j], equations (1)-(5),
the Phase I/II success probabilities and Theorem 1's rounds, against the paper's formulas,
hand computations, brute force and the network (fast simulator)."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest

from fattree.scripts import main as cli
from fattree.sim.experiments import Result
from fattree.sim.experiments import circuit_tree_collision_table as collision_table
from fattree.sim.experiments.circuit_tree_rounds_tail import rounds_chi2
from fattree.sim.experiments.circuit_tree_sampling import (
    CHECK_Z,
    chi2_sf,
    network_pairs_collide,
    wilson,
)
from fattree.sim.fast import circuit_rounds
from fattree.sim.models import balls_bins as bb
from fattree.sim.models import collision

# -- equations (1)-(2) -------------------------------------------------------------------------


def test_table_cells_by_hand():
    # Row i = k, j < k: (j + 2)/2^(i+1); the paper's example i = k = 2, j = 1 -> 3/8.
    assert bb.pr_kij(2, 2, 1) == Fraction(3, 8)
    # Column j = k, i < k: (i + 2)/2^(k+1).
    assert bb.pr_kij(3, 1, 3) == Fraction(3, 16)
    # Diagonal i = j > k: (k + 2)/2^(i+1); k = 0, i = j = 3 -> 1/8.
    assert bb.pr_kij(0, 3, 3) == Fraction(1, 8)
    # The zero cases of section 4: i, j < k; i = k = j (criss-cross); i > k > j; i > j > k.
    for cell in [(3, 2, 1), (2, 2, 2), (2, 3, 1), (1, 3, 2), (1, 2, 3)]:
        assert bb.pr_kij(*cell) == 0


@pytest.mark.parametrize("h", range(1, 13))
def test_equation_one_sums_to_lemma_one(h):
    n = 2**h
    assert bb.pr_c2_from_table(n) == bb.pr_c2_fraction(n)
    assert float(bb.pr_c2_fraction(n)) == pytest.approx(collision.pr_c2(n), rel=1e-12, abs=1e-15)
    for k in range(h):  # section 4's closed form of one k's double sum
        assert bb.row_sum(n, k) == k * 2**k + Fraction(k + 2, 2) * (n - 2 ** (k + 1))


def test_cells_partition_the_sample_space():
    n = 16
    events = [
        e for k, i, j in itertools.product(range(4), repeat=3) for e in bb.cell_members(n, k, i, j)
    ]
    assert len(events) == len(set(events)) == (n - 1) ** 3
    assert (
        sum(bb.cell_weight(k, i, j) for k, i, j in itertools.product(range(4), repeat=3))
        == (n - 1) ** 3
    )


@pytest.mark.parametrize("n", [4, 8, 16])
def test_network_equals_equation_two_in_every_cell(n):
    h = n.bit_length() - 1
    for cell in itertools.product(range(h), repeat=3):
        assert bb.pr_kij_network(n, *cell) == pytest.approx(float(bb.pr_kij(*cell)), abs=1e-12)


def test_renumbering_holds_in_rows_and_diagonal_not_columns():
    # The proof fixes m2's source and destination by "renumbering": every (s2, d2) of a row
    # or diagonal cell collides equally often; a column cell only on average.
    row = bb.pr_kij_network(16, 3, 3, 1, per_pair=True)
    diagonal = bb.pr_kij_network(16, 1, 3, 3, per_pair=True)
    column = bb.pr_kij_network(16, 3, 1, 3, per_pair=True)
    assert set(np.round(list(row.values()), 12)) == {0.1875}
    assert set(np.round(list(diagonal.values()), 12)) == {0.1875}
    assert set(np.round(list(column.values()), 12)) == {0.0, 0.75}
    assert np.mean(list(column.values())) == pytest.approx(0.1875)


def test_packed_trials_equal_separate_networks():
    # A trial in its own subtree of the big tree is a small tree with the matching bits.
    rng = np.random.default_rng(3)
    n0, blocks = 16, 8
    pairs = collision_table.sample_cell(n0, 2, 3, 3, blocks, rng)
    big = n0 * blocks
    bits = circuit_rounds.random_bits(big, rng)
    t = np.arange(blocks)
    src = np.concatenate([pairs[:, 0], pairs[:, 2]]) + np.concatenate([t, t]) * n0
    dst = np.concatenate([pairs[:, 1], pairs[:, 3]]) + np.concatenate([t, t]) * n0
    packed = circuit_rounds.round_fast(big, src, dst, bits)
    for b in range(blocks):
        own = bits[:4, b * n0 // 2 : (b + 1) * n0 // 2]
        alone = circuit_rounds.round_fast(n0, pairs[b, [0, 2]], pairs[b, [1, 3]], own)
        assert list(alone) == [packed[b], packed[blocks + b]]


def test_simulated_cells_agree_with_the_table():
    rng = np.random.default_rng(11)
    for cell in [(2, 3, 3), (3, 3, 1), (3, 1, 3), (1, 1, 0)]:
        pairs = collision_table.sample_cell(16, *cell, 4000, rng)
        hits = int(network_pairs_collide(16, pairs, rng).sum())
        lo, hi = wilson(hits, 4000, z=CHECK_Z)  # 99.9 %: four cells, one seed
        assert lo <= float(bb.pr_kij(*cell)) <= hi, cell
    # A zero cell never collides (criss-cross, i = k = j).
    pairs = collision_table.sample_cell(16, 2, 2, 2, 2000, rng)
    assert not network_pairs_collide(16, pairs, rng).any()
    # Same destination: always.
    same = np.array([[0, 6, 3, 6], [5, 9, 12, 9]])
    assert network_pairs_collide(16, same, rng).all()


# -- equations (3)-(5) -------------------------------------------------------------------------


def _stirling2(m: int, d: int) -> int:
    return sum((-1) ** i * math.comb(d, i) * (d - i) ** m for i in range(d + 1)) // math.factorial(
        d
    )


@pytest.mark.parametrize("m, b", [(1, 1), (4, 3), (5, 5), (6, 2), (3, 7), (0, 3)])
def test_occupancy_by_brute_force_and_stirling(m, b):
    counts = np.zeros(min(m, b) + 1)
    for outcome in itertools.product(range(b), repeat=m):
        counts[len(set(outcome))] += 1
    assert bb.occupancy(m, b) == pytest.approx(counts / b**m, abs=1e-15)
    for d in range(min(m, b) + 1):
        surjective = math.comb(b, d) * math.factorial(d) * _stirling2(m, d)
        assert bb.occupancy(m, b)[d] == pytest.approx(surjective / b**m, abs=1e-15)


def test_equations_three_to_five_by_hand():
    # Two balls, four bins: one bin empty-or-not each with (3/4)^2.
    assert bb.expected_empty(2, 4) == pytest.approx(2.25)
    assert bb.expected_delivered(2, 4) == pytest.approx(1.75)
    assert bb.expected_rejected(2, 4) == pytest.approx(0.25)
    for m, b in itertools.product([1, 2, 7, 50, 400], [1, 3, 21, 205]):
        p = bb.occupancy(m, b)
        d = np.arange(p.size)
        assert bb.expected_delivered(m, b) == pytest.approx(float(p @ d), rel=1e-9, abs=1e-9)
        assert bb.var_empty(m, b) == pytest.approx(
            float(p @ d**2) - float(p @ d) ** 2, rel=1e-6, abs=1e-9
        )
        empty, delivered, rejected = bb.bounds_3_to_5(m, b)  # the paper's inequalities
        assert bb.expected_empty(m, b) <= empty + 1e-12
        assert bb.expected_delivered(m, b) >= delivered - 1e-12
        assert bb.expected_rejected(m, b) <= rejected + 1e-12


def test_toss_samples_the_occupancy_distribution():
    rng = np.random.default_rng(2)
    m, b, trials = 30, 21, 20000
    samples = bb.toss(m, b, trials, rng)
    p = bb.occupancy(m, b)
    counts = np.bincount(samples, minlength=p.size)
    keep = p * trials >= 5
    expect = p[keep] * trials
    stat = float((((counts[keep] - expect) ** 2) / expect).sum())
    assert chi2_sf(stat, int(keep.sum()) - 1) > 0.001
    z = (samples.mean() - bb.expected_delivered(m, b)) / math.sqrt(bb.var_empty(m, b) / trials)
    assert abs(z) < CHECK_Z


# -- Phases I and II, Theorem 1 ----------------------------------------------------------------


def test_phase_success_by_hand():
    # n = 8: b = 5. Phase I, m = 6: fails only if all six share a bin (one delivered, not
    # more than 5 (1 - 2/e) = 1.32): 5 / 5^6.
    assert collision.bins(8) == 5
    phase, p = bb.phase_success(6, 5)
    assert phase == "I" and 1 - p == pytest.approx(5 / 5**6)
    # Phase II, m = 3 in b = 4: fails (fewer than 1.5 delivered) if all three share a bin.
    phase, p = bb.phase_success(3, 4)
    assert phase == "II" and p == pytest.approx(1 - 4 / 4**3)


@pytest.mark.parametrize("h", range(2, 11))
def test_phase_success_at_least_the_proofs_constants(h):
    n = 2**h
    b = collision.bins(n)
    dists = bb.occupancies(n, b)
    for m in range(2, n + 1):
        d = np.arange(dists[m].size)
        if m > b:
            p = float(dists[m][(b - d) < 2 * b / math.e].sum())
            assert p >= bb.phase_success_bound(m, b) - 1e-12 >= bb.P_PHASE_ONE - 1e-12
        else:
            p = float(dists[m][d >= m / 2].sum())
            assert p >= bb.phase_success_bound(m, b) - 1e-12 >= bb.P_PHASE_TWO - 1e-12


def test_rounds_tail_by_hand():
    # Two balls: a collision still delivers one, so never more than two rounds.
    assert list(bb.rounds_tail(2, 10)) == pytest.approx([1.0, 0.1, 0.0])
    # One bin delivers one ball per round: exactly m rounds.
    assert list(bb.rounds_tail(4, 1)) == [1.0, 1.0, 1.0, 1.0, 0.0]


def test_rounds_tail_equals_model_one():
    # The exact chain against the project's Model I (sim/models/collision.py), sampled.
    rng = np.random.default_rng(4)
    n, m = 256, 256
    b = collision.bins(n)
    tail = bb.rounds_tail(m, b)
    samples = np.array([collision.model_one_rounds(n, m, rng) for _ in range(3000)])
    assert samples.mean() == pytest.approx(tail[:-1].sum(), abs=0.05)
    _stat, _df, p = rounds_chi2(samples, tail)
    assert p > 0.001


def test_proof_rounds_by_hand():
    eps = 0.01
    r = bb.proof_rounds(1024, 1024, eps)
    assert r.b == 205
    s1 = (1024 / 205 - 1) / (1 - 2 / math.e)  # equation (6)
    assert r.s1 == pytest.approx(s1)
    assert r.r1 == pytest.approx(2 * (2 * s1 - 4 * math.log(eps / 2)))
    assert r.s2 == 8  # floor(lg 205) + 1
    assert r.r2 == pytest.approx((2 * 8 - 4 * math.log(eps / 2)) / (1 - 2 / math.e))
    assert r.total == math.ceil(r.r1 + r.r2)
    small = bb.proof_rounds(1024, 16, eps)  # Phase II only
    assert small.r1 == 0 and small.s2 == 5


@pytest.mark.parametrize("h", range(2, 13))
def test_phase_one_bound_seven(h):
    # Equation (7): with m/lg m <= n/lg n, Phase I's rounds are at most
    # 2 (2/(1-2/e) (lg m/2 - 1) - 4 ln eps') for every m > b (b = 2n/lg n unrounded there;
    # with the rounded b the slack is below one round's worth).
    n = 2**h
    for m in range(collision.bins(n) + 1, n + 1, max(1, n // 64)):
        r = bb.proof_rounds(n, m, 0.1)
        seven = 2 * (2 / (1 - 2 / math.e) * (math.log2(m) / 2 - 1) - 4 * math.log(0.05))
        assert r.r1 <= seven + 4 / (1 - 2 / math.e)


@pytest.mark.parametrize("n, m", [(16, 16), (64, 5), (64, 64), (1024, 1024), (4096, 4096)])
def test_theorem_one_holds_for_model_one(n, m):
    tail = bb.rounds_tail(m, collision.bins(n))
    for eps in (0.5, 0.01, 1e-6):
        total = bb.proof_rounds(n, m, eps).total
        assert (tail[total] if total < tail.size else 0.0) <= eps


# -- statistics helpers ------------------------------------------------------------------------


def test_chi2_sf_against_closed_forms():
    for x in (0.1, 1.0, 3.84, 10.0, 40.0):
        assert chi2_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-9)
        for k in (1, 2, 5, 15):  # even df: e^(-x/2) sum_{i<k} (x/2)^i / i!
            closed = math.exp(-x / 2) * sum((x / 2) ** i / math.factorial(i) for i in range(k))
            assert chi2_sf(x, 2 * k) == pytest.approx(closed, rel=1e-9)
    assert chi2_sf(0, 3) == 1.0


def test_wilson():
    assert wilson(0, 1000)[0] == 0 and wilson(7, 7)[1] == 1
    lo, hi = wilson(0, 10)
    assert lo == 0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson(50, 100)
    assert 0.5 - lo == pytest.approx(hi - 0.5) and hi == pytest.approx(0.5962, abs=1e-4)


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (lambda: bb.pr_kij(-1, 0, 0), ValueError, "k must be at least 0, not -1"),
        (lambda: bb.pr_kij_network(8, 0, 3, 0), ValueError, "i must be between 0 and 2, not 3"),
        (lambda: bb.occupancy(2, 0), ValueError, "b must be a positive integer, not 0"),
        (
            lambda: bb.proof_rounds(16, 4, 0.0),
            ValueError,
            r"eps must be between 0 and 1 \(exclusive\), not 0.0",
        ),
        (
            lambda: bb.proof_rounds(16, 4, True),
            TypeError,
            "eps must be a number between 0 and 1, not True",
        ),
        (lambda: bb.proof_rounds(16, 17, 0.1), ValueError, "m must be between 1 and 16, not 17"),
        (lambda: bb.phase_success(1, 4), ValueError, "m must be at least 2, not 1"),
        (lambda: bb.rounds_tail(10**5, 10**5), ValueError, "m and b too large .*"),
    ],
)
def test_errors(call, exc, message):
    with pytest.raises(exc, match=f"^{message}$"):
        call()


# -- the experiments, end to end ---------------------------------------------------------------


def _run(capsys, *argv) -> dict:
    assert cli.main(["experiment", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_experiment_pr_table(capsys, tmp_path):
    out = _run(
        capsys, "sk-pr-table", "--lg-n", "3", "--trials", "1500", "--plot", str(tmp_path / "t.png")
    )
    assert out["eq1_sum"] == out["lemma1"] == str(bb.pr_c2_fraction(8))
    assert out["exact_differ"] == [] and out["row_sums_ok"]
    assert out["zero_cell_collisions"] == 0 and out["p_value"] > 0.001
    cols = out["columns"]
    for row in out["rows"]:
        cell = dict(zip(cols, row, strict=True))
        assert cell["net_exact"] == pytest.approx(cell["paper_f"])
    assert (tmp_path / "t.png").stat().st_size > 0


def test_experiment_expectations(capsys, tmp_path):
    out = _run(
        capsys,
        "sk-expectations",
        "--sizes",
        "4",
        "--trials",
        "4000",
        "--network-trials",
        "20",
        "--plot",
        str(tmp_path / "e.png"),
    )
    assert out["max_abs_z"] < CHECK_Z
    cols = out["columns"]
    for row in out["rows"]:
        r = dict(zip(cols, row, strict=True))
        assert r["b"] == 8 and r["E[D]"] == pytest.approx(bb.expected_delivered(r["m"], 8))
        assert r["E[b_e]"] <= r["be_bound"] and r["E[D]"] >= r["D_bound"]
        assert 0 < r["net_D"] <= r["m"]


def test_experiment_phases(capsys, tmp_path):
    out = _run(
        capsys,
        "sk-phases",
        "--sizes",
        "3,4",
        "--trials",
        "2000",
        "--network-trials",
        "50",
        "--plot",
        str(tmp_path / "p.png"),
    )
    assert out["below"] == []
    cols = out["columns"]
    for row in out["rows"]:
        r = dict(zip(cols, row, strict=True))
        assert r["exact"] == pytest.approx(bb.phase_success(r["m"], r["b"])[1])
        assert r["exact"] + r["exact_fail"] == pytest.approx(1)
        assert r["sim_lo"] <= r["exact"] <= r["sim_hi"] or r["exact"] > 0.999


def test_experiment_rounds_tail(capsys, tmp_path):
    out = _run(
        capsys,
        "sk-rounds-tail",
        "--lg-n",
        "6",
        "--messages",
        "2,b,n",
        "--eps",
        "0.5,0.1,1e-9",
        "--trials",
        "1000",
        "--network-trials",
        "100",
        "--plot",
        str(tmp_path / "r.svg"),
    )
    cols = out["columns"]
    b = collision.bins(64)
    for row in out["rows"]:
        r = dict(zip(cols, row, strict=True))
        assert r["m"] in (2, b, 64)
        assert r["proof"] == bb.proof_rounds(64, r["m"], r["eps"]).total
        assert r["q_exact"] <= r["proof"] and r["Pr_beyond"] <= r["eps"]
        if r["eps"] == 0.5:
            assert r["q_model"] is not None and abs(r["q_model"] - r["q_exact"]) <= 1
    assert all(f["p"] > 0.001 for f in out["fits"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["sk-rounds-tail", "--eps", "2"], "epsilons in (0, 1)"),
        (["sk-rounds-tail", "--messages", "x"], "message counts"),
        (["sk-rounds-tail", "--lg-n", "4", "--messages", "17"], "at most n = 16"),
        (["sk-phases", "--network-trials", "-1"], "expected an integer in 0..10000000"),
        (["sk-pr-table", "--trials", "1000000000000"], "expected an integer in 1..10000000"),
        (["sk-pr-table", "--lg-n", "13"], "invalid choice"),
    ],
)
def test_experiment_bad_options(capsys, argv, message):
    try:
        code = cli.main(["experiment", *argv])
    except SystemExit as exc:
        code = exc.code
    assert code != 0
    assert message in capsys.readouterr().err.splitlines()[-1]


def test_table_plot_with_a_cell_never_hit(tmp_path):
    # Wilson's lower end at 0 hits can come out a hair above 0 (found at --lg-n 8).
    row = [0, 7, 7, 2**14, "1/128", 1 / 128, None, 0.0, 2.2e-19, 0.0038]
    result = Result("sk-pr-table", {}, [], [row, row])
    import matplotlib

    matplotlib.use("Agg")
    collision_table._plot(result, str(tmp_path / "zero.png"))
    assert (tmp_path / "zero.png").stat().st_size > 0
