"""The circuit-tree-paper board self-test (fattree.boards.circuit_selftest) and the generic shape
around it (fattree.boards.selftest): in amaranth.sim the replayed runs agree with the
reference model (messages, rejects, latency), an injected fault and broken networks are
caught, and ``fattree build --simulate`` decodes the UART status lines."""

import json

import pytest
from amaranth.lib import wiring

from fattree.boards import get_selftest
from fattree.boards.circuit_selftest import (
    PRIMING,
    CircuitTreeHarness,
    SourcesTwin,
    check_code,
    circuit_tree_selftest,
    expected_run,
    pack_payload,
    payload_fields,
)
from fattree.boards.selftest import decode_uart, simulate_status
from fattree.boards.uart import StatusReporter, parse_status_line, status_line
from fattree.hdl.circuit_tree import CircuitFatTree
from fattree.scripts.main import main
from fattree.sim.testbench import simulate

COUNTERS = ("cycles", "checked", "rejects", "maxlat", "errors", "runs", "error", "ok")
SMALL = {"leaves": 4, "width": 1, "length": 8, "seed": 1, "retry": "immediate"}


def run_core(core, cycles):
    """The core's counters after ``cycles`` clock cycles from reset."""
    got = {}

    async def bench(ctx):
        await ctx.tick().repeat(cycles)
        got.update({name: ctx.get(getattr(core, name)) for name in COUNTERS})

    simulate(core, bench)
    return got


def small_core(*, fault_log2=None, network=None, **options):
    options.setdefault("inject_cycles", 150)
    harness = CircuitTreeHarness(**SMALL, network=network, **options)
    from fattree.boards.selftest import SelfTestCore

    return SelfTestCore(harness, blink_log2=4, fault_log2=fault_log2)


@pytest.mark.parametrize(
    "pattern, retry",
    [("random", 0), ("random", 1), ("random", 2), ("transpose", 0), ("hotspot", 0)],
)
def test_replayed_runs_agree_with_the_model(pattern, retry):
    # Three whole runs (each one priming cycle and the model's run length): every counter is
    # three times what the reference model says one run does, and nothing is flagged.
    params = dict(SMALL, retry=retry)
    core = circuit_tree_selftest(params, seed=3, blink_log2=4, pattern=pattern, inject_cycles=120)
    trace = core.harness.trace
    assert trace == expected_run(
        4, 1, 8, 1, retry, traffic_seed=3, pattern=pattern, inject_cycles=120
    )
    assert trace.messages > 0 and trace.deliveries
    period = core.harness.run_period
    assert period == trace.cycles + PRIMING
    # Two more cycles: the core's registered sums take them; they prime the fourth run.
    got = run_core(core, 3 * period + 2)
    assert got["errors"] == 0 and got["error"] == 0 and got["ok"] == 1
    assert got["runs"] == 3 and got["cycles"] == 3 * period + 2
    assert got["checked"] == 3 * trace.messages
    assert got["rejects"] == 3 * trace.rejects
    assert got["maxlat"] == trace.max_latency > 0
    if pattern == "hotspot":
        assert trace.rejects > 0  # everyone to node 0: the network must refuse some


def test_model_run_is_sensible():
    # The twin's traffic: random destinations, never to the sender, sequence numbers per
    # source, and the model delivers every message exactly once.
    twin = SourcesTwin(8, 1, 16, seed=5, inject_cycles=50)
    seen = []
    for _ in range(60):
        valid, dest, data = twin.outputs()
        seen += [(p, dest[p], data[p]) for p in range(8) if valid[p]]
        twin.clock([1] * 8)  # every interface ready: one message a cycle per source
    assert seen and all(p != q for p, q, _ in seen)
    assert len({q for _, q, _ in seen}) == 8
    fields = payload_fields(8, 1, 16)
    assert all(d & 0x7 == p and (d >> 3) & 0x7 == q for p, q, d in seen)
    trace = expected_run(8, 1, 16, 1, 0, inject_cycles=200)
    assert sum(mask.bit_count() for _, mask, _ in trace.deliveries) == trace.messages
    assert fields == {"src": 3, "dest": 3, "seq": 5, "check": 5, "pad": 0}


def test_injected_fault_is_counted():
    core = small_core(fault_log2=6)
    period = core.harness.run_period
    cycles = 2 * period + 2
    got = run_core(core, cycles)
    # One fault every 64 cycles, each one cycle of disagreement with the trace, counted two
    # cycles later; the priming cycles and the last cycle of a run are not compared.
    compared = [c for c in range(63, cycles - 2, 64) if PRIMING <= c % period < period - 1]
    assert got["errors"] == len(compared) > 0 and got["error"] == 1 and got["ok"] == 0
    assert got["checked"] == 2 * core.harness.trace.messages  # the network itself is fine


class _Broken(wiring.Component):
    """The real network with one thing changed between it and the checker."""

    def __init__(self, how, leaves, width, length, seed, retry):
        if how == "other-retry":
            retry = "round"
        self.net = CircuitFatTree(leaves, width, length, seed, retry)
        self.how = how
        super().__init__(self.net.signature)

    def elaborate(self, platform):
        from amaranth import Module

        m = Module()
        m.submodules.net = net = self.net
        n = len(net.tx)
        for p in range(n):
            wiring.connect(m, wiring.flipped(self.tx[p]), net.tx[p])
            m.d.comb += [self.tx_done[p].eq(net.tx_done[p]), self.tx_reject[p].eq(net.tx_reject[p])]
        for d in range(n):
            src = d
            if self.how == "swap-rx":
                src = {0: 1, 1: 0}.get(d, d)
            rx, out = net.rx[src], self.rx[d]
            m.d.comb += [out.valid.eq(rx.valid), out.payload.eq(rx.payload), rx.ready.eq(out.ready)]
            if self.how == "flip-data" and d == 2:
                m.d.comb += out.payload.data.eq(rx.payload.data ^ (1 << 7))
            if self.how == "drop" and d == 3:
                m.d.comb += out.valid.eq(0)
        return m


@pytest.mark.parametrize("how", ["other-retry", "swap-rx", "flip-data", "drop"])
def test_checker_catches_broken_networks(how):
    # A network with another retry strategy delivers every message intact, only in other
    # cycles: the replay of the model's trace is what catches it.
    def network(*args):
        return _Broken(how, *args)

    core = small_core(network=network)
    got = run_core(core, core.harness.run_period + 2)
    assert got["errors"] > 0 and got["error"] == 1


def test_payload_fields_and_check_code():
    assert payload_fields(16, 8, 2) == {"src": 4, "dest": 4, "seq": 4, "check": 4, "pad": 0}
    assert payload_fields(2, 64, 1) == {"src": 1, "dest": 1, "seq": 16, "check": 16, "pad": 30}
    with pytest.raises(
        ValueError,
        match=r"^the circuit-tree-paper self-test needs width \* length >= "
        r"10 payload bits \(source, destination, sequence number, check code\) "
        r"for 16 leaves, not 8$",
    ):
        payload_fields(16, 1, 8)
    fields = payload_fields(16, 1, 16)
    assert pack_payload(fields, 0, 0, 0) != 0  # the all-zero payload is never valid
    # Every single-bit change of a covered field changes the code.
    base = check_code(fields, 5, 9, 3)
    for bit in range(4):
        assert check_code(fields, 5 ^ (1 << bit), 9, 3) != base
        assert check_code(fields, 5, 9 ^ (1 << bit), 3) != base
        assert check_code(fields, 5, 9, 3 ^ (1 << bit)) != base
    # ... and so does every pair of bit errors (12 covered bits, 15 distinct columns).
    for a in range(12):
        for b in range(a + 1, 12):
            flipped = 0x395 ^ (1 << a) ^ (1 << b)
            assert (
                check_code(fields, flipped & 15, flipped >> 4 & 15, flipped >> 8)
                != (check_code(fields, 5, 9, 3))
                or flipped == 0x395
            )


def test_harness_bad_parameters():
    with pytest.raises(ValueError, match="^pattern must be one of random, transpose, "):
        CircuitTreeHarness(**SMALL, pattern="tornado")
    with pytest.raises(ValueError, match=r"^inject_cycles must be between 1 and 1048576, not 0$"):
        CircuitTreeHarness(**SMALL, inject_cycles=0)
    with pytest.raises(ValueError, match="^the circuit-tree-paper self-test has no option 'nope'"):
        get_selftest("circuit-tree-paper").build(
            SMALL, seed=1, blink_log2=3, fault_log2=None, nope=1
        )


def test_status_line_round_trip_through_the_uart():
    fields = [("cycles", 32), ("checked", 32), ("maxlat", 16), ("errors", 16), ("x", 1)]
    dut = StatusReporter(2, 11, fields)
    values = {"cycles": 0xDEADBEEF, "checked": 12345, "maxlat": 0x3A, "errors": 2, "x": 1}
    edges = []

    async def bench(ctx):
        for name, value in values.items():
            ctx.set(getattr(dut, name), value)
        cycle = 0
        level = 1
        for cycle in range(5400):
            now = ctx.get(dut.tx)
            if now != level:
                edges.append((cycle, now))
                level = now
            await ctx.tick()

    simulate(dut, bench)
    text = decode_uart(edges, 2, 5400).decode()
    want = status_line(fields=[(n, b, values[n]) for n, b in fields])
    assert want == "cycles deadbeef checked 00003039 maxlat 003a errors 0002 x 1\r\n"
    assert text == want * 2
    assert parse_status_line(want) == values
    with pytest.raises(ValueError, match="^not a status line"):
        parse_status_line("cycles 12 checked")


def test_simulate_status_decodes_the_core():
    core = small_core()
    result = simulate_status(core, 3600)
    assert len(result["lines"]) == 1
    line = result["lines"][0]
    # The line is a snapshot taken when it starts, after 2**11 cycles.
    assert line["cycles"] == 2048 and line["errors"] == 0 and line["checked"] > 0
    assert line["maxlat"] == core.harness.trace.max_latency


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


SIM_ARGV = [
    "build",
    "circuit-tree-paper",
    "-p",
    "leaves=4",
    "-p",
    "length=8",
    "--inject-cycles",
    "150",
]


@pytest.mark.parametrize("fault", [False, True])
def test_build_simulate(capsys, fault):
    argv = [*SIM_ARGV, "--simulate", "3600", "--json"] + (["--inject-fault"] if fault else [])
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    data = json.loads(out)
    assert data["lines"] == 1 and data["checked"] > 0 and data["verdict"] == "PASS"
    assert (data["errors"] > 0) == fault
    assert data["params"] == {
        "leaves": 4,
        "width": 1,
        "length": 8,
        "seed": 1,
        "retry": "immediate",
        "faults": "",
    }
    assert data["selftest"]["inject_cycles"] == 150


def test_build_with_a_fault_list_is_one_error_line(capsys):
    # The board replays the fault-free model's trace: a fault list is refused, not ignored.
    code, _, err = run_cli(capsys, *SIM_ARGV, "-p", "faults=eject:1", "--simulate", "3600")
    assert code == 2
    assert err.strip().splitlines() == [
        "fattree build: error: the circuit-tree-paper self-test runs the fault-free tree; faults "
        "(--param faults) are for fattree sim, verilog and experiment faults (--inject-fault "
        "corrupts a checked bit instead)"
    ]


def test_build_simulate_selector_and_errors(capsys):
    code, out, _ = run_cli(capsys, "build", "selector", "-p", "width=2", "--simulate", "1200")
    assert code == 0 and "errors 0: PASS" in out
    code, out, err = run_cli(capsys, *SIM_ARGV, "--simulate", "100")
    assert code == 1 and err.strip().splitlines()[-1].startswith(
        "fattree build: error: no complete status line in 100 cycles"
    )
    code, _, err = run_cli(capsys, *SIM_ARGV, "--simulate", "0")
    assert code == 2 and "--simulate wants a positive number of cycles, not 0" in err
    code, _, err = run_cli(capsys, "build", "selector", "--pattern", "transpose", "--simulate", "9")
    assert code == 2 and "the selector self-test has no option 'pattern'" in err


#: The circuit tree's ULX3S-85F point: the largest measured to fit and close timing at the
#: board clock (docs/boards.md); the ECP5 boards found in amaranth-boards take it too.
ULX3S_POINT = {"leaves": 32, "width": 8, "length": 2}


def test_board_points():
    # Each board's default point of the circuit tree is what the self-test table says.
    selftest = get_selftest("circuit-tree-paper")
    assert selftest.defaults_for("icebreaker") == {"leaves": 8, "width": 1, "length": 16}
    assert selftest.defaults_for("ulx3s-85f") == ULX3S_POINT
    assert selftest.defaults_for("ulx3s-12f", "ecp5") == ULX3S_POINT
    assert selftest.defaults_for("nosuch") == {}


def _report_only(top, board_, out, name, **extra):
    """build_bitstream's stand-in: no tools, a report (the core is left unelaborated)."""
    return {
        "bitstream": str(out / f"{name}.bit"),
        "bytes": 1,
        "seconds": 0.1,
        "luts": 5,
        "ffs": 6,
        "lut_capacity": 10,
        "cells": {},
        "fmax_mhz": 40.0,
        "target_mhz": 25.0,
        "timing_pass": True,
        "nextpnr_log": "log",
    }


@pytest.mark.parametrize(
    "more, point",
    [([], ULX3S_POINT), (["-p", "leaves=16"], {"leaves": 16, "width": 8, "length": 2})],
)
def test_ulx3s_point_and_the_old_one(capsys, tmp_path, monkeypatch, built_but_unused, more, point):
    # `fattree build circuit-tree-paper --board ulx3s-85f` builds the board's point; the old,
    # smaller point (16 leaves) is one -p away.
    from fattree.scripts import build

    monkeypatch.setattr(build, "build_bitstream", _report_only)
    argv = [
        "build",
        "circuit-tree-paper",
        "--board",
        "ulx3s-85f",
        "--build-root",
        str(tmp_path),
        *more,
    ]
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert {k: data["params"][k] for k in point} == point
    assert data["selftest"]["payload_fields"] == payload_fields(point["leaves"], 8, 2)
    assert f"leaves{point['leaves']}-" in data["build_dir"]


# 8000 cycles give two status lines; the ULX3S's 32-leaf points take one (>= 3550 cycles:
# 19 s for the circuit tree, 27 s for the Leiserson tree, 2026-11-24).
_BIG = {("circuit-tree-paper", "ulx3s-85f"), ("leiserson-tree", "ulx3s-85f")}


@pytest.mark.slow
@pytest.mark.parametrize("board", ["icebreaker", "ulx3s-85f"])
@pytest.mark.parametrize("design", ["circuit-tree-paper", "scheduler", "leiserson-tree"])
def test_build_simulate_board_point(capsys, design, board):
    # Each network's own point for the board, long enough for one (big points) or two status
    # lines, with and without the fault.
    cycles, lines = (3600, 1) if (design, board) in _BIG else (8000, 2)
    for fault in (False, True):
        argv = ["build", design, "--board", board, "--simulate", str(cycles), "--json"]
        code, out, err = run_cli(capsys, *argv + (["--inject-fault"] if fault else []))
        assert code == 0, err
        data = json.loads(out)
        assert data["lines"] >= lines and data["checked"] > 0 and (data["errors"] > 0) == fault


# --- clocking from the PLL --------------------------------------------------------------------


def test_pll_plans():
    from fattree.boards.clocks import pll_plan

    ice = pll_plan("ice40", 12e6, 30e6)  # what icepll -i 12 -o 30 gives
    assert ice.f_out == 30e6 and ice.params == {"DIVR": 0, "DIVF": 79, "DIVQ": 5, "FILTER_RANGE": 1}
    # Never above the target; the VCO and phase detector within the data sheet's ranges.
    for target in (17e6, 33.3e6, 48e6, 75e6, 120e6):
        plan = pll_plan("ice40", 12e6, target)
        p = plan.params
        pfd = 12e6 / (p["DIVR"] + 1)
        assert 10e6 <= pfd <= 133e6 and 533e6 <= pfd * (p["DIVF"] + 1) <= 1066e6
        assert plan.f_out == pfd * (p["DIVF"] + 1) / 2 ** p["DIVQ"] <= target
        assert plan.f_out > 0.95 * target
    for target in (40e6, 66e6, 100e6, 133e6):
        plan = pll_plan("ecp5", 25e6, target)
        p = plan.params
        assert plan.f_out == 25e6 / p["CLKI_DIV"] * p["CLKFB_DIV"] <= target
        assert 400e6 <= plan.f_out * p["CLKOP_DIV"] <= 800e6 and plan.f_out > 0.95 * target
    with pytest.raises(
        ValueError, match="^clock must be 16..275 MHz for the ice40 PLL, not 5 MHz$"
    ):
        pll_plan("ice40", 12e6, 5e6)
    # Inside the nominal range but below what 12 MHz reaches: the message says the real floor.
    with pytest.raises(
        ValueError, match="not 16 MHz: from a 12 MHz oscillator its lowest is 16.125"
    ):
        pll_plan("ice40", 12e6, 16e6)
    assert pll_plan("ice40", 12e6, 16.2e6).f_out == 16.125e6


def test_build_with_pll_plumbing(capsys, tmp_path, monkeypatch):
    # Without the tools: --clock-mhz builds the core for the PLL's clock (heartbeat and fault
    # periods from it), gives the top the plan, and reports the clock against the oscillator.
    from amaranth.hdl import Fragment

    from fattree.scripts import build

    calls = []

    def fake_build(top, board_, out, name):
        Fragment.get(top.core, None)
        top._MustUse__silence = True
        calls.append((top, out))
        return {
            "bitstream": str(out / "x.bin"),
            "bytes": 1,
            "seconds": 0.1,
            "luts": 5,
            "ffs": 6,
            "lut_capacity": 10,
            "cells": {},
            "fmax_mhz": 40.0,
            "target_mhz": 30.0,
            "timing_pass": True,
            "nextpnr_log": "log",
        }

    monkeypatch.setattr(build, "build_bitstream", fake_build)
    argv = [
        "build",
        "selector",
        "-p",
        "width=2",
        "--clock-mhz",
        "30",
        "--inject-fault",
        "--build-root",
        str(tmp_path),
        "--json",
    ]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["clock_mhz"] == 30.0 and data["oscillator_mhz"] == 12.0
    assert data["pll"] == {"DIVR": 0, "DIVF": 79, "DIVQ": 5, "FILTER_RANGE": 1}
    top, out_dir = calls[0]
    assert top.pll.f_out == 30e6 and out_dir.name == "width2-30mhz-fault"
    assert top.core.blink_log2 == 24  # 2^24 cycles at 30 MHz: ~0.56 s
    code = main(["build", "selector", "--clock-mhz", "500", "--build-root", str(tmp_path)])
    out, _ = capsys.readouterr()  # above the PLL's range: its fastest clock
    assert code == 0 and calls[-1][0].pll.f_out <= 275e6 and "from the PLL (12 MHz" in out
    code = main(["build", "selector", "--clock-mhz", "5", "--build-root", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 2 and "clock must be 16..275 MHz for the ice40 PLL, not 5 MHz" in err


def test_a_point_that_does_not_fit_says_by_how_much(tmp_path):
    from fattree.boards.platforms import _overflow

    log = tmp_path / "x.tim"
    log.write_text(
        "Info: Device utilisation:\n"
        "Info: \t         ICESTORM_LC:    6330/   5280   119%\n"
        "Info: \t        ICESTORM_RAM:       6/     30    20%\n"
    )
    assert _overflow(log) == "does not fit: 6330 of 5280 ICESTORM_LC (120%)"
    log.write_text(log.read_text().replace("6330", "5000"))
    assert _overflow(log) == "" and _overflow(tmp_path / "none.tim") == ""


def test_missed_timing_says_by_how_much(tmp_path):
    from fattree.boards.platforms import _timing_failure

    log = tmp_path / "x.tim"
    log.write_text(
        "Info: Max frequency for clock '$glbnet$clk': 91.00 MHz (FAIL at 100.00 MHz)\n"
        "Info: Max frequency for clock '$glbnet$clk': 84.96 MHz (FAIL at 100.00 MHz)\n"
    )
    assert _timing_failure(log, "ecp5") == (
        "timing not met: Fmax 84.96 MHz, 100.00 MHz wanted (a lower --clock-mhz)"
    )
    log.write_text("Info: Max frequency for clock 'clk': 35.38 MHz (PASS at 30.02 MHz)\n")
    assert _timing_failure(log, "ice40") == "" == _timing_failure(tmp_path / "no.tim", "ice40")


def test_build_program(capsys, tmp_path, monkeypatch):
    # --program runs the board's programmer on the bitstream if it is installed, else names
    # the command to run (one line, exit 3).
    from amaranth.hdl import Fragment

    from fattree.scripts import build

    def fake_build(top, board_, out, name):
        Fragment.get(top.core, None)
        top._MustUse__silence = True
        path = out / f"{name}.bin"
        return {
            "bitstream": str(path),
            "bytes": 1,
            "seconds": 0.1,
            "luts": 5,
            "ffs": 6,
            "lut_capacity": 10,
            "cells": {},
            "fmax_mhz": 40.0,
            "target_mhz": 12.0,
            "timing_pass": True,
            "nextpnr_log": "log",
        }

    monkeypatch.setattr(build, "build_bitstream", fake_build)
    argv = ["build", "-p", "width=2", "--build-root", str(tmp_path), "--program"]
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    code = main(argv)
    out, err = capsys.readouterr()
    bitstream = tmp_path / "boards/icebreaker/selector/width2/selector_selftest.bin"
    assert code == 3 and err.strip().splitlines()[-1] == (
        f"fattree build: error: iceprog not found; program the board with: iceprog {bitstream}"
    )
    (tmp_path / "bin").mkdir()
    record = tmp_path / "args"
    fake = tmp_path / "bin" / "iceprog"
    fake.write_text(f'#!/bin/sh\necho "$@" > {record}\n')
    fake.chmod(0o755)
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["programmed"] and record.read_text().strip() == str(bitstream)


# --- nextpnr's router ---------------------------------------------------------------------------


@pytest.mark.parametrize("router", [None, "router2"])
def test_nextpnr_router_reaches_the_build_script(tmp_path, monkeypatch, router):
    # The plan's script runs nextpnr with --router only when one is chosen (the tools stand in:
    # the script is read, not run, and the failed "run" is one BuildFailed naming the log).
    import subprocess

    from fattree.boards import platforms
    from fattree.boards.selector_selftest import selftest
    from fattree.boards.top import BoardTop

    board = platforms.get_board("ulx3s-85f")
    top = BoardTop(selftest({"width": 1}, blink_log2=4), board)
    monkeypatch.setattr(subprocess, "call", lambda *a, **k: 1)
    extra = {"nextpnr_router": router} if router else {}
    with pytest.raises(platforms.BuildFailed, match="build.log$"):
        platforms.build_bitstream(top, board, tmp_path, "top", **extra)
    script = (tmp_path / "build_top.sh").read_text()
    nextpnr = [line for line in script.splitlines() if line.startswith('"$NEXTPNR_ECP5"')]
    assert len(nextpnr) == 1 and "--lpf top.lpf" in nextpnr[0]
    assert ("--router router2" in nextpnr[0]) == (router == "router2")
    assert "--router" not in script.replace("--router router2", "")


def test_nextpnr_router_bad_value(capsys, tmp_path):
    from fattree.boards import platforms

    with pytest.raises(
        ValueError, match="^nextpnr_router must be one of router1, router2, not 'r3'$"
    ):
        platforms.build_bitstream(None, None, tmp_path, "top", nextpnr_router="r3")
    with pytest.raises(SystemExit) as exit_:
        main(["build", "circuit-tree-paper", "--board", "ulx3s-85f", "--nextpnr-router", "r3"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "fattree build: error: argument --nextpnr-router: invalid choice: 'r3' "
        "(choose from 'router1', 'router2')"
    )


def test_nextpnr_router_option(capsys, tmp_path, monkeypatch):
    # --nextpnr-router reaches build_bitstream, names the build folder and the report; without
    # it build_bitstream is called as before (no router argument).
    from amaranth.hdl import Fragment

    from fattree.scripts import build

    calls = []

    def fake_build(top, board_, out, name, **extra):
        Fragment.get(top.core, None)
        top._MustUse__silence = True
        calls.append((out, extra))
        return {
            "bitstream": str(out / "x.bit"),
            "bytes": 1,
            "seconds": 0.1,
            "luts": 5,
            "ffs": 6,
            "lut_capacity": 10,
            "cells": {},
            "fmax_mhz": 40.0,
            "target_mhz": 25.0,
            "timing_pass": True,
            "nextpnr_log": "log",
        }

    monkeypatch.setattr(build, "build_bitstream", fake_build)
    argv = ["build", "selector", "--board", "ulx3s-85f", "-p", "width=2"]
    argv += ["--build-root", str(tmp_path)]
    for more, folder, extra in [
        ([], "width2", {}),
        (["--nextpnr-router", "router2"], "width2-router2", {"nextpnr_router": "router2"}),
    ]:
        code = main([*argv, *more, "--json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert calls[-1][0].name == folder and calls[-1][1] == extra
        assert json.loads(out)["nextpnr_router"] == extra.get("nextpnr_router")
