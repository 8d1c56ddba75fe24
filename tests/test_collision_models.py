"""Lemma 1, Models I and II, and the fast round-based simulator (Strumpen and Krishnamurthy)."""

import itertools
import random

import numpy as np
import pytest

from fattree.sim.fast import circuit_rounds
from fattree.sim.models import collision

# -- Lemma 1 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [4, 8, pytest.param(16, marks=pytest.mark.slow)])
def test_closed_form_equals_exact_enumeration(n):
    assert collision.pr_c2_exact(n) == pytest.approx(collision.pr_c2(n), abs=1e-12)


@pytest.mark.parametrize("n", [4, 8])
def test_fixing_the_first_source_loses_nothing(n):
    # The paper fixes m1's source at node 0 "without loss of generality"; check it.
    assert collision.pr_c2_exact(n, all_sources=True) == pytest.approx(
        collision.pr_c2_exact(n), abs=1e-12
    )


def test_closed_form_values():
    # (n^2 (lg n / 2 - 2/3) + 2/3) / (n - 1)^3 by hand: n = 4 -> (16 * 1/3 + 2/3) / 27 = 2/9.
    assert collision.pr_c2(4) == pytest.approx(2 / 9)
    assert collision.pr_c2(8) == pytest.approx((64 * (3 / 2 - 2 / 3) + 2 / 3) / 343)
    assert collision.pr_c2(2) == pytest.approx(0, abs=1e-12)


def test_bounds_hold_from_four_nodes_but_not_at_two():
    for h in range(2, 21):
        lo, hi = collision.pr_c2_bounds(2**h)
        assert lo <= collision.pr_c2(2**h) <= hi
    # n = 2: the two messages 0 -> 1 and 1 -> 0 never collide, below the lower bound 1/6.
    assert collision.pr_c2_exact(2) == 0 < collision.pr_c2_bounds(2)[0]


def test_monte_carlo_interval_contains_the_exact_value():
    est = collision.pr_c2_monte_carlo(16, 100_000, np.random.default_rng(7))
    assert est.low <= collision.pr_c2_exact(16) <= est.high
    assert est.high - est.low < 0.005


def test_collision_cases_from_the_proof():
    # Same destination: always (on the leaf link at the latest).
    assert collision.collide(6, 2, (0, 1), 6, 1, (1,))
    # Criss-cross (i = k = j): 0 -> 5 and 4 -> 1 share no downstream wire, whatever the ports.
    for p, q in itertools.product(itertools.product((0, 1), repeat=2), repeat=2):
        assert not collision.collide(5, 2, p, 1, 2, q)
    # 0 -> 9 and 1 -> 8 (k = 0) share the leaf router, so their up ports differ: no collision.
    for _weight, p1, p2 in collision._joint_port_choices(16, 0, 3, 1, 3):
        assert p1[0] != p2[0]
        assert not collision.collide(9, 3, p1, 8, 3, p2)
    # 0 -> 9 and 2 -> 8 (k = 1): they collide exactly when their level-0 up ports agree.
    outcomes = collision._joint_port_choices(16, 0, 3, 2, 3)
    hit = sum(w for w, p1, p2 in outcomes if collision.collide(9, 3, p1, 8, 3, p2))
    assert hit == pytest.approx(1 / 2)


def test_bins():
    assert collision.bins(16) == 8
    assert collision.bins(2**20) == round(2**21 / 20)


# -- Models I and II ----------------------------------------------------------------------------


def test_model_one_single_bin_delivers_one_per_round():
    rng = np.random.default_rng(1)
    assert collision.model_one_rounds(64, 40, rng, b=1) == 40
    assert collision.model_two_rounds(64, 40, rng, b=1) == 40


def test_model_one_single_message():
    assert collision.model_one_rounds(64, 1, np.random.default_rng(1)) == 1


def test_model_one_two_balls_four_bins():
    # Two balls, four bins: same bin with probability 1/4 -> 2 rounds, else 1.
    rng = np.random.default_rng(3)
    rounds = [collision.model_one_rounds(16, 2, rng, b=4) for _ in range(4000)]
    assert set(rounds) == {1, 2}
    assert np.mean(rounds) - 1 == pytest.approx(0.25, abs=0.03)


def test_model_two_without_collisions_is_the_critical_path():
    # With (practically) infinitely many collision bins only a destination's own messages
    # collide, so the rounds equal the largest destination bin of the destination toss.
    seed, n, m = 11, 32, 32
    counts = np.bincount(np.random.default_rng(seed).integers(0, n, m), minlength=n)
    rounds = collision.model_two_rounds(n, m, np.random.default_rng(seed), b=2**62)
    assert rounds == counts.max() > 1


def test_model_one_expected_deliveries_first_round():
    # E[D] = b (1 - (1 - 1/b)^m) (equation 4): check Model I's first round against it.
    n, m, b = 64, 30, 10
    rng = np.random.default_rng(5)
    first = []
    for _ in range(3000):
        first.append(np.count_nonzero(np.bincount(rng.integers(0, b, m), minlength=b)))
    assert np.mean(first) == pytest.approx(b * (1 - (1 - 1 / b) ** m), rel=0.02)
    assert collision.model_one_rounds(n, m, rng, b=b) >= 3  # 30 balls, 10 bins


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (
            lambda r: collision.model_one_rounds(6, 2, r),
            ValueError,
            "n must be a power of two of at least 2, not 6",
        ),
        (
            lambda r: collision.model_one_rounds(8, 9, r),
            ValueError,
            "m must be between 1 and 8, not 9",
        ),
        (
            lambda r: collision.model_two_rounds(8, 0, r),
            ValueError,
            "m must be between 1 and 8, not 0",
        ),
        (
            lambda r: collision.model_one_rounds(8, 2, r, b=0),
            ValueError,
            "b must be a positive integer, not 0",
        ),
        (lambda r: collision.pr_c2(1), ValueError, "n must be a power of two of at least 2, not 1"),
    ],
)
def test_model_parameter_errors(call, exc, message):
    with pytest.raises(exc, match=f"^{message}$"):
        call(np.random.default_rng(0))


# -- the fast simulator -------------------------------------------------------------------------


def test_fast_round_equals_per_message_reference():
    rng = np.random.default_rng(2024)
    rejected = 0
    for trial in range(240):
        n = 2 ** int(rng.integers(1, 7))
        m = int(rng.integers(1, n + 1))
        src, dst = circuit_rounds.random_traffic(n, m, rng)
        bits = circuit_rounds.random_bits(n, rng)
        payload = [None, 1, 3, 8][trial % 4]
        fast = circuit_rounds.round_fast(n, src, dst, bits, payload)
        ref = circuit_rounds.round_reference(n, src, dst, bits, payload)
        assert fast.tolist() == ref, (n, src.tolist(), dst.tolist(), payload)
        rejected += m - sum(ref)
    assert rejected > 100  # the comparison covered plenty of collisions


def test_fast_round_equals_reference_on_patterns():
    rng = np.random.default_rng(9)
    for src, dst in [
        circuit_rounds.transpose(64),
        circuit_rounds.bit_reversal(32),
        circuit_rounds.cyclic_shift(64, 5),
    ]:
        for payload in (None, 2):
            n = 64 if src.size > 32 else 32
            bits = circuit_rounds.random_bits(n, rng)
            got = circuit_rounds.round_fast(n, src, dst, bits, payload).tolist()
            assert got == circuit_rounds.round_reference(n, src, dst, bits, payload)


def test_two_messages_to_one_destination_collide():
    rng = np.random.default_rng(1)
    for _ in range(20):
        delivered = circuit_rounds.round_fast(
            16, [3, 12], [7, 7], circuit_rounds.random_bits(16, rng)
        )
        assert delivered.sum() == 1


def test_release_by_acknowledge_lets_a_later_message_through():
    # 6 -> 7 turns at level 0 and claims 7's link at cycle 0; 0 -> 7 claims it at cycle 8.
    # With one data word the first circuit is gone by cycle 0 + 1 + 4 = 5 < 8: both arrive.
    rng = np.random.default_rng(1)
    bits = circuit_rounds.random_bits(8, rng)
    assert circuit_rounds.round_fast(8, [6, 0], [7, 7], bits, payload=1).tolist() == [True, True]
    assert circuit_rounds.round_fast(8, [6, 0], [7, 7], bits, payload=None).tolist() == [
        True,
        False,
    ]


def test_criss_cross_and_exchange_never_collide():
    rng = np.random.default_rng(4)
    for _ in range(20):
        bits = circuit_rounds.random_bits(16, rng)
        assert circuit_rounds.round_fast(16, [0, 1], [1, 0], bits).all()
        assert circuit_rounds.round_fast(16, [0, 9], [9, 0], bits).all()


def test_hot_spot_delivers_one_message_per_round():
    n = 32
    src = np.arange(1, n)
    res = circuit_rounds.delivery_rounds(
        n, src, np.zeros(n - 1, dtype=np.int64), np.random.default_rng(1)
    )
    assert res.rounds == n - 1
    assert res.delivered_per_round == [1] * (n - 1)


def test_every_round_delivers_something():
    rng = np.random.default_rng(8)
    src, dst = circuit_rounds.random_traffic(256, 256, rng)
    res = circuit_rounds.delivery_rounds(256, src, dst, rng)
    assert min(res.delivered_per_round) >= 1
    assert sum(res.delivered_per_round) == 256


def test_patterns():
    src, dst = circuit_rounds.transpose(16)
    assert dict(zip(src.tolist(), dst.tolist(), strict=True))[0b0111] == 0b1101
    assert 0b0101 not in src.tolist()  # fixed point: no message
    src, dst = circuit_rounds.bit_reversal(8)
    assert dict(zip(src.tolist(), dst.tolist(), strict=True))[0b001] == 0b100
    src, dst = circuit_rounds.cyclic_shift(8, 3)
    assert dst.tolist() == [3, 4, 5, 6, 7, 0, 1, 2]
    # Odd lg n: one rule everywhere, the address rotated by lg n // 2 bits (0b011 -> 0b110).
    src, dst = circuit_rounds.transpose(8)
    assert dict(zip(src.tolist(), dst.tolist(), strict=True))[0b011] == 0b101


@pytest.mark.parametrize("leaves", [8, 16, 32])
@pytest.mark.parametrize("pattern", ["transpose", "bit-reversal"])
def test_patterns_agree_between_fast_simulator_and_exact_model(leaves, pattern):
    from fattree.sim.models.circuit import traffic

    queues = traffic(pattern, leaves, 1, 1, random.Random(0))
    exact = {p: q[0][0] for p, q in enumerate(queues) if q}
    make = circuit_rounds.transpose if pattern == "transpose" else circuit_rounds.bit_reversal
    src, dst = make(leaves)
    assert dict(zip(src.tolist(), dst.tolist(), strict=True)) == exact


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: circuit_rounds.cyclic_shift(8, 0), "k must be between 1 and 7, not 0"),
        (
            lambda: circuit_rounds.round_fast(8, [1], [1], np.zeros((3, 4), np.uint8)),
            "a message's source and destination must differ",
        ),
        (
            lambda: circuit_rounds.round_fast(8, [1, 1], [2, 3], np.zeros((3, 4), np.uint8)),
            r"sources must be distinct \(one transmission per node at a time\)",
        ),
        (
            lambda: circuit_rounds.random_traffic(8, 9, np.random.default_rng()),
            "m must be between 1 and 8, not 9",
        ),
    ],
)
def test_circuit_rounds_errors(call, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        call()


# -- the experiments from the command line ------------------------------------------------------


def _experiment(capsys, *argv):
    import json

    from fattree.scripts.main import main

    code = main(["experiment", *argv, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_experiment_collision_probability(capsys, tmp_path):
    data = _experiment(capsys, "collision-probability", "--sizes", "2..6", "--samples", "20000")
    rows = {r[0]: r for r in data["rows"]}
    assert rows[8][5] == "exact" and rows[8][2] == pytest.approx(collision.pr_c2(8))
    assert rows[64][5].startswith("mc")
    assert rows[64][3] <= rows[64][2] <= rows[64][4]


def test_experiment_delivery_rounds_and_patterns(capsys, tmp_path):
    data = _experiment(capsys, "delivery-rounds", "--sizes", "4..6", "--trials", "2")
    assert [(r[0], r[1]) for r in data["rows"]] == [
        (16, 2),
        (32, 4),
        (64, 8),
        (16, 16),
        (32, 32),
        (64, 64),
    ]
    for row in data["rows"]:
        assert row[2] <= row[3] <= row[4] and row[8] <= row[9] <= row[10]
    data = _experiment(capsys, "delivery-rounds", "--vs-m", "5", "--trials", "1")
    assert [r[1] for r in data["rows"]] == [2, 4, 8, 16, 32]
    data = _experiment(capsys, "patterns", "--sizes", "4", "--trials", "1", "--shifts", "3")
    assert [r[1] for r in data["rows"]] == [
        "model I (random)",
        "transpose",
        "bit reversal",
        "cyclic shift (3 k)",
    ]


def test_experiment_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "rounds.png"
    _experiment(
        capsys, "delivery-rounds", "--sizes", "4..5", "--trials", "1", "--plot", str(target)
    )
    assert target.stat().st_size > 1000


def test_experiment_bad_sizes(capsys):
    from fattree.scripts.main import main

    with pytest.raises(SystemExit):
        main(["experiment", "delivery-rounds", "--sizes", "0..3"])
    assert "sizes must be lg n values in 1..24, not '0..3'" in capsys.readouterr().err


def test_scratch_reused_across_rounds_equals_reference():
    # delivery_rounds reuses one Scratch; leftovers of earlier rounds must not matter.
    rng = np.random.default_rng(77)
    for payload in (None, 2):
        scratch = circuit_rounds.Scratch(32)
        for _ in range(12):
            src, dst = circuit_rounds.random_traffic(32, 32, rng)
            bits = circuit_rounds.random_bits(32, rng)
            got = circuit_rounds.round_fast(32, src, dst, bits, payload, scratch).tolist()
            assert got == circuit_rounds.round_reference(32, src, dst, bits, payload)


def test_fixed_destinations_are_the_spec_patterns():
    from fattree.spec.traffic import destination

    assert [destination("transpose", p, 4) for p in (0b0001, 0b0110)] == [0b0100, 0b1001]
    assert destination("shift", 7, 3, shift=2) == 1 and destination("hotspot", 5, 3) == 0
    with pytest.raises(ValueError, match=r"^pattern must be one of transpose, bit-reversal, "):
        destination("random", 1, 3)
