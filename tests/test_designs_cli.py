"""``fattree designs``: the design-by-piece matrix and one design's pieces, parameters and
commands, as text and as JSON, all read from the design record."""

import json
import re

import pytest

from fattree.designs import DESIGNS, PIECES
from fattree.scripts.main import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_matrix_has_a_row_per_design_and_a_column_per_piece(capsys):
    code, out, _ = run(capsys, "designs")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["design"] + [title for _, title, _ in PIECES]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1 : 1 + len(DESIGNS)]}
    assert list(rows) == list(DESIGNS)
    for name, marks in rows.items():
        assert marks == ["x" if DESIGNS[name].has(f) else "." for f, _, _ in PIECES], name
    # What each design has is visible: the circuit tree every piece, the router few.
    assert rows["circuit-tree-paper"] == ["x"] * len(PIECES)
    assert rows["circuit-router"][[f for f, _, _ in PIECES].index("bench")] == "."


def test_matrix_json(capsys):
    code, out, _ = run(capsys, "designs", "--json")
    assert code == 0
    data = json.loads(out)
    assert [p["piece"] for p in data["pieces"]] == [f for f, _, _ in PIECES]
    assert [d["name"] for d in data["designs"]] == list(DESIGNS)
    hypercube = next(d for d in data["designs"] if d["name"] == "hypercube")
    assert hypercube["pieces"]["soak"] is True and hypercube["pieces"]["drawing"] is False


def test_one_design(capsys):
    code, out, _ = run(capsys, "designs", "circuit-tree-paper")
    assert code == 0
    assert out.startswith("circuit-tree-paper: " + DESIGNS["circuit-tree-paper"].summary)
    assert "component     fattree.hdl.circuit_tree:CircuitFatTree" in out
    assert "mutant_point  leaves=4, width=2, length=2" in out
    # Every parameter with its default, range and meaning.
    assert re.search(r"\n  leaves +16 +2\.\.1024", out) and "processing nodes (a power" in out
    assert re.search(r"\n  seed +1 +at least 0", out)
    assert re.search(r"\n  retry +immediate +immediate \| round \| backoff", out)
    assert "backpressure  30  0..99" in out
    # The commands it supports, with the proofs and diagrams by their own names.
    assert "fattree prove network-interface" in out
    assert "fattree wave circuit-tree-paper-reject" in out
    assert "fattree build circuit-tree-paper --board ulx3s-85f" in out


def test_one_design_json(capsys):
    code, out, _ = run(capsys, "designs", "scheduler", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["name"] == "scheduler"
    assert data["pieces"]["component"] == DESIGNS["scheduler"].component
    assert data["pieces"]["axis"] == {
        "component": DESIGNS["scheduler"].axis.component,
        "bench": DESIGNS["scheduler"].axis.bench,
    }
    assert data["pieces"]["diagrams"] is None
    memory = next(p for p in data["params"] if p["name"] == "memory")
    assert memory["kind"] == "choice" and memory["choices"] == ["auto", "portable", "dp16kd"]
    levels = next(p for p in data["params"] if p["name"] == "levels")
    assert (levels["default"], levels["lo"], levels["hi"]) == (3, 2, 6)
    assert data["commands"]["prove"] == ["fattree prove scheduler"]
    assert data["commands"]["wave"] == []
    assert set(data["commands"]) == {
        "verilog",
        "sim",
        "axis",
        "synth",
        "build",
        "prove",
        "soak",
        "mutants",
        "draw",
        "wave",
    }


@pytest.mark.parametrize("name", list(DESIGNS))
def test_every_design_is_shown(capsys, name):
    code, out, _ = run(capsys, "designs", name, "--json")
    assert code == 0
    data = json.loads(out)
    assert [p["name"] for p in data["params"]] == [p.name for p in DESIGNS[name].params]
    assert bool(data["commands"]["sim"]) == bool(DESIGNS[name].bench)


def test_unknown_design(capsys):
    code, _, err = run(capsys, "designs", "nosuch")
    assert code == 2
    assert err == (
        "fattree designs: error: unknown design 'nosuch'; known designs: "
        + ", ".join(sorted(DESIGNS))
        + "\n"
    )
