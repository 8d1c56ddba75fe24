"""The fast circuit tree's cycle-exact model against the rules of fattree/spec/circuit_fast.py:
zero-load timing, drops left unacknowledged, the window, a full receiver, exactly once under
random load, determinism, parameter errors and a throughput sanity check."""

from __future__ import annotations

import asyncio
import copy
import random
from collections import Counter

import pytest

from fattree.sim.checks.circuit_tree import CHECKS, CircuitTreeCheck, bench_phases
from fattree.sim.circuit_load import OpenLoop
from fattree.sim.models.circuit import run_model, traffic
from fattree.sim.models.circuit_fast import AckCollision, Acks, CircuitFastTreeModel
from fattree.sim.network_load import Point
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.circuit import router_seed
from fattree.spec.circuit_fast import fate_delay
from fattree.spec.lfsr import LFSRModel
from fattree.spec.topology import FatTree


def idle(leaves):
    return [0] * leaves, [0] * leaves, [0] * leaves


def run(model, sends, cycles, ready=None):
    """Step ``model`` for ``cycles`` cycles; ``sends`` maps a cycle to ``{node: (dest, data)}``
    offered in that cycle, ``ready(cycle)`` gives the receivers' ready. Returns the outputs."""
    n = model.leaves
    trace = []
    for c in range(cycles):
        valid, dest, data = idle(n)
        for node, (d, x) in sends.get(c, {}).items():
            valid[node], dest[node], data[node] = 1, d, x
        trace.append(model.step(valid, dest, data, None if ready is None else ready(c)))
    return trace


def cycles_of(trace, name, node):
    return [c for c, out in enumerate(trace) if getattr(out, name)[node]]


@pytest.mark.parametrize("leaves", [8, 16])
@pytest.mark.parametrize("length", [1, 2, 4])
def test_zero_load_latency(leaves, length):
    """rx.valid at t + 1 + 2L + P, tx_done at t0 + F + 1 (t0 = t + 1), for every pair."""
    h = leaves.bit_length() - 1
    fate = fate_delay(h)
    model = CircuitFastTreeModel(leaves, 4, length)
    t = 3
    for src in range(leaves):
        for dst in range(leaves):
            if src == dst:
                continue
            model.reset()
            data = (0x5A3C + src * 7 + dst) & ((1 << (4 * length)) - 1)
            trace = run(model, {t: {src: (dst, data)}}, t + fate + 4)
            assert trace[t].tx_ready[src]
            turn = (src ^ dst).bit_length() - 1
            arrive = t + 1 + 2 * turn + length
            assert cycles_of(trace, "rx_valid", dst) == [arrive], (src, dst)
            assert trace[arrive].rx_data[dst] == data
            assert cycles_of(trace, "tx_done", src) == [t + 1 + fate + 1]
            assert not any(any(out.tx_reject) for out in trace)
            assert sum(sum(out.rx_valid) for out in trace) == 1


def test_lfsr_bit_is_the_routers_own_lfsr():
    """Bit 0 of the LFSR seeded router_seed(seed, r, t), its seed at cycle 0, one step a cycle."""
    model = CircuitFastTreeModel(16, seed=7)
    for (level, switch), router in model.routers.items():
        lfsr = LFSRModel(16, seed=router_seed(7, level, switch))
        for cycle in range(200):
            assert router.lfsr_bit(cycle) == lfsr.state & 1
            lfsr.clock()


@pytest.mark.parametrize("seed", [1, 2, 9])
def test_up_port_is_the_lfsr_bit(seed):
    """Alone in the network, a head from a goes up port c if the router's LFSR bit is 0,
    from b port d if it is 0; one cycle per router."""
    leaves, h = 16, 4
    tree = FatTree(h, 2)
    for src, dst, t in [(0, 15, 3), (1, 14, 8), (6, 9, 21), (5, 2, 40)]:
        model = CircuitFastTreeModel(leaves, 8, 2, seed=seed)
        sends = {t: {src: (dst, 0x77)}}
        run(model, sends, t + 1)
        level, switch, port = 0, *tree.node_switch(src)
        for cycle in range(t + 1, t + 1 + (src ^ dst).bit_length() - 1):
            router = model.routers[level, switch]
            up = router.lfsr_bit(cycle) ^ port
            model.step(*idle(leaves))  # cycle `cycle`: the head is on this router's input
            assert model.fwd[router.outputs[2 + up]] == (1, dst, 0x77)
            assert model.fwd[router.outputs[3 - up]] is None
            level, switch, port = tree.up_neighbour(level, switch, up)


def test_round_robin_over_ready_slots():
    """Two nodes, P = 8 > F = 3, window 2, receiver never ready: A is stored, B and C are
    never acknowledged, and the interface sends the READY slot after the last one picked: B and
    C alternate on the inject link (B is READY again before its last word leaves)."""
    model = CircuitFastTreeModel(2, 8, 8, window=2)
    queue = [(1, 0xA0), (1, 0xB0), (1, 0xC0)]
    heads = []
    for _ in range(80):
        valid, dest, data = idle(2)
        if queue:
            valid[0], dest[0], data[0] = 1, *queue[0]
        out = model.step(valid, dest, data, [1, 0])
        if queue and out.tx_ready[0]:
            queue.pop(0)
        word = model.fwd[model.nis[0].inject]
        if word is not None and word[0]:
            heads.append(word[2])
    assert heads[:7] == [0xA0, 0xB0, 0xC0, 0xB0, 0xC0, 0xB0, 0xC0]


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_two_heads_meet_at_a_down_port(seed):
    """Nodes 2 and 3 to node 0 in one cycle: their heads come down into SW(0, 0) on c and d
    in the same cycle; one is delivered at once, the other unacknowledged at t0 + F + 1 and later
    delivered."""
    model = CircuitFastTreeModel(8, 8, 2, seed=seed)
    fate, t = fate_delay(3), 5
    trace = run(model, {t: {2: (0, 0x1234), 3: (0, 0x5678)}}, 120)
    first = t + 1 + 2 * 1 + 2
    got = [(c, out.rx_data[0]) for c, out in enumerate(trace) if out.rx_valid[0]]
    assert len(got) == 2 and got[0][0] == first
    winner = {0x1234: 2, 0x5678: 3}[got[0][1]]
    loser = 5 - winner
    assert cycles_of(trace, "tx_reject", loser) == [t + 1 + fate + 1]
    assert cycles_of(trace, "tx_reject", winner) == []
    assert cycles_of(trace, "tx_done", winner) == [t + 1 + fate + 1]
    assert len(cycles_of(trace, "tx_done", loser)) == 1
    assert got[1][1] == {2: 0x1234, 3: 0x5678}[loser] and got[1][0] > first
    assert model.unacknowledged == [int(n == loser) for n in range(8)]


def test_a_turn_wins_over_a_head_from_above():
    """Node 1's head turns at SW(0, 0) (b to a) in the cycle node 2's head comes down on c or
    d wanting a: b comes before c and d, so node 2's is dropped."""
    model = CircuitFastTreeModel(8, 8, 2, seed=3)
    fate, t = fate_delay(3), 4
    trace = run(model, {t: {2: (0, 0xAAAA)}, t + 2: {1: (0, 0xBBBB)}}, 120)
    got = [(c, out.rx_data[0]) for c, out in enumerate(trace) if out.rx_valid[0]]
    assert got[0] == (t + 2 + 1 + 2, 0xBBBB)
    assert cycles_of(trace, "tx_reject", 2) == [t + 1 + fate + 1]
    assert len(got) == 2 and got[1][1] == 0xAAAA


@pytest.mark.parametrize("window", [1, 2, 4, 8, 16])
def test_window(window):
    """W messages taken back to back, then tx.ready low until the first fate frees a slot:
    free from t0 + F + 1, t0 = t + 1."""
    leaves, length = 16, 2
    fate = fate_delay(4)
    model = CircuitFastTreeModel(leaves, 8, length, window=window)
    t, total = 2, 2 * window + 3
    sends = {c: {0: (15, c)} for c in range(t, t + 80)}
    trace = run(model, sends, t + 200)
    ready = [out.tx_ready[0] for out in trace]
    assert ready[: t + window] == [1] * (t + window)
    assert ready[t + window : t + fate + 2] == [0] * (fate + 2 - window)
    assert ready[t + fate + 2] == 1
    # Every taken message is delivered once, in order (nothing else in the network).
    taken = [c for c in range(t, t + 80) if ready[c]][:total]
    got = [out.rx_data[15] for out in trace if out.rx_valid[15]]
    assert got[:total] == taken
    assert not any(out.tx_reject[0] for out in trace)


def test_receiver_not_ready_drops_then_delivers():
    """Node 15 does not take the first message: the second one's head finds the store full
    and is dropped (tx_reject at its t0 + F + 1); it is delivered after the first is taken."""
    fate = fate_delay(4)
    model = CircuitFastTreeModel(16, 8, 2)
    t, release = 2, 80
    trace = run(
        model,
        {t: {0: (15, 0x1111)}, t + 1: {0: (15, 0x2222)}},
        160,
        ready=lambda c: [1] * 15 + [int(c >= release)],
    )
    rx = [(c, out.rx_data[15]) for c, out in enumerate(trace) if out.rx_valid[15]]
    first = t + 1 + 2 * 3 + 2
    # The first is presented from its arrival until taken at `release`.
    assert rx[: release - first + 1] == [(c, 0x1111) for c in range(first, release + 1)]
    assert [d for _, d in rx[release - first + 1 :]] == [0x2222]
    assert rx[-1][0] > release
    done, rejects = cycles_of(trace, "tx_done", 0), cycles_of(trace, "tx_reject", 0)
    assert done[0] == t + 1 + fate + 1  # the first was accepted though not taken
    # The second's head left at t + 3 (after the first's two words).
    assert rejects[0] == t + 3 + fate + 1
    assert len(done) == 2 and done[1] > release
    assert model.nis[15].rx_rejects == len(rejects) >= 1


@pytest.mark.parametrize("taken", [1, 0])
def test_one_word_message_into_a_store_taken_in_its_cycle(taken):
    """P = 1: the head arrives in the cycle the stored message is taken (accepted, presented
    the cycle after) or not taken (dropped, not acknowledged)."""
    fate = fate_delay(3)
    model = CircuitFastTreeModel(8, 8, 1)
    t = 2
    arrive = t + 1 + 1  # L = 0
    trace = run(
        model,
        {t: {0: (1, 0x11)}, t + 1: {0: (1, 0x22)}},
        60,
        ready=lambda c: [1] + [int(c == arrive + 1 and taken)] + [1] * 6,
    )
    rx = [(c, out.rx_data[1]) for c, out in enumerate(trace) if out.rx_valid[1]]
    if taken:
        assert rx[:3] == [(arrive, 0x11), (arrive + 1, 0x11), (arrive + 2, 0x22)]
        assert cycles_of(trace, "tx_reject", 0) == []
    else:
        assert rx[:2] == [(arrive, 0x11), (arrive + 1, 0x11)]
        assert cycles_of(trace, "tx_reject", 0)[0] == t + 2 + fate + 1


def random_load(leaves, seed, cycles, load=0.4, stall=0.3, length=2, window=8):
    """Random traffic (some to the sender itself) offered for ``cycles`` cycles, receivers
    not ready with probability ``stall``, then run until drained. Returns the model and what
    was sent and received."""
    rng = random.Random(seed)
    model = CircuitFastTreeModel(leaves, 8, length, seed=seed, window=window)
    queues = [[] for _ in range(leaves)]
    sent, received, done = [], [], 0
    sequence = 0
    cycle = 0
    while cycle < cycles or any(queues) or done < len(sent) or len(received) < len(sent):
        assert cycle < cycles + 20_000, "not drained"
        if cycle < cycles:
            for p in range(leaves):
                if rng.random() < load:
                    queues[p].append((rng.randrange(leaves), sequence & 0xFFFF))
                    sequence += 1
        valid = [int(bool(q)) for q in queues]
        dest = [q[0][0] if q else 0 for q in queues]
        data = [q[0][1] if q else 0 for q in queues]
        ready = [int(rng.random() >= stall) for _ in range(leaves)]
        out = model.step(valid, dest, data, ready)
        for p, q in enumerate(queues):
            if q and out.tx_ready[p]:
                sent.append((q[0][0], q.pop(0)[1]))
        received += [(n, out.rx_data[n]) for n in range(leaves) if out.rx_valid[n] and ready[n]]
        done += sum(out.tx_done)
        cycle += 1
    return model, sent, received, done


@pytest.mark.parametrize("leaves,seed", [(8, 1), (16, 2)])
def test_exactly_once_under_random_load(leaves, seed):
    model, sent, received, done = random_load(leaves, seed, 3000)
    assert len(sent) > 1000
    assert Counter(received) == Counter(sent)
    assert done == len(sent) == model.delivered
    assert sum(model.unacknowledged) > 0  # the load did make drops
    assert sum(model.attempts) == len(sent) + sum(model.unacknowledged)


def test_exactly_once_long_messages_small_window():
    """P above F (words still leave after the fate) and a window of one."""
    model, sent, received, done = random_load(4, 5, 1500, load=0.2, length=9, window=1)
    assert Counter(received) == Counter(sent) and done == len(sent) > 50


def test_determinism():
    def outputs(model):
        rng = random.Random(9)
        trace = []
        for _ in range(400):
            valid = [int(rng.random() < 0.5) for _ in range(16)]
            dest = [rng.randrange(16) for _ in range(16)]
            data = [rng.getrandbits(16) for _ in range(16)]
            ready = [int(rng.random() < 0.8) for _ in range(16)]
            trace.append(model.step(valid, dest, data, ready))
        return trace

    model = CircuitFastTreeModel(16, 8, 2, seed=3)
    first = outputs(model)
    model.reset()
    assert outputs(model) == first
    assert outputs(CircuitFastTreeModel(16, 8, 2, seed=3)) == first
    assert outputs(CircuitFastTreeModel(16, 8, 2, seed=4)) != first


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"window": 3}, "window"),
        ({"window": 32}, "window"),
        ({"window": 0}, "window"),
        ({"leaves": 12}, "leaves"),
        ({"leaves": 1}, "leaves"),
        ({"length": 0}, "length"),
        ({"width": 65}, "width"),
    ],
)
def test_parameter_errors(kwargs, name):
    with pytest.raises(ValueError) as error:
        CircuitFastTreeModel(**kwargs)
    assert name in str(error.value) and "\n" not in str(error.value)


def test_ack_collision_is_caught():
    acks = Acks(2)
    acks.own(1, 10, 0)
    with pytest.raises(AckCollision):
        acks.own(1, 10, 1)


def test_saturation_throughput_above_the_paper_tree():
    """Uniform random saturating load, 16 nodes, P = 2, window 8: well above the paper
    tree's 0.032 messages per node and cycle."""
    model = CircuitFastTreeModel(16, 8, 2, window=8)
    load = OpenLoop(16, 8, 2, Point("random", 1.0, 300, 1500))
    while not load.finished:
        valid, dest, data, ready = load.inputs()
        out = model.step(valid, dest, data, ready)
        load.observe(out.tx_ready, out.rx_valid, out.rx_data)
    assert load.figures()["accepted"] > 0.1


def test_lockstep_check_and_run_model_take_the_model():
    """The paper tree's lock-step check and model-only run drive this model unchanged (here a
    second model stands in for the design)."""
    design = CircuitFastTreeModel(8, 4, 2, seed=2)
    inputs = {}

    def read():
        # Outputs are registers: a copy stepped with any inputs shows this cycle's.
        states = design.routers[0, 0].states  # the LFSR table, shared, not copied
        out = copy.deepcopy(design, {id(states): states}).step(*idle(8))
        return [out.tx_ready, out.tx_done, out.tx_reject, out.rx_valid, out.rx_data]

    def drive(valid, dest, data, ready):
        inputs["now"] = (valid, dest, data, ready)

    async def tick():
        design.step(*inputs["now"])

    scoreboard = Scoreboard(CHECKS)
    model = CircuitFastTreeModel(8, 4, 2, seed=2)
    check = CircuitTreeCheck(model, scoreboard, read, drive, tick, stall=0.3)
    for name, queues in bench_phases(8, 4, 2, random.Random(3), 48):
        asyncio.run(check.phase(name, queues, limit=5000))
    assert scoreboard.mismatches == 0 and scoreboard.checked > 48
    stats = run_model(CircuitFastTreeModel(8, 4, 2), traffic("random", 8, 4, 2, random.Random(1)))
    assert len(stats["received"]) == stats["messages"] == 8
