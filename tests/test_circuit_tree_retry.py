"""``fattree experiment retry-strategies``: the numbers against the cycle-exact model run
independently here, the protocol's timing and the paper's hot-spot lower bound."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fattree.scripts.main import main
from fattree.sim.experiments.circuit_tree_retry import PATTERNS, batch
from fattree.sim.fast.circuit_rounds import delivery_rounds
from fattree.sim.models.circuit import CircuitTreeModel, run_model

COLUMNS = [
    "n",
    "pattern",
    "retry",
    "messages",
    "cycles_min",
    "cycles_mean",
    "cycles_max",
    "per_diameter",
    "vs_immediate",
    "retries",
    "max_retries",
    "rounds",
    "fast_s",
    "model_s",
]


def run(capsys, *argv):
    code = main(["experiment", "retry-strategies", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def experiment(capsys, *argv) -> dict:
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0
    result = json.loads(out)
    assert result["columns"] == COLUMNS
    return result


def rows_by(result) -> dict:
    return {(r[0], r[1], r[2]): dict(zip(COLUMNS, r, strict=True)) for r in result["rows"]}


def test_rows_are_the_cycle_exact_models(capsys):
    # The experiment's numbers, recomputed here on the model (pure Python) from the same
    # batches (the experiment's generator, seeded by seed, lg n and pattern).
    result = experiment(
        capsys, "--sizes", "3,4", "--trials", "2", "--model-max", "0", "--seed", "5"
    )
    assert result["model_runs"] == 0
    rows = rows_by(result)
    for h in (3, 4):
        n = 1 << h
        for pattern in PATTERNS:
            rng = np.random.default_rng([5, h, PATTERNS.index(pattern)])
            batches = [batch(pattern, n, rng) for _ in range(2)]
            rounds_rng = np.random.default_rng([5, h, PATTERNS.index(pattern), 1])
            rounds = [delivery_rounds(n, s, d, rounds_rng).rounds for s, d in batches]
            for retry in ("immediate", "round", "backoff"):
                cycles, rejects = [], 0
                for trial, (src, dst) in enumerate(batches):
                    queues = [[] for _ in range(n)]
                    for s, d in zip(src.tolist(), dst.tolist(), strict=True):
                        queues[s].append((d, 0))
                    out = run_model(CircuitTreeModel(n, 1, 2, 5 + trial, retry), queues)
                    cycles.append(out["cycles"])
                    rejects += out["rejects"]
                row = rows[n, pattern, retry]
                assert row["cycles_mean"] == pytest.approx(np.mean(cycles))
                assert (row["cycles_min"], row["cycles_max"]) == (min(cycles), max(cycles))
                assert row["retries"] == pytest.approx(rejects / (2 * src.size))
                assert row["messages"] == src.size
                assert row["rounds"] == pytest.approx(np.mean(rounds)) and min(rounds) >= 1


def test_model_and_simulator_compared_in_the_run(capsys):
    result = experiment(capsys, "--sizes", "2..4", "--trials", "1", "--model-max", "4")
    assert result["model_equal"] is True and result["model_runs"] > 0
    assert any("model = fast simulator" in note for note in result["notes"])
    assert all(r[13] is not None for r in result["rows"])


def test_two_nodes_never_collide(capsys):
    # Lemma 1 at n = 2: the two messages 0 -> 1 and 1 -> 0 never collide, so each strategy
    # delivers in the time of one message alone.
    rows = rows_by(experiment(capsys, "--sizes", "1", "--patterns", "random,permutation"))
    assert rows
    for row in rows.values():
        assert row["retries"] == 0 and row["per_diameter"] == 1.0 and row["rounds"] == 1


def test_hot_spot_is_at_least_one_message_at_a_time(capsys):
    # Section 7: node p receives one message at a time, so m messages to it take m times
    # the eject link's hold time at least: claim at the leaf router, P data words, valid
    # falls, ack one cycle later, released at the end of the next: P + 4 cycles.
    for length in (1, 3):
        result = experiment(
            capsys,
            "--sizes",
            "3..5",
            "--patterns",
            "hotspot",
            "--length",
            str(length),
            "--model-max",
            "0",
        )
        for row in rows_by(result).values():
            assert row["messages"] == row["n"] - 1
            assert row["cycles_min"] >= row["messages"] * (length + 4)
            # Every message but the first to arrive is rejected at least once at n >= 8.
            assert row["retries"] * row["messages"] >= 1


def test_normalisation_is_one_message_across_the_diameter(capsys):
    # docs/circuit_tree.md "Timing": one message alone, from taken to the acknowledge seen
    # at the source, is 6 (h - 1) + P + 8 cycles in run_model's count.
    result = experiment(capsys, "--sizes", "5", "--patterns", "shift", "--trials", "1")
    for row in rows_by(result).values():
        assert row["cycles_mean"] / row["per_diameter"] == pytest.approx(6 * 4 + 2 + 8)


def test_vs_immediate_and_hotspot_cap(capsys):
    result = experiment(
        capsys, "--sizes", "3,4", "--retry", "backoff,immediate", "--hotspot-max", "3"
    )
    rows = rows_by(result)
    assert (16, "hotspot", "immediate") not in rows and (8, "hotspot", "immediate") in rows
    for (n, pattern, _retry), row in rows.items():
        imm = rows[n, pattern, "immediate"]["cycles_mean"]
        assert row["vs_immediate"] == pytest.approx(row["cycles_mean"] / imm)
    assert {r for _n, _p, r in rows} == {"immediate", "backoff"}


def test_plot(capsys, tmp_path):
    path = tmp_path / "retry.png"
    code, _, _ = run(
        capsys,
        "--sizes",
        "2,3",
        "--trials",
        "1",
        "--model-max",
        "0",
        "--plot",
        str(path),
        "--quiet",
    )
    assert code == 0 and path.stat().st_size > 1000


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--trials", "0"], "--trials must be 1..1000, not 0"),
        (["--length", "x"], "--length wants an integer, not 'x'"),
        (["--model-max", "11"], "--model-max must be 0..10, not 11"),
        (["--hotspot-max", "0"], "--hotspot-max must be 1..22, not 0"),
        (["--seed", "70000"], "--seed must be 0..65535, not 70000"),
        (
            ["--patterns", "tornado"],
            "--patterns wants a comma list of random, permutation, transpose, bit-reversal, "
            "shift, hotspot, not 'tornado'",
        ),
        (["--retry", ","], "--retry wants a comma list of immediate, round, backoff, not ','"),
    ],
)
def test_one_line_errors(capsys, argv, message):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.strip().splitlines() == [f"fattree experiment: error: {message}"]


def test_bad_sizes_are_argparse_errors(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["experiment", "retry-strategies", "--sizes", "23"])
    assert exc.value.code == 2
    assert "sizes must be lg n values in 1..22" in capsys.readouterr().err
