"""The walls between the layers (docs/architecture.md): who may import whom.

:data:`LAYERS` is the one table: every module of the package belongs to exactly one layer,
named by its packages, and imports modules of its own layer and of the layers it lists,
never one of another layer and never the outside packages it names. Imports are read from
the source (every ``import``, also those inside functions, and every ``"module:attribute"``
string a registry resolves on first use), so a lazy import cannot slip through; a subprocess
checks what importing a layer that never needs Amaranth really loads.
"""

import json
import subprocess
import sys
from dataclasses import dataclass
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
#: Packages that only gather others: naming one names its ``__init__`` alone.
NAMESPACES = ("fattree", "fattree.sim")


@dataclass(frozen=True)
class Layer:
    name: str
    #: Modules and packages (with everything under them) that make up the layer.
    packages: tuple[str, ...]
    #: The other layers it may import.
    may_import: tuple[str, ...]
    #: Outside packages it never imports.
    never: tuple[str, ...] = ()


LAYERS = (
    # The package roots, `python -m fattree`, the name tables' helper, the tool finder and the
    # Verilog text's lint tidying.
    Layer(
        "package",
        (
            "fattree",
            "fattree.__main__",
            "fattree.sim",
            "fattree.registry",
            "fattree.toolchain",
            "fattree.verilog_output",
            "fattree.verilog_sharing",
        ),
        (),
        ("amaranth", "cocotb"),
    ),
    Layer("definitions", ("fattree.spec", "fattree.params"), (), ("amaranth", "cocotb", "numba")),
    Layer("hardware", ("fattree.hdl",), ("definitions",), ("cocotb", "numba")),
    # The open-loop load drivers feed the model and the RTL alike, as the models' own
    # drivers do.
    Layer(
        "models",
        (
            "fattree.sim.models",
            "fattree.sim.network_load",
            "fattree.sim.load_networks",
            "fattree.sim.circuit_load",
            "fattree.sim.coverage",
        ),
        ("definitions",),
        ("amaranth", "cocotb"),
    ),
    Layer(
        "fast simulators",
        ("fattree.sim.fast",),
        ("package", "definitions"),
        ("amaranth", "cocotb"),
    ),
    Layer(
        "runner",
        ("fattree.sim.cocotb_runner", "fattree.sim.primitives"),
        ("package", "definitions", "design table"),
    ),
    Layer(
        "checks",
        (
            "fattree.sim.checks",
            "fattree.sim.benches",
            "fattree.sim.scoreboard",
            "fattree.sim.testbench",
            "fattree.sim.axis_ends",
        ),
        ("package", "definitions", "models", "runner", "design table"),
    ),
    Layer(
        "soak",
        ("fattree.sim.soak",),
        ("package", "definitions", "models", "checks", "design table"),
        ("amaranth", "cocotb"),
    ),
    # The RTL half of an experiment is a check (sim/checks/experiment_runs.py), imported
    # lazily: an experiment itself never builds hardware.
    Layer(
        "experiments",
        ("fattree.sim.experiments",),
        ("package", "definitions", "models", "fast simulators", "checks"),
        ("amaranth", "cocotb"),
    ),
    # The one record per design names every piece of it, in every layer but the command line
    # (resolved when used): the layers below it reach the hardware only through it.
    Layer(
        "design table",
        ("fattree.designs",),
        (
            "package",
            "definitions",
            "hardware",
            "models",
            "fast simulators",
            "runner",
            "checks",
            "soak",
            "experiments",
            "synthesis",
            "boards",
            "tool flow",
        ),
        ("cocotb",),
    ),
    Layer(
        "synthesis", ("fattree.synthesis",), ("package", "hardware", "design table"), ("cocotb",)
    ),
    # A bitstream's report is read by the synthesis flow's parser.
    Layer(
        "boards",
        ("fattree.boards",),
        ("package", "definitions", "hardware", "models", "synthesis"),
        ("cocotb",),
    ),
    Layer(
        "tool flow",
        (
            "fattree.formal",
            "fattree.proofs",
            "fattree.draw",
            "fattree.waves",
            "fattree.wave_scenarios",
            "fattree.sweep",
            "fattree.mutants",
            "fattree.imports",
        ),
        (
            "package",
            "definitions",
            "hardware",
            "models",
            "checks",
            "runner",
            "design table",
            "synthesis",
            "experiments",
        ),
    ),
    Layer(
        "command line",
        ("fattree.scripts",),
        (
            "package",
            "definitions",
            "models",
            "runner",
            "soak",
            "experiments",
            "design table",
            "synthesis",
            "boards",
            "tool flow",
        ),
    ),
)
BY_NAME = {layer.name: layer for layer in LAYERS}


def markdown() -> str:
    """:data:`LAYERS` as the table docs/architecture.md quotes (``python tests/test_layers.py``)."""

    def names(items, quote="`"):
        return ", ".join(f"{quote}{i}{quote}" for i in items) or "-"

    lines = ["| layer | modules | may import | never imports |", "|---|---|---|---|"]
    lines += [
        f"| {lay.name} | {names(lay.packages)} | {names(lay.may_import, '')} | {names(lay.never)} |"
        for lay in LAYERS
    ]
    return "\n".join(lines)


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


def _layers_of(name: str) -> list[str]:
    """The layers whose packages hold the module (or the attribute of one) ``name``."""
    return [
        layer.name
        for layer in LAYERS
        if any(
            name == p or (p not in NAMESPACES and name.startswith(p + ".")) for p in layer.packages
        )
    ]


def _layer_of(name: str) -> str | None:
    found = _layers_of(name)
    return found[0] if len(found) == 1 else None


def _module_of(name: str) -> str:
    """The module an imported ``name`` is or is an attribute of (``fattree.__version__`` is
    in ``fattree``); else the first part of it that is no module (an import that fails)."""
    parts = name.split(".")
    known = max(end for end in range(len(parts) + 1) if ".".join(parts[:end]) in MODULES)
    return ".".join(parts[: known + (known < len(parts) - 1)])


def _violations(layer: Layer) -> list[str]:
    found = []
    for module, path in MODULES.items():
        if _layer_of(module) != layer.name:
            continue
        names = imported_names(module, path, named=True)
        found += [f"{module} imports {n}" for n in sorted(names) if _within(n, *layer.never)]
        for name in sorted({_module_of(n) for n in names if _within(n, "fattree")}):
            other = _layer_of(name)
            if name not in MODULES:
                found.append(f"{module} imports {name}, which is no module of the package")
            elif other is None:
                found.append(f"{module} imports {name}, which is in no layer")
            elif other != layer.name and other not in layer.may_import:
                found.append(f"{module} imports {name} ({other})")
    return found


def test_the_layers_are_found():
    # The walls below would pass vacuously if the module map were wrong.
    assert {"fattree.spec.topology", "fattree.sim.models.circuit", "fattree.hdl.scheduler"} <= set(
        MODULES
    )
    assert "fattree.spec.topology" in imported_names(
        "fattree.hdl.circuit_tree", MODULES["fattree.hdl.circuit_tree"]
    )
    assert _layer_of("fattree.sim.models.circuit") == "models"
    assert _layer_of("fattree.sim") == "package"


def test_every_module_is_in_exactly_one_layer():
    placed = {module: _layers_of(module) for module in MODULES}
    assert [m for m, layers in placed.items() if not layers] == [], "in no layer: add it to LAYERS"
    assert {m: layers for m, layers in placed.items() if len(layers) > 1} == {}
    assert [p for layer in LAYERS for p in layer.packages if p not in MODULES] == [], (
        "LAYERS names a package that does not exist"
    )


def test_the_table_names_only_its_layers():
    assert len(BY_NAME) == len(LAYERS)
    unknown = [(lay.name, o) for lay in LAYERS for o in lay.may_import if o not in BY_NAME]
    assert unknown == []


def test_nothing_imports_the_command_line():
    assert [layer.name for layer in LAYERS if "command line" in layer.may_import] == []


def test_registry_strings_are_imports():
    # The design table names its components by string: those are its imports of hdl/.
    names = imported_names("fattree.designs", MODULES["fattree.designs"], named=True)
    assert {n for n in names if _within(n, "fattree.hdl")}
    assert not {
        n
        for n in imported_names("fattree.designs", MODULES["fattree.designs"])
        if _within(n, "fattree.hdl") and ":" in n
    }
    source = 'A = "fattree.hdl.lfsr:LFSR"\nB = "..spec.bits:lg"\nC = "a:b c"\n'
    path = ROOT / "sim" / "nowhere" / "module.py"
    assert imported_names("fattree.sim.nowhere.module", path, source, named=True) == {
        "fattree.hdl.lfsr",
        "fattree.hdl.lfsr.LFSR",
        "fattree.sim.spec.bits",
        "fattree.sim.spec.bits.lg",
    }
    assert imported_names("fattree.sim.nowhere.module", path, source) == set()


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
def test_the_walls(layer):
    assert _violations(layer) == []


@pytest.mark.parametrize(
    "layer",
    [layer for layer in LAYERS if "amaranth" in layer.never],
    ids=lambda layer: layer.name,
)
def test_importing_a_layer_leaves_amaranth_out(layer):
    modules = [m for m in MODULES if _layer_of(m) == layer.name]
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


if __name__ == "__main__":
    print(markdown())


def test_the_architecture_page_quotes_the_table():
    # docs/architecture.md shows the walls to readers; a wall changed here changes it there.
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert markdown() in page, "paste `python tests/test_layers.py` into docs/architecture.md"
