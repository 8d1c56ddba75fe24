"""Selector RTL (amaranth.sim) against the cycle-exact model and the paper's rule."""

import itertools
import random

import pytest
from amaranth import ResetInserter, Signal
from amaranth.sim import Simulator

from fattree.hdl import Selector
from fattree.sim.models.selector import SelectorModel, select_message


def run_against_model(width, stimulus):
    """Drive ``stimulus`` [(start, i), ...]; compare every cycle's outputs with the model."""
    dut = Selector(width)
    model = SelectorModel(width)
    seen, expected = [], []

    async def bench(ctx):
        for start, word in stimulus:
            outputs = (ctx.get(dut.start_o), ctx.get(dut.one), ctx.get(dut.zero))
            ctx.set(dut.start, start)
            ctx.set(dut.i, word)
            want = model.step(start, word)
            seen.append(outputs)
            expected.append((want.start_o, want.one, want.zero))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return seen, expected


def frames_to_stimulus(frames):
    return [(int(k == 0), word) for frame in frames for k, word in enumerate(frame)] + [
        (1, 0),
        (0, 0),
        (0, 0),
        (0, 0),
    ]


@pytest.mark.parametrize("width", [1, 2])
@pytest.mark.parametrize("length", [2, 3])
def test_exhaustive_frames(width, length):
    # Every frame of `length` cycles over `width` wires, back to back.
    words = range(1 << width)
    frames = [list(f) for f in itertools.product(words, repeat=length)]
    seen, expected = run_against_model(width, frames_to_stimulus(frames))
    assert seen == expected


@pytest.mark.parametrize("width", [1, 3, 8, 33])
def test_random_with_protocol_edges(width):
    # Random frames including one-cycle frames (a start right after a start) and idle gaps.
    rng = random.Random(width)
    stimulus = []
    for _ in range(300):
        stimulus.append((1, rng.getrandbits(width)))
        stimulus += [(0, rng.getrandbits(width)) for _ in range(rng.choice([0, 1, 2, 5, 9]))]
    seen, expected = run_against_model(width, stimulus)
    assert seen == expected


def test_model_matches_paper_rule_per_wire():
    # The cycle model, read message by message, is the paper's rule plus one idle pad bit.
    rng = random.Random(7)
    width = 5
    frames = [[rng.getrandbits(width) for _ in range(rng.randint(2, 7))] for _ in range(100)]
    model = SelectorModel(width)
    outs = [model.step(*cyc) for cyc in frames_to_stimulus(frames)]
    starts = [n for n, o in enumerate(outs) if o.start_o]
    assert len(starts) == len(frames) + 1
    for frame, a, b in zip(frames, starts, starts[1:], strict=False):
        for w in range(width):
            one, zero = select_message([(x >> w) & 1 for x in frame])
            assert [(o.one >> w) & 1 for o in outs[a:b]] == one + [0]
            assert [(o.zero >> w) & 1 for o in outs[a:b]] == zero + [0]


def test_select_message_rule():
    assert select_message([1, 1, 0, 1]) == ([1, 0, 1], [0, 0, 0])
    assert select_message([1, 0, 0, 1]) == ([0, 0, 0], [1, 0, 1])
    assert select_message([0, 1, 1, 1]) == ([0, 0, 0], [0, 0, 0])


def test_mutated_model_differs():
    # The self-check mutation really changes the reference (so a bench using it must fail).
    good, bad = SelectorModel(2), SelectorModel(2, mutation=True)
    stim = [(1, 0b11), (0, 0b01), (0, 0b11), (0, 0)]
    assert [good.step(*s) for s in stim] != [bad.step(*s) for s in stim]


def test_reset_mid_message():
    # Reset clears a held path: after reset, no branch carries the old message's bits.
    width = 4
    dut = Selector(width)
    rst = Signal()
    top = ResetInserter(rst)(dut)
    observed = []

    async def bench(ctx):
        ctx.set(dut.start, 1)
        ctx.set(dut.i, 0b1111)
        await ctx.tick()
        ctx.set(dut.start, 0)
        ctx.set(dut.i, 0b0101)
        await ctx.tick()
        ctx.set(dut.i, 0b1111)
        await ctx.tick()
        assert ctx.get(dut.one) == 0b0101 and ctx.get(dut.zero) == 0b1010
        await ctx.tick()  # outputs now carry the data bits of the held paths
        assert ctx.get(dut.one) == 0b0101
        ctx.set(rst, 1)
        await ctx.tick()
        ctx.set(rst, 0)
        for _ in range(3):
            await ctx.tick()
            observed.append((ctx.get(dut.start_o), ctx.get(dut.one), ctx.get(dut.zero)))

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert observed == [(0, 0, 0)] * 3


@pytest.mark.parametrize(
    "width, exc, message",
    [
        (0, ValueError, "width must be a positive integer, not 0"),
        (-3, ValueError, "width must be a positive integer, not -3"),
        (2.5, TypeError, "width must be a positive integer, not 2.5"),
        (True, TypeError, "width must be a positive integer, not True"),
    ],
)
def test_bad_width(width, exc, message):
    with pytest.raises(exc, match=f"^{message}$"):
        Selector(width)
    with pytest.raises(exc, match=f"^{message}$"):
        SelectorModel(width)
