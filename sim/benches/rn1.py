"""cocotb bench of :class:`fattree.hdl.rn1.router.RN1Router`: endpoints, model, scoreboard.

Sixteen protocol-following endpoints (a sender on each input channel, a receiver on each
output channel; :class:`fattree.sim.checks.rn1.End`) open connections, close them with TURN
or DROP, answer over turned connections, answer BLOCKED now and then as a busy destination,
and send blocked transmissions again until they get through. Phases: random directions
(``frames`` transmissions in all, 1000 by default), then a hot spot (every input to direction
0: dilation overflow in every cycle), then on one router (:data:`STRESS`) heads in step
(every input's head in the same cycle, round after round), in step with turns and busy
receivers, and random traffic whose idle words carry random data. A run-time router
(``mode=runtime``) runs every phase with its ``alternate`` input at 0, then every phase at
1, then random traffic and rounds with the input flipped at random cycles (about one cycle
in ten). A model with cover points (the router's; ``--coverage`` reports them) counts them
in every run, and the bench ends with rounds that close what the phases left of them, each
tried on a copy of the model first (:func:`fattree.sim.checks.rn1.hole_rounds`; reported as
``steered``). A run that has failed skips the phases left and the steered rounds, and a
phase ends :attr:`~fattree.sim.checks.rn1.RN1Check.patience` cycles after its first
mismatch: a broken router that holds some transmissions back for good fails promptly, with
its first mismatch reported.
:class:`fattree.sim.checks.rn1.RN1Check` runs two checks side by side:

* cycle by cycle, every output word (``o__k__fwd``, ``i__k__bk``) against
  :class:`RN1Model`, the cycle-exact reference with the same LFSR and arbitration;
* transmission by transmission, every one delivered exactly once through an output of its
  direction with its bytes intact, and every segment after a turn received as sent.

Inputs are driven and outputs sampled on the falling clock edge, half a cycle away from the
rising edge where the design samples and updates.
"""

from __future__ import annotations

import random
import time

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.checks.rn1 import (
    BURST,
    CHECKS,
    Knobs,
    Layout,
    RN1Check,
    burst,
    hole_rounds,
    router_layout,
    transmissions,
)
from fattree.sim.cocotb_runner import (
    ChangedInputs,
    bench_config,
    clock_and_reset,
    write_summary,
)
from fattree.sim.models.rn1 import RN1Model
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.rn1 import CHANNELS, DIRECTIONS, MODES, RUNTIME, pass_head


class Ports:
    """The flattened Verilog ports: ``i__k__fwd`` in, ``i__k__bk`` out, ``o__k__fwd`` out,
    ``o__k__bk`` in, nine bits each (``data`` low, ``ctrl`` bit 8)."""

    def __init__(self, dut, channels: int = CHANNELS):
        self.channels = channels

        def ports(fmt):
            return [getattr(dut, fmt.format(k)) for k in range(channels)]

        self.o_fwd, self.i_bk = ports("o__{}__fwd"), ports("i__{}__bk")
        self.i_fwd, self.o_bk = ports("i__{}__fwd"), ports("o__{}__bk")
        self.writer = ChangedInputs((self.i_fwd, self.o_bk))

    def drive(self, i_fwd, o_bk) -> None:
        """Set the inputs; only those that change are written (each write is a VPI call)."""
        self.writer.write((i_fwd, o_bk))

    def sample(self):
        return [int(s.value) for s in self.o_fwd], [int(s.value) for s in self.i_bk]


#: The phases after random and hot spot on one router: rounds of eight heads in one cycle
#: onto a free router (three or more for one direction), heads in step onto a router whose
#: outputs are partly held, the same with turns, busy receivers, idle words with random data
#: and answer bytes that look like codes, then random traffic with such words and bytes and
#: replies refused (BLOCKED on the forward link).
STRESS = (
    ("rounds", Knobs(start=1.0, turn=0.0, busy=0.0, max_delay=0, max_gap=0, rounds=True)),
    ("burst", BURST),
    (
        "burst-turns",
        Knobs(start=1.0, turn=0.5, busy=0.3, max_delay=0, max_gap=0, noise=True, codes=0.3),
    ),
    ("noise", Knobs(turn=0.6, noise=True, codes=0.3, refuse=0.2)),
)


#: Candidate rounds tried on a copy of the model to close the coverage's holes (none when
#: the phases before left no hole).
HOLE_TRIES = 200

#: A run-time router's ``alternate`` input flips in about this fraction of the cycles of
#: the phases that change it.
TOGGLE = 0.1


def anywhere_layout() -> Layout:
    """One router whose mode may change under a transmission's feet: every transmission
    must be delivered exactly once with its bytes intact, at whichever output (where it went
    is the cycle check's: the model routes each head by the setting of its cycle)."""
    return Layout(
        CHANNELS,
        DIRECTIONS,
        lambda i, d, fill: (fill & ~0b11) | d,
        lambda i, head: (),
        lambda o: (),
        lambda i, head: pass_head(head),
    )


class _Alternate:
    """A run-time router's ``alternate`` input, set right before the model steps so that the
    model and the design see the same setting in the same cycle: flipped at random with
    probability :attr:`p` per cycle (0: never), written to the design when it changes.
    Without ``rng`` (not a run-time router) it only drives the ports."""

    def __init__(self, dut, model, ports: Ports, rng: random.Random | None):
        self.dut, self.model, self.ports, self.rng = dut, model, ports, rng
        self.p = 0.0
        self.count = 0
        self.written = None

    def drive(self, i_fwd, o_bk) -> None:
        if self.p and self.rng.random() < self.p:
            self.model.alternate ^= 1
            self.count += 1
        if self.rng is not None and self.written != self.model.alternate:
            self.dut.alternate.value = self.written = self.model.alternate
        self.ports.drive(i_fwd, o_bk)


async def run_phases(dut, model, layout=None, *, frames: int = 200, stress: bool = False) -> None:
    """The benches' body, for one router or a network: endpoints on every channel of
    ``layout`` (default: one RN1's), a random phase then a hot spot (``frames``
    transmissions each unless the bench knob says otherwise), and with ``stress`` the phases
    of :data:`STRESS`; for a run-time router all of that in either setting of its
    ``alternate`` input, then random traffic and rounds with the input flipping; the
    summary written."""
    config = bench_config()
    frames = config["bench"].get("frames", frames)
    rng = random.Random(config["seed"])
    # The model counts its cover points in every run where it has them (``--coverage``
    # reports them).
    coverage = model.start_coverage() if hasattr(model, "start_coverage") else None
    runtime = getattr(model, "mode", None) == RUNTIME
    layout = layout or (None if runtime else router_layout(model.mode))
    n = layout.channels if layout else CHANNELS
    ports = Ports(dut, n)
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))
    alternate = _Alternate(
        dut, model, ports, random.Random(rng.getrandbits(32)) if runtime else None
    )

    def make_check(lay):
        return RN1Check(
            model,
            scoreboard,
            ports.sample,
            alternate.drive,
            lambda: FallingEdge(dut.clk),
            rng=random.Random(rng.getrandbits(32)),
            layout=lay,
        )

    check = make_check(layout)
    ports.drive([0] * n, [0] * n)
    if runtime:
        dut.alternate.value = model.alternate = 0
    # Cycle 0 of the model is the half cycle where this returns: reset state, and the next
    # rising edge is the first one without reset (the LFSRs advance on it).
    await clock_and_reset(dut)

    per_input = max(1, -(-frames // n))
    started = time.perf_counter()
    counts = await _phases_in_each_setting(check, model, rng, per_input, runtime, stress)
    last = check
    if runtime:
        last = make_check(anywhere_layout())
        last.cycle = check.cycle
        counts |= await _phases_flipping(last, alternate, rng, per_input)
    if coverage is not None:
        counts |= await _steer(last, model, random.Random(rng.getrandbits(32)))
    if last is not check:
        check.stats.update(last.stats)
    cycle = last.cycle
    seconds = time.perf_counter() - started
    extra = {"alternate_flips": alternate.count} if runtime else {}
    write_summary(
        config,
        scoreboard.summary(
            cycle,
            transmissions=counts,
            heads_blocked=check.stats["blocked"],
            busy_or_blocked_answers=check.stats["blocked_answers"],
            circuits_released=check.stats["release"],
            turned_segments=check.stats["turn_segments"],
            seconds=round(seconds, 3),
            cycles_per_second=round(cycle / seconds, 1) if seconds else None,
            **extra,
            **(
                {"coverage": coverage.as_dict()}
                if coverage and config["bench"].get("coverage")
                else {}
            ),
        ),
    )
    scoreboard.raise_on_mismatch()


async def _phases_in_each_setting(check, model, rng, per_input, runtime, stress) -> dict:
    """The random and hot-spot phases, and with ``stress`` those of :data:`STRESS`, once
    (or for a run-time router in either setting of ``alternate``, named ``@primary`` and
    ``@alternate``); the transmissions of each phase by name."""
    counts = {}
    for setting in (0, 1) if runtime else (None,):
        suffix = ""
        if runtime:
            model.alternate = setting
            suffix = f"@{MODES[setting]}"
        lay = check.layout
        phases = [(name, None) for name in ("random", "hotspot")]
        phases += list(STRESS) if stress else []
        for name, knobs in phases:
            if check.scoreboard.mismatches:
                # Failed already: the phases left would only add to the first mismatch
                # (a broken router with transmissions stuck for good ran past the mutants'
                # time limit here).
                return counts
            if knobs is None:
                queues = transmissions(name, per_input, rng, lay)
            else:
                queues = _stress_queues(name, per_input, rng, lay)
            counts[name + suffix] = await check.phase(
                name + suffix, queues, limit=50_000 * per_input, knobs=knobs
            )
    return counts


async def _phases_flipping(anywhere, alternate: _Alternate, rng, per_input) -> dict:
    """A run-time router's random traffic and rounds with ``alternate`` flipped at random
    (heads may then leave in any direction: ``anywhere``'s layout); their transmissions."""
    counts = {}
    if anywhere.scoreboard.mismatches:  # failed already: see _phases_in_each_setting
        return counts
    alternate.p = TOGGLE
    lay = router_layout("primary")  # heads name directions either way
    counts["random@flip"] = await anywhere.phase(
        "random@flip", transmissions("random", per_input, rng, lay), limit=50_000 * per_input
    )
    if not anywhere.scoreboard.mismatches:
        counts["rounds@flip"] = await anywhere.phase(
            "rounds@flip",
            _stress_queues("rounds", per_input, rng, lay),
            limit=50_000 * per_input,
            knobs=dict(STRESS)["rounds"],
        )
    alternate.p = 0.0
    return counts


async def _steer(check, model, rng) -> dict:
    """The rounds that close what the phases left of the model's coverage, each tried on a
    copy of the model first (:func:`~fattree.sim.checks.rn1.hole_rounds`); their
    transmissions as ``steered`` (none when the phases left no hole, or the run has
    failed already: the design no longer follows the model the rounds are tried on)."""
    steered = 0
    tries = 0 if check.scoreboard.mismatches else HOLE_TRIES
    for name, queues, knobs, setting in hole_rounds(check, rng, tries=tries):
        if setting is not None:
            model.alternate = setting
        steered += await check.phase(name, queues, knobs=knobs)
        if check.scoreboard.mismatches:
            break
    return {"steered": steered} if steered else {}


def _stress_queues(name, per_input, rng, layout):
    if name == "rounds":
        # Short transmissions, two targets a round: many rounds of contention.
        return burst(4 * per_input, rng, layout, spread=2, max_length=1)
    if name.startswith("burst"):
        return burst(per_input, rng, layout)
    return transmissions("random", per_input, rng, layout)


@cocotb.test()
async def traffic_phases(dut):
    p = bench_config()["params"]
    # One router runs fast (about 5,000 cycles/s on Icarus): more traffic, and the stress
    # phases, which the mutants of fattree.mutants showed were needed.
    model = RN1Model(p["mode"], p["seed"], p.get("priority", "fixed"))
    await run_phases(dut, model, frames=1000, stress=True)
