"""One RN1 router (amaranth.sim) against RN1Model and the rules of DeHon's RN1 section."""

import random

import pytest
from amaranth import ResetInserter, Signal

from fattree.hdl.rn1.router import RN1Router
from fattree.sim.checks.rn1 import (
    Knobs,
    simulate_network,
    unpass_head,
)
from fattree.sim.models.rn1 import RN1Model
from fattree.sim.testbench import merge_steps, simulate
from fattree.spec.lfsr import LFSRModel
from fattree.spec.rn1 import (
    BLOCKED,
    CONNECTED,
    DROP,
    LFSR_STEPS,
    LFSR_WIDTH,
    MODES,
    TURN,
    circuit_pairs,
    head_for,
    outputs_for,
    pass_head,
    routing_mode,
    word,
)

SEED = 0x2B5


def run(stimulus, mode="primary", seed=SEED):
    """``stimulus``: per cycle a dict with optional ``fwd`` (input -> word), ``bk`` (output ->
    word), ``rst`` and (run-time mode) ``alt``, the ``alternate`` input, which stays as set
    until the next cycle that sets it. Checks the RTL's outputs against the model in every
    cycle and returns them per cycle as ``{"fwd": [8 words out of the outputs], "bk": [8
    words back]}``."""
    router = RN1Router(mode, seed)
    rst = Signal()
    dut = ResetInserter(rst)(router)
    model = RN1Model(mode, seed)
    seen = []

    async def bench(ctx):
        for cycle, step in enumerate(stimulus):
            i_fwd = [step.get("fwd", {}).get(k, 0) for k in range(8)]
            o_bk = [step.get("bk", {}).get(k, 0) for k in range(8)]
            for k in range(8):
                ctx.set(router.i[k].fwd.as_value(), i_fwd[k])
                ctx.set(router.o[k].bk.as_value(), o_bk[k])
            ctx.set(rst, step.get("rst", 0))
            if "alt" in step:
                ctx.set(router.alternate, step["alt"])
                model.alternate = step["alt"]
            got = {
                "fwd": [ctx.get(router.o[k].fwd.as_value()) for k in range(8)],
                "bk": [ctx.get(router.i[k].bk.as_value()) for k in range(8)],
            }
            want = {"fwd": list(model.o_fwd), "bk": list(model.i_bk)}
            assert got == want, f"cycle {cycle}: RTL {got}, model {want}"
            seen.append(got)
            model.step(i_fwd, o_bk)
            if step.get("rst"):
                model.reset()
            await ctx.tick()

    simulate(dut, bench)
    return seen


def send(inp, data, close=DROP, start=0, total=None):
    """Cycles sending bytes ``data`` on input ``inp`` from ``start``, then the close word."""
    total = total or start + len(data) + 8
    cycles = [{} for _ in range(total)]
    for k, b in enumerate(data):
        cycles[start + k] = {"fwd": {inp: word(1, b)}}
    cycles[start + len(data)] = {"fwd": {inp: word(0, close)}}
    return cycles


def answer(out, code, at, total):
    cycles = [{} for _ in range(total)]
    cycles[at] = {"bk": {out: word(0, code)}}
    return cycles


def on(seen, link, port):
    return [(k, s[link][port]) for k, s in enumerate(seen) if s[link][port]]


def lfsr_state(cycle, seed=SEED):
    lfsr = LFSRModel(LFSR_WIDTH, seed=seed, steps=LFSR_STEPS)
    for _ in range(cycle):
        lfsr.clock()
    return lfsr.state


# --- routing ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["primary", "alternate"])
@pytest.mark.parametrize("shift", range(4))
def test_every_input_and_direction_in_both_modes(mode, shift):
    # All eight inputs at once, input k to direction (k + shift) mod 4: two heads per
    # direction (primary: both outputs taken) or a permutation per crossbar (alternate).
    # Over the four shifts every input asks for every direction.
    heads = {k: head_for([(k + shift) % 4], fill=0xA4 ^ k << 3) for k in range(8)}
    seen = run(merge_steps(*(send(k, [heads[k], 0x10 + k, 0x20 + k]) for k in range(8))), mode)
    for k, head in heads.items():
        d = head & 3
        outs = outputs_for(mode, k, d)
        # The head leaves one cycle after it arrives, rotated; then the bytes and the close.
        want = [(1, word(1, pass_head(head))), (2, word(1, 0x10 + k)), (3, word(1, 0x20 + k))]
        used = [o for o in outs if on(seen, "fwd", o)[:3] == want]
        assert len(used) == 1, (k, d)
        if mode == "primary":
            # The first of the two inputs asking for d takes output 2d + r.
            first = min(j for j in range(8) if (j + shift) % 4 == d)
            r = (lfsr_state(0) >> d) & 1
            assert used[0] == outs[r if k == first else 1 - r]
    assert not any(s["bk"][k] for s in seen for k in range(8))


def test_head_byte_routes_four_stages_and_comes_back():
    head = head_for([1, 3, 0, 2])
    h = head
    for d in [1, 3, 0, 2]:
        assert h & 3 == d
        h = pass_head(h)
    assert h == head and unpass_head(pass_head(head)) == head


@pytest.mark.parametrize("start", range(4))
def test_random_choice_is_the_lfsr_bit_of_the_direction(start):
    # Input 2d asks for direction d: it takes output 2d + (LFSR bit d of its head's cycle).
    seen = run(merge_steps(*(send(2 * d, [d, 0x50 + d], start=start) for d in range(4))))
    for d in range(4):
        o = 2 * d + ((lfsr_state(start) >> d) & 1)
        assert on(seen, "fwd", o)[:2] == [
            (start + 1, word(1, pass_head(d))),
            (start + 2, word(1, 0x50 + d)),
        ]


def test_random_choice_is_balanced():
    # One input opens, closes and is confirmed every three cycles; the LFSR's choice between
    # the two outputs of direction 2 comes out even.
    model = RN1Model("primary", SEED)
    counts = [0, 0]
    out = None
    for cycle in range(3 * 3000):
        phase = cycle % 3
        i_fwd = [word(1, 2) if phase == 0 else word(0, DROP) if phase == 1 else 0] + [0] * 7
        o_bk = [0] * 8
        if phase == 2:
            o_bk[out] = word(0, CONNECTED)
        model.step(i_fwd, o_bk)
        if phase == 0:
            _, out = model.decisions[0]
            counts[out - 4] += 1
        elif phase == 2:
            assert model.decisions[0] == "release"
    assert abs(counts[0] - counts[1]) < 0.05 * sum(counts)


def test_dilation_overflow_three_claimants_for_two_outputs():
    seen = run(merge_steps(*(send(k, [1, 0x10 + k], total=12) for k in (2, 4, 6))))
    r = (lfsr_state(0) >> 1) & 1
    # Input 2 (the first) takes output 2 + r, input 4 the other; input 6 is blocked.
    assert on(seen, "fwd", 2 + r)[:2] == [(1, word(1, pass_head(1))), (2, word(1, 0x12))]
    assert on(seen, "fwd", 3 - r)[:2] == [(1, word(1, pass_head(1))), (2, word(1, 0x14))]
    assert not any(v == word(1, 0x16) for o in range(8) for _, v in on(seen, "fwd", o))
    # Blocked: BLOCKED back the cycle after its close (close at cycle 2, status at 3).
    assert on(seen, "bk", 6) == [(3, word(0, BLOCKED))]
    assert on(seen, "bk", 2) == [] and on(seen, "bk", 4) == []


def test_alternate_mode_one_output_per_direction_and_crossbar():
    seen = run(merge_steps(send(0, [2, 1]), send(1, [2, 2]), send(4, [2, 3])), "alternate")
    assert on(seen, "fwd", 2)[:2] == [(1, word(1, pass_head(2))), (2, word(1, 1))]
    assert on(seen, "fwd", 6)[:2] == [(1, word(1, pass_head(2))), (2, word(1, 3))]
    assert on(seen, "bk", 1) == [(3, word(0, BLOCKED))]


def test_held_output_blocks_a_later_head_until_released():
    first = send(0, [0, 7, 7], total=20)  # to output 0 or 1, closes at 3
    rnd = lfsr_state(0) & 1
    o = rnd
    second = send(1, [0, 8], start=1, total=20)  # takes the other output
    third = send(2, [0, 9], start=2, total=20)  # both held: blocked
    status = answer(o, CONNECTED, 6, 20)  # the destination confirms; o is free from 7
    fourth = send(3, [0, 10], start=7, total=20)
    seen = run(merge_steps(first, second, third, status, fourth))
    assert on(seen, "bk", 2) == [(5, word(0, BLOCKED))]
    assert on(seen, "bk", 0) == [(7, word(0, CONNECTED))]
    assert on(seen, "fwd", o)[-2:] == [(8, word(1, pass_head(0))), (9, word(1, 10))]


def test_status_before_close_does_not_release():
    # CONNECTED passes back without ending a circuit that has not been closed by DROP.
    stream = send(0, [1, 5, 5, 5, 5, 5], total=20)
    rnd = (lfsr_state(0) >> 1) & 1
    o = 2 + rnd
    seen = run(merge_steps(stream, answer(o, CONNECTED, 3, 20), send(1, [1, 6], start=5, total=20)))
    assert on(seen, "bk", 0)[0] == (4, word(0, CONNECTED))
    assert on(seen, "fwd", o)[:6] == [(1, word(1, pass_head(1)))] + [
        (k, word(1, 5)) for k in range(2, 7)
    ]


def test_turn_reverses_the_connection():
    o = 6 + ((lfsr_state(0) >> 3) & 1)
    fwd = send(5, [3, 0x31], close=TURN, total=24)  # close (TURN) at cycle 2
    back = [{} for _ in range(24)]
    back[4] = {"bk": {o: word(0, CONNECTED)}}
    for k, b in enumerate([0x41, 0x42, 0x43]):
        back[5 + k] = {"bk": {o: word(1, b)}}
    back[8] = {"bk": {o: word(0, DROP)}}
    back[10] = {"fwd": {5: word(0, CONNECTED)}}  # the source confirms the answer: release
    late = send(4, [3, 0x99], start=11, total=24)
    seen = run(merge_steps(fwd, back, late))
    assert on(seen, "fwd", o)[:3] == [
        (1, word(1, pass_head(3))),
        (2, word(1, 0x31)),
        (3, word(0, TURN)),
    ]
    assert on(seen, "bk", 5) == [
        (5, word(0, CONNECTED)),
        (6, word(1, 0x41)),
        (7, word(1, 0x42)),
        (8, word(1, 0x43)),
    ]
    assert (11, word(0, CONNECTED)) in on(seen, "fwd", o)
    # Released after the source's status: input 4's head finds an output of direction 3.
    got = [o2 for o2 in (6, 7) if (12, word(1, pass_head(3))) in on(seen, "fwd", o2)]
    assert len(got) == 1


def test_blocked_from_downstream_releases_an_open_circuit():
    o = lfsr_state(0) & 1
    seen = run(
        merge_steps(
            send(0, [0, 1], close=TURN, total=16),
            answer(o, BLOCKED, 4, 16),
            send(1, [0, 2], start=5, total=16),
            send(2, [0, 3], start=5, total=16),
        )
    )
    assert on(seen, "bk", 0) == [(5, word(0, BLOCKED))]
    # Both outputs of direction 0 are free again at 5: inputs 1 and 2 both get through.
    assert on(seen, "bk", 1) == [] and on(seen, "bk", 2) == []


def test_reset_mid_circuit():
    stream = send(0, [0] + [3] * 8, total=20)
    stream[4]["rst"] = 1
    for k in range(5, 10):
        stream[k] = {}
    late = [send(k, [0, 5 + k], start=11, total=20) for k in (1, 2)]
    seen = run(merge_steps(stream, *late))
    assert not any(s["fwd"][o] for s in seen[5:12] for o in range(8))
    assert on(seen, "bk", 1) == [] and on(seen, "bk", 2) == []


# --- the run-time mode -----------------------------------------------------------------------


@pytest.mark.parametrize("setting", [0, 1])
# The other rotations of the directions: the same check, slow points.
@pytest.mark.parametrize(
    "shift", [0, *(pytest.param(s, marks=pytest.mark.slow) for s in (1, 2, 3))]
)
def test_runtime_router_is_either_fixed_router(setting, shift):
    # The eight-heads stimulus of every input and direction, through the run-time router with
    # its input held at `setting`: word for word what the fixed router of that mode does (and
    # `run` checks both against the model every cycle).
    heads = {k: head_for([(k + shift) % 4], fill=0x5C ^ k << 2) for k in range(8)}
    traffic = merge_steps(
        *(send(k, [heads[k], 0x30 + k], close=TURN if k % 3 else DROP) for k in range(8))
    )
    answers = [answer(o, CONNECTED, 5, len(traffic)) for o in range(8)]
    stimulus = merge_steps(traffic, *answers)
    fixed = run(stimulus, MODES[setting])
    stimulus[0] = {**stimulus[0], "alt": setting}
    assert run(stimulus, "runtime") == fixed


def test_runtime_change_routes_the_heads_of_its_cycle_and_keeps_held_circuits():
    r0 = lfsr_state(0) & 1  # direction 0's random bit in cycle 0
    total = 24
    steps = merge_steps(
        # Cycle 0, primary: input 4 opens direction 0 -> output r0 (in the primary mode an
        # input of the second crossbar reaches outputs 0 and 1), bytes until cycle 10.
        send(4, [0] + [0x40 + k for k in range(9)], total=total),
        # Cycle 1, alternate: input 5 to direction 1 -> output 5 (crossbar 1); input 1 to
        # direction 0 -> output 0 (crossbar 0), blocked if input 4 took output 0.
        send(5, [1, 0x51], start=1, total=total),
        send(1, [0, 0x11], start=1, total=total),
        # Cycle 3, primary again: input 6 to direction 2 -> output 4 or 5; 5 is held by
        # input 5, so output 4.
        send(6, [2, 0x61], start=3, total=total),
    )
    steps[0]["alt"], steps[1]["alt"], steps[3]["alt"] = 0, 1, 0
    seen = run(steps, "runtime")
    # Input 4's circuit carries every byte, whatever the setting did under it.
    assert [v for _, v in on(seen, "fwd", r0)][:10] == [word(1, pass_head(0))] + [
        word(1, 0x40 + k) for k in range(9)
    ]
    assert on(seen, "fwd", 5)[:2] == [(2, word(1, pass_head(1))), (3, word(1, 0x51))]
    if r0 == 0:
        assert on(seen, "bk", 1) == [(4, word(0, BLOCKED))]
    else:
        assert on(seen, "fwd", 0)[:2] == [(2, word(1, pass_head(0))), (3, word(1, 0x11))]
    assert on(seen, "fwd", 4)[:2] == [(4, word(1, pass_head(2))), (5, word(1, 0x61))]


def check_runtime(seed, count, flip, *, knobs=None, invert=False):
    """Random traffic through the run-time router against RN1Model("runtime") in
    amaranth.sim: the setting held at 0, then at 1, then (``flip``: per-cycle probability)
    flipping under the traffic. ``invert`` drives the router with the opposite setting to
    the model's (a broken wire the check must see)."""
    from fattree.sim.benches.rn1 import anywhere_layout
    from fattree.sim.checks.rn1 import CHECKS, RN1Check, transmissions
    from fattree.sim.scoreboard import Scoreboard

    router, model = RN1Router("runtime", seed), RN1Model("runtime", seed)
    scoreboard = Scoreboard(CHECKS)
    rng = random.Random(seed)
    flips = {"p": 0.0, "count": 0}
    result = {}

    async def bench(ctx):
        def read():
            return (
                [ctx.get(router.o[k].fwd.as_value()) for k in range(8)],
                [ctx.get(router.i[k].bk.as_value()) for k in range(8)],
            )

        def drive(i_fwd, o_bk):
            if flips["p"] and rng.random() < flips["p"]:
                model.alternate ^= 1
                flips["count"] += 1
            ctx.set(router.alternate, model.alternate ^ invert)
            for k in range(8):
                ctx.set(router.i[k].fwd.as_value(), i_fwd[k])
                ctx.set(router.o[k].bk.as_value(), o_bk[k])

        def check(layout=None):
            return RN1Check(
                model,
                scoreboard,
                read,
                drive,
                ctx.tick,
                rng=rng,
                knobs=knobs or Knobs(),
                layout=layout,
            )

        fixed = check()
        for setting in (0, 1):
            model.alternate = setting
            for pattern in ("random", "hotspot"):
                await fixed.phase(
                    f"{pattern}@{setting}", transmissions(pattern, count, rng, fixed.layout)
                )
        flips["p"] = flip
        flipping = check(anywhere_layout())
        await flipping.phase("random@flip", transmissions("random", 2 * count, rng))
        result["stats"] = fixed.stats + flipping.stats

    simulate(router, bench)
    return scoreboard, result["stats"], flips["count"]


@pytest.mark.parametrize("seed", [0x2B5, pytest.param(0xACE1, marks=pytest.mark.slow)])
def test_runtime_random_traffic_and_changes_match_model(seed):
    scoreboard, stats, flips = check_runtime(seed, 4, 0.1)
    scoreboard.raise_on_mismatch()
    # Both settings' phases and the flipping phase: 8 inputs x (2 x 2 x 4 + 8).
    assert scoreboard.checked == 8 * (16 + 8)
    assert stats["blocked"] > 0 and stats["release"] > 0 and stats["turn_segments"] > 0
    assert flips > 10


def test_runtime_router_that_misreads_its_input_is_caught():
    scoreboard, _, _ = check_runtime(0x2B5, 2, 0.0, invert=True)
    assert scoreboard.failures["cycle_mismatches"] > 0


def test_runtime_ports_and_fixed_ports(built_but_unused):
    # The fixed modes keep exactly their channels (networks build from them); only the
    # run-time router has the one-bit input.
    for mode in ("primary", "alternate"):
        assert set(RN1Router(mode).signature.members) == {"i", "o"}
    members = RN1Router("runtime").signature.members
    assert set(members) == {"i", "o", "alternate"}
    assert members["alternate"].flow.name == "In" and members["alternate"].shape == 1
    assert len(RN1Router("runtime").conn) == 64 == len(RN1Router("primary").conn)
    assert len(RN1Router("alternate").conn) == 32


def test_runtime_model_input():
    model = RN1Model("runtime", 3)
    assert model.alternate == 0 and model.routing == "primary"
    model.alternate = 1
    assert model.routing == "alternate"
    model.reset()  # an input, not a register: a reset keeps it
    assert model.alternate == 1
    with pytest.raises(ValueError) as info:
        model.alternate = 2
    assert str(info.value) == "alternate must be between 0 and 1, not 2"
    with pytest.raises(ValueError) as info:
        RN1Model("primary").alternate = 1
    assert str(info.value) == "only a runtime router has an alternate input, not a primary one"


def test_runtime_definitions():
    assert routing_mode("runtime", 0) == "primary" and routing_mode("runtime", 1) == "alternate"
    assert routing_mode("alternate", 0) == "alternate"
    assert (
        circuit_pairs("runtime")
        == circuit_pairs("primary")
        == {(i, o) for i in range(8) for o in range(8)}
    )
    assert circuit_pairs("alternate") < circuit_pairs("primary")
    with pytest.raises(ValueError, match="alternate must be between 0 and 1, not 2"):
        routing_mode("runtime", 2)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mode": "dual"}, "mode must be 'primary', 'alternate' or 'runtime', not 'dual'"),
        ({"seed": 0}, "seed must be between 1 and 65535, not 0"),
        ({"priority": "lottery"}, "priority must be 'fixed' or 'round-robin', not 'lottery'"),
        ({"seed": 1 << 16}, "seed must be between 1 and 65535, not 65536"),
    ],
)
def test_parameter_errors(kwargs, message):
    with pytest.raises(ValueError) as info:
        RN1Router(**kwargs)
    assert str(info.value) == message
    with pytest.raises(ValueError) as info:
        RN1Model(**kwargs)
    assert str(info.value) == message


# --- random traffic against the model -------------------------------------------------------


def check_router(mode, seed, pattern, count, knobs=None, mutate=False):
    router, model = RN1Router(mode, seed), RN1Model(mode, seed)
    return simulate_network(router, model, None, pattern, count, seed, knobs=knobs, mutate=mutate)


@pytest.mark.parametrize("mode", ["primary", "alternate"])
@pytest.mark.parametrize(
    "seed",
    [
        1,
        pytest.param(0xBEEF, marks=pytest.mark.slow),
        pytest.param(7, marks=pytest.mark.slow),
        pytest.param(0x1234, marks=pytest.mark.slow),
    ],
)
@pytest.mark.parametrize("pattern", ["random", "hotspot"])
def test_random_traffic_matches_model(mode, seed, pattern):
    scoreboard, check = check_router(mode, seed, pattern, 6)
    scoreboard.raise_on_mismatch()
    assert scoreboard.checked == 48
    # The traffic did what it is for: heads blocked, turns, releases.
    assert check.stats["blocked"] > 0 and check.stats["release"] > 0
    assert check.stats["turn_segments"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["primary", "alternate"])
@pytest.mark.parametrize("seed", range(2, 22))
def test_random_traffic_many_seeds(mode, seed):
    knobs = Knobs(start=0.6, turn=0.5, busy=0.2)
    scoreboard, _ = check_router(mode, seed, "random", 25, knobs)
    scoreboard.raise_on_mismatch()


def test_broken_reference_fails():
    scoreboard, _ = check_router("primary", 3, "random", 2, mutate=True)
    assert scoreboard.failures["cycle_mismatches"] == 1
    with pytest.raises(AssertionError):
        scoreboard.raise_on_mismatch()


def test_rn1_is_a_design():
    from fattree.designs import DESIGNS, elaborate_verilog

    design = DESIGNS["rn1"]
    assert design.defaults() == {"mode": "primary", "seed": 1, "priority": "fixed"}
    assert design.bench == "fattree.sim.benches.rn1"
    text = elaborate_verilog(design, {"mode": "alternate", "seed": 5})
    assert "module rn1(" in text
    for port in ("input [8:0] i__7__fwd", "output [8:0] i__7__bk", "output [8:0] o__0__fwd"):
        assert port in text
    assert "alternate" not in text.split(");")[0]  # the fixed modes' port list
    text = elaborate_verilog(design, {"mode": "runtime", "seed": 5})
    assert "input alternate;" in text


# --- the run-time router's proofs (fattree prove rn1 -p mode=2) ------------------------------


@pytest.mark.formal
@pytest.mark.slow  # the fixed modes' proof is in test_prove.py's default run
def test_runtime_router_arbitration_is_proved(tmp_path):
    from fattree.proofs import prove

    only = ["heads_served_when_outputs_free"]
    rows = prove("rn1", {"mode": 2}, root=tmp_path, only=only)
    assert {r["property"]: r["status"] for r in rows} == dict.fromkeys(only, "proved")
    # A contract that serves a head ahead of earlier heads for its direction fails here too.
    broken = prove(
        "rn1", {"mode": 2}, root=tmp_path, broken=True, only=["heads_served_when_outputs_free"]
    )
    assert broken[0]["status"] == "failed" and broken[0]["counterexample"]


@pytest.mark.formal
@pytest.mark.slow
def test_runtime_router_every_property_is_proved(tmp_path):
    from fattree.proofs import PROOFS, prove

    rows = prove("rn1", {"mode": 2}, root=tmp_path)
    names = [p.name for p in PROOFS["rn1"].properties]
    assert {r["property"]: r["status"] for r in rows} == dict.fromkeys(names, "proved")


@pytest.mark.formal
@pytest.mark.slow
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_round_robin_arbitration_is_proved(tmp_path, mode):
    # The round-robin ranking: a head is served when fewer heads of its group came before it
    # in the order that starts at the group's pointer (230-240 s each for modes 0 and 2).
    from fattree.proofs import prove

    only = ["circuits", "heads_served_when_outputs_free"]
    rows = prove("rn1", {"mode": mode, "priority": 1}, root=tmp_path, only=only)
    assert {r["property"]: r["status"] for r in rows} == dict.fromkeys(only, "proved")
