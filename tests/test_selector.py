"""Selector RTL (amaranth.sim) against the cycle-exact model and the paper's rule."""

import itertools
import random

import pytest
from amaranth import ResetInserter, Signal

from fattree.hdl import Selector
from fattree.sim.checks.selector import (
    CHECKS,
    SelectorCheck,
    SelectorMonitor,
    check_messages,
    stimulus,
)
from fattree.sim.models.selector import SelectorModel, select_message
from fattree.sim.scoreboard import Scoreboard
from fattree.sim.testbench import simulate


def run_against_model(width, frames, *, messages=True, mutate=False):
    """Drive ``frames`` (word lists, then a closing frame) into the RTL; compare every cycle's
    outputs with the model and (``messages``) every branch message with the paper's rule."""
    dut = Selector(width)
    scoreboard = Scoreboard(CHECKS, mutate=mutate)

    async def bench(ctx):
        def read():
            return ctx.get(dut.start_o), ctx.get(dut.one), ctx.get(dut.zero)

        def drive(start, word):
            ctx.set(dut.start, start)
            ctx.set(dut.i, word)

        await SelectorCheck(width, scoreboard, read, drive, ctx.tick).run(frames, messages=messages)

    simulate(dut, bench)
    return scoreboard


@pytest.mark.parametrize("width", [1, 2])
@pytest.mark.parametrize("length", [2, 3])
def test_exhaustive_frames(width, length):
    # Every frame of `length` cycles over `width` wires, back to back.
    words = range(1 << width)
    frames = [list(f) for f in itertools.product(words, repeat=length)]
    scoreboard = run_against_model(width, frames)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    assert scoreboard.checked == len(frames) * width


@pytest.mark.parametrize("width", [1, 3, 8, 33])
def test_random_with_protocol_edges(width):
    # Random frames including one-cycle frames (a start right after a start) and idle gaps.
    rng = random.Random(width)
    frames = []
    for _ in range(300):
        frame = [rng.getrandbits(width)]
        frames.append(frame + [rng.getrandbits(width) for _ in range(rng.choice([0, 1, 2, 5, 9]))])
    # One-cycle frames are cut: their messages leave on neither branch, and the message check
    # expects none of them (and their cycle as padding of the frame before).
    scoreboard = run_against_model(width, frames)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    assert scoreboard.checked == sum(len(f) >= 2 for f in frames) * width


def test_model_matches_paper_rule_per_wire():
    # The cycle model, read message by message, is the paper's rule plus one idle pad bit.
    rng = random.Random(7)
    width = 5
    frames = [[rng.getrandbits(width) for _ in range(rng.randint(2, 7))] for _ in range(100)]
    model = SelectorModel(width)
    monitor = SelectorMonitor()
    for start, word in stimulus(frames):
        out = model.step(start, word)
        monitor.sample((out.start_o, out.one, out.zero))
    scoreboard = Scoreboard(CHECKS)
    check_messages(scoreboard, width, frames, monitor.frames)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    assert scoreboard.checked == len(frames) * width


def test_select_message_rule():
    assert select_message([1, 1, 0, 1]) == ([1, 0, 1], [0, 0, 0])
    assert select_message([1, 0, 0, 1]) == ([0, 0, 0], [1, 0, 1])
    assert select_message([0, 1, 1, 1]) == ([0, 0, 0], [0, 0, 0])


def test_broken_reference_is_caught():
    # The self-check (`fattree sim --mutate-model`) really changes the reference: a run that
    # passes fails with it, in the cycle-by-cycle check.
    frames = [[0b11, 0b01, 0b11, 0]]
    assert run_against_model(2, frames).mismatches == 0
    scoreboard = run_against_model(2, frames, mutate=True)
    assert scoreboard.failures["cycle_mismatches"] > 0


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

    simulate(top, bench)
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
