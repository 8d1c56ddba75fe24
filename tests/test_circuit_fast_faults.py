"""Faults in the fast circuit tree (``circuit-tree``, fattree/spec/circuit_fast.py,
"Faults"): its fault lists, the RTL with faults against the model with the same faults
(amaranth.sim, cycle by cycle), what the faults do to delivery and acknowledgement, and
``fattree experiment faults --network circuit-tree``."""

import json
import random
import shutil
import subprocess
import sys

import pytest

from fattree.hdl.circuit_fast.tree import CircuitFastTree
from fattree.sim.checks.circuit_tree import (
    CHECKS,
    INPUTS,
    OUTPUTS,
    CircuitTreeCheck,
    dut_signals,
)
from fattree.sim.models.circuit import traffic
from fattree.sim.models.circuit_fast import CircuitFastTreeModel
from fattree.sim.models.circuit_fault_run import FastFaultRun
from fattree.sim.scoreboard import Scoreboard
from fattree.sim.testbench import simulate
from fattree.spec.circuit_fast import CIRCUIT_TREE_FAST, FAULT_WIRES, link_delay
from fattree.spec.faults import Fault, LinkFault, check_faults, link_faults, parse_faults
from fattree.spec.topology import Link

# -- the fault lists ---------------------------------------------------------------------------


def test_fast_wires_parse_and_format():
    text = "up:1.3.0/dest2=1,eject:4/ack=1,inject:0/valid=0,down:0.1.1/data7=0,router:1.2"
    faults = parse_faults(text, FAULT_WIRES)
    assert faults[0] == Fault("up", 1, 3, 0, "stuck1", "dest", 2)
    assert faults[1] == Fault("eject", 0, 4, 0, "stuck1", "ack")
    assert ",".join(map(str, faults)) == text
    assert CIRCUIT_TREE_FAST["faults"].parse("none") == ""
    assert CIRCUIT_TREE_FAST["faults"].parse(" up:0.0.0/dest1=0 ") == "up:0.0.0/dest1=0"


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "eject:1/reject=1",
            "fault 'eject:1/reject=1': these links have no reject wire (a stuck wire is "
            "/valid=V, /destK=V, /dataK=V or /ack=V, V 0 or 1)",
        ),
        (
            "eject:1/head=1",
            "fault 'eject:1/head=1': a stuck wire is /valid=V, /destK=V, /dataK=V or /ack=V "
            "(V 0 or 1) on a link, not on a router",
        ),
        ("up:0.0.0/dest4=1", "fault 'up:0.0.0/dest4=1': dest bit must be 0..3, not 4"),
        ("up:0.0.0/data8=1", "fault 'up:0.0.0/data8=1': data bit must be 0..7, not 8"),
        ("eject:16", "fault 'eject:16': node must be 0..15, not 16"),
    ],
)
def test_fast_bad_fault_messages(text, message):
    with pytest.raises(ValueError) as info:
        check_faults(text, 16, 8, FAULT_WIRES)
    assert str(info.value).split(" (16 leaves")[0] == message
    # The component, the model and the command line say the same.
    with pytest.raises(ValueError, match="^fault "):
        CircuitFastTree(16, 8, faults=text)
    with pytest.raises(ValueError, match="^fault "):
        CircuitFastTreeModel(16, 8, faults=text)


def test_the_paper_tree_has_no_dest_wire():
    with pytest.raises(ValueError, match="these links have no dest wire"):
        check_faults("up:0.0.0/dest0=1", 16, 8)


def test_dest_bits_combine_and_dead_clears_them():
    faults = link_faults(
        "up:0.0.0/dest0=1,up:0.0.0/dest2=0,eject:3,eject:3/ack=1", 8, 4, FAULT_WIRES
    )
    up = faults[Link("up", 0, 0, 0)]
    assert (up.dest_and, up.dest_or, up.data_and, up.data_or) == (0b010, 0b001, 0b1111, 0)
    assert faults[Link("eject", 0, 1, 1)] == LinkFault(0, 0, 0, 0, 1, 0, 0)


def test_link_delay_is_the_mirror_delay_of_each_link():
    # Node to node 9 of 16 (docs/circuit_tree_fast.md, Timing): inject 15, up into 1 .. 3:
    # 13, 11, 9; down out of 3 .. 1: 7, 5, 3; eject 1.
    h = 4
    assert link_delay(h, Link("inject", 0, 0, 0)) == 15
    assert [link_delay(h, Link("up", lv, 0, 0)) for lv in range(3)] == [13, 11, 9]
    assert [link_delay(h, Link("down", lv, 0, 0)) for lv in (2, 1, 0)] == [7, 5, 3]
    assert link_delay(h, Link("eject", 0, 0, 0)) == 1


# -- RTL against the model, with faults ---------------------------------------------------------


def lockstep(leaves, window, faults, queues, *, model_faults=None, stall=0.2, seed=7):
    """The circuit trees' shared check on the RTL built with ``faults`` and the model built
    with ``model_faults`` (the same by default): every output every cycle, until every
    message is delivered, none was for 600 cycles, or 1000 cycles have passed (an ack stuck
    at 0 delivers a message again and again); returns the scoreboard, the check and the
    model."""
    dut = CircuitFastTree(leaves, 3, 2, seed, window, faults)
    model_faults = faults if model_faults is None else model_faults
    model = CircuitFastTreeModel(leaves, 3, 2, seed, window, model_faults)
    scoreboard = Scoreboard(CHECKS)
    signals = dut_signals(dut, leaves)
    checks = []

    async def bench(ctx):
        def read():
            return [[ctx.get(s) for s in signals[name]] for name in OUTPUTS]

        def drive(*values):
            for name, value in zip(INPUTS, values, strict=True):
                for n in range(leaves):
                    ctx.set(signals[name][n], value[n])

        check = CircuitTreeCheck(
            model, scoreboard, read, drive, ctx.tick, stall=stall, rng=random.Random(seed)
        )
        check.patience = 600
        checks.append(check)
        await check.phase("faults", queues, 1000)

    simulate(dut, bench)
    return scoreboard, checks[0], model


CASES = [
    # leaves, window, faults: every place, every wire (traffic: random, or a hot spot where
    # heads must meet for a fault to show). The default run keeps one case per place and per
    # kind of stuck wire; the others repeat a place or a wire at another spot.
    (4, 2, "up:0.0.0"),
    (4, 4, "down:0.1.1"),
    (8, 4, "inject:2"),
    (8, 2, "router:0.1"),
    (8, 4, "up:1.3.1,down:0.0.0"),
    (8, 4, "down:1.1.0/valid=0,inject:3/valid=1"),
    (8, 4, "inject:6/dest1=1,eject:1/dest0=1"),
    (8, 4, "down:1.1.0/data0=0,eject:3/data1=1"),
    (8, 4, "router:1.0,up:0.1.0/ack=1"),
]
SLOW_CASES = [
    (8, 4, "eject:5"),
    (8, 4, "router:1.2"),
    (8, 4, "router:2.0"),
    (8, 4, "up:0.2.0/valid=1,eject:0/valid=1"),
    (8, 4, "up:0.1.0/dest2=1,down:0.3.0/dest0=0"),
    (8, 4, "up:1.3.1/ack=1,down:1.0.0/ack=1", "hotspot"),
    (8, 4, "inject:2/ack=1,eject:5/ack=1,up:0.1.0/ack=1"),
    (8, 8, "up:0.3.1/ack=0,eject:2/ack=0"),
]


@pytest.mark.parametrize(
    "leaves, window, faults, pattern",
    [(*c, "random")[:4] for c in CASES]
    + [pytest.param(*(*c, "random")[:4], marks=pytest.mark.slow) for c in SLOW_CASES],
)
def test_rtl_matches_model_with_faults(leaves, window, faults, pattern):
    queues = traffic(pattern, leaves, 3, 2, random.Random(leaves), messages=4)
    scoreboard, check, model = lockstep(leaves, window, faults, queues)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    assert model.faults == check_faults(faults, leaves, 3, FAULT_WIRES)
    # The faults show in the outputs: the model of the healthy tree differs from this RTL.
    healthy, _, _ = lockstep(leaves, window, faults, queues, model_faults="none")
    assert healthy.mismatches > 0


def fault_run(leaves, faults, queues, *, window=4, limit=600, seed=1, width=8, length=2):
    """The fault experiment's run (:class:`FastFaultRun`: traffic and bookkeeping) on the RTL's
    outputs, each compared with the model's every cycle; returns the run and the model."""
    dut = CircuitFastTree(leaves, width, length, seed, window, faults)
    model = CircuitFastTreeModel(leaves, width, length, seed, window, faults)
    run = FastFaultRun(queues, limit)
    signals = dut_signals(dut, leaves)

    async def bench(ctx):
        while not run.finished:
            seen = [[ctx.get(s) for s in signals[name]] for name in OUTPUTS]
            valid, dest, data = run.inputs()
            for name, values in zip(INPUTS, (valid, dest, data, [1] * leaves), strict=True):
                for n in range(leaves):
                    ctx.set(signals[name][n], values[n])
            want = model.step(valid, dest, data)
            expected = [want.tx_ready, want.tx_done, want.tx_reject, want.rx_valid, want.rx_data]
            for name, got, exp in zip(OUTPUTS, seen, expected, strict=True):
                for n in range(leaves):
                    if exp[n] is not None:
                        assert got[n] == exp[n], f"cycle {run.cycle}, {name}[{n}]"
            run.observe(valid, seen[0], seen[3], seen[4], seen[1], seen[2])
            await ctx.tick()

    simulate(dut, bench)
    return run, model


def test_dead_up_link_is_survived_by_another_path():
    # Node 0 alone sends, one message at a time (window 1): nothing can meet its heads, so
    # the healthy tree delivers each at the first attempt. With SW(0, 0)'s up port c dead,
    # every head the LFSR sends up c is lost; its source hears nothing and sends it again,
    # until the up choice takes d: every message arrives, exactly once.
    queues = [[(d, 10 + d) for d in range(2, 8)]] + [[] for _ in range(7)]
    healthy, _ = fault_run(8, "", queues, window=1)
    assert healthy.figures()["resent"] == 0
    run, model = fault_run(8, "up:0.0.0", queues, window=1)
    fig = run.figures()
    assert fig["delivered"] == fig["acknowledged"] == 6
    assert fig["resent"] > 0 and fig["resent"] == model.unacknowledged[0]
    assert fig["duplicates"] == fig["misdelivered"] == fig["false_ack"] == 0
    assert model.delivered == 6  # taken from the receive streams: none twice


def test_dead_eject_link_never_delivers_nor_acknowledges():
    # Every node sends to node 5 and to two others: the messages to 5 are sent again and
    # again, never delivered and never acknowledged; all others arrive.
    rng = random.Random(3)
    queues = [
        [(5, 100 + n)]
        + [(d, 10 * n + d) for d in rng.sample([d for d in range(8) if d not in (n, 5)], 2)]
        for n in range(8)
        if n != 5
    ]
    queues.insert(5, [(1, 200), (2, 201)])
    run, model = fault_run(8, "eject:5", queues, limit=400)
    fig = run.figures()
    to_five = sum(1 for q in queues for d, _ in q if d == 5)
    assert to_five == 7
    assert fig["delivered"] == fig["messages"] - to_five == fig["acknowledged"]
    assert fig["timed_out"] == to_five and fig["false_ack"] == 0
    assert model.nis[5].received == 0
    # Each message to 5 was tried many times in 400 cycles (F = 11 between attempts).
    assert fig["resent"] > 10 * to_five


def test_stuck_ack_counts_a_lost_message_as_falsely_acknowledged():
    # Node 0's inject link reads ack 1: its message to the node behind the dead eject link
    # is lost there, yet acknowledged, and never sent again; the experiment counts it.
    queues = [[(5, 1), (3, 2)]] + [[] for _ in range(7)]
    run, model = fault_run(8, "eject:5,inject:0/ack=1", queues)
    fig = run.figures()
    assert fig["acknowledged"] == 2 and fig["delivered"] == 1
    assert fig["false_ack"] == 1 and fig["timed_out"] == 1 and fig["resent"] == 0
    # The same with a healthy ack wire: sent again and again, never acknowledged.
    run, model = fault_run(8, "eject:5", queues)
    fig = run.figures()
    assert fig["acknowledged"] == fig["delivered"] == 1 and fig["false_ack"] == 0
    assert fig["resent"] > 0


def test_stuck_ack_zero_delivers_again_and_again():
    # A delivered message whose acknowledgement cannot come back is sent again: delivered
    # more than once, never acknowledged.
    queues = [[(3, 7)]] + [[] for _ in range(7)]
    run, _ = fault_run(8, "eject:3/ack=0", queues, limit=100)
    fig = run.figures()
    assert fig["delivered"] == 1 and fig["acknowledged"] == 0 and fig["duplicates"] > 0


def test_stuck_dest_bit_delivers_to_another_node():
    # Node 0's inject link reads dest bit 2 as 1: its message to node 3 arrives at node 7,
    # and is acknowledged there.
    queues = [[(3, 9)]] + [[] for _ in range(7)]
    run, model = fault_run(8, "inject:0/dest2=1", queues, limit=100)
    fig = run.figures()
    assert fig["misdelivered"] == 1 and fig["delivered"] == 0 and fig["false_ack"] == 1
    assert model.nis[7].received == 1


def test_no_fault_netlist_is_the_fault_free_one():
    from amaranth.back import verilog

    def text(**kw):
        return verilog.convert(CircuitFastTree(4, 2, 1, 1, 2, **kw), name="t", emit_src=False)

    plain = text()
    assert text(faults="") == plain and text(faults="none") == plain
    assert text(faults="up:0.1.0") != plain


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog not installed")
def test_faulty_verilog_compiles(tmp_path):
    from amaranth.back import verilog

    faults = "eject:3,inject:1/dest0=1,down:0.0.1/data3=1,up:0.1.0/ack=1,eject:0/valid=1"
    path = tmp_path / "t.v"
    path.write_text(verilog.convert(CircuitFastTree(4, 8, 2, faults=faults), name="t"))
    run = subprocess.run(
        ["iverilog", "-g2005", "-o", str(tmp_path / "t.vvp"), str(path)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[:2000]


def test_cli_reject_fault_is_one_line():
    argv = ["verilog", "circuit-tree", "--param", "leaves=4"]
    argv += ["--param", "faults=eject:1/reject=1", "-o", "-"]
    result = subprocess.run(
        [sys.executable, "-m", "fattree.scripts", *argv], capture_output=True, text=True
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "fault 'eject:1/reject=1': these links have no reject wire" in lines[0]


# -- fattree experiment faults --network circuit-tree ---------------------------------------


def run_cli_inproc(capsys, *argv):
    from fattree.scripts.main import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_experiment_accounts_for_every_message(capsys):
    argv = ["experiment", "faults", "--network", "circuit-tree", "--leaves", "8"]
    argv += ["--faults", "0,2", "--trials", "2", "--messages", "3", "--limit", "400", "--json"]
    code, out, err = run_cli_inproc(capsys, *argv)
    assert code == 0, err
    data = json.loads(out)
    col = {c: i for i, c in enumerate(data["columns"])}
    rows = {(r[col["place"]], r[col["faults"]]): r for r in data["rows"]}
    assert set(rows) == {(p, 2) for p in ("up", "down", "eject", "router", "ack1")} | {("none", 0)}
    for (place, _), row in rows.items():
        delivered, acked = row[col["delivered"]], row[col["acknowledged"]]
        assert row[col["messages"]] == 2 * 8 * 3
        lost = row[col["timed_out"]] + row[col["never_sent"]]
        assert delivered + lost == row[col["messages"]]
        # Every delivered message is acknowledged; only a stuck ack acknowledges more.
        assert acked - delivered == row[col["false_ack"]]
        if place != "ack1":
            assert row[col["false_ack"]] == 0
    assert rows["none", 0][col["fraction"]] == 1
    # A node behind a dead eject link gets nothing; its senders resend for ever.
    assert 0 < rows["eject", 2][col["to_cut_off"]] <= rows["eject", 2][col["timed_out"]]
    assert rows["eject", 2][col["resent"]] > rows["none", 0][col["resent"]]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--network", "x"], "--network must be one of circuit-tree-paper, circuit-tree, not 'x'"),
        (
            ["--network", "circuit-tree", "--retry", "round"],
            "--retry is for circuit-tree-paper (circuit-tree sends an attempt again when its "
            "fate delay passes without an acknowledgement)",
        ),
        (["--window", "4"], "--window is for circuit-tree (circuit-tree-paper has one message)"),
        (
            ["--network", "circuit-tree", "--window", "3"],
            "--window must be a power of two, not 3",
        ),
        (
            ["--places", "ack1"],
            "--places wants a comma list of up, down, eject, router, not 'ack1'",
        ),
        (
            ["--network", "circuit-tree", "--leaves", "512"],
            "--leaves: circuit-tree is built for 4..256, not 512",
        ),
    ],
)
def test_experiment_one_line_errors(capsys, argv, message):
    code, _, err = run_cli_inproc(capsys, "experiment", "faults", *argv)
    assert code == 2
    assert err.strip().splitlines() == [f"fattree experiment: error: {message}"]


def test_draw_stuck_acks_are_of_every_link():
    from fattree.sim.experiments.faults import draw_faults

    faults = draw_faults("ack1", 40, 8, random.Random(2))
    assert len(set(faults)) == 40
    assert {f.kind for f in faults} == {"stuck1"} and {f.wire for f in faults} == {"ack"}
    check_faults(faults, 8, 8, FAULT_WIRES)
    assert len({f.where for f in faults}) == 4  # inject, eject, up, down


@pytest.mark.cocotb
@pytest.mark.slow
def test_experiment_rtl_point_equals_model(tmp_path):
    from fattree.sim.experiments.faults import rtl_point

    opts = {
        "network": "circuit-tree",
        "rtl_leaves": 4,
        "messages": 3,
        "limit": 300,
        "seed": 1,
        "retry": None,
        "window": 4,
        "simulator": "verilator",
    }
    for place in ("eject", "ack1"):
        rtl, model, speed = rtl_point(opts, place, lambda _: None, tmp_path / place)
        assert speed["cycle_mismatches"] == 0
        assert rtl[3] == "rtl" and model[3] == "model"
        assert rtl[4:] == model[4:]
