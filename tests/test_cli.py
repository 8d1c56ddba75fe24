"""The command line: outputs, --json, and one-line errors with non-zero exits."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from fattree.designs import DESIGNS
from fattree.scripts.main import main
from fattree.verilog_sharing import placed


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_verilog_writes_file(capsys, tmp_path):
    target = tmp_path / "sel.v"
    code, out, _ = run(
        capsys, "verilog", "selector", "--param", "width=8", "-o", str(target), "--json"
    )
    assert code == 0
    data = json.loads(out)
    assert data["params"] == {"width": 8} and data["path"] == str(target)
    text = target.read_text()
    assert "module selector(" in text and "[7:0] one" in text


def test_verilog_to_stdout(capsys):
    code, out, _ = run(capsys, "verilog", "selector", "-p", "width=3", "-o", "-")
    assert code == 0 and "[2:0] zero" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["verilog", "nosuch"],
            "unknown design 'nosuch'; known designs: " + ", ".join(sorted(DESIGNS)),
        ),
        (["verilog", "selector", "-p", "width=0"], "parameter width must be 1..1024, not 0"),
        (["verilog", "selector", "-p", "width=x"], "parameter width must be an integer, not 'x'"),
        (
            ["verilog", "selector", "-p", "depth=2"],
            "design selector has no parameter 'depth'; its parameters: width",
        ),
        (["verilog", "selector", "-p", "width"], "--param wants NAME=VALUE, not 'width'"),
        (
            ["verilog", "scheduler", "-p", "memory=bram"],
            "parameter memory must be one of auto, portable, dp16kd, not 'bram'",
        ),
        (["sim", "selector", "--frames", "0"], "--frames must be at least 1, not 0"),
        (
            ["sim", "circuit-tree-paper", "-b", "stall=3"],
            "design circuit-tree-paper has no bench parameter 'stall'; its bench parameters: "
            "backpressure",
        ),
        (
            ["sim", "circuit-tree-paper", "-b", "backpressure=100"],
            "parameter backpressure must be 0..99, not 100",
        ),
        (
            ["sim", "circuit-tree-paper", "-b", "backpressure"],
            "--bench-param wants NAME=VALUE, not 'backpressure'",
        ),
    ],
)
def test_one_line_errors(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.strip().splitlines() == [f"fattree {argv[0]}: error: {message}"]


@pytest.mark.parametrize("memory, block_rams", [("auto", 4), ("portable", 0), ("dp16kd", 4)])
def test_scheduler_memory_form_from_the_command_line(capsys, memory, block_rams):
    # FT(3, 16)'s link memories fit one DP16KD each; "portable" keeps them generic on ECP5.
    argv = ["verilog", "scheduler", "-p", "levels=3", "-p", "w=16", "-p", f"memory={memory}"]
    code, out, _ = run(capsys, *argv, "--family", "ecp5", "-o", "-")
    assert code == 0 and placed(out, "DP16KD", "scheduler") == block_rams


def test_unwritable_output(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run(capsys, "verilog", "selector", "-o", str(blocker / "x.v"))
    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"fattree verilog: error: cannot write {blocker / 'x.v'}")


def test_missing_tool_is_one_line(capsys, monkeypatch):
    # With no iverilog on PATH, `sim --simulator icarus` names the package to install.
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))
    from fattree import toolchain

    monkeypatch.setattr(toolchain, "setup_environment", lambda environ=None: None)
    code, _, err = run(capsys, "sim", "selector", "--simulator", "icarus")
    assert code == 3
    assert err.strip().splitlines() == [
        "fattree sim: error: iverilog not found; install it with: apt-get install -y iverilog"
    ]


def test_console_script_help():
    # The installed entry point works outside pytest, with every subcommand listed.
    exe = os.path.join(os.path.dirname(sys.executable), "fattree")
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    for command in ["verilog", "sim", "synth", "build", "experiment"]:
        assert command in out


def test_python_m_fattree(tmp_path):
    # `python -m fattree` is the command line too, from any folder (not only the checkout).
    run = subprocess.run(
        [sys.executable, "-m", "fattree", "--help"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: fattree ")
    for command in ["verilog", "sim", "synth", "build", "experiment", "schedule", "export"]:
        assert command in run.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "fattree", "verilog", "nosuch"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].startswith("fattree verilog: error: unknown design")


def test_verilog_passes_verilator_lint(capsys, tmp_path):
    # The Verilog a user gets is accepted by `verilator --lint-only` with default warnings.
    target = tmp_path / "selector.v"
    assert main(["verilog", "selector", "--param", "width=8", "-o", str(target)]) == 0
    capsys.readouterr()
    lint = subprocess.run(
        ["verilator", "--lint-only", str(target)], capture_output=True, text=True, check=False
    )
    assert lint.returncode == 0, lint.stderr


def test_tables_are_registries():
    # The design, family, board and self-test tables share fattree.registry.Registry: a
    # read-only mapping whose failed lookups are the one-line errors the command line prints.
    from dataclasses import dataclass

    from fattree.boards import SELFTESTS
    from fattree.boards.platforms import BOARDS
    from fattree.registry import Registry, UnknownName
    from fattree.synthesis import FAMILIES

    for table in (DESIGNS, FAMILIES, BOARDS, SELFTESTS):
        assert isinstance(table, Registry) and "nosuch" not in table
        assert table.get("nosuch") is None and len(table) == len(list(table))
        with pytest.raises(KeyError):
            table["nosuch"]
        with pytest.raises(TypeError):
            table["nosuch"] = None
    assert "selector" in DESIGNS and DESIGNS["selector"].name == "selector"
    assert list(FAMILIES) == ["ice40", "ecp5"] and SELFTESTS["selector"].design == "selector"

    @dataclass(frozen=True)
    class Thing:
        name: str

    things = Registry("thing", [Thing("b"), Thing("a")])
    assert list(things) == ["b", "a"] and things.get_or_raise("a") == Thing("a")
    with pytest.raises(UnknownName) as info:
        things.get_or_raise("c")
    assert isinstance(info.value, ValueError) and isinstance(info.value, KeyError)
    assert str(info.value) == "unknown thing 'c'; known things: a, b"
    unsorted = Registry("thing", [Thing("b"), Thing("a")], sort_known=False)
    assert unsorted.unknown("c") == "unknown thing 'c'; known things: b, a"
    with pytest.raises(ValueError, match="^two things are named 'a'$"):
        Registry("thing", [Thing("a"), Thing("a")])


@pytest.mark.cocotb
@pytest.mark.parametrize(
    "simulator",
    [
        # Icarus builds in a second; a Verilator build of this point takes minutes.
        pytest.param(
            "icarus",
            marks=pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog"),
        ),
        pytest.param("verilator", marks=pytest.mark.slow),
    ],
)
def test_sim_passes_bench_knobs(capsys, tmp_path, monkeypatch, simulator):
    # --bench-param reaches the bench: receivers stalled 9 cycles in 10 make full interfaces
    # reject new circuits, which an always-ready run never does.
    monkeypatch.chdir(tmp_path)
    summaries = {}
    for stall in (0, 90):
        argv = ["sim", "circuit-tree-paper", "-p", "leaves=4", "-b", f"backpressure={stall}"]
        argv += ["--simulator", simulator]
        code, out, _ = run(capsys, *argv, "--frames", "20", "--json")
        assert code == 0
        summaries[stall] = json.loads(out)["summary"]
    assert summaries[0]["backpressure_cycles"] == summaries[0]["receiver_rejects"] == 0
    assert summaries[90]["backpressure_cycles"] > 0 and summaries[90]["receiver_rejects"] > 0
    assert summaries[90]["mismatches"] == 0
