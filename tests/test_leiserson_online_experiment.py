"""The experiment leiserson-online (sim/experiments/leiserson_online.py): its numbers against
the paper's lower bound, closed forms and independent computations."""

from __future__ import annotations

import argparse
import json
import random
from math import ceil

import pytest

from fattree.sim.experiments import registry
from fattree.sim.models.leiserson_online import route_cycle
from fattree.sim.models.leiserson_schedule import (
    ideal_capacities,
    layout_capacities,
    loads,
    random_messages,
    schedule_theorem1,
)
from fattree.spec.capacities import TreeLayout


def run(*argv: str):
    experiment = registry()["leiserson-online"]
    parser = argparse.ArgumentParser()
    experiment.add_arguments(parser)
    return experiment.run(parser.parse_args(list(argv)), lambda _text: None)


@pytest.fixture(scope="module")
def result():
    return run("--sizes", "3,4", "--cycles", "30")


def rows(result, table=None):
    columns, body = (result.columns, result.rows) if table is None else table
    return [dict(zip(columns, row, strict=True)) for row in body]


def test_online_never_beats_the_lower_bound_lambda(result):
    for row in rows(result):
        assert row["lower_bound"] == ceil(row["lambda"] - 1e-9)
        assert row["d_online"] >= row["lower_bound"]
        assert row["lambda_derated"] >= row["lambda"]  # derating only lowers capacities


def test_hot_spot_is_one_message_per_cycle(result):
    # n - 1 senders, one receiving wire: one delivered per cycle, and in cycle t the other
    # n - 2 - t are lost: (n - 1)(n - 2) / 2 losses in all.
    for row in rows(result):
        if row["set"] == "hot-spot":
            n = row["n"]
            assert row["d_online"] == row["d_offline_thm1"] == n - 1
            assert row["lost"] == (n - 1) * (n - 2) // 2


def test_offline_column_is_theorem1_on_the_derated_capacities():
    # The same seed draws the same sets: recompute the first one and compare.
    result = run("--sizes", "3", "--patterns", "random", "--per-leaf", "2", "--cycles", "1")
    rng = random.Random(1)
    n = 8
    layout = TreeLayout.universal(n, n, 0)
    messages = random_messages(n, 2 * n, rng)
    row = rows(result)[0]
    assert row["messages"] == len(messages)
    assert row["d_offline_thm1"] == len(schedule_theorem1(n, messages, layout_capacities(layout)))


def test_loss_table_respects_its_floor(result):
    table = result.extra["loss"]
    for row in rows(result, (table["columns"], table["rows"])):
        assert row["lost_floor"] <= row["lost"] <= row["sent"]
        if row["congestion"] == "(0, 1]":
            assert row["lost_floor"] == 0


@pytest.mark.parametrize(("n", "w"), [(8, 8), (16, 7), (32, 32)])
def test_a_cycle_loses_at_least_the_excess_of_its_fullest_channel(n, w):
    layout = TreeLayout.universal(n, w)
    caps = ideal_capacities(n, layout.capacities).array()
    rng = random.Random(n)
    for _ in range(40):
        sends = {s: d for s, d in random_messages(n, n, rng)}
        lost = route_cycle(layout, sends).lost
        excess = int(max(0, (loads(n, list(sends.items())) - caps).max()))
        assert len(lost) >= excess


def test_json_and_plot(tmp_path, capsys):
    import matplotlib

    matplotlib.use("Agg")
    from fattree.scripts.main import main

    path = tmp_path / "online.png"
    argv = ["experiment", "leiserson-online", "--sizes", "3", "--cycles", "5", "--json"]
    assert main(argv + ["--plot", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["experiment"] == "leiserson-online"
    assert data["loss"]["rows"] and data["rows"]
    assert path.stat().st_size > 0


def test_bad_options_are_one_line(capsys):
    from fattree.scripts.main import main

    with pytest.raises(SystemExit) as exited:  # argparse's own one-line usage error
        main(["experiment", "leiserson-online", "--loads", "1.5"])
    assert exited.value.code == 2
    assert main(["experiment", "leiserson-online", "--patterns", "tornado"]) == 2
    err = capsys.readouterr().err
    assert "loads must be" in err and "unknown pattern 'tornado'" in err
    assert "Traceback" not in err
