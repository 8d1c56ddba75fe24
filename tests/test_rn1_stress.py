"""The RN1 bench's stress phases (sim/benches/rn1.py ``STRESS``): what their endpoints send,
and one router (amaranth.sim) against RN1Model under each of them.

The phases exist because mutants of the router (``fattree mutants rn1``) survived the random
and hot-spot phases: changed copies of the arbitration's request chains that only three or
more heads for one direction in one cycle reach, and decoders of idle and close words that
only non-zero idle data reaches (docs/verification.md, "Mutants")."""

import asyncio
import random
from collections import Counter

import pytest

from fattree.hdl.rn1.router import RN1Router
from fattree.sim.benches.rn1 import STRESS, anywhere_layout
from fattree.sim.checks.rn1 import CHECKS, RN1Check, burst, transmissions
from fattree.sim.models.rn1 import RN1Model
from fattree.sim.scoreboard import Scoreboard
from fattree.sim.testbench import simulate
from fattree.spec.rn1 import STATUS, TURN, ctrl_of, data_of

KNOBS = dict(STRESS)


def queues_for(name, count, rng):
    if name == "rounds":
        return burst(count, rng, spread=2, max_length=1)
    if name.startswith("burst"):
        return burst(count, rng)
    return transmissions("random", count, rng)


def test_burst_rounds():
    queues = burst(30, random.Random(4), spread=2, max_length=1)
    assert len(queues) == 8 and all(len(q) == 30 for q in queues)
    for k in range(30):
        lengths = {len(q[k]) for q in queues}
        directions = {q[k][0] & 3 for q in queues}
        # One length a round (heads stay in step), at most two directions a round.
        assert len(lengths) == 1 and lengths <= {1, 2}
        assert len(directions) <= 2
    # Every direction is asked for over the rounds.
    assert {q[k][0] & 3 for q in queues for k in range(30)} == {0, 1, 2, 3}


def run_on_model(name, count, seed=1):
    """The phase's endpoints against the model standing in for the router: the words the
    inputs carried, per cycle (the stimulus, not the check, is under test)."""
    dut, model = RN1Model("primary", 1), RN1Model("primary", 1)
    sb = Scoreboard(CHECKS)
    cycles = []
    pending = {}

    def drive(i_fwd, o_bk):
        pending["words"] = (i_fwd, o_bk)

    async def tick():
        i_fwd, o_bk = pending["words"]
        cycles.append((list(i_fwd), list(o_bk)))
        dut.step(i_fwd, o_bk)

    rng = random.Random(seed)
    check = RN1Check(model, sb, lambda: (list(dut.o_fwd), list(dut.i_bk)), drive, tick, rng=rng)
    total = asyncio.run(check.phase(name, queues_for(name, count, rng), knobs=KNOBS[name]))
    assert sb.mismatches == 0 and sb.checked == total
    return cycles


def heads(cycles):
    """Per cycle, the directions of the heads arriving (ctrl rising on an input)."""
    prev = [0] * 8
    out = []
    for i_fwd, _ in cycles:
        out.append([i_fwd[k] & 3 for k in range(8) if ctrl_of(i_fwd[k]) and not prev[k]])
        prev = [ctrl_of(w) for w in i_fwd]
    return out


def test_rounds_bring_eight_heads_at_once():
    per_cycle = [h for h in heads(run_on_model("rounds", 40)) if h]
    # Every round starts with a head on each input that has something to send, in one cycle.
    assert max(len(h) for h in per_cycle) == 8
    crowded = sum(1 for h in per_cycle if max(Counter(h).values()) >= 3)
    assert crowded >= 20, crowded


def test_noise_on_idle_and_close_words():
    cycles = run_on_model("noise", 20)
    idle, closes = Counter(), Counter()
    for (before, _), (now, _) in zip(cycles, cycles[1:], strict=False):
        for k in range(8):
            if not ctrl_of(now[k]):
                (closes if ctrl_of(before[k]) else idle)[data_of(now[k])] += 1
    # Idle words carry data other than 0 (besides the statuses a turned connection's answer
    # sends); closes that end a connection carry codes other than DROP.
    assert sum(v for d, v in idle.items() if d and d not in STATUS) > 100
    assert sum(v for d, v in closes.items() if d not in (0, TURN)) > 10
    assert not set(closes) & set(STATUS)


@pytest.mark.parametrize("name", list(KNOBS))
def test_stress_phase_matches_model(name):
    router = RN1Router("primary", 1)
    model = RN1Model("primary", 1)
    sb = Scoreboard(CHECKS)
    rng = random.Random(7)

    async def bench(ctx):
        def read():
            return (
                [ctx.get(router.o[k].fwd.as_value()) for k in range(8)],
                [ctx.get(router.i[k].bk.as_value()) for k in range(8)],
            )

        def drive(i_fwd, o_bk):
            for k in range(8):
                ctx.set(router.i[k].fwd.as_value(), i_fwd[k])
                ctx.set(router.o[k].bk.as_value(), o_bk[k])

        check = RN1Check(model, sb, read, drive, ctx.tick, rng=rng)
        count = 12 if name == "rounds" else 4
        await check.phase(name, queues_for(name, count, rng), knobs=KNOBS[name])

    simulate(router, bench)
    assert sb.mismatches == 0, sb.first_mismatch
    assert sb.checked == 8 * (12 if name == "rounds" else 4)


# --- round retries and the priority (docs/dehon.md, "Routing") -------------------------------


def rounds_won(mode, priority, senders, count, target=0):
    """``count`` one-byte transmissions from each of ``senders`` to direction ``target``,
    in rounds: every sender with one left sends its head in the same cycle (as endpoints
    retrying by round do), the receivers confirm, and the round ends with the router idle.
    Returns, per sender, the rounds in which its head got an output (RN1Model)."""
    from fattree.sim.models.rn1 import IDLE
    from fattree.spec.rn1 import CONNECTED, DROP, word

    model = RN1Model(mode, 0x2B5, priority)
    left = dict.fromkeys(senders, count)
    wins = {i: [] for i in senders}
    idle = [0] * 8
    for round_no in range(8 * count * len(senders)):
        if not any(left.values()):
            break
        sending = [i for i in senders if left[i]]
        model.step([word(1, target) if i in sending else 0 for i in range(8)], idle)
        opened = {i: d[1] for i, d in enumerate(model.decisions) if isinstance(d, tuple)}
        for i in opened:
            wins[i].append(round_no)
            left[i] -= 1
        model.step([word(0, DROP) if i in sending else 0 for i in range(8)], idle)
        model.step(idle, idle)  # the close passes
        model.step(idle, [word(0, CONNECTED) if o in opened.values() else 0 for o in range(8)])
        for _ in range(2):
            model.step(idle, idle)
        assert all(s == IDLE for s in model.state) and not any(model.busy)
    assert not any(left.values())
    return wins


def longest_wait(wins):
    """Most rounds in a row a sender lost while it had something to send."""
    worst = 0
    for rounds in wins.values():
        last = -1
        for r in rounds:
            worst = max(worst, r - last - 1)
            last = r
    return worst


@pytest.mark.parametrize(
    "mode, senders",
    [("primary", [0, 1, 2]), ("primary", list(range(8))), ("alternate", [0, 1, 2, 3])],
)
def test_fixed_priority_starves_a_sender_under_round_retries(mode, senders):
    # Every round the same inputs win: the last sender gets nothing until every sender before
    # it has sent all it had. Its wait grows with the others' traffic, without bound.
    outputs = 2 if mode == "primary" else 1
    for count in (4, 12):
        wins = rounds_won(mode, "fixed", senders, count)
        # Senders finish `outputs` at a time in input order; the last starts when at most
        # `outputs - 1` others are left.
        wait = (len(senders) - 1) // outputs * count
        assert wins[senders[-1]][0] == wait
        assert longest_wait(wins) == wait


@pytest.mark.parametrize(
    "mode, senders",
    [("primary", [0, 1, 2]), ("primary", list(range(8))), ("alternate", [0, 1, 2, 3])],
)
def test_round_robin_priority_bounds_the_wait(mode, senders):
    # The pointer passes every winner, so a sender loses at most once to each other sender:
    # (senders - 1) / outputs rounds in a row at most, whatever the others' traffic.
    outputs = 2 if mode == "primary" else 1
    bound = -(-(len(senders) - 1) // outputs)
    for count in (4, 12):
        wins = rounds_won(mode, "round-robin", senders, count)
        assert longest_wait(wins) <= bound
        # Everyone's first message goes through within the bound.
        assert max(w[0] for w in wins.values()) <= bound


# Each mode with one kind of traffic by default; the other pairings are slow points.
@pytest.mark.parametrize(
    "mode, name",
    [
        (mode, name)
        if (mode, name) in {("primary", "rounds"), ("alternate", "burst"), ("runtime", "noise")}
        else pytest.param(mode, name, marks=pytest.mark.slow)
        for mode in ("primary", "alternate", "runtime")
        for name in ("rounds", "burst", "noise")
    ],
)
def test_round_robin_router_matches_model(mode, name):
    router = RN1Router(mode, 1, "round-robin")
    model = RN1Model(mode, 1, "round-robin")
    sb = Scoreboard(CHECKS)
    rng = random.Random(11)

    async def bench(ctx):
        def read():
            return (
                [ctx.get(router.o[k].fwd.as_value()) for k in range(8)],
                [ctx.get(router.i[k].bk.as_value()) for k in range(8)],
            )

        def drive(i_fwd, o_bk):
            if mode == "runtime":
                # The setting flips now and then: each mode's pointers move only by its
                # own grants.
                if rng.random() < 0.1:
                    model.alternate ^= 1
                ctx.set(router.alternate, model.alternate)
            for k in range(8):
                ctx.set(router.i[k].fwd.as_value(), i_fwd[k])
                ctx.set(router.o[k].bk.as_value(), o_bk[k])

        layout = anywhere_layout() if mode == "runtime" else None
        check = RN1Check(model, sb, read, drive, ctx.tick, rng=rng, layout=layout)
        count = 6 if name == "rounds" else 3
        queues = (
            queues_for(name, count, rng) if mode != "alternate" else _alt_queues(name, count, rng)
        )
        await check.phase(name, queues, knobs=KNOBS[name])

    simulate(router, bench)
    assert sb.mismatches == 0, sb.first_mismatch
    assert sb.checked == 8 * (6 if name == "rounds" else 3)
    moved = [p for p in model.pointer.values() if p]
    assert moved, "no pointer moved: the traffic never contended"


def _alt_queues(name, count, rng):
    from fattree.sim.checks.rn1 import router_layout

    layout = router_layout("alternate")
    if name == "rounds":
        return burst(count, rng, layout, spread=2, max_length=1)
    if name.startswith("burst"):
        return burst(count, rng, layout)
    return transmissions("random", count, rng, layout)
