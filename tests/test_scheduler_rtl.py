"""LevelWiseScheduler (amaranth.sim) against the sequential reference, bit for bit."""

import random
import shutil

import pytest

from fattree.hdl.scheduler import LevelWiseScheduler
from fattree.sim.checks.scheduler import IN_FLIGHT, STALLS
from fattree.sim.models.scheduler import SchedulerModel
from fattree.sim.models.scheduler_commands import CommandStream, LinkLedger
from fattree.sim.testbench import simulate
from fattree.spec.scheduler import GeneralizedFatTree, Op
from fattree.spec.topology import FatTree
from fattree.verilog_sharing import placed


def make_commands(tree, rng, count, *, hot=None, releases=0.2, clears=0.0):
    """Commands and the results the sequential model expects, command by command.

    ``hot`` limits sources and destinations to a few leaf switches, so back-to-back requests
    keep hitting the same memory rows (the forwarding paths)."""
    stream = CommandStream(tree)
    nodes = stream.hot_nodes(rng, hot) if hot is not None else None
    stream.random(rng, count, nodes=nodes, releases=releases, clears=clears)
    return stream.commands, stream.expected


def run_rtl(levels, w, commands, *, rng=None, p_valid=1.0, p_ready=1.0, max_cycles=None, **params):
    """Drive the commands (valid with probability p_valid), accept results (ready with
    probability p_ready); return the results and the cycle of each handshake. ``params``
    go to the scheduler (``memory``, ``poison_collisions``)."""
    dut = LevelWiseScheduler(levels, w, **params)
    rng = rng or random.Random(0)
    results, accepted_at, produced_at = [], [], []
    limit = max_cycles or 50 * len(commands) + 10 * dut.tree.num_switches + 100

    async def bench(ctx):
        req, res = dut.requests, dut.results
        # Cycles count from the end of the clear a reset runs (test_reset_clears_every_row).
        while not ctx.get(req.ready):
            await ctx.tick()
        k, cycle = 0, 0
        while len(results) < len(commands):
            assert cycle < limit, f"stuck after {len(results)} results"
            valid = k < len(commands) and rng.random() < p_valid
            ready = rng.random() < p_ready
            ctx.set(req.valid, valid)
            if valid:
                op, src, dst, ports = commands[k]
                ctx.set(req.payload.op, op)
                ctx.set(req.payload.src, src)
                ctx.set(req.payload.dst, dst)
                for i, p in enumerate(ports):
                    ctx.set(req.payload.ports[i], p)
            ctx.set(res.ready, ready)
            if valid and ctx.get(req.ready):
                accepted_at.append(cycle)
                k += 1
            if ready and ctx.get(res.valid):
                produced_at.append(cycle)
                results.append(
                    (
                        ctx.get(res.payload.op),
                        ctx.get(res.payload.src),
                        ctx.get(res.payload.dst),
                        ctx.get(res.payload.granted),
                        tuple(ctx.get(res.payload.ports[i]) for i in range(levels - 1)),
                    )
                )
            await ctx.tick()
            cycle += 1

    simulate(dut, bench, period=1e-8)
    return results, accepted_at, produced_at, dut


def check_no_link_granted_twice(tree, results):
    """Scoreboard independent of the model: established connections never share a link."""
    ledger = LinkLedger(tree)
    problems = [p for result in results for p in ledger.apply(result)]
    assert not problems, problems[:3]


def test_link_ledger_catches_double_grants_and_foreign_releases():
    tree = FatTree(2, 4)
    ledger = LinkLedger(tree)
    assert ledger.apply((Op.SCHEDULE, 0, 4, 1, (2,))) == []
    # Another connection through the same up link (leaf switch 0, port 2).
    assert ledger.apply((Op.SCHEDULE, 1, 8, 1, (2,))) == [
        f"{tree.route(1, 8, (2,))[1]} granted to (1, 8) and (0, 4)"
    ]
    assert ledger.apply((Op.SCHEDULE, 2, 12, 0, (2,))) == []  # refused: holds nothing
    assert len(ledger.apply((Op.RELEASE, 3, 12, 1, (1,)))) == 2  # holds neither link
    assert ledger.apply((Op.CLEAR, 0, 0, 1, (0,))) == [] and ledger.held == {}


SIZES = [(2, 2), (2, 4), (3, 2), (3, 4), (4, 2)]


# FT(4, 2) takes twice FT(3, 4)'s time for the same check: a slow point.
@pytest.mark.parametrize(
    "levels, w", [pytest.param(*p, marks=pytest.mark.slow) if p == (4, 2) else p for p in SIZES]
)
def test_back_to_back_equals_model(levels, w):
    tree = FatTree(levels, w)
    rng = random.Random(levels * 10 + w)
    commands, expected = make_commands(tree, rng, 600)
    hot_commands, hot_expected = make_commands(tree, rng, 600, hot=2)
    results, *_ = run_rtl(levels, w, commands, rng=rng)
    assert results == expected
    check_no_link_granted_twice(tree, results)
    results, *_ = run_rtl(levels, w, hot_commands, rng=rng)
    assert results == hot_expected
    check_no_link_granted_twice(tree, results)


@pytest.mark.parametrize("levels, w", [(2, 4), (3, 4)])
def test_never_uses_a_read_of_the_row_being_written(levels, w):
    # A block RAM read of the row written in the same cycle is undefined (the DP16KD does not
    # define it); the pipeline forwards that write (of the request four ahead, hit4) instead.
    # Memories that return such reads inverted must not change a single result.
    tree = FatTree(levels, w)
    rng = random.Random(5)
    commands, expected = make_commands(tree, rng, 600, hot=2, clears=0.01)
    results, *_ = run_rtl(levels, w, commands, rng=rng, memory="portable", poison_collisions=True)
    assert results == expected


@pytest.mark.parametrize(
    "levels, w",
    [
        pytest.param(2, 4, marks=pytest.mark.slow),
        pytest.param(3, 2, marks=pytest.mark.slow),
        (3, 4),
    ],
)
def test_bubbles_and_backpressure(levels, w):
    tree = FatTree(levels, w)
    rng = random.Random(levels * 7 + w)
    commands, expected = make_commands(tree, rng, 500, hot=2, clears=0.01)
    for p_valid, p_ready in [(0.6, 0.5), (1.0, 0.25)]:  # the second fills the output FIFO
        results, *_ = run_rtl(levels, w, commands, rng=rng, p_valid=p_valid, p_ready=p_ready)
        assert results == expected
    check_no_link_granted_twice(tree, results)


@pytest.mark.parametrize("levels, w", [(3, 4), (4, 2)])
def test_random_permutations(levels, w):
    tree = FatTree(levels, w)
    rng = random.Random(99)
    stream = CommandStream(tree)
    for _ in range(3):
        stream.permutation(rng)
    results, *_ = run_rtl(levels, w, stream.commands, rng=rng)
    assert results == stream.expected
    check_no_link_granted_twice(tree, results)


@pytest.mark.parametrize("w", [4, 8, 16])
def test_lowest_port_first_on_one_row(w):
    # Back to back on the same two rows (the loop that sets the clock): leaf switch 0 to leaf
    # switch 1 of FT(2, w) takes ports 0, 1, .., w-1 in that order (the lowest free port, as
    # in the paper's priority selector), then is refused; a released port is the next one
    # given; interleaved with switch 2 -> 1, which shares only the Dlink row.
    levels = 2
    a, b, c = 0, w, 2 * w  # a node on leaf switches 0, 1, 2
    commands = [(Op.SCHEDULE, a, b, ())] * (w + 1)
    expected = [(Op.SCHEDULE, a, b, 1, (i,)) for i in range(w)] + [(Op.SCHEDULE, a, b, 0, (0,))]
    middle = w // 2
    commands += [
        (Op.RELEASE, a, b, (middle,)),
        (Op.SCHEDULE, a, b, ()),
        (Op.RELEASE, a, b, (w - 1,)),
        (Op.RELEASE, a, b, (0,)),
        (Op.SCHEDULE, c, b, ()),
        (Op.SCHEDULE, a, b, ()),
        (Op.SCHEDULE, a, b, ()),
    ]
    expected += [
        (Op.RELEASE, a, b, 1, (middle,)),
        (Op.SCHEDULE, a, b, 1, (middle,)),
        (Op.RELEASE, a, b, 1, (w - 1,)),
        (Op.RELEASE, a, b, 1, (0,)),
        (Op.SCHEDULE, c, b, 1, (0,)),  # switch 2's Ulink row is all free: the Dlink decides
        (Op.SCHEDULE, a, b, 1, (w - 1,)),
        (Op.SCHEDULE, a, b, 0, (0,)),
    ]
    # The same expectations from the reference model, so both agree with the hardware.
    model, reference = SchedulerModel(FatTree(levels, w)), []
    for op, src, dst, ports in commands:
        if op == Op.RELEASE:
            model.release(src, dst, ports)
            reference.append((op, src, dst, 1, ports))
        else:
            g = model.request(src, dst)
            reference.append((op, src, dst, int(g.granted), g.port_vector(levels)))
    assert reference == expected
    results, accepted_at, *_ = run_rtl(levels, w, commands)
    assert accepted_at == list(range(len(commands)))
    assert results == expected


@pytest.mark.parametrize("gap", [1, 2, 3, 4, 5])
def test_same_row_at_every_distance(gap):
    # The forwarding covers the writes of the four requests ahead of a request in R (hit1:
    # the one in C; hit2 .. hit4: in U and one and two cycles past it). Leaf switch 0 -> leaf
    # switch 1 of FT(2, 8) again and again, `gap` commands apart, with requests between them
    # that touch other rows only (switches 2..7): the k-th takes port k whatever the distance,
    # the ninth is refused.
    levels, w = 2, 8
    fillers = [(2 * w + i % 3, (5 + i % 3) * w + i % w) for i in range(8 * gap)]
    commands, hand = [], []
    for k in range(w + 1):
        commands.append((Op.SCHEDULE, 0, w, ()))
        hand.append((k, 1, (k,)) if k < w else (k, 0, (0,)))
        for src, dst in fillers[k * (gap - 1) : (k + 1) * (gap - 1)]:
            commands.append((Op.SCHEDULE, src, dst, ()))
    model, expected = SchedulerModel(FatTree(levels, w)), []
    for op, src, dst, _ in commands:
        g = model.request(src, dst)
        expected.append((op, src, dst, int(g.granted), g.port_vector(levels)))
    hot = [r for r in expected if (r[1], r[2]) == (0, w)]
    assert [(k, r[3], r[4]) for k, r in enumerate(hot)] == hand
    results, accepted_at, *_ = run_rtl(levels, w, commands)
    assert accepted_at == list(range(len(commands)))
    assert results == expected


@pytest.mark.parametrize("levels, w", [(2, 4), (3, 4), (4, 2)])
def test_initiation_interval_one(levels, w):
    # N requests, always valid and always ready: one accepted per clock, and the last result
    # leaves N - 1 + latency cycles after the first request went in.
    tree = FatTree(levels, w)
    commands, expected = make_commands(tree, random.Random(1), 200, hot=2, releases=0.3)
    results, accepted_at, produced_at, dut = run_rtl(levels, w, commands)
    assert results == expected
    assert accepted_at == list(range(len(commands)))
    assert produced_at == [dut.latency + k for k in range(len(commands))]
    assert dut.latency == 4 * (levels - 1) + 3  # input register, M R C U per level, FIFO


@pytest.mark.parametrize("levels, w", [(2, 2), (3, 4)])
def test_reset_clears_every_row(levels, w):
    # Block RAM keeps its contents through a reset, so the reset runs the CLEAR sequence:
    # requests wait one cycle per row, then every link is free (tests/test_reset.py).
    dut = LevelWiseScheduler(levels, w)
    waited = []

    async def bench(ctx):
        cycles = 0
        while not ctx.get(dut.requests.ready):
            await ctx.tick()
            cycles += 1
        waited.append(cycles)

    simulate(dut, bench, period=1e-8)
    assert waited == [w ** (levels - 1)]


def test_clear_takes_one_cycle_per_row():
    levels, w = 3, 4
    tree = FatTree(levels, w)
    commands = [(Op.SCHEDULE, 0, 63, ()), (Op.CLEAR, 0, 0, ()), (Op.SCHEDULE, 0, 63, ())]
    results, accepted_at, produced_at, dut = run_rtl(levels, w, commands)
    assert [r[3] for r in results] == [1, 1, 1]
    assert results[0][4] == results[2][4] == (0, 0)  # after the clear the same ports again
    # The clear waits until the first request has left the pipeline (latency - 2 cycles: the
    # output FIFO need not drain) and one more cycle, then writes the 16 rows, one per cycle,
    # and is accepted with the last one.
    assert accepted_at[1] - accepted_at[0] == dut.latency - 1 + tree.num_switches
    assert accepted_at[2] == accepted_at[1] + 1


@pytest.mark.slow
@pytest.mark.parametrize("levels", [2, 3, 4])
@pytest.mark.parametrize("w", [2, 4, 8, 16])
def test_sweep(levels, w):
    if w ** (levels - 1) > 4096:
        pytest.skip("memory too deep for a quick Python simulation")
    tree = FatTree(levels, w)
    rng = random.Random(levels * 1000 + w)
    for hot in (None, 2):
        commands, expected = make_commands(tree, rng, 3000, hot=hot, clears=0.002)
        results, *_ = run_rtl(levels, w, commands, rng=rng, p_valid=0.9, p_ready=0.9)
        assert results == expected
        check_no_link_granted_twice(tree, results)


#: FT(l, m, w) with m != w, (levels, m, w): fewer parents than children (tapered: refusals
#: at every level) and more.
MW_SIZES = [(2, 4, 2), (2, 2, 4), (3, 4, 2), (3, 2, 4), (4, 2, 4), (3, 8, 2)]


# The two largest trees (64 and 128 leaves) are slow points of the same check.
@pytest.mark.parametrize(
    "levels, m, w",
    [pytest.param(*p, marks=pytest.mark.slow) if p in MW_SIZES[-2:] else p for p in MW_SIZES],
)
def test_m_not_w_equals_model(levels, m, w):
    # Random commands from all nodes and from two hot leaf switches back to back, then three
    # permutations; every result equals the sequential model's on FT(l, m, w), and no link
    # is held twice (the ledger walks the routes of the general tree).
    tree = GeneralizedFatTree(levels, m, w)
    rng = random.Random(levels * 100 + m * 10 + w)
    for hot in (None, 2):
        commands, expected = make_commands(tree, rng, 500, hot=hot, clears=0.01)
        results, *_ = run_rtl(levels, w, commands, rng=rng, m=m)
        assert results == expected
        check_no_link_granted_twice(tree, results)
    stream = CommandStream(tree)
    for _ in range(3):
        stream.permutation(rng)
    results, *_ = run_rtl(levels, w, stream.commands, rng=rng, m=m, p_valid=0.8, p_ready=0.7)
    assert results == stream.expected
    check_no_link_granted_twice(tree, results)
    granted = sum(r[3] for r in results if r[0] == Op.SCHEDULE)
    refused = sum(1 - r[3] for r in results if r[0] == Op.SCHEDULE)
    assert granted > 0
    if w >= 2 * m - 1:
        # Clos's strict-sense condition: at level h at most m - 1 other connections use
        # Ulink(h, s_h) and at most m - 1 use Dlink(h, d_h), so one of w >= 2m - 1 ports is free
        # in both: level-wise never refuses a permutation.
        assert refused == 0
    else:
        assert refused > 0


@pytest.mark.parametrize("levels, m, w", [(3, 4, 2), (3, 2, 4)])
def test_m_not_w_poisoned_collisions_and_interval_one(levels, m, w):
    tree = GeneralizedFatTree(levels, m, w)
    commands, expected = make_commands(tree, random.Random(7), 400, hot=2, releases=0.3)
    results, *_ = run_rtl(
        levels, w, commands, m=m, memory="portable", poison_collisions=True, p_ready=0.8
    )
    assert results == expected
    results, accepted_at, produced_at, dut = run_rtl(levels, w, commands, m=m)
    assert results == expected
    assert accepted_at == list(range(len(commands)))
    assert produced_at == [dut.latency + k for k in range(len(commands))]


@pytest.mark.parametrize("levels, m, w", [(3, 4, 2), (3, 2, 4)])
def test_m_not_w_memories_and_reset(levels, m, w):
    # Level h's memories have one row per switch of that level, m**(l-1-h) * w**h; the reset's
    # clear runs over the deepest.
    dut = LevelWiseScheduler(levels, w, m=m)
    rows = [m ** (levels - 1 - h) * w**h for h in range(levels - 1)]
    assert list(dut.tree.switch_counts[:-1]) == rows
    assert len(dut.requests.payload.src) == levels * (m.bit_length() - 1)
    assert len(dut.requests.payload.ports[0]) == w.bit_length() - 1
    waited = []

    async def bench(ctx):
        cycles = 0
        while not ctx.get(dut.requests.ready):
            await ctx.tick()
            cycles += 1
        waited.append(cycles)

    simulate(dut, bench, period=1e-8)
    assert waited == [max(rows)]


def test_m_equal_w_is_the_default():
    for m in (None, "", 4):
        dut = LevelWiseScheduler(3, 4, m=m)
        assert dut.m == 4 and dut.tree == GeneralizedFatTree(3, 4, 4)
        simulate(dut, _noop)


async def _noop(ctx):
    await ctx.tick()


@pytest.mark.parametrize(
    "levels, w, exc, message",
    [
        (1, 4, ValueError, "levels must be between 2 and 6, not 1"),
        (7, 2, ValueError, "levels must be between 2 and 6, not 7"),
        (3, 3, ValueError, "w must be a power of two of at least 2, not 3"),
        (3, 128, ValueError, "w must be at most 64, not 128"),
        (
            6,
            16,
            ValueError,
            "FT(6, 16) has 1048576 switches per level; the scheduler supports at most 65536",
        ),
        ("3", 4, TypeError, "levels must be an integer, not '3'"),
    ],
)
def test_parameter_errors(levels, w, exc, message):
    with pytest.raises(exc) as info:
        LevelWiseScheduler(levels, w)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "levels, w, m, exc, message",
    [
        (3, 4, 3, ValueError, "m must be a power of two of at least 2, not 3"),
        (3, 4, 1, ValueError, "m must be a power of two of at least 2, not 1"),
        (3, 4, 128, ValueError, "m must be at most 64, not 128"),
        (3, 4, "4", TypeError, "m must be a power of two, not '4'"),
        (
            5,
            2,
            32,
            ValueError,
            "FT(5, 32, 2) has 1048576 switches on its largest level; the scheduler supports at "
            "most 65536",
        ),
    ],
)
def test_m_parameter_errors(levels, w, m, exc, message):
    with pytest.raises(exc) as info:
        LevelWiseScheduler(levels, w, m=m)
    assert str(info.value) == message


def test_m_dp16kd_needs_every_level_to_fit():
    # FT(3, 8, 16): 64, 128 rows of 16 bits -- too shallow for a DP16KD.
    with pytest.raises(ValueError) as info:
        LevelWiseScheduler(3, 16, m=8, memory="dp16kd")
    assert str(info.value).endswith("those of FT(3, 8, 16) have 16 bits x 64..128 rows")


@pytest.mark.parametrize(
    "levels, w, params, exc, message",
    [
        (
            3,
            16,
            {"memory": "bram"},
            ValueError,
            "memory must be 'auto', 'portable' or 'dp16kd', not 'bram'",
        ),
        (3, 16, {"memory": None}, TypeError, "memory must be a string, not None"),
        (
            3,
            4,
            {"memory": "dp16kd"},
            ValueError,
            "memory 'dp16kd' needs link memories that fit one DP16KD (5..9 bits x 256..2048 rows "
            "or 10..18 bits x 256..1024 rows); those of FT(3, 4) have 4 bits x 16 rows",
        ),
        (
            3,
            16,
            {"poison_collisions": True},
            ValueError,
            "poison_collisions needs memory 'portable', not 'auto'",
        ),
        (
            3,
            16,
            {"memory": "dp16kd", "poison_collisions": True},
            ValueError,
            "poison_collisions needs memory 'portable', not 'dp16kd'",
        ),
    ],
)
def test_memory_parameter_errors(levels, w, params, exc, message):
    with pytest.raises(exc) as info:
        LevelWiseScheduler(levels, w, **params)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "levels, w, memory, family, dp16kds",
    [
        (3, 16, "auto", "ecp5", 4),
        (3, 16, "auto", None, 0),
        (3, 16, "portable", "ecp5", 0),
        (3, 16, "dp16kd", "ecp5", 4),
        (4, 8, "dp16kd", "ecp5", 6),
        (3, 4, "auto", "ecp5", 0),  # 16 rows: LUT RAM
    ],
)
def test_memory_form_by_parameter(levels, w, memory, family, dp16kds):
    # As benchmarks/memory_forms.py builds it: the design table passes `memory` through.
    from fattree.designs import DESIGNS, elaborate_verilog

    params = {"levels": levels, "w": w, "memory": memory}
    text = elaborate_verilog(DESIGNS["scheduler"], params, family)
    # Every block RAM with its output register; the four alike are one module, placed 4 times.
    assert text.count("DP16KD #(") == text.count('.REGMODE_B("OUTREG")')
    assert placed(text, "DP16KD", "scheduler") == dp16kds


def test_verilog_from_the_command_line(capsys, tmp_path):
    from fattree.scripts.main import main

    target = tmp_path / "scheduler.v"
    code = main(["verilog", "scheduler", "-p", "levels=3", "-p", "w=8", "-o", str(target)])
    assert code == 0
    text = target.read_text()
    assert "module scheduler(" in text and "requests__payload" in text
    assert "DP16KD" not in text
    # For ECP5 the 256-row link memories of FT(3, 16) are block RAMs with the output register.
    code = main(["verilog", "scheduler", "-p", "w=16", "--family", "ecp5", "-o", str(target)])
    assert code == 0
    text = target.read_text()
    assert text.count("DP16KD #(") == text.count('.REGMODE_B("OUTREG")') > 0
    assert placed(text, "DP16KD", "scheduler") == 4
    code = main(["verilog", "scheduler", "-p", "w=6", "-o", str(target)])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "fattree verilog: error: w must be a power of two of at least 2, not 6"
    )


HAVE_ICARUS = shutil.which("iverilog") is not None
needs_icarus = pytest.mark.skipif(not HAVE_ICARUS, reason="no iverilog")


@pytest.mark.cocotb
@pytest.mark.parametrize(
    "simulator, levels, w, family",
    # One size on Icarus by default; its Verilator build, the other sizes and the ecp5 forms
    # are slow points.
    [pytest.param("verilator", 3, 4, None, marks=pytest.mark.slow)]
    + [pytest.param("icarus", 3, 4, None, marks=needs_icarus)]
    + [
        pytest.param("icarus", levels, w, None, marks=[needs_icarus, pytest.mark.slow])
        for levels, w in [(2, 16), (4, 2)]
    ]
    # The Verilog `fattree synth --family ecp5` builds: link memories as DP16KD instances
    # with the output register, on the behavioural DP16KD model (which reads x for a same-row
    # read and write, so Icarus would show any use of one). 1K x 18 and 2K x 9 forms.
    + [
        pytest.param("verilator", 3, 16, "ecp5", marks=pytest.mark.slow),
        pytest.param("icarus", 3, 16, "ecp5", marks=[needs_icarus, pytest.mark.slow]),
        pytest.param("icarus", 4, 8, "ecp5", marks=[needs_icarus, pytest.mark.slow]),
    ],
)
def test_cocotb_bench(simulator, levels, w, family, tmp_path):
    from fattree.designs import get_design
    from fattree.sim.cocotb_runner import run_bench

    params = {"levels": levels, "w": w}
    result = run_bench(
        get_design("scheduler"),
        params,
        simulator,
        seed=levels + w,
        bench={"frames": 40, "coverage": True},
        root=tmp_path,
        family=family,
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    # Bursts, a clear and a permutation, then the directed phase of stalled clears, then the
    # rounds that close the model's coverage (docs/scheduler.md, "Coverage").
    directed = len(STALLS) * sum(2 + 2 * k for k in IN_FLIGHT)
    assert s["stalled_clear_commands"] == directed
    commands = 40 * 20 + 1 + w**levels + directed + s["steered"]
    assert s["results_checked"] == s["commands"] == commands
    assert s["mismatches"] == s["double_grants"] == 0 and s["granted"] > 100
    if (levels, w) == (3, 4):  # hazards at every distance, CLEARs behind commands
        assert s["coverage"]["holes"] == [], s["coverage"]
    source = next(tmp_path.rglob("scheduler.v")).read_text()
    if family == "ecp5":
        assert placed(source, "DP16KD", "scheduler") == 2 * (levels - 1)
        assert "module DP16KD(" in source
    else:
        assert "DP16KD" not in source


@pytest.mark.cocotb
@pytest.mark.parametrize(
    "simulator, levels, m, w",
    # One Verilator build for the design is test_cocotb_bench's: this one is a slow point.
    [
        pytest.param("icarus", 3, 4, 2, marks=needs_icarus),
        pytest.param("verilator", 3, 2, 4, marks=pytest.mark.slow),
    ]
    + [
        pytest.param("icarus", *p, marks=[needs_icarus, pytest.mark.slow])
        for p in [(2, 4, 2), (3, 2, 4), (4, 2, 4)]
    ],
)
def test_cocotb_bench_m_not_w(simulator, levels, m, w, tmp_path):
    # FT(l, m, w) through the design table's m, as `fattree sim scheduler -p m=..` runs it.
    from fattree.designs import get_design, parse_params
    from fattree.sim.cocotb_runner import run_bench

    design = get_design("scheduler")
    params = parse_params(design, [f"levels={levels}", f"m={m}", f"w={w}"])
    result = run_bench(design, params, simulator, seed=m * w, bench={"frames": 40}, root=tmp_path)
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    directed = len(STALLS) * sum(2 + 2 * k for k in IN_FLIGHT) + s["steered"]
    assert s["results_checked"] == s["commands"] == 40 * 20 + 1 + m**levels + directed
    assert s["mismatches"] == s["double_grants"] == 0 and s["granted"] > 100
    source = next(tmp_path.rglob("scheduler.v")).read_text()
    # src and dst are levels * log2(m) bits wide: the request is wider or narrower than FT(l, w)'s.
    bits = 2 + 2 * levels * (m.bit_length() - 1) + (levels - 1) * (w.bit_length() - 1)
    assert f"input [{bits - 1}:0] requests__payload" in source


@pytest.mark.cocotb
def test_cocotb_broken_reference_is_caught(tmp_path):
    from fattree.designs import get_design
    from fattree.sim.cocotb_runner import run_bench

    result = run_bench(
        get_design("scheduler"),
        {"levels": 3, "w": 4},
        "icarus" if HAVE_ICARUS else "verilator",
        seed=2,
        bench={"frames": 5, "mutation": True},
        root=tmp_path,
    )
    assert not result.passed and result.summary["mismatches"] == 1


@pytest.mark.slow
@pytest.mark.cocotb
@pytest.mark.parametrize("simulator", [pytest.param("icarus", marks=needs_icarus), "verilator"])
@pytest.mark.parametrize("levels", [2, 3, 4])
@pytest.mark.parametrize("w", [2, 4, 8, 16])
def test_cocotb_sweep(simulator, levels, w, tmp_path):
    # Thousands of commands and a full permutation per size, FT(2..4, 2..16).
    from fattree.designs import get_design
    from fattree.sim.cocotb_runner import run_bench

    result = run_bench(
        get_design("scheduler"),
        {"levels": levels, "w": w},
        simulator,
        seed=levels * 100 + w,
        bench={"frames": 100},
        root=tmp_path,
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["results_checked"] == (
        100 * 20 + 1 + w**levels + s["stalled_clear_commands"] + s["steered"]
    )


@pytest.mark.slow
@pytest.mark.cocotb
def test_cocotb_coverage_closes_at_the_default_point(tmp_path, capsys):
    # FT(3, 4), 200 bursts, on Verilator through the command line: every bin hit.
    import json

    from fattree.scripts.main import main

    code = main(["sim", "scheduler", "--coverage", "--json", "--build-root", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    coverage = out["summary"]["coverage"]
    assert coverage["holes"] == [] and coverage["hit"] == coverage["bins"] == 42
    assert code == 0 and out["passed"]
