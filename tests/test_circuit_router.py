"""One four-port CircuitRouter (amaranth.sim) against RouterModel and section 3's rules."""

import random

import pytest
from amaranth import Elaboratable, Module, ResetInserter, Signal

from fattree.hdl.circuit_router import CircuitRouter, shared_lfsr_bit
from fattree.hdl.lfsr import LFSR
from fattree.sim.models.circuit import RouterModel
from fattree.sim.testbench import merge_steps, simulate
from fattree.spec.circuit import LFSR_WIDTH, SHARED_SEED, A, B, C, D, lfsr_mask
from fattree.spec.lfsr import LFSRModel

SEED = 0x1D3


class WithSharedLFSR(Elaboratable):
    """A ``shared_lfsr`` router fed, as in the tree, the bit of an LFSR seeded ``seed`` derived
    from its own copy of the shared LFSR."""

    def __init__(self, router, seed):
        self.router = router
        self.seed = seed

    def elaborate(self, platform):
        m = Module()
        m.submodules.router = self.router
        m.submodules.lfsr = lfsr = LFSR(LFSR_WIDTH, seed=SHARED_SEED)
        m.d.comb += self.router.lfsr_bit.eq(shared_lfsr_bit(m, lfsr.value, self.seed, "bit"))
        return m


def run(stimulus, seed=SEED, width=4, shared=False):
    """``stimulus``: per cycle a dict with optional ``valid``/``data``/``reject``/``ack``
    (dicts port -> value) and ``rst``. Returns the RTL's outputs per cycle after checking
    they equal the model's in every cycle. ``shared``: the router takes its LFSR bit from a
    shared LFSR (the model keeps its own)."""
    router = CircuitRouter(width, seed, shared_lfsr=shared)
    rst = Signal()
    dut = ResetInserter(rst)(WithSharedLFSR(router, seed) if shared else router)
    model = RouterModel(seed)
    ports = [router.a, router.b, router.c, router.d]
    seen = []

    async def bench(ctx):
        for cycle, step in enumerate(stimulus):
            v = [step.get("valid", {}).get(p, 0) for p in range(4)]
            d = [step.get("data", {}).get(p, 0) for p in range(4)]
            rj = [step.get("reject", {}).get(p, 0) for p in range(4)]
            ak = [step.get("ack", {}).get(p, 0) for p in range(4)]
            for p in range(4):
                ctx.set(ports[p].i.valid, v[p])
                ctx.set(ports[p].i.data, d[p])
                ctx.set(ports[p].o.reject, rj[p])
                ctx.set(ports[p].o.ack, ak[p])
            ctx.set(rst, step.get("rst", 0))
            got = {
                "valid": [ctx.get(ports[p].o.valid) for p in range(4)],
                "data": [ctx.get(ports[p].o.data) for p in range(4)],
                "reject": [ctx.get(ports[p].i.reject) for p in range(4)],
                "ack": [ctx.get(ports[p].i.ack) for p in range(4)],
            }
            want = {
                "valid": list(model.out_valid),
                "data": list(model.out_data),
                "reject": list(model.bk_reject),
                "ack": list(model.bk_ack),
            }
            assert got == want, f"cycle {cycle}: RTL {got}, model {want}"
            seen.append(got)
            model.step(v, d, rj, ak)
            if step.get("rst"):
                model.reset()
            await ctx.tick()

    simulate(dut, bench)
    return seen


def message(port, words, start=0, total=None):
    """Cycles driving ``words`` on ``port`` from cycle ``start`` (valid high), then idle."""
    total = total or start + len(words) + 6
    cycles = [{} for _ in range(total)]
    for k, w in enumerate(words):
        cycles[start + k] = {"valid": {port: 1}, "data": {port: w}}
    return cycles


def lfsr_bit(cycle, seed=SEED):
    lfsr = LFSRModel(LFSR_WIDTH, seed=seed)
    for _ in range(cycle):
        lfsr.clock()
    return lfsr.state & 1


def outputs_on(seen, port):
    return [(k, s["data"][port]) for k, s in enumerate(seen) if s["valid"][port]]


# Downstream route bits: on c/d the bit picks a (0) or b (1); on a/b, 1 = turn.
@pytest.mark.parametrize(
    "inp, bit, out",
    [(A, 1, B), (B, 1, A), (C, 0, A), (C, 1, B), (D, 0, A), (D, 1, B)],
)
def test_every_downstream_and_turn_pair(inp, bit, out):
    seen = run(message(inp, [bit, 0x5, 0xA, 0x3]))
    # Route word consumed in cycle 0; data follows one cycle behind its input: 2..4.
    assert outputs_on(seen, out) == [(2, 0x5), (3, 0xA), (4, 0x3)]
    for other in {A, B, C, D} - {out}:
        assert outputs_on(seen, other) == []
    assert not any(s["reject"][inp] for s in seen)


@pytest.mark.parametrize("start", range(6))
@pytest.mark.parametrize("inp", [A, B])
def test_up_port_is_lfsr_bit_xor_entry_port(inp, start):
    seen = run(message(inp, [0, 0x9, 0x6], start=start))
    up = C + (lfsr_bit(start) ^ (inp == B))
    assert outputs_on(seen, up) == [(start + 2, 0x9), (start + 3, 0x6)]
    assert outputs_on(seen, C + D - up) == []


def test_two_up_messages_take_different_ports():
    for start in range(8):
        seen = run(merge_steps(message(A, [0, 0x1, 0x1], start), message(B, [0, 0x2, 0x2], start)))
        got_c, got_d = outputs_on(seen, C), outputs_on(seen, D)
        assert {got_c[0][1], got_d[0][1]} == {0x1, 0x2}
        assert got_c[0][1] == (0x1 if lfsr_bit(start) == 0 else 0x2)


def test_busy_up_port_sends_the_second_message_up_the_other():
    for start in range(1, 8):
        first = message(A, [0] + [0x1] * 12, 0, total=20)
        seen = run(merge_steps(first, message(B, [0, 0x2, 0x2], start, total=20)))
        first_port = C + lfsr_bit(0)
        second_port = C + D - first_port
        assert outputs_on(seen, second_port)[0] == (start + 2, 0x2)


def test_criss_cross_turns():
    seen = run(merge_steps(message(A, [1, 0x1, 0x1]), message(B, [1, 0x2, 0x2])))
    assert outputs_on(seen, B) == [(2, 0x1), (3, 0x1)]
    assert outputs_on(seen, A) == [(2, 0x2), (3, 0x2)]


def test_scenario_one_two_downstream_messages_same_port():
    # c and d both for a in one cycle: c passes, d is rejected (reject one cycle later).
    seen = run(merge_steps(message(C, [0, 0x3, 0x3]), message(D, [0, 0x4, 0x4])))
    assert outputs_on(seen, A) == [(2, 0x3), (3, 0x3)]
    assert [k for k, s in enumerate(seen) if s["reject"][D]] == [1]
    assert not any(s["reject"][C] for s in seen)


def test_scenario_two_turn_and_downstream_same_port():
    # b turns to a while c comes down to a: the turn passes, c is rejected.
    seen = run(merge_steps(message(B, [1, 0x7, 0x7]), message(C, [0, 0x3, 0x3])))
    assert outputs_on(seen, A) == [(2, 0x7), (3, 0x7)]
    assert [k for k, s in enumerate(seen) if s["reject"][C]] == [1]


def test_three_way_collision():
    seen = run(merge_steps(message(B, [1, 0x7]), message(C, [0, 0x3]), message(D, [0, 0x4])))
    assert outputs_on(seen, A) == [(2, 0x7)]
    assert [k for k, s in enumerate(seen) if s["reject"][C]] == [1]
    assert [k for k, s in enumerate(seen) if s["reject"][D]] == [1]


def test_claim_on_held_wire_is_rejected_and_dead_until_valid_falls():
    held = message(C, [0] + [0x3] * 10, 0, total=24)
    late = message(D, [0, 0x4, 0x4, 0x4], 3, total=24)
    again = message(D, [1, 0x5], 9, total=24)  # after d's valid fell: a new message, to b
    seen = run(merge_steps(held, late, again))
    assert [k for k, s in enumerate(seen) if s["reject"][D]] == [4]
    assert all(d == 0x3 for _, d in outputs_on(seen, A))
    assert outputs_on(seen, B) == [(11, 0x5)]


@pytest.mark.parametrize("signal", ["reject", "ack"])
def test_release_by_reject_or_ack(signal):
    stream = message(C, [0, 0x3, 0x3], 0, total=16)
    stream[6][signal] = {A: 1}  # from downstream, on a's outgoing link
    second = message(D, [0, 0x6], 7, total=16)
    seen = run(merge_steps(stream, second))
    # Passed back on c's incoming link one cycle later, exactly once.
    assert [k for k, s in enumerate(seen) if s[signal][C]] == [7]
    other = "ack" if signal == "reject" else "reject"
    assert not any(s[other][C] for s in seen)
    # a is free from the next cycle: d's message at cycle 7 passes.
    assert outputs_on(seen, A)[-1] == (9, 0x6)


def test_wire_busy_in_release_cycle():
    stream = message(C, [0, 0x3], 0, total=12)
    stream[5]["ack"] = {A: 1}
    seen = run(merge_steps(stream, message(D, [0, 0x6], 5, total=12)))  # same cycle as the ack
    assert [k for k, s in enumerate(seen) if s["reject"][D]] == [6]


def test_reset_mid_circuit():
    stream = message(C, [0] + [0x3] * 8, 0, total=20)
    stream[4]["rst"] = 1
    for k in range(5, 9):
        stream[k] = {}  # the sender stops too
    seen = run(merge_steps(stream, message(D, [0, 0x6, 0x6], 10, total=20)))
    assert not any(s["valid"][A] for s in seen[5:12])
    assert outputs_on(seen, A)[-2:] == [(12, 0x6), (13, 0x6)]


@pytest.mark.parametrize("shared", [False, True])
def test_random_stimulus_matches_model(shared):
    rng = random.Random(3)
    stimulus = []
    for _ in range(1500):
        step = {"valid": {}, "data": {}, "reject": {}, "ack": {}}
        for p in range(4):
            step["valid"][p] = int(rng.random() < 0.6)
            step["data"][p] = rng.getrandbits(4)
            step["reject"][p] = int(rng.random() < 0.05)
            step["ack"][p] = int(rng.random() < 0.05)
        if rng.random() < 0.01:
            step["rst"] = 1
        stimulus.append(step)
    run(stimulus, shared=shared)


@pytest.mark.parametrize("seed", [1, SHARED_SEED, SEED, 0x8000, 0xFFFF, 12345])
def test_lfsr_mask_gives_the_routers_own_bit(seed):
    shared = LFSRModel(LFSR_WIDTH, seed=SHARED_SEED)
    own = LFSRModel(LFSR_WIDTH, seed=seed)
    mask = lfsr_mask(seed)
    # Both are linear recurrences, so equal on 16 cycles means equal forever; check more.
    for cycle in range(5000):
        assert bin(shared.state & mask).count("1") % 2 == own.state & 1, cycle
        shared.clock()
        own.clock()


def test_shared_lfsr_bit_is_the_routers_own_lfsr_bit():
    """The bit a tree derives from its shared LFSR for a router of seed ``s`` (the hardware,
    from the reset state on) is bit 0 of an LFSR seeded ``s`` in every cycle. Both are linear
    functions of the shared state, so 16 cycles in a row decide it for ever; 64 are checked."""
    seeds = [1, SHARED_SEED + 1, SEED, 0x8000, 0xFFFF, 12345]
    m = Module()
    m.submodules.lfsr = lfsr = LFSR(LFSR_WIDTH, seed=SHARED_SEED)
    bits = [shared_lfsr_bit(m, lfsr.value, s, f"bit{k}") for k, s in enumerate(seeds)]
    own = [LFSRModel(LFSR_WIDTH, seed=s) for s in seeds]
    seen = []

    async def bench(ctx):
        for _ in range(64):
            seen.append(([ctx.get(b) for b in bits], [o.state & 1 for o in own]))
            for o in own:
                o.clock()
            await ctx.tick()

    simulate(m, bench)
    assert all(got == want for got, want in seen)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"width": 0}, "width must be a positive integer, not 0"),
        ({"seed": 0}, "seed must be between 1 and 65535, not 0"),
        ({"seed": 1 << 16}, "seed must be between 1 and 65535, not 65536"),
    ],
)
def test_parameter_errors(kwargs, message):
    with pytest.raises(ValueError) as info:
        CircuitRouter(**kwargs)
    assert str(info.value) == message


def test_one_router_is_a_design_of_its_own():
    # `fattree synth circuit-router` gives the cost of one router (the issue asks per router).
    from fattree.designs import DESIGNS, elaborate_verilog

    design = DESIGNS["circuit-router"]
    assert design.defaults() == {"width": 8, "seed": 1}
    text = elaborate_verilog(design, {"width": 1, "seed": 5})
    assert "module circuit_router(" in text and "a__o__valid" in text.replace(" ", "")
