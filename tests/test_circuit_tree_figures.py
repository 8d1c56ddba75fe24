"""Strumpen and Krishnamurthy (2005): Figs. 3, 5 and 7 in full, m < n permutations, and the
hot-spot conjecture (sim/experiments/circuit_tree_*.py).

The numbers are checked against what does not come from the code under test: Model I's
rounds distribution enumerated ball by ball, the paper's formulas, a least-squares fit
solved by hand, the per-message reference round (:func:`circuit_rounds.round_reference`)
and facts of the network that follow from its rules (one message alone is never rejected; one node
takes one message a round; a shift by n/2 uses every wire once)."""

import itertools
import json
import math

import numpy as np
import pytest

from fattree.sim.experiments import circuit_tree_hot_spots as hot_spots
from fattree.sim.experiments.circuit_tree_fewer_messages import fewer_verdict
from fattree.sim.experiments.circuit_tree_rounds import model_one_exact_mean
from fattree.sim.fast import circuit_rounds
from fattree.sim.models import collision


def _experiment(capsys, *argv):
    from fattree.scripts.main import main

    code = main(["experiment", *argv, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def _error(capsys, *argv) -> str:
    from fattree.scripts.main import main

    try:
        code = main(["experiment", *argv])
    except SystemExit as exc:
        code = exc.code
    assert code != 0
    return capsys.readouterr().err


# -- Model I, exactly ---------------------------------------------------------------------------


def _brute_force_rounds(m: int, b: int) -> dict[int, float]:
    """Pr[rounds = t] of Model I by enumerating every toss of every round (tiny m, b)."""
    memo: dict[int, dict[int, float]] = {0: {0: 1.0}}

    def dist(r: int) -> dict[int, float]:
        if r not in memo:
            out: dict[int, float] = {}
            for toss in itertools.product(range(b), repeat=r):
                left = r - len(set(toss))
                for t, p in dist(left).items():
                    out[t + 1] = out.get(t + 1, 0.0) + p / b**r
            memo[r] = out
        return memo[r]

    return dist(m)


@pytest.mark.parametrize("m, b", [(1, 3), (2, 4), (3, 2), (4, 3), (5, 2), (3, 5)])
def test_model_one_distribution_equals_enumeration(m, b):
    got = collision.model_one_distribution(16, m, b=b, tail=1e-15)
    want = _brute_force_rounds(m, b)
    assert got.size == max(want)
    for t, p in want.items():
        assert got[t - 1] == pytest.approx(p, abs=1e-12)


def test_model_one_distribution_cases():
    # Two balls, four bins: a second round when they share a bin (1/4).
    assert collision.model_one_distribution(16, 2, b=4).tolist() == pytest.approx([0.75, 0.25])
    # One bin delivers one ball a round.
    p = collision.model_one_distribution(64, 40, b=1)
    assert p.size == 40 and p[-1] == pytest.approx(1.0)
    assert collision.model_one_distribution(2**20, 1).tolist() == [1.0]


def test_model_one_distribution_is_what_model_one_samples():
    n, m, trials = 64, 64, 4000
    rng = np.random.default_rng(12)
    sampled = np.bincount([collision.model_one_rounds(n, m, rng) for _ in range(trials)])
    p = collision.model_one_distribution(n, m)
    for t in range(1, sampled.size):
        expect = trials * p[t - 1]
        # Binomial count: within 4 standard deviations (or 5 counts where p is tiny).
        assert abs(sampled[t] - expect) <= max(4 * math.sqrt(expect * (1 - p[t - 1])), 5), t


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n": 16, "m": 17}, "m must be between 1 and 16, not 17"),
        ({"n": 2**14, "m": 8193}, "m must be between 1 and 8192, not 8193"),
        ({"n": 16, "m": 2, "b": 0}, "b must be a positive integer, not 0"),
        ({"n": 16, "m": 2, "tail": 0.0}, "tail must be a float between 0 and 1, not 0.0"),
        ({"n": 12, "m": 2}, "n must be a power of two of at least 2, not 12"),
    ],
)
def test_model_one_distribution_errors(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        collision.model_one_distribution(**kwargs)


# -- Fig. 3 -------------------------------------------------------------------------------------


def test_model_ratios(capsys):
    data = _experiment(capsys, "model-ratios", "--sizes", "4..7", "--trials", "300")
    cols = {c: i for i, c in enumerate(data["columns"])}
    assert [(r[0], r[1]) for r in data["rows"]] == [
        (16, 2),
        (32, 4),
        (64, 8),
        (128, 16),
        (16, 16),
        (32, 32),
        (64, 64),
        (128, 128),
    ]
    for row in data["rows"]:
        n, m = row[0], row[1]
        p = collision.model_one_distribution(n, m)
        exact = float(np.dot(np.arange(1, p.size + 1), p))
        sd = math.sqrt(float(np.dot(np.arange(1, p.size + 1) ** 2, p)) - exact**2)
        assert row[cols["I_exact"]] == pytest.approx(exact)
        assert abs(row[cols["I_mean"]] - exact) <= 4 * sd / math.sqrt(300) + 1e-9
        assert row[cols["I_min"]] <= row[cols["I_mean"]] <= row[cols["I_max"]]
        assert row[cols["II_min"]] <= row[cols["II_mean"]] <= row[cols["II_max"]]
        assert row[cols["Imax/IImax"]] == pytest.approx(row[cols["I_max"]] / row[cols["II_max"]])
    # The means over n of Fig. 3's horizontal lines.
    full = [r for r in data["rows"] if r[0] == r[1]]
    summary = data["ratios"]["n"]
    assert summary["I/II"]["mean"] == pytest.approx(np.mean([r[cols["I/II"]] for r in full]))
    assert summary["Imax/IImax"]["max"] == max(r[cols["Imax/IImax"]] for r in full)
    # The paper: the two models differ by a small constant factor; Model II (destinations
    # that surely collide) needs at least as many rounds on average at m = n.
    assert 0.7 <= summary["I/II"]["mean"] <= 1.0


# -- Fig. 5 -------------------------------------------------------------------------------------


def test_rounds_vs_m_at_64(capsys):
    data = _experiment(capsys, "rounds-vs-m", "--sizes", "6", "--trials", "40")
    cols = {c: i for i, c in enumerate(data["columns"])}
    rows = data["rows"]
    assert [r[1] for r in rows] == list(range(1, 65))  # every m at n = 64
    boundary = 2 * 64 / 6  # 21.3: Phase II to m = 21
    assert [r[cols["phase"]] for r in rows] == ["II"] * 21 + ["I"] * 43
    # The paper's fit lg m / 10 + m lg n / 2n + 1, by hand.
    assert rows[63][cols["paper_fit"]] == pytest.approx(0.6 + 3 + 1)
    assert rows[7][cols["paper_fit"]] == pytest.approx(0.3 + 8 * 6 / 128 + 1)
    # One message alone is never rejected.
    assert rows[0][cols["net_min"]] == rows[0][cols["net_max"]] == 1
    assert rows[0][cols["I_max"]] == 1
    # Phase II fit c1 lg m + c2 of the network's means, solved here by the slope formula.
    fits = data["fits"][0]
    assert fits["boundary"] == pytest.approx(boundary)
    two = [r for r in rows if 2 <= r[1] <= boundary]
    x = np.log2([r[1] for r in two])
    y = np.array([r[cols["net_mean"]] for r in two])
    slope = float(np.sum((x - x.mean()) * (y - y.mean())) / np.sum((x - x.mean()) ** 2))
    assert fits["phase2_net"]["c1"] == pytest.approx(slope)
    assert fits["phase2_net"]["c2"] == pytest.approx(float(y.mean() - slope * x.mean()))
    # Section 7 (5): "c1 is obviously much smaller than 1".
    assert 0 < fits["phase2_net"]["c1"] < 1


def test_rounds_vs_m_powers_of_two_and_errors(capsys):
    data = _experiment(
        capsys, "rounds-vs-m", "--sizes", "10", "--trials", "2", "--m-points", "pow2"
    )
    assert [r[1] for r in data["rows"]] == [2**k for k in range(11)]
    assert "--m-points all takes n up to 2^12, not 2^13" in _error(
        capsys, "rounds-vs-m", "--sizes", "13", "--m-points", "all"
    )


# -- Fig. 7 -------------------------------------------------------------------------------------


def _reference_rounds(n, src, dst, rng) -> int:
    """Delivery rounds with the per-message reference round and the bits random_bits draws."""
    rounds = 0
    while src.size:
        delivered = np.array(
            circuit_rounds.round_reference(n, src, dst, circuit_rounds.random_bits(n, rng))
        )
        src, dst = src[~delivered], dst[~delivered]
        rounds += 1
    return rounds


def test_shifts_every_k_equals_the_reference(capsys):
    n, trials = 16, 2
    data = _experiment(
        capsys,
        "shifts",
        "--sizes",
        "4",
        "--trials",
        str(trials),
        "--random-trials",
        "1",
        "--per-k",
        "--seed",
        "3",
    )
    assert [r[1] for r in data["rows"]] == list(range(1, n))  # every shift, not a sample
    rng = np.random.default_rng(3)
    for row in data["rows"]:
        src, dst = circuit_rounds.cyclic_shift(n, row[1])
        want = [_reference_rounds(n, src, dst, rng) for _ in range(trials)]
        assert row[3:6] == [min(want), pytest.approx(np.mean(want)), max(want)], row[1]
    # Shift by n/2 on the cycle-exact network: nothing is rejected and every path is as long as
    # the diameter's, so the last acknowledge comes when a lone diameter message's would.
    assert data["rows"][n // 2 - 1][6] == 1.0
    # Every shift sends a message across the root (node n/2 - 1 or node 0 does), and none is
    # faster than a lone one.
    assert all(r[6] >= 1.0 for r in data["rows"])
    summary = data["summary"][0]
    assert summary[2] == pytest.approx(np.mean([r[4] for r in data["rows"]]))
    assert summary[3] == min(r[3] for r in data["rows"])
    assert summary[4] == max(r[5] for r in data["rows"])


def test_shift_by_half_takes_one_round():
    # Every message turns at the root, so every up wire carries exactly one message and the
    # 2^v messages of a v-subtree reach 2^v different level-v routers: no downstream wire is
    # wanted twice.
    rng = np.random.default_rng(5)
    for h in range(1, 11):
        n = 2**h
        src, dst = circuit_rounds.cyclic_shift(n, n // 2)
        assert circuit_rounds.delivery_rounds(n, src, dst, rng).rounds == 1


def test_shifts_table(capsys):
    data = _experiment(capsys, "shifts", "--sizes", "4..6", "--trials", "1")
    cols = {c: i for i, c in enumerate(data["columns"])}
    for row in data["rows"]:
        n = row[0]
        assert row[cols["shifts"]] == n - 1
        assert row[cols["model_I"]] == pytest.approx(model_one_exact_mean(n, n))
        assert row[cols["min"]] <= row[cols["best_mean"]] <= row[cols["mean"]]
        assert row[cols["mean"]] <= row[cols["worst_mean"]] <= row[cols["max"]]
        assert row[cols["rounds/imm"]] == pytest.approx(row[cols["mean"]] / row[cols["imm_cycles"]])
    twos = data["by_trailing_zeros"]["64"]
    assert [g["twos"] for g in twos] == list(range(6))
    assert [g["shifts"] for g in twos] == [32, 16, 8, 4, 2, 1]


# -- m < n ----------------------------------------------------------------------------------------


def test_fewer_verdict():
    assert fewer_verdict([-1, -2, -1, -1]) == "fewer"
    assert fewer_verdict([0, 0, 0]) == "equal"
    assert fewer_verdict([1, 2, 1, 1]) == "more"
    assert fewer_verdict([-1, 1, 0, -1, 1]) == "not shown"


def test_fewer_messages(capsys):
    data = _experiment(
        capsys,
        "fewer-messages",
        "--sizes",
        "4..5",
        "--fractions",
        "2,32",
        "--trials",
        "6",
    )
    cols = {c: i for i, c in enumerate(data["columns"])}
    rows = data["rows"]
    # Transpose at even lg n only; the whole patterns lose their fixed points.
    assert {(r[0], r[1]) for r in rows} == {
        (16, "transpose"),
        (16, "bit-reversal"),
        (16, "shift"),
        (16, "random"),
        (32, "bit-reversal"),
        (32, "shift"),
        (32, "random"),
    }
    full = {(r[0], r[1]): r[cols["full_m"]] for r in rows}
    assert full[(16, "transpose")] == 12 and full[(32, "bit-reversal")] == 24
    assert full[(16, "shift")] == 16 == full[(16, "random")]
    for row in rows:
        f = row[cols["full_m"]]
        assert row[cols["m"]] in {f, f - 1, f // 2, max(f // 32, 0)}
        if row[cols["m"]] == 1:  # one message alone: one round
            assert row[cols["min"]] == row[cols["max"]] == 1
            assert row[cols["verdict"]] in ("fewer", "equal")
        if row[cols["m"]] == f:
            assert row[cols["diff"]] is None


def test_pattern_list_error(capsys):
    err = _error(capsys, "fewer-messages", "--patterns", "transpose,hot")
    assert "patterns must be a comma list of transpose, bit-reversal, shift, random" in err


# -- hot spots ------------------------------------------------------------------------------------


def test_hot_spot_traffic():
    rng = np.random.default_rng(2)
    src, dst = hot_spots.hot_spot_traffic(64, 10, 40, rng)
    assert src.size == 50 and len(set(src.tolist())) == 50
    assert hot_spots.SPOT not in src.tolist()
    assert (dst[:10] == hot_spots.SPOT).all() and (src != dst).all()
    with pytest.raises(ValueError, match=r"^m1 \+ mr must be at most n - 1 = 63, not 64$"):
        hot_spots.hot_spot_traffic(64, 32, 32, rng)


def test_hot_spots(capsys):
    data = _experiment(
        capsys,
        "hot-spots",
        "--sizes",
        "6",
        "--m1",
        "0,1,3,8,20",
        "--mr",
        "0,4,16,40",
        "--trials",
        "4",
    )
    cols = {c: i for i, c in enumerate(data["columns"])}
    rows = data["rows"]
    assert (0, 0) not in {(r[1], r[2]) for r in rows}
    assert all(r[1] + r[2] <= 63 for r in rows)  # (20, 40) is 60: kept
    for row in rows:
        m1, mr = row[1], row[2]
        # The spot takes one message a round: at least m1 rounds, exactly m1 without others.
        assert row[cols["min"]] >= m1
        assert row[cols["mean"]] >= row[cols["lower_bound"]] - 1e-9
        if mr == 0:
            assert row[cols["min"]] == row[cols["max"]] == m1
        assert row[cols["m1+lg_mr"]] == pytest.approx(m1 + math.log2(max(mr, 1)))
    # The conjecture's sum a m1 + b lg mr + c, solved here from the normal equations.
    a = np.array([[r[1], math.log2(max(r[2], 1)), 1.0] for r in rows])
    y = np.array([r[cols["mean"]] for r in rows])
    want = np.linalg.solve(a.T @ a, a.T @ y)
    fit = data["fits"][0]["sum"]
    assert [fit["m1"], fit["lg_mr"], fit["one"]] == pytest.approx(want.tolist())
    assert 0.9 <= fit["m1"] <= 1.1  # the sequential part costs one round a message
    assert data["fits"][0]["below_lower_bound"] == []


def test_hot_spots_errors(capsys):
    assert "expected counts (0 or more)" in _error(capsys, "hot-spots", "--m1", "-1")
    assert "no point of --m1 and --mr has 1 <= m1 + mr <= n - 1" in _error(
        capsys, "hot-spots", "--sizes", "2", "--m1", "5", "--mr", "0"
    )


def test_plots(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    for argv in (
        ["model-ratios", "--sizes", "4..5", "--trials", "2"],
        ["rounds-vs-m", "--sizes", "4,5", "--trials", "2"],
        ["shifts", "--sizes", "3..4", "--trials", "1"],
        ["fewer-messages", "--sizes", "4", "--trials", "2"],
        ["hot-spots", "--sizes", "5", "--trials", "1"],
    ):
        target = tmp_path / f"{argv[0]}.png"
        _experiment(capsys, *argv, "--plot", str(target))
        assert target.stat().st_size > 1000, argv[0]


def test_fewer_messages_edges(capsys):
    # n = 2: bit reversal maps both nodes to themselves (nothing to send), so it has no row;
    # --fractions 1 would be the whole pattern again and is left out.
    data = _experiment(capsys, "fewer-messages", "--sizes", "1", "--fractions", "1,2")
    assert {r[1] for r in data["rows"]} == {"shift", "random"}
    assert all(r[2] < r[3] for r in data["rows"] if r[7] is not None)


def test_model_ratios_without_points(capsys):
    err = _error(capsys, "model-ratios", "--sizes", "1..2", "--messages", "n/8")
    assert "no size has m = n/8 >= 1: --messages n/8 needs n >= 8 (--sizes 3..)" in err
