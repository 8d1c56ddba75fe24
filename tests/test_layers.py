"""The walls between the layers (docs/architecture.md): who may import whom.

* ``fattree.spec`` (definitions) imports only itself, ``fattree.params``, the standard library
  and numpy, never Amaranth;
* ``fattree.sim.models`` imports only the definitions, itself, the standard library and numpy:
  a model restates the behaviour, it never reuses the hardware;
* ``fattree.hdl`` never imports ``sim``, ``boards`` or ``scripts``;
* the checks and benches (``sim/checks``, ``sim/benches``, ``sim/scoreboard``) never import
  ``hdl``: they see the hardware only through its ports;
* nothing but ``scripts`` itself imports ``fattree.scripts``.

Imports are read from the source (every ``import``, also those inside functions), so a lazy
import cannot slip through; a subprocess checks what importing really loads.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fattree.imports import imported_names

ROOT = Path(__file__).resolve().parent.parent
#: Repository folder -> package it maps to (as in setup.py).
FOLDERS = {
    "fattree": "fattree",
    "hdl": "fattree.hdl",
    "sim": "fattree.sim",
    "boards": "fattree.boards",
    "scripts": "fattree.scripts",
}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _within(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _violations(importer: str, allowed, forbidden=()) -> list[str]:
    found = []
    for module, path in MODULES.items():
        if not _within(module, importer):
            continue
        for name in sorted(imported_names(module, path)):
            ours = _within(name, "fattree")
            if (ours and not _within(name, *allowed)) or _within(name, *forbidden):
                found.append(f"{module} imports {name}")
    return found


def test_the_layers_are_found():
    # The walls below would pass vacuously if the module map were wrong.
    assert {"fattree.spec.topology", "fattree.sim.models.circuit", "fattree.hdl.scheduler"} <= set(
        MODULES
    )
    assert "fattree.spec.topology" in imported_names(
        "fattree.hdl.circuit_tree", MODULES["fattree.hdl.circuit_tree"]
    )


def test_definitions_import_only_definitions():
    assert _violations("fattree.spec", ["fattree.spec", "fattree.params"], ["amaranth"]) == []


def test_models_do_not_import_the_hardware():
    allowed = ["fattree.spec", "fattree.params", "fattree.sim.models"]
    assert _violations("fattree.sim.models", allowed, ["amaranth", "cocotb"]) == []


def test_hardware_does_not_import_sim_boards_or_scripts():
    allowed = ["fattree.hdl", "fattree.spec", "fattree.params"]
    assert _violations("fattree.hdl", allowed) == []


@pytest.mark.parametrize(
    "checks", ["fattree.sim.checks", "fattree.sim.benches", "fattree.sim.scoreboard"]
)
def test_checks_see_the_hardware_only_through_its_ports(checks):
    forbidden = ["fattree.hdl", "fattree.boards", "fattree.scripts"]
    assert _violations(checks, ["fattree"], forbidden) == []


def test_nothing_imports_the_command_line():
    others = [m for m in MODULES if not _within(m, "fattree.scripts")]
    found = [
        f"{m} imports {name}"
        for m in others
        for name in imported_names(m, MODULES[m])
        if _within(name, "fattree.scripts")
    ]
    assert found == []


@pytest.mark.parametrize("layer", ["fattree.spec", "fattree.sim.models"])
def test_importing_a_layer_leaves_amaranth_out(layer):
    modules = [m for m in MODULES if _within(m, layer)]
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted(n for n in sys.modules if n.split('.')[0] in "
        "('amaranth', 'cocotb', 'fattree'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    loaded = json.loads(out.stdout)
    assert set(modules) <= set(loaded)
    assert [n for n in loaded if not _within(n, "fattree")] == []
    assert [n for n in loaded if _within(n, "fattree.hdl", "fattree.boards")] == []
