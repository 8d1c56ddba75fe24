"""``fattree prove``: every property of a design proved (or bounded), and a deliberately
broken design caught with a counterexample."""

import json

import pytest

from fattree.proofs import PROOFS, prove
from fattree.scripts.main import main

pytestmark = pytest.mark.formal


def test_circuit_router_properties_are_proved(tmp_path):
    rows = prove("circuit-router", root=tmp_path)
    names = [p.name for p in PROOFS["circuit-router"].properties]
    assert [r["property"] for r in rows] == names
    # Every one by k-induction (unbounded), none merely bounded.
    assert {r["property"]: r["status"] for r in rows} == dict.fromkeys(names, "proved")


def test_broken_router_fails_with_a_counterexample(tmp_path):
    rows = prove("circuit-router", root=tmp_path, broken=True, only=["circuits"])
    assert [r["status"] for r in rows] == ["failed"]
    trace = rows[0]["counterexample"]
    assert trace and trace.endswith(".vcd")
    with open(trace) as f:
        assert "conn_" in f.read()  # the trace shows the router's circuits


def test_cli_json_and_errors(tmp_path, capsys):
    argv = ["prove", "circuit-router", "--property", "idle_router_quiet", "--json"]
    assert main(argv + ["--build-root", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"] == {"width": 2}
    assert [(p["property"], p["status"]) for p in out["properties"]] == [
        ("idle_router_quiet", "proved")
    ]
    assert main(["prove", "selector"]) == 2
    assert "has no proof yet" in capsys.readouterr().err
    assert main(["prove", "circuit-router", "--property", "nope"]) == 2
    assert "has no property 'nope'" in capsys.readouterr().err
