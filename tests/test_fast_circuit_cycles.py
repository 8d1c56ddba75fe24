"""The compiled cycle-level simulator (sim/fast/circuit_cycles.py) against the cycle-exact model:
every interface output of every cycle, every retry strategy, the paper's patterns."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fattree.sim.fast import circuit_cycles
from fattree.sim.fast.circuit_cycles import CycleSim, diameter_cycles, run_cycles
from fattree.sim.models.circuit import CircuitTreeModel, Driver, RouterModel, run_model
from fattree.spec import traffic
from fattree.spec.circuit import router_seed
from fattree.spec.topology import FatTree

RETRIES = ("immediate", "round", "backoff")


def lockstep(n, src, dst, length, seed, retry) -> int:
    """Run the model and the simulator side by side; every cycle, every node's ``tx_ready``,
    ``tx_done``, ``tx_reject`` and ``rx_valid`` must be equal. Returns the model's cycles."""
    queues = [[] for _ in range(n)]
    for s, d in zip(src, dst, strict=True):
        queues[int(s)].append((int(d), 0))
    model = CircuitTreeModel(n, 1, length, seed, retry)
    driver = Driver(queues)
    sim = CycleSim(n, src, dst, length, seed, retry)
    done = rejects = 0
    while done < len(src):
        assert model.cycle < 200_000, "no end"
        valid, dest, data = driver.inputs()
        out = model.step(valid, dest, data)
        want = (out.tx_ready, out.tx_done, out.tx_reject, out.rx_valid)
        got = tuple(a.tolist() for a in (sim.tx_ready, sim.tx_done, sim.tx_reject, sim.rx_valid))
        assert got == want, f"cycle {model.cycle - 1}"
        driver.taken(out.tx_ready)
        done += sum(out.tx_done)
        rejects += sum(out.tx_reject)
        sim.step()
    res = run_cycles(n, src, dst, length=length, seed=seed, retry=retry)
    assert (res.cycles, res.rejects) == (model.cycle, rejects)
    assert int(res.rejects_per_message.sum()) == rejects
    return model.cycle


def random_batch(n, per_node, rng):
    src = np.repeat(np.arange(n), per_node)
    dst = (src + 1 + rng.integers(0, n - 1, src.size)) % n
    return src, dst


@pytest.mark.parametrize("retry", RETRIES)
@pytest.mark.parametrize(
    "n, per_node, length, seed",
    [(2, 2, 1, 1), (4, 2, 2, 3), (8, 3, 1, 5), (16, 2, 3, 7), (32, 1, 2, 0)],
)
def test_random_traffic_cycle_for_cycle(n, per_node, length, seed, retry):
    src, dst = random_batch(n, per_node, np.random.default_rng(seed))
    lockstep(n, src, dst, length, seed, retry)


@pytest.mark.parametrize("retry", RETRIES)
@pytest.mark.parametrize("pattern", ["transpose", "bit-reversal", "shift", "hotspot"])
@pytest.mark.parametrize("n", [8, 16])
def test_patterns_cycle_for_cycle(n, pattern, retry):
    p = np.arange(n)
    q = np.asarray(traffic.destination(pattern, p, n.bit_length() - 1, shift=3))
    keep = p != q
    lockstep(n, p[keep], q[keep], 2, 2, retry)


def test_messages_in_any_order_of_nodes():
    # A node's messages go in the order given, whatever the order of the nodes.
    rng = np.random.default_rng(4)
    src, dst = random_batch(16, 2, rng)
    flip = np.arange(src.size)[::-1]
    a = run_cycles(16, src, dst, seed=4)
    b = run_cycles(16, src[flip], dst[flip], seed=4)
    assert a.cycles != 0 and a.rejects > 0
    assert lockstep(16, src[flip], dst[flip], 2, 4, "immediate") == b.cycles
    # Per message: the same message (by position) has its own accept and done cycles.
    assert (b.done[flip] >= b.accept[flip]).all() and (a.done > a.accept).all()


@pytest.mark.slow
@pytest.mark.parametrize("retry", RETRIES)
def test_128_leaves_cycle_for_cycle(retry):
    src, dst = random_batch(128, 2, np.random.default_rng(9))
    lockstep(128, src, dst, 2, 9, retry)
    lockstep(128, np.arange(1, 128), np.zeros(127, dtype=int), 1, 9, retry)


@pytest.mark.parametrize("h", range(1, 13))
@pytest.mark.parametrize("length", [1, 2, 5])
def test_diameter_time_is_the_protocol_timing(h, length):
    # docs/circuit_tree.md "Timing": taken at cycle 0, first route word T0 = 2, the source
    # sees ack at T0 + 6L + P + 4 (L = h - 1), run_model counts 2 more.
    assert diameter_cycles(2**h, length) == 6 * (h - 1) + length + 8


def test_one_message_per_level_alone():
    for h in (3, 6):
        n = 2**h
        for level in range(h):
            res = run_cycles(n, [0], [1 << level], length=2)
            assert res.cycles == 6 * level + 10 and res.rejects == 0


def test_wiring_is_the_fat_trees():
    for h in (2, 3, 5):
        n, half = 2**h, 2 ** (h - 1)
        peer = circuit_cycles._wiring(h)
        tree = FatTree(h, 2)
        routers = h * half
        for lv in tree.link_levels():
            for t in range(half):
                for up in (0, 1):
                    _, parent, down = tree.up_neighbour(lv, t, up)
                    a, b = 4 * (lv * half + t) + 2 + up, 4 * ((lv + 1) * half + parent) + down
                    assert peer[a] == b and peer[b] == a
        for node in range(n):
            t, p = tree.node_switch(node)
            assert peer[4 * t + p] == 4 * routers + node
        zero = 4 * routers + n
        assert all(
            peer[4 * ((h - 1) * half + t) + 2 + up] == zero for t in range(half) for up in (0, 1)
        )


def test_router_bits_are_the_models_lfsr():
    seq, _ = circuit_cycles._lfsr_sequence()
    for seed in (1, 7):
        for lv, t in ((0, 0), (2, 5), (9, 300)):
            offset = circuit_cycles._offsets(seed, lv, t + 1)[t]
            router = RouterModel(router_seed(seed, lv, t))
            for c in range(200):
                assert int(seq[(offset + c) % seq.size]) & 1 == router.lfsr_bit
                router.step([0] * 4, [0] * 4, [0] * 4, [0] * 4)


def test_run_model_cycles_equal_for_hot_spot_at_32():
    src = np.arange(1, 32)
    dst = np.zeros(31, dtype=int)
    queues = [[] for _ in range(32)]
    for s in src:
        queues[s].append((0, 0))
    for retry in RETRIES:
        out = run_model(CircuitTreeModel(32, 1, 2, 3, retry), queues)
        res = run_cycles(32, src, dst, seed=3, retry=retry)
        assert (res.cycles, res.rejects) == (out["cycles"], out["rejects"])
        # One delivery at a time into node 0: at least 30 rejects in all.
        assert res.rejects >= 30


def test_run_stops_with_a_clear_error():
    with pytest.raises(RuntimeError, match="pending after 5 cycles"):
        CycleSim(8, [0, 1], [7, 6]).run(max_cycles=5)
    assert run_cycles(4, [], []).cycles == 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"leaves": 3}, "leaves must be a power of two"),
        ({"leaves": 1}, "leaves"),
        ({"leaves": 2**23}, "leaves must be"),
        ({"length": 0}, "length"),
        ({"length": 65}, "length"),
        ({"seed": -1}, "seed"),
        ({"retry": "later"}, "retry must be one of"),
        ({"src": [0, 1], "dst": [1]}, "src and dst must be 1-d integer arrays"),
        ({"src": [0.5], "dst": [1]}, "src and dst must be 1-d integer arrays"),
        ({"src": [0], "dst": [8]}, "src and dst must be nodes 0 .. 7"),
        ({"src": [-1], "dst": [2]}, "src and dst must be nodes 0 .. 7"),
        ({"src": [3], "dst": [3]}, "source and destination must differ"),
    ],
)
def test_parameter_errors(kwargs, message):
    args = {"leaves": 8, "src": [0], "dst": [1], **kwargs}
    with pytest.raises((TypeError, ValueError), match=message):
        CycleSim(**args)


# Sizes stop at 2^12 (a valid 2^20 tree takes seconds to build), plus the edges above.
_bad = st.one_of(
    st.integers(-(2**20), 2**12),
    st.sampled_from([0, 1, 3, 2**22 + 1, 2**23, -(2**63), 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.none(),
    st.booleans(),
    st.lists(st.integers(-3, 9), max_size=3),
)


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(param=st.sampled_from(["leaves", "length", "seed", "retry", "src", "dst"]), value=_bad)
def test_fuzzed_parameters_are_named(param, value):
    # As tests/test_fuzz_params.py does for the models: built, or an error naming the
    # parameter (never another exception).
    args = {"leaves": 8, "src": [0], "dst": [1], "length": 2, "seed": 1, "retry": "immediate"}
    args[param] = value
    try:
        CycleSim(**args)
    except (TypeError, ValueError) as exc:
        named = {"src": "src", "dst": "dst"}.get(param, param)
        assert named in str(exc) or (param in ("src", "dst") and "source" in str(exc)), exc
