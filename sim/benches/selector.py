"""cocotb bench of :class:`fattree.hdl.Selector`: driver, monitor, scoreboard.

Random frames of random bit-serial messages (one per wire, M bit random) are driven with
random idle gaps. Two checks run side by side:

* cycle by cycle, every output against :class:`SelectorModel` (the cycle-exact reference);
* message by message, every branch message the monitor reassembles against the paper's rule
  :func:`select_message` applied to what the driver sent on that wire.

Inputs are driven and outputs sampled on the falling clock edge, half a cycle away from the
rising edge where the design samples and updates, so neither side races the other.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.cocotb_runner import (
    TwoCheckScoreboard,
    bench_config,
    clock_and_reset,
    write_summary,
)
from fattree.sim.models.selector import SelectorModel, select_message


def random_frames(rng: random.Random, width: int, count: int) -> list[dict]:
    """Frames of per-wire messages: M bit (p = 3/4), address bit, 0-8 more bits; a gap of
    0-3 idle cycles follows, during which the wires keep their paths (and carry noise)."""
    frames = []
    for _ in range(count):
        length = rng.randint(2, 10)
        words = [rng.getrandbits(width) for _ in range(length)]
        words[0] = sum((rng.random() < 0.75) << w for w in range(width))
        gap = rng.choice([0, 0, 0, 1, 2, 3])
        words += [rng.getrandbits(width) for _ in range(gap)]
        frames.append({"words": words})
    return frames


class SelectorDriver:
    """Turns frames into per-cycle input words: ``start`` on each frame's first cycle."""

    def __init__(self, frames: list[dict], width: int):
        self.cycles: list[tuple[int, int]] = []
        for frame in frames:
            for k, word in enumerate(frame["words"]):
                self.cycles.append((int(k == 0), word))
        # A closing frame of zeros ends the last real frame's messages.
        self.cycles += [(1, 0), (0, 0)] + [(0, 0)] * 3

    def drive(self, dut, cycle: int) -> tuple[int, int]:
        start, word = self.cycles[cycle]
        dut.start.value = start
        dut.i.value = word
        return start, word


class SelectorMonitor:
    """Reassembles each wire's branch messages from ``start_o`` to the next ``start_o``."""

    def __init__(self, width: int):
        self.width = width
        self.frames: list[list[tuple[int, int]]] = []  # completed frames: (one, zero) words
        self._current: list[tuple[int, int]] | None = None

    def sample(self, dut) -> tuple[int, int, int]:
        start_o, one, zero = int(dut.start_o.value), int(dut.one.value), int(dut.zero.value)
        if start_o:
            if self._current is not None:
                self.frames.append(self._current)
            self._current = []
        if self._current is not None:
            self._current.append((one, zero))
        return start_o, one, zero


class SelectorScoreboard(TwoCheckScoreboard):
    def __init__(self, width: int, mutation: bool):
        super().__init__()
        self.width = width
        self.model = SelectorModel(width, mutation=mutation)

    def check_cycle(self, cycle: int, inputs: tuple[int, int], seen: tuple[int, int, int]):
        expected = self.model.step(*inputs)
        want = (expected.start_o, expected.one, expected.zero)
        if want != seen:
            self.cycle_mismatches += 1
            self._report(f"cycle {cycle}: (start_o, one, zero) = {seen}, model says {want}")

    def check_messages(self, frames: list[dict], observed: list[list[tuple[int, int]]]):
        """Frame by frame, wire by wire: the branch messages against ``select_message``."""
        if len(observed) != len(frames):
            self.message_mismatches += 1
            self._report(f"{len(observed)} output frames for {len(frames)} input frames")
        for n, (frame, out) in enumerate(zip(frames, observed, strict=False)):
            for w in range(self.width):
                bits = [(word >> w) & 1 for word in frame["words"]]
                want_one, want_zero = select_message(bits)
                # The frame period is unchanged: the stripped bit's slot is an idle 0 at the end.
                want_one, want_zero = want_one + [0], want_zero + [0]
                got_one = [(one >> w) & 1 for one, _ in out]
                got_zero = [(zero >> w) & 1 for _, zero in out]
                self.messages_checked += 1
                if (got_one, got_zero) != (want_one, want_zero):
                    self.message_mismatches += 1
                    self._report(
                        f"frame {n} wire {w}: sent {bits}, one={got_one} zero={got_zero}, "
                        f"expected one={want_one} zero={want_zero}"
                    )


@cocotb.test()
async def random_messages(dut):
    config = bench_config()
    width = config["params"]["width"]
    frames_count = config["bench"].get("frames", 200)
    mutation = bool(config["bench"].get("mutation", False))
    rng = random.Random(config["seed"])

    await clock_and_reset(dut, dut.start, dut.i)

    frames = random_frames(rng, width, frames_count)
    driver = SelectorDriver(frames, width)
    monitor = SelectorMonitor(width)
    scoreboard = SelectorScoreboard(width, mutation)
    for cycle in range(len(driver.cycles)):
        await FallingEdge(dut.clk)
        seen = monitor.sample(dut)
        inputs = driver.drive(dut, cycle)
        scoreboard.check_cycle(cycle, inputs, seen)
    scoreboard.check_messages(frames, monitor.frames)

    mismatches = scoreboard.mismatches
    write_summary(
        config,
        {
            "cycles": len(driver.cycles),
            "frames": len(frames),
            **scoreboard.summary(),
        },
    )
    assert mismatches == 0, f"{mismatches} mismatches; first: {scoreboard.first_mismatch}"
    assert scoreboard.messages_checked == len(frames) * width
