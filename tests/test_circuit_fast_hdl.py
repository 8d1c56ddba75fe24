"""CircuitFastTree RTL (amaranth.sim) against the rules of fattree/spec/circuit_fast.py:
timing of a lone message, a head dropped at a down port, the window, a full receiver, and
exactly-once delivery under random traffic."""

import random
from collections import Counter

import pytest
from amaranth.back import verilog
from amaranth.hdl import Fragment

from fattree.hdl.circuit_fast.router import CircuitFastRouter
from fattree.hdl.circuit_fast.tree import CircuitFastTree
from fattree.hdl.circuit_tree import CircuitFatTree
from fattree.sim.testbench import simulate
from fattree.spec.circuit import LFSR_WIDTH, router_seed
from fattree.spec.circuit_fast import fate_delay
from fattree.spec.lfsr import LFSRModel
from fattree.spec.topology import FatTree


class Run:
    """What a run of the tree showed, cycle by cycle (cycle 0 is the first after reset)."""

    def __init__(self):
        self.taken = []  # (cycle, node, dest, data): tx handshakes
        self.done = []  # (cycle, node)
        self.reject = []  # (cycle, node)
        self.rx_valid = []  # (cycle, node, data)
        self.delivered = []  # (cycle, node, data): rx handshakes
        self.tx_ready = {}  # (cycle, node) -> tx.ready

    def messages(self):
        return sum(1 for _ in self.taken)


def run_tree(leaves, width, length, window, queues, *, seed=1, ready=None, start=None, cycles=2000):
    """Offer node ``n`` the messages ``queues[n]`` (``(dest, data)``, each from the cycle the
    one before was taken, the first from ``start[n]``), receivers ready as ``ready(cycle,
    node)`` says (always, by default), until every message is acknowledged and delivered (at
    most ``cycles``); returns the :class:`Run`."""
    dut = CircuitFastTree(leaves, width, length, seed, window)
    queues = [list(q) for q in queues]
    start = start or [0] * leaves
    ready = ready or (lambda cycle, node: 1)
    total = sum(len(q) for q in queues)
    run = Run()

    async def bench(ctx):
        for cycle in range(cycles):
            offers = [q[0] if q and cycle >= start[n] else None for n, q in enumerate(queues)]
            for n, offer in enumerate(offers):
                ctx.set(dut.tx[n].valid, offer is not None)
                ctx.set(dut.tx[n].payload.dest, offer[0] if offer else 0)
                ctx.set(dut.tx[n].payload.data, offer[1] if offer else 0)
                ctx.set(dut.rx[n].ready, ready(cycle, n))
            for n, offer in enumerate(offers):
                tx_ready = ctx.get(dut.tx[n].ready)
                run.tx_ready[cycle, n] = tx_ready
                if offer is not None and tx_ready:
                    run.taken.append((cycle, n, *queues[n].pop(0)))
                if ctx.get(dut.tx_done[n]):
                    run.done.append((cycle, n))
                if ctx.get(dut.tx_reject[n]):
                    run.reject.append((cycle, n))
                if ctx.get(dut.rx[n].valid):
                    data = ctx.get(dut.rx[n].payload.data)
                    run.rx_valid.append((cycle, n, data))
                    if ready(cycle, n):
                        run.delivered.append((cycle, n, data))
            if len(run.done) == total and len(run.delivered) == total:
                return
            await ctx.tick()

    simulate(dut, bench)
    return run


def check_exactly_once(run):
    # Every message taken is acknowledged once and delivered once, to its node, intact.
    assert len(run.done) == len(run.taken)
    assert Counter((d, data) for _c, _n, d, data in run.taken) == Counter(
        (n, data) for _c, n, data in run.delivered
    )


def turn_level(src, dest):
    return max((src ^ dest).bit_length() - 1, 0)


# -- elaboration --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "leaves, width, length, window",
    [(4, 8, 2, 8), pytest.param(16, 4, 2, 4, marks=pytest.mark.slow)],
)
def test_verilog(leaves, width, length, window):
    dut = CircuitFastTree(leaves, width, length, 1, window)
    text = verilog.convert(dut, name="top")
    assert "module top" in text
    # The same external ports as the paper tree (elaborated: a component never elaborated
    # makes Amaranth warn).
    paper = CircuitFatTree(leaves, width, length, 1)
    Fragment.get(paper, None)
    assert dut.signature.members.keys() == paper.signature.members.keys()
    for name in ("tx", "rx", "tx_done", "tx_reject"):
        assert dut.signature.members[name] == paper.signature.members[name]


def test_router_alone_elaborates():
    for level in range(3):
        verilog.convert(CircuitFastRouter(8, 2, level, 1, 7))


def test_parameter_errors():
    with pytest.raises(ValueError, match="window"):
        CircuitFastTree(8, 8, 2, 1, 3)
    with pytest.raises(ValueError, match="leaves"):
        CircuitFastTree(12)
    with pytest.raises(TypeError):
        CircuitFastTree("8")


# -- timing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "leaves, src, dest, length", [(4, 0, 1, 2), (4, 3, 0, 1), (8, 5, 2, 3), (8, 6, 6, 2)]
)
def test_single_message_timing(leaves, src, dest, length):
    # Handshake at t: head on the inject link at t + 1, one cycle per router (2L + 1 of
    # them), last word on the eject link at t + 1 + 2L + P (cut-through rx.valid), fate 0 at
    # the source at t + 1 + F, tx_done one cycle later. To its own node: turned at level 0.
    h = leaves.bit_length() - 1
    queues = [[] for _ in range(leaves)]
    data = 0x5A5A5 & ((1 << 4 * length) - 1)
    queues[src] = [(dest, data)]
    run = run_tree(leaves, 4, length, 4, queues, start=[3] * leaves)
    ((t, _n, _d, _data),) = run.taken
    assert t == 3
    L = turn_level(src, dest)
    assert run.rx_valid == [(t + 1 + 2 * L + length, dest, data)]
    assert run.done == [(t + 1 + fate_delay(h) + 1, src)]
    assert run.reject == []


# -- collisions ---------------------------------------------------------------------------------


def lfsr_bit(seed, level, switch, cycle):
    lfsr = LFSRModel(LFSR_WIDTH, seed=router_seed(seed, level, switch))
    for _ in range(cycle):
        lfsr.clock()
    return lfsr.state & 1


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_two_heads_meet_at_a_down_port(seed):
    # Nodes 0 and 1 send to node 2 in the same cycle: their heads leave SW(0, 0) by
    # different up ports, turn at the top and meet at SW(0, 1), both wanting its port a.
    # c wins if that router's LFSR bit is 0, else d; the loser's fate is 1 (tx_reject), and
    # it is delivered later.
    leaves, length, t = 4, 2, 2
    h = 2
    tree = FatTree(h, 2)
    queues = [[(2, 0x11)], [(2, 0x22)], [], []]
    run = run_tree(leaves, 4, length, 2, queues, seed=seed, start=[t] * leaves)
    check_exactly_once(run)
    # Which up port each head takes at SW(0, 0) at t + 1 (a: c if x = 0; b the other one),
    # and so which port of SW(0, 1) it reaches at t + 3.
    x0 = lfsr_bit(seed, 0, 0, t + 1)
    arrives = {}
    for node, up_port in ((0, x0), (1, 1 - x0)):
        _, parent, down_port = tree.up_neighbour(0, 0, up_port)
        other = 1 - down_port
        _, child, child_port = tree.down_neighbour(1, parent, other)
        assert child == 1
        arrives[child_port] = node
    x2 = lfsr_bit(seed, 0, 1, t + 3)
    winner = arrives[0] if x2 == 0 else arrives[1]
    loser = 1 - winner
    F = fate_delay(h)
    assert run.rx_valid[0] == (t + 1 + 2 + length, 2, [0x11, 0x22][winner])
    assert (t + F + 2, winner) in run.done
    assert run.reject == [(t + F + 2, loser)]
    # Sent again at once: its slot is READY from t + F + 2, its head on the link a cycle later.
    assert run.rx_valid[1] == (t + F + 3 + 2 + length, 2, [0x11, 0x22][loser])


# -- window and receiver ------------------------------------------------------------------------


def test_window_limit():
    # Window 2: two messages taken in two cycles, then tx.ready is low until the first fate
    # frees a slot (t + 1 + F + 1).
    leaves, h, length = 8, 3, 2
    queues = [[(5, k) for k in range(1, 5)]] + [[] for _ in range(leaves - 1)]
    run = run_tree(leaves, 4, length, 2, queues, start=[1] * leaves)
    check_exactly_once(run)
    F = fate_delay(h)
    assert [c for c, *_ in run.taken[:2]] == [1, 2]
    freed = 1 + 1 + F + 1
    assert all(run.tx_ready[c, 0] == 0 for c in range(3, freed))
    assert run.tx_ready[freed, 0] == 1
    assert run.taken[2][0] == freed


@pytest.mark.parametrize("length", [1, 2])
def test_receiver_not_ready(length):
    # Node 0 sends two messages to node 1, whose receiver is not ready until cycle 40: the
    # first is presented from its last word on (and held), the second dropped (tx_reject) at
    # every attempt until the first is taken, then delivered.
    leaves, h = 4, 2
    queues = [[(1, 0xA), (1, 0xB)], [], [], []]
    run = run_tree(leaves, 4, length, 4, queues, ready=lambda c, n: n != 1 or c >= 40)
    check_exactly_once(run)
    t = run.taken[0][0]
    first_seen = t + 1 + length
    assert all((c, 1, 0xA) in run.rx_valid for c in range(first_seen, 41))
    assert run.delivered[0] == (40, 1, 0xA)
    assert len(run.reject) >= 2 and all(n == 0 for _c, n in run.reject)
    assert all(c <= 40 + fate_delay(h) + 1 for c, _n in run.reject)
    assert run.delivered[1][2] == 0xB and run.delivered[1][0] > 40


# -- random traffic -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "leaves, width, length, window, seed",
    [(8, 3, 2, 4, 1), (4, 2, 1, 1, 2), (2, 1, 3, 2, 3), (8, 4, 1, 8, 4)],
)
def test_random_traffic_exactly_once(leaves, width, length, window, seed):
    # Every node sends a few messages to random nodes (itself included), receivers not
    # ready a third of the time: each message acknowledged once and delivered once, intact.
    rng = random.Random(seed)
    queues = [
        [(rng.randrange(leaves), rng.getrandbits(width * length)) for _ in range(6)]
        for _ in range(leaves)
    ]
    stall = {(c, n) for c in range(3000) for n in range(leaves) if rng.random() < 0.33}
    run = run_tree(
        leaves,
        width,
        length,
        window,
        queues,
        seed=seed,
        cycles=3000,
        ready=lambda c, n: (c, n) not in stall,
    )
    check_exactly_once(run)
    assert run.messages() == 6 * leaves
    assert run.reject  # there were collisions or full receivers
