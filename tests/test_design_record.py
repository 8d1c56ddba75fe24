"""The design record (``fattree.designs.Design``): every piece it names exists, the mandatory
pieces are there, and every other table that names a design's pieces agrees with it.

A new design joins the command line, the soaks, the mutants, the drawings, the self-tests,
the proofs and the timing diagrams through its record; a table that keeps data of its own
(board points, proof depths, diagram scenarios, simulator limits) is checked against the
record here, both ways, so the two cannot drift apart.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from fattree.designs import DESIGNS, PIECES, parse_params
from fattree.registry import resolve

ROOT = Path(__file__).resolve().parent.parent

#: Where each piece lives: the package (or folder, for the docs) its name must start with.
HOMES = {
    "definitions": "fattree.spec.",
    "component": "fattree.hdl.",
    "model": "fattree.sim.models.",
    "check": "fattree.sim.checks.",
    "bench": "fattree.sim.benches.",
    "axis": "fattree.hdl.",
    "axis bench": "fattree.sim.benches.",
    "soak": "fattree.sim.soak.",
    "selftest": "fattree.boards.",
    "proofs": "fattree.proofs.",
    "drawing": "fattree.draw:",
    "diagrams": "fattree.wave_scenarios:",
    "docs": "docs/",
}

#: Pieces every design has.
MANDATORY = ("definitions", "component", "docs", "model", "check", "bench")

#: Designs without a mandatory piece, and why.
EXCEPTIONS = {
    ("circuit-router", "check"): "a block of circuit-tree-paper: checked within the tree's bench, "
    "and its properties proved (fattree prove circuit-router)",
    ("circuit-router", "bench"): "a block of circuit-tree-paper (see its check)",
}


@pytest.mark.parametrize("name", list(DESIGNS))
def test_every_named_piece_resolves(name):
    design = DESIGNS[name]
    for piece, kind, text in design.named():
        assert text.startswith(HOMES[piece]), f"{name}: {piece} {text} not in {HOMES[piece]}"
        if kind == "path":
            assert (ROOT / text).is_file(), f"{name}: {piece} {text} is not a file"
        elif kind == "module":
            importlib.import_module(text)
        else:
            module, colon, attribute = text.partition(":")
            assert colon and attribute, f"{name}: {piece} {text} is not module:attribute"
            assert hasattr(importlib.import_module(module), attribute), (
                f"{name}: {piece}: {module} has no {attribute}"
            )
            assert callable(resolve(text)), f"{name}: {piece} {text} is not callable"


@pytest.mark.parametrize("name", list(DESIGNS))
def test_mandatory_pieces(name):
    design = DESIGNS[name]
    missing = [p for p in MANDATORY if not design.has(p) and (name, p) not in EXCEPTIONS]
    assert missing == [], f"{name} lacks {', '.join(missing)}"
    # An exception is dropped once the piece exists.
    extra = [p for (n, p) in EXCEPTIONS if n == name and design.has(p)]
    assert extra == [], f"{name} has {', '.join(extra)}: drop it from EXCEPTIONS"


def test_pieces_are_the_record_fields():
    assert {field for field, _title, _what in PIECES} <= set(DESIGNS["selector"].__dict__)
    assert set(MANDATORY) <= {field for field, _title, _what in PIECES}
    for piece in HOMES:
        assert piece.split()[0] in {field for field, _title, _what in PIECES}


def _owners(attribute: str) -> dict[str, list[str]]:
    """Name of a piece -> the designs whose record names it under ``attribute``."""
    owners: dict[str, list[str]] = {}
    for design in DESIGNS.values():
        for text in getattr(design, attribute):
            owners.setdefault(text, []).append(design.name)
    return owners


def test_soaks_points_and_drawings_are_the_records():
    from fattree.draw import DRAWABLE
    from fattree.mutants import POINTS
    from fattree.sim.soak import SOAKS, soak_class

    assert SOAKS == {n: d.soak for n, d in DESIGNS.items() if d.soak}
    assert POINTS == {n: d.mutant_point for n, d in DESIGNS.items() if d.mutant_point is not None}
    assert DRAWABLE == {n: d.drawing for n, d in DESIGNS.items() if d.drawing}
    for name in SOAKS:
        assert soak_class(name) is resolve(DESIGNS[name].soak)


@pytest.mark.parametrize("name", [n for n, d in DESIGNS.items() if d.mutant_point is not None])
def test_mutant_points_are_valid_points_of_benched_designs(name):
    design = DESIGNS[name]
    assert design.bench, f"{name}: a mutant point but no bench to run the mutants through"
    params = parse_params(design, [f"{k}={v}" for k, v in design.mutant_point.items()])
    assert {k: params[k] for k in design.mutant_point} == design.mutant_point


def test_selftests_agree_with_the_record():
    from fattree.boards import SELFTESTS

    assert set(SELFTESTS) == {n for n, d in DESIGNS.items() if d.selftest}
    for name, selftest in SELFTESTS.items():
        assert selftest.core == DESIGNS[name].selftest, name
        for point in selftest.board_params.values():
            parse_params(DESIGNS[name], [f"{k}={v}" for k, v in point.items()])


def test_proofs_agree_with_the_record():
    from fattree.proofs import PROOFS

    owners = _owners("proofs")
    harnesses = {proof.harness: name for name, proof in PROOFS.items()}
    assert set(owners) == set(harnesses), "a harness in PROOFS or in the record only"
    for harness, designs in owners.items():
        assert len(designs) == 1, f"{harness} is named by {', '.join(designs)}"
    # A proof named after a design is that design's.
    for name, proof in PROOFS.items():
        if name in DESIGNS:
            assert owners[proof.harness] == [name], f"proof {name} is not design {name}'s"


def test_diagrams_agree_with_the_record():
    from fattree.waves import DIAGRAMS

    owners = _owners("diagrams")
    scenarios = [diagram.scenario for diagram in DIAGRAMS.values()]
    assert sorted(owners) == sorted(scenarios), "a scenario in DIAGRAMS or in the record only"
    for scenario, designs in owners.items():
        assert len(designs) == 1, f"{scenario} is named by {', '.join(designs)}"


def test_simulator_limits_name_benched_designs_and_their_params():
    from fattree.sim.cocotb_runner import SIMULATORS, TOO_BIG

    for name, simulator, fixed in TOO_BIG:
        assert name in DESIGNS and DESIGNS[name].bench, f"TOO_BIG: {name} has no bench"
        assert simulator in SIMULATORS
        params = parse_params(DESIGNS[name], [f"{k}={v}" for k, v in fixed])
        assert all(params[k] == v for k, v in fixed), (name, fixed)
