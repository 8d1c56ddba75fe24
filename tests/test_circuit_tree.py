"""CircuitFatTree RTL (amaranth.sim) against the cycle-exact model, and parameter checks."""

import json
import random
import shutil
from collections import Counter

import pytest

from fattree.hdl.circuit_tree import CircuitFatTree
from fattree.hdl.network_interface import NetworkInterface
from fattree.sim.checks.circuit_tree import (
    CHECKS,
    INPUTS,
    OUTPUTS,
    CircuitTreeCheck,
    dut_signals,
)
from fattree.sim.models.circuit import CircuitTreeModel, Driver, run_model, traffic
from fattree.sim.scoreboard import Scoreboard
from fattree.sim.testbench import simulate
from fattree.spec.circuit import (
    check_retry,
    pack_fields,
    route_bits,
    rx_fields,
    tx_fields,
    unpack_fields,
)


def run_lockstep(leaves, width, length, seed, retry, queues, *, max_cycles=4000, mutate=False):
    """:func:`lockstep` with every receiver always ready; returns the scoreboard."""
    return lockstep(leaves, width, length, seed, retry, queues, max_cycles, mutate=mutate)[0]


def lockstep(leaves, width, length, seed, retry, queues, max_cycles, *, mutate=False, stall=0.0):
    """Drive the RTL and the model with the same messages (and, with ``stall``, the same
    random receiver backpressure), comparing every output every cycle, until every message is
    acknowledged and taken; then check what was delivered. Returns the scoreboard, the check
    and the model."""
    dut = CircuitFatTree(leaves, width, length, seed, retry)
    model = CircuitTreeModel(leaves, width, length, seed, retry)
    scoreboard = Scoreboard(CHECKS, mutate=mutate)
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
        checks.append(check)
        await check.phase("traffic", queues, max_cycles)

    simulate(dut, bench)
    return scoreboard, checks[0], model


def check_lockstep(scoreboard, queues):
    # Every output every cycle as the model says; every message acknowledged and delivered
    # exactly once, payload intact.
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    assert scoreboard.checked == sum(len(q) for q in queues)


@pytest.mark.parametrize("retry", ["immediate", "round", "backoff"])
@pytest.mark.parametrize("pattern", ["random", "hotspot"])
def test_tree_matches_model(retry, pattern):
    queues = traffic(pattern, 8, 3, 2, random.Random(5), messages=2)
    check_lockstep(run_lockstep(8, 3, 2, 11, retry, queues), queues)


@pytest.mark.parametrize("leaves, width, length", [(2, 1, 1), (4, 2, 1), (8, 1, 4)])
def test_tree_matches_model_small_and_odd_shapes(leaves, width, length):
    # One-word messages, a single router, longer bursts: every word position the interface
    # can send from (route words at every level, each data word).
    queues = traffic("random", leaves, width, length, random.Random(leaves), messages=4)
    check_lockstep(run_lockstep(leaves, width, length, 2, "immediate", queues), queues)


@pytest.mark.parametrize("pattern", ["transpose", "bit-reversal", "shift"])
def test_tree_permutations(pattern):
    queues = traffic(pattern, 16, 1, 3, random.Random(2), shift=5)
    check_lockstep(run_lockstep(16, 1, 3, 3, "immediate", queues), queues)


@pytest.mark.parametrize("retry", ["immediate", "round", "backoff"])
@pytest.mark.parametrize(
    "leaves, seed, pattern",
    [
        (8, 1, "random"),
        (8, 2, "hotspot"),
        pytest.param(8, 3, "random", marks=pytest.mark.slow),
        # 16 leaves: 2 to 20 times as long as the 8-leaf points, the same check.
        pytest.param(16, 4, "random", marks=pytest.mark.slow),
        pytest.param(16, 5, "hotspot", marks=pytest.mark.slow),
    ],
)
def test_tree_receivers_stall(leaves, seed, pattern, retry):
    # Receivers not ready at random (9 cycles in 10): every output every cycle as the model
    # says, every message delivered exactly once to its destination with its data intact,
    # within a cycle bound (no deadlock), and the full-receiver reject really happened.
    rng = random.Random(seed)
    queues = traffic(pattern, leaves, 3, 2, rng, messages=3)
    bound = 20_000
    scoreboard, check, model = lockstep(leaves, 3, 2, seed, retry, queues, bound, stall=0.9)
    check_lockstep(scoreboard, queues)
    assert check.cycle < bound
    assert check.backpressure_cycles > 0
    assert sum(ni.rx_rejects for ni in model.nis) > 0


def test_model_stalled_receivers_lose_nothing():
    # The model alone: a receiver that is never ready for 300 cycles keeps its one message
    # and rejects every other sender; once it is ready everything arrives.
    model = CircuitTreeModel(8, 2, 2, 1, "immediate")
    queues = traffic("hotspot", 8, 2, 2, random.Random(3), messages=2)
    stats = run_model(
        model, queues, rx_ready=lambda cycle: [int(cycle >= 300)] + [1] * 7, max_cycles=10_000
    )
    assert stats["rx_rejects"] > 0
    assert Counter(stats["received"]) == Counter((dest, data) for _s, dest, data in stats["sent"])


def test_model_always_ready_is_the_default():
    queues = traffic("random", 8, 2, 2, random.Random(4), messages=3)
    a = run_model(CircuitTreeModel(8, 2, 2, 1, "immediate"), queues)
    b = run_model(CircuitTreeModel(8, 2, 2, 1, "immediate"), queues, rx_ready=lambda c: [1] * 8)
    assert a == b
    assert a["rx_rejects"] == 0


def test_two_leaves_bit_serial_one_word():
    queues = [[(1, 1), (1, 0)], [(0, 1)]]
    check_lockstep(run_lockstep(2, 1, 1, 0, "immediate", queues), queues)


def test_broken_model_is_caught():
    queues = traffic("random", 4, 4, 1, random.Random(1), messages=2)
    scoreboard = run_lockstep(4, 4, 1, 1, "immediate", queues, mutate=True)
    assert scoreboard.failures["cycle_mismatches"] > 0


@pytest.mark.parametrize("broken", ["silent", "babbling"])
def test_failed_phase_ends_early(broken):
    # A broken design that says nothing, or keeps handing node 0 a wrong message every cycle
    # (so something is always "delivered"): either way the phase fails and ends `patience`
    # cycles after its first mismatch, not at its cycle limit.
    import asyncio

    leaves = 4
    model = CircuitTreeModel(leaves, 4, 1, 1, "immediate")
    scoreboard = Scoreboard(CHECKS)
    rx_valid = [int(broken == "babbling")] + [0] * (leaves - 1)

    def read():
        zeros = [0] * leaves
        return [zeros, zeros, zeros, rx_valid, zeros]

    async def tick():
        pass

    check = CircuitTreeCheck(model, scoreboard, read, lambda *values: None, tick)
    check.patience = 300
    queues = traffic("random", leaves, 4, 1, random.Random(1), messages=2)
    asyncio.run(check.phase("broken", queues, limit=200_000))
    assert check.cycle == 301  # the first mismatch is in cycle 0
    assert scoreboard.failures["cycle_mismatches"] > 0
    assert scoreboard.failures["message_mismatches"] >= 1


@pytest.mark.slow
@pytest.mark.parametrize("retry", ["immediate", "round", "backoff"])
def test_tree_matches_model_32(retry):
    queues = traffic("random", 32, 4, 2, random.Random(7), messages=3)
    check_lockstep(run_lockstep(32, 4, 2, 5, retry, queues, max_cycles=20000), queues)


def test_model_hot_spot_is_sequential():
    # All to one node: its link admits one circuit at a time.
    model = CircuitTreeModel(16, 4, 2, 1, "round")
    stats = run_model(model, traffic("hotspot", 16, 4, 2, random.Random(1)))
    assert stats["messages"] == 15
    assert Counter(n for n, _ in stats["received"]) == {0: 15}


def test_route_bits():
    # 0 -> 5 = 0b101: up twice, turn at level 2, then destination bits 1 and 0.
    assert route_bits(0, 5) == [0, 0, 1, 0, 1]
    assert route_bits(6, 7) == [1]


@pytest.mark.parametrize(
    "kwargs, exc, message",
    [
        ({"leaves": 12}, ValueError, "leaves must be a power of two of at least 2, not 12"),
        ({"leaves": 1}, ValueError, "leaves must be a power of two of at least 2, not 1"),
        ({"leaves": 2048}, ValueError, "leaves must be at most 1024, not 2048"),
        ({"leaves": "8"}, TypeError, "leaves must be a power of two, not '8'"),
        ({"width": 0}, ValueError, "width must be between 1 and 64, not 0"),
        ({"length": 0}, ValueError, "length must be between 1 and 64, not 0"),
        ({"seed": -1}, ValueError, "seed must be at least 0, not -1"),
        (
            {"retry": "later"},
            ValueError,
            "retry must be one of 'immediate', 'round', 'backoff' (or 0, 1, 2), not 'later'",
        ),
        (
            {"retry": 3},
            ValueError,
            "retry must be one of 'immediate', 'round', 'backoff' (or 0, 1, 2), not 3",
        ),
    ],
)
def test_parameter_errors(kwargs, exc, message):
    with pytest.raises(exc) as info:
        CircuitFatTree(**kwargs)
    assert str(info.value) == message


def test_interface_parameter_errors():
    with pytest.raises(ValueError) as info:
        NetworkInterface(8, 8)
    assert str(info.value) == "node must be between 0 and 7, not 8"


def test_stall_parameter_error():
    model = CircuitTreeModel(2, 1, 1)
    with pytest.raises(ValueError) as info:
        CircuitTreeCheck(model, Scoreboard(CHECKS), list, print, None, stall=1.0)
    assert str(info.value) == "stall must be at least 0 and below 1, not 1.0"


def test_payload_fields():
    # The transmit beat: dest in the low lg(leaves) bits, then the words, word 0 lowest; the
    # RTL's layouts are built from the same fields.
    from fattree.hdl.network_interface import rx_layout, tx_layout

    fields = tx_fields(16, 8, 2)
    assert fields == {"dest": 4, "data": 16}
    assert pack_fields(fields, dest=5, data=0xBEEF) == 0xBEEF5
    assert unpack_fields(fields, 0xBEEF5) == {"dest": 5, "data": 0xBEEF}
    assert rx_fields(8, 2) == {"data": 16}
    assert tx_layout(16, 8, 2).size == 20 and tx_layout(16, 8, 2)["dest"].offset == 0
    assert rx_layout(8, 2).size == 16


def test_retry_codes():
    assert [check_retry(code) for code in (0, 1, 2)] == ["immediate", "round", "backoff"]
    assert check_retry("backoff") == "backoff"


@pytest.mark.parametrize("leaves, length, seed", [(8, 1, 1), (16, 2, 7), (32, 3, 4), (64, 1, 9)])
def test_fast_simulator_equals_cycle_model_round_based(leaves, length, seed):
    # The round-based cycle-exact model and the vectorised simulator, fed the up-port bits
    # the model's LFSRs produced in each round, deliver exactly the same messages per round.
    import numpy as np

    from fattree.sim.fast import circuit_rounds
    from fattree.sim.models.circuit import N_PEND, N_SEND

    rng = random.Random(seed)
    model = CircuitTreeModel(leaves, 2, length, seed, "round")
    sources = list(range(leaves))  # m = n: plenty of collisions
    queues = [[] for _ in range(leaves)]
    for s in sources:
        d = rng.randrange(leaves - 1)
        queues[s].append((d + (d >= s), rng.getrandbits(2 * length)))
    driver = Driver(queues)
    rounds = []  # per round: (pending sources, bits, acknowledged sources)
    current = None
    acknowledged = 0
    while acknowledged < len(sources):
        before = [ni.state for ni in model.nis]
        out = model.step(*driver.inputs())
        driver.taken(out.tx_ready)
        # tx_done shows the previous cycle's acknowledge: it belongs to the running round.
        for n in range(leaves):
            if out.tx_done[n]:
                current["done"].add(n)
                acknowledged += 1
        started = [
            n for n, ni in enumerate(model.nis) if before[n] == N_PEND and ni.state == N_SEND
        ]
        if started:
            current = {
                "src": started,
                "bits": np.zeros((model.h, leaves // 2), np.uint8),
                "done": set(),
            }
            rounds.append(current)
        for (lv, t), router in model.routers.items():
            if router.up_bit is not None:
                current["bits"][lv][t] = router.up_bit
        assert model.cycle < 100_000
    dest = {s: queues[s][0][0] for s in sources}
    assert len(rounds) > 1  # there were collisions to compare
    for r in rounds:
        src = np.array(r["src"])
        dst = np.array([dest[s] for s in r["src"]])
        delivered = circuit_rounds.round_fast(leaves, src, dst, r["bits"], payload=length)
        assert {int(s) for s in src[delivered]} == r["done"]


# -- cocotb on the generated Verilog ------------------------------------------------------------

_ICARUS = pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")


def _cocotb(simulator, tmp_path, leaves, retry, frames, *, mutation=False, seed=1, **knobs):
    from fattree.designs import get_design
    from fattree.sim.cocotb_runner import run_bench

    params = {"leaves": leaves, "width": 8, "length": 2, "seed": 3, "retry": retry}
    result = run_bench(
        get_design("circuit-tree-paper"),
        params,
        simulator,
        seed=seed,
        bench={"frames": frames, "mutation": mutation, **knobs},
        root=tmp_path,
    )
    return result


@pytest.mark.cocotb
@pytest.mark.parametrize(
    "simulator, leaves, retry",
    [
        pytest.param("verilator", 4, 0, marks=pytest.mark.slow),
        pytest.param("icarus", 4, 0, marks=_ICARUS),
        # The other retry modes and sizes (the amaranth.sim lockstep tests run every mode).
        pytest.param("icarus", 4, 1, marks=[_ICARUS, pytest.mark.slow]),
        pytest.param("icarus", 4, 2, marks=[_ICARUS, pytest.mark.slow]),
        pytest.param("icarus", 8, 0, marks=[_ICARUS, pytest.mark.slow]),
    ],
)
def test_cocotb_traffic(simulator, leaves, retry, tmp_path):
    result = _cocotb(simulator, tmp_path, leaves, retry, frames=4 * leaves, coverage=True)
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0
    assert s["messages_checked"] == sum(s["messages"].values()) > 4 * leaves
    assert s["backpressure"] == 30 and s["backpressure_cycles"] > 0  # the default knob
    # Every bin of the model's cover points hit (docs/circuit_tree.md, "Coverage"), the
    # collision of C and D at one down port among them.
    assert s["coverage"]["holes"] == [], s["coverage"]
    assert s["coverage"]["points"]["claims/L0"]["bins"]["C over D"] > 0


@pytest.mark.cocotb
@pytest.mark.slow  # the default point, 16 nodes, on Verilator
def test_cocotb_coverage_closes_at_the_default_point(tmp_path, capsys):
    from fattree.scripts.main import main

    argv = ["sim", "circuit-tree-paper", "--coverage", "--json", "--build-root", str(tmp_path)]
    code = main(argv)
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["coverage"]["holes"] == []
    assert code == 0 and out["passed"]


@pytest.mark.cocotb
@pytest.mark.parametrize("simulator", [pytest.param("icarus", marks=_ICARUS)])
def test_cocotb_receivers_stall(simulator, tmp_path):
    # Receivers not ready 9 cycles in 10: full interfaces reject, nothing is lost.
    result = _cocotb(simulator, tmp_path, 8, 0, frames=32, backpressure=90)
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0
    assert s["messages_checked"] == sum(s["messages"].values())
    assert s["backpressure_cycles"] > 0
    assert s["receiver_rejects"] > 0


@pytest.mark.cocotb
@pytest.mark.parametrize("simulator", [pytest.param("icarus", marks=_ICARUS)])
def test_cocotb_always_ready(simulator, tmp_path):
    result = _cocotb(simulator, tmp_path, 4, 0, frames=16, backpressure=0)
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["backpressure_cycles"] == 0 and s["receiver_rejects"] == 0


@pytest.mark.cocotb
@pytest.mark.parametrize("simulator", [pytest.param("icarus", marks=_ICARUS)])
def test_cocotb_broken_model_is_caught(simulator, tmp_path):
    result = _cocotb(simulator, tmp_path, 4, 0, frames=8, mutation=True)
    assert not result.passed
    assert result.summary["cycle_mismatches"] > 0


@pytest.mark.cocotb
@pytest.mark.slow
@pytest.mark.parametrize("retry", [0, 1, 2])
@pytest.mark.parametrize("leaves", [16, 64])
@pytest.mark.parametrize("simulator", ["verilator", pytest.param("icarus", marks=_ICARUS)])
def test_cocotb_traffic_large(simulator, leaves, retry, tmp_path):
    result = _cocotb(simulator, tmp_path, leaves, retry, frames=2 * leaves, seed=leaves + retry)
    assert result.passed, result.summary.get("first_mismatch") or result.log
    assert result.summary["mismatches"] == 0
