"""Faults in the circuit tree (fattree.spec.faults): the fault lists, the RTL with faults
against the model with the same faults (amaranth.sim, cycle by cycle), and what the faults
do to delivery."""

import random
import shutil
import subprocess
import sys

import pytest

from fattree.hdl.circuit_tree import CircuitFatTree
from fattree.sim.checks.circuit_tree import (
    CHECKS,
    INPUTS,
    OUTPUTS,
    CircuitTreeCheck,
    dut_signals,
)
from fattree.sim.models.circuit import CircuitTreeModel, traffic
from fattree.sim.scoreboard import Scoreboard
from fattree.sim.testbench import simulate
from fattree.spec.faults import (
    Fault,
    LinkFault,
    check_faults,
    format_faults,
    link_faults,
    parse_faults,
    tree_links,
)
from fattree.spec.topology import Link

# -- the fault lists -------------------------------------------------------------------------


def test_parse_and_format_round_trip():
    text = "up:1.3.0,down:0.2.1/data0=1,router:1.2,inject:3,eject:4/ack=1,up:0.1.1/valid=0"
    faults = parse_faults(text)
    assert faults[0] == Fault("up", 1, 3, 0)
    assert faults[1] == Fault("down", 0, 2, 1, "stuck1", "data", 0)
    assert faults[2] == Fault("router", 1, 2)
    assert faults[3] == Fault("inject", 0, 3)
    assert faults[4] == Fault("eject", 0, 4, 0, "stuck1", "ack")
    assert faults[5] == Fault("up", 0, 1, 1, "stuck0", "valid")
    assert format_faults(faults) == text
    assert parse_faults("") == parse_faults("none") == ()
    assert parse_faults(" up:0.0.0 , eject:1 ") == (Fault("up", 0, 0, 0), Fault("eject", 0, 1))


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "up:1.3",
            "fault 'up:1.3' is not one of up:L.T.P, down:L.T.P, inject:N, eject:N or "
            "router:L.T, optionally /WIRE=0|1",
        ),
        ("up:3.0.0", "fault 'up:3.0.0': level must be 0..2, not 3 (16 leaves, width 8)"),
        ("down:0.8.0", "fault 'down:0.8.0': router must be 0..7, not 8 (16 leaves, width 8)"),
        ("up:0.0.2", "fault 'up:0.0.2': port must be 0..1, not 2 (16 leaves, width 8)"),
        ("eject:16", "fault 'eject:16': node must be 0..15, not 16 (16 leaves, width 8)"),
        ("router:4.0", "fault 'router:4.0': level must be 0..3, not 4 (16 leaves, width 8)"),
        (
            "inject:0/data8=1",
            "fault 'inject:0/data8=1': data bit must be 0..7, not 8 (16 leaves, width 8)",
        ),
        (
            "inject:0/valid=2",
            "fault 'inject:0/valid=2': a stuck wire is /valid=V, /dataK=V, /reject=V or /ack=V "
            "(V 0 or 1) on a link, not on a router",
        ),
        (
            "router:0.0/ack=1",
            "fault 'router:0.0/ack=1': a stuck wire is /valid=V, /dataK=V, /reject=V or /ack=V "
            "(V 0 or 1) on a link, not on a router",
        ),
    ],
)
def test_bad_fault_messages(text, message):
    with pytest.raises(ValueError) as info:
        check_faults(text, 16, 8)
    assert str(info.value) == message


def test_two_leaves_have_no_router_links():
    with pytest.raises(ValueError, match="a tree of 2 leaves has no links between routers"):
        check_faults("up:0.0.0", 2, 1)


def test_dead_router_is_its_links():
    # A leaf router: its two nodes' cables and its two up cables, both directions each.
    links = set(link_faults("router:0.5", 16, 4))
    assert links == {
        Link("inject", 0, 5, 0),
        Link("eject", 0, 5, 0),
        Link("inject", 0, 5, 1),
        Link("eject", 0, 5, 1),
        Link("up", 0, 5, 0),
        Link("down", 0, 5, 0),
        Link("up", 0, 5, 1),
        Link("down", 0, 5, 1),
    }
    # A top router (level 3 of 16 leaves): only its down cables, to the routers below that
    # name it on their up ports.
    top = set(link_faults("router:3.6", 16, 4))
    assert len(top) == 4 and {lk.level for lk in top} == {2}
    assert all(lk.direction in ("up", "down") for lk in top)
    from fattree.spec.topology import FatTree

    tree = FatTree(4, 2)
    for lk in top:
        assert tree.up_neighbour(lk.level, lk.switch, lk.port)[1] == 6
    # Every link of every router, once per direction it has: each cable has two routers (or
    # a router and a node), so the dead routers of a whole level cover every cable once.
    every = set()
    for t in range(8):
        every |= set(link_faults(f"router:1.{t}", 16, 4))
    assert every == {
        lk for lk in tree_links(16) if lk.level in (0, 1) and lk.direction in ("up", "down")
    }


def test_wire_faults_combine_later_wins():
    faults = link_faults("eject:3,eject:3/ack=1,up:0.0.0/data1=1,up:0.0.0/data2=0", 8, 4)
    assert faults[Link("eject", 0, 1, 1)] == LinkFault(0, 0, 0, 0, 1)
    assert faults[Link("up", 0, 0, 0)] == LinkFault(None, 0b1001, 0b0010, None, None)
    assert faults[Link("up", 0, 0, 0)].forward(1, 0b0101) == (1, 0b0011)
    assert faults[Link("eject", 0, 1, 1)].backward(1, 0) == (0, 1)


# -- RTL against the model, with faults --------------------------------------------------------


def lockstep(leaves, width, length, seed, retry, faults, queues, limit, *, stall=0.0):
    """The shared check (sim/checks/circuit_tree.py) on the RTL and the model with the same
    faults: every output every cycle, until every message is delivered or none was for
    1100 cycles (longer than the longest back-off, 4 * 255); returns the scoreboard, the
    check and the model."""
    dut = CircuitFatTree(leaves, width, length, seed, retry, faults)
    model = CircuitTreeModel(leaves, width, length, seed, retry, faults)
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
        check.patience = 1100
        checks.append(check)
        await check.phase("faults", queues, limit)

    simulate(dut, bench)
    return scoreboard, checks[0], model


CASES = [
    # leaves, retry, faults
    (4, "immediate", "up:0.0.0"),
    (4, "backoff", "down:0.1.1"),
    pytest.param(8, "immediate", "eject:5", marks=pytest.mark.slow),
    (8, "round", "inject:2"),
    (8, "backoff", "router:1.2"),
    (8, "immediate", "up:1.3.1,down:0.0.0"),
    pytest.param(8, "immediate", "up:0.2.0/valid=1", marks=pytest.mark.slow),
    (8, "immediate", "down:1.1.0/data0=0,eject:3/data1=1"),
    (8, "backoff", "inject:6/reject=1,eject:1/ack=1"),
    (8, "immediate", "eject:0/valid=1,up:0.3.1/ack=0,down:0.1.0/reject=0"),
    pytest.param(16, "immediate", "router:2.5,up:0.6.1", marks=pytest.mark.slow),
    pytest.param(16, "backoff", "router:0.3,down:2.1.0", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("leaves, retry, faults", CASES)
def test_rtl_matches_model_with_faults(leaves, retry, faults):
    rng = random.Random(leaves)
    queues = traffic("random", leaves, 3, 2, rng, messages=3)
    scoreboard, check, model = lockstep(leaves, 3, 2, 7, retry, faults, queues, 3000, stall=0.2)
    assert scoreboard.failures["cycle_mismatches"] == 0, scoreboard.first_mismatch
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    assert model.faults == check_faults(faults, leaves, 3)
    # The faults did something: at these sizes every case loses at least one message.
    assert 0 < check.undelivered < sum(map(len, queues))


def test_dead_eject_loses_exactly_that_nodes_messages():
    # A message to node 5 has no other way in; everyone else's messages arrive, except those
    # of senders left waiting on node 5 for ever (queued behind it): here none are, since
    # the messages to 5 are the last of their queues.
    rng = random.Random(3)
    queues = [[(d, rng.getrandbits(6)) for d in range(8) if d not in (n, 5)] for n in range(8)]
    for n in range(8):
        if n != 5:
            queues[n].append((5, 0x2A))
    total = sum(map(len, queues))
    scoreboard, check, model = lockstep(8, 3, 2, 2, "immediate", "eject:5", queues, 4000)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    assert check.undelivered == 7
    assert total - check.undelivered == 7 * 6 + 7
    assert model.nis[5].rx_valid == 0 and model.nis[5].was_valid == 0


def test_dead_up_link_swallows_one_message_then_routes_around():
    # Ulink(0, 0, 0): the first message that leaves SW(0, 0) on port c is never answered; its
    # sender (node 0 or 1) waits for ever, its path stays held, and every later message of
    # the other node goes up through d and arrives.
    queues = [[(d, 0x11 * d) for d in range(2, 8)] for _ in range(2)] + [[] for _ in range(6)]
    queues[0], queues[1] = queues[0][:], [(d, 0x15 + d) for d in range(2, 8)]
    scoreboard, check, model = lockstep(8, 8, 1, 4, "immediate", "up:0.0.0", queues, 4000)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    stuck = [n for n in (0, 1) if model.nis[n].state != 0]
    assert len(stuck) == 1
    # The swallowed message and the rest of its sender's queue.
    assert 1 <= check.undelivered <= 6
    other = 1 - stuck[0]
    assert model.nis[other].state == 0  # its every message acknowledged


def test_no_fault_netlist_is_the_fault_free_one():
    from amaranth.back import verilog

    def text(**kw):
        return verilog.convert(CircuitFatTree(4, 2, 1, **kw), name="t", emit_src=False)

    plain = text()
    assert text(faults="") == plain and text(faults="none") == plain
    assert text(faults="up:0.1.0") != plain


def test_cli_bad_fault_is_one_line():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "fattree.scripts",
            "verilog",
            "circuit-tree-paper",
            "--param",
            "leaves=4",
            "--param",
            "faults=up:0.9.0",
            "-o",
            "-",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "fault 'up:0.9.0': router must be 0..1, not 9 (4 leaves, width 8)" in lines[0]


# -- fattree experiment faults ------------------------------------------------------------------


def run_cli_inproc(capsys, *argv):
    from fattree.scripts.main import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_experiment_accounts_for_every_message(capsys):
    import json

    argv = ["experiment", "faults", "--leaves", "8", "--faults", "0,2", "--trials", "2"]
    code, out, err = run_cli_inproc(capsys, *argv, "--messages", "3", "--json")
    assert code == 0, err
    data = json.loads(out)
    col = {c: i for i, c in enumerate(data["columns"])}
    rows = {(r[col["place"]], r[col["faults"]]): r for r in data["rows"]}
    assert set(rows) == {("none", 0), ("up", 2), ("down", 2), ("eject", 2), ("router", 2)}
    for row in rows.values():
        assert row[col["messages"]] == 2 * 8 * 3
        lost = row[col["timed_out"]] + row[col["never_sent"]]
        assert row[col["delivered"]] + lost == row[col["messages"]]
        # Nothing reaches a node behind a dead eject link.
        assert row[col["delivered"]] <= row[col["messages"]] - row[col["to_cut_off"]]
    none = rows["none", 0]
    assert none[col["fraction"]] == 1 and none[col["timed_out"]] == 0 and none[col["p99"]] > 0
    # A dead link between routers swallows at most the one message that first enters it:
    # 2 faults, 2 draws.
    assert rows["up", 2][col["timed_out"]] <= 4
    assert rows["eject", 2][col["to_cut_off"]] > 0
    assert rows["eject", 2][col["timed_out"]] > 0


def test_draw_faults_are_distinct_and_of_their_place():
    from fattree.sim.experiments.faults import draw_faults

    rng = random.Random(1)
    for place in ("up", "down", "eject", "router"):
        faults = draw_faults(place, 6, 16, rng)
        assert len(set(faults)) == 6 and {f.where for f in faults} == {place}
        check_faults(faults, 16, 8)
    with pytest.raises(ValueError, match="a 4-leaf tree has 4 up places, not 5"):
        draw_faults("up", 5, 4, rng)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--leaves", "12"], "--leaves must be powers of two, not 12"),
        (["--leaves", "2048"], "--leaves must be 4..1024, not 2048"),
        (
            ["--places", "up,left"],
            "--places wants a comma list of up, down, eject, router, not 'left'",
        ),
        (["--faults", "x"], "--faults wants a comma list of integers, not 'x'"),
        (["--retry", "later"], "--retry must be one of immediate, round, backoff, not 'later'"),
        (["--leaves", "4", "--faults", "9"], "--faults: a 4-leaf tree has 4 up places, not 9"),
    ],
)
def test_experiment_one_line_errors(capsys, argv, message):
    code, _, err = run_cli_inproc(capsys, "experiment", "faults", *argv)
    assert code == 2
    assert err.strip().splitlines() == [f"fattree experiment: error: {message}"]


@pytest.mark.cocotb
@pytest.mark.slow
def test_experiment_rtl_point_equals_model(tmp_path):
    from fattree.sim.experiments.faults import rtl_point

    opts = {
        "rtl_leaves": 4,
        "messages": 3,
        "limit": 600,
        "seed": 1,
        "retry": "backoff",
        "simulator": "verilator",
    }
    rtl, model, speed = rtl_point(opts, "eject", lambda _: None, tmp_path)
    assert speed["cycle_mismatches"] == 0
    assert rtl[3] == "rtl" and model[3] == "model"
    assert rtl[4:] == model[4:]
    assert rtl[5] > 0 and rtl[6] < rtl[4]  # a node cut off, its messages lost


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog not installed")
@pytest.mark.parametrize(
    "faults",
    ["eject:3", "inject:1,down:0.0.1/data3=1", "router:0.1,eject:0/valid=1,up:0.1.0/ack=1"],
)
def test_faulty_verilog_compiles(faults, tmp_path):
    # A fault must not be a constant Amaranth folds into the interface: the Verilog it
    # wrote for a constant eject valid did not compile.
    from amaranth.back import verilog

    path = tmp_path / "t.v"
    path.write_text(verilog.convert(CircuitFatTree(4, 8, 2, faults=faults), name="t"))
    run = subprocess.run(
        ["iverilog", "-g2005", "-o", str(tmp_path / "t.vvp"), str(path)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[:2000]
