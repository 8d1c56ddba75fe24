"""``fattree experiment load-latency``: open-loop load on the circuit tree, RTL and model.

The model run is deterministic and sane; the RTL (Verilator) gives the model's figures at a
small point; ``--json`` and ``--csv`` have the Result's shape; bad options are one-line
errors.
"""

import csv
import json

import pytest

from fattree.scripts.main import main
from fattree.sim.circuit_load import (
    FIGURES,
    OpenLoop,
    Point,
    min_latency,
    percentile,
    run_model_point,
)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_percentile_is_nearest_rank():
    values = list(range(1, 101))
    assert percentile(values, 50) == 50 and percentile(values, 99) == 99
    assert percentile(values, 100) == 100 and percentile([7], 99) == 7
    assert percentile([], 50) is None


def test_minimum_path_time():
    # tx handshake -> rx handshake with an empty network: 7 cycles for the leaf router's
    # turn (length 2), 4 more per level of the turn (2 up + 2 down route words and hops).
    assert min_latency(8, 2, 0) == 7
    assert [min_latency(8, 2, level) for level in range(3)] == [7, 11, 15]


@pytest.mark.parametrize("pattern", ["random", "transpose", "bit-reversal", "hotspot"])
@pytest.mark.parametrize("retry", ["immediate", "round", "backoff"])
def test_model_point_deterministic_and_sane(pattern, retry):
    point = Point(pattern, 0.05, 50, 300, seed=2)
    first = run_model_point(8, 8, 2, 1, retry, point)
    assert first == run_model_point(8, 8, 2, 1, retry, point)
    assert set(first) == set(FIGURES)
    assert first["delivered"] > 0
    # Throughput cannot exceed what was offered by more than what the warm-up left queued.
    assert first["accepted"] <= first["offered"] + 8 * 50 * 0.05 * 3 / (8 * 300)
    shortest = min_latency(8, 2, 0)
    assert shortest <= first["net_mean"] <= first["net_p99"]
    assert first["net_mean"] <= first["mean"] and first["p50"] <= first["p99"] <= first["max"]
    assert first["p50"] >= shortest


def test_low_load_has_no_queueing_and_saturation_bounds_throughput():
    low = run_model_point(8, 8, 2, 1, "immediate", Point("random", 0.002, 100, 2000))
    high = run_model_point(8, 8, 2, 1, "immediate", Point("random", 1.0, 100, 500))
    assert low["accepted"] == pytest.approx(low["offered"], rel=0.3)
    assert low["mean"] < 2 * low["net_mean"]
    # One message at a time per interface: at most one per path round trip (>= 7 cycles).
    assert high["accepted"] < 1 / 7 and high["accepted"] < high["offered"] / 5


def test_same_draws_whatever_the_stall():
    # Receive backpressure draws from its own generator: the generated traffic is the same.
    a = OpenLoop(8, 8, 2, Point("random", 0.1, 0, 100))
    b = OpenLoop(8, 8, 2, Point("random", 0.1, 0, 100, stall=0.5))
    for _ in range(100):
        a.inputs(), b.inputs()
        a.cycle += 1
        b.cycle += 1
    assert [list(q) for q in a.queues] == [list(q) for q in b.queues]
    low = run_model_point(8, 8, 2, 1, "immediate", Point("random", 0.05, 50, 300, stall=0.9))
    assert low["delivered"] > 0


def test_bad_points():
    with pytest.raises(ValueError, match="load must be above 0 and at most 1, not 0"):
        Point("random", 0, 0, 10)
    with pytest.raises(ValueError, match="pattern must be one of"):
        Point("uniform", 0.1, 0, 10)


SMALL = ["--leaves", "4", "--loads", "0.05,0.2", "--patterns", "random,hotspot"]
SMALL += ["--retry", "immediate,backoff", "--cycles", "200", "--warmup", "20"]


def test_json_shape(capsys):
    code, out, _ = run(capsys, "experiment", "load-latency", *SMALL, "--model-only", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["experiment"] == "load-latency"
    assert data["columns"] == ["pattern", "retry", "load", "source", *FIGURES]
    assert len(data["rows"]) == 2 * 2 * 2
    assert {r[3] for r in data["rows"]} == {"model"}
    assert data["rtl_equals_model"] is None
    assert data["params"]["leaves"] == 4 and data["params"]["warmup"] == 20


def test_csv(capsys, tmp_path):
    path = tmp_path / "out" / "ll.csv"
    code, out, _ = run(
        capsys, "experiment", "load-latency", *SMALL, "--model-only", "--csv", str(path)
    )
    assert code == 0
    rows = list(csv.reader(path.read_text().splitlines()))
    assert rows[0] == ["pattern", "retry", "load", "source", *FIGURES]
    assert len(rows) == 1 + 8
    assert rows[1][:4] == ["random", "immediate", "0.05", "model"]
    assert out.splitlines()[0].split() == rows[0]


def test_csv_of_another_experiment(capsys, tmp_path):
    # --csv is generic: every experiment's Result.
    path = tmp_path / "cp.csv"
    argv = ["experiment", "collision-probability", "--sizes", "2..3", "--csv", str(path)]
    code, _, _ = run(capsys, *argv)
    assert code == 0
    rows = list(csv.reader(path.read_text().splitlines()))
    assert len(rows) == 3 and len(rows[0]) == len(rows[1])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--loads", "0"], "--loads must be above 0 and at most 1, not 0.0"),
        (["--loads", "x"], "--loads wants a comma list of numbers, not 'x'"),
        (["--leaves", "6"], "--leaves must be a power of two, not 6"),
        (["--leaves", "128"], "--leaves must be 2..64, not 128"),
        (["--cycles", "0"], "--cycles must be at least 1, not 0"),
        (
            ["--retry", "later"],
            "--retry wants a comma list of immediate, round, backoff, not 'later'",
        ),
        (["--simulator", "vcs"], "--simulator must be verilator or icarus, not 'vcs'"),
        (["--stall", "100"], "--stall must be 0..99, not 100"),
    ],
)
def test_one_line_errors(capsys, argv, message):
    code, _, err = run(capsys, "experiment", "load-latency", "--model-only", *argv)
    assert code == 2
    assert err.strip().splitlines() == [f"fattree experiment: error: {message}"]


def test_unwritable_csv(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    argv = ["experiment", "load-latency", "--model-only", "--csv", str(blocker / "x.csv")]
    code, _, err = run(capsys, *argv)
    assert code == 1 and len(err.strip().splitlines()) == 1


@pytest.mark.cocotb
def test_rtl_equals_model(tmp_path):
    from fattree.sim.experiments.load_latency import points, rtl_figures

    opts = {
        "leaves": 4,
        "width": 8,
        "length": 2,
        "seed": 1,
        "simulator": "verilator",
        "loads": [0.05, 0.3],
        "patterns": ["random", "hotspot"],
        "warmup": 30,
        "cycles": 300,
        "stall": 30,
    }
    rtl, speed = rtl_figures(opts, "backoff", lambda _: None, tmp_path)
    model = [run_model_point(4, 8, 2, 1, "backoff", p) for p in points(opts)]
    assert rtl == model
    assert all(f["delivered"] > 0 for f in rtl)
