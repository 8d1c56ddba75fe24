"""RegisteredReadMemory: the generic form's timing in amaranth.sim, and the ECP5 form (a
directly instantiated DP16KD, which no simulator here models) against Yosys's own mapping of
the generic form: same block RAM configuration, same initial contents, same pins driven by
the same port bits, and only the output register different.
"""

import json
import random
import subprocess

import pytest
from amaranth.back import rtlil

from fattree import toolchain
from fattree.hdl.registered_memory import RegisteredReadMemory, ecp5_block_ram_fits
from fattree.hdl.target import SynthesisTarget
from fattree.sim.testbench import simulate


def _random_reads_and_writes(dut, *, collide):
    """Random reads and writes; with ``collide`` False never a read of the row written in
    the same cycle. Returns ``[(read_data, expected row, collided)]`` per read, the expected
    row being the one before any write of the cycle the address was sampled in."""
    rng = random.Random(3)
    model = [0xA5] * 16
    trace = []

    async def bench(ctx):
        pending = []  # (cycle the data is due, expected row, collided)
        for cycle in range(400):
            raddr, waddr, wdata = rng.randrange(16), rng.randrange(16), rng.randrange(256)
            if collide and rng.random() < 0.2:
                waddr = raddr
            # Reading the row being written in the same cycle is undefined by contract.
            we = rng.random() < 0.5 and (collide or waddr != raddr)
            ctx.set(dut.read_addr, raddr)
            ctx.set(dut.write_addr, waddr)
            ctx.set(dut.write_data, wdata)
            ctx.set(dut.write_en, we)
            await ctx.tick()
            # The row as of the start of this cycle: the old data on a collision.
            pending.append((cycle + 2, model[raddr], we and waddr == raddr))
            if we:
                model[waddr] = wdata
            due = [(e, hit) for c, e, hit in pending if c == cycle + 1]
            if due:
                trace.append((ctx.get(dut.read_data), *due[0]))

    simulate(dut, bench)
    return trace


def test_read_data_arrives_two_cycles_after_the_address():
    dut = RegisteredReadMemory(8, 16, init=0xA5)
    trace = [(got, want) for got, want, _ in _random_reads_and_writes(dut, collide=False)]
    assert len(trace) == 399
    assert all(got == want for got, want in trace), [t for t in trace if t[0] != t[1]][:3]
    assert any(want == 0xA5 for _, want in trace) and any(want != 0xA5 for _, want in trace)


def test_poisoned_collisions_read_inverted():
    dut = RegisteredReadMemory(8, 16, init=0xA5, form="portable", poison_collisions=True)
    trace = _random_reads_and_writes(dut, collide=True)
    assert sum(hit for *_, hit in trace) > 40
    for got, want, hit in trace:
        assert got == (want ^ 0xFF if hit else want)


@pytest.mark.parametrize(
    "args, message",
    [
        ((0, 4), "width must be at least 1, not 0"),
        ((4, 0), "depth must be at least 1, not 0"),
        ((4, 4, 16), "init must fit in 4 bits, not 16"),
    ],
)
def test_bad_parameters(args, message):
    with pytest.raises(ValueError, match=message):
        RegisteredReadMemory(*args)


@pytest.mark.parametrize(
    "args, params, exc, message",
    [
        (
            (8, 512),
            {"form": "bram"},
            ValueError,
            "form must be 'auto', 'portable' or 'dp16kd', not 'bram'",
        ),
        ((8, 512), {"form": 9}, TypeError, "form must be a string, not 9"),
        (
            (16, 64),
            {"form": "dp16kd"},
            ValueError,
            "form 'dp16kd' needs 5..9 bits x 256..2048 rows or 10..18 bits x 256..1024 rows, "
            "not 16 bits x 64 rows",
        ),
        (
            (16, 2048),
            {"form": "dp16kd"},
            ValueError,
            "form 'dp16kd' needs 5..9 bits x 256..2048 rows or 10..18 bits x 256..1024 rows, "
            "not 16 bits x 2048 rows",
        ),
        (
            (8, 16),
            {"poison_collisions": True},
            ValueError,
            "poison_collisions needs form 'portable', not 'auto'",
        ),
    ],
)
def test_bad_form(args, params, exc, message):
    with pytest.raises(exc) as info:
        RegisteredReadMemory(*args, **params)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "width, depth, form, family, built",
    [
        (16, 256, "auto", "ecp5", "dp16kd"),
        (16, 256, "auto", None, "portable"),
        (16, 256, "auto", "ice40", "portable"),
        (16, 64, "auto", "ecp5", "portable"),  # LUT RAM territory
        (16, 256, "portable", "ecp5", "portable"),
        (16, 256, "dp16kd", None, "dp16kd"),
        (8, 2048, "dp16kd", "ecp5", "dp16kd"),
    ],
)
def test_form_by_parameter_and_family(width, depth, form, family, built):
    platform = SynthesisTarget(family) if family else None
    dut = RegisteredReadMemory(width, depth, form=form)
    assert dut.form_for(platform) == built
    text = rtlil.convert(dut, platform=platform)
    assert ("DP16KD" in text) == (built == "dp16kd")


def test_which_shapes_use_the_ecp5_block_ram():
    assert ecp5_block_ram_fits(16, 256) and ecp5_block_ram_fits(8, 512)
    assert ecp5_block_ram_fits(18, 1024)
    assert not ecp5_block_ram_fits(16, 64)  # LUT RAM territory
    assert not ecp5_block_ram_fits(32, 256)  # wider than one DP16KD
    assert not ecp5_block_ram_fits(16, 2048)  # deeper than the 1K x 18 form
    assert not ecp5_block_ram_fits(4, 1024)  # 4K x 4 form not written
    assert ecp5_block_ram_fits(8, 2048) and not ecp5_block_ram_fits(8, 4096)


def _synth_ecp5(tmp_path, name, component, platform):
    (tmp_path / f"{name}.il").write_text(rtlil.convert(component, name=name, platform=platform))
    subprocess.run(
        [
            toolchain.TOOLS["yosys"].exe,
            "-q",
            "-p",
            f"read_rtlil {name}.il; synth_ecp5 -top {name} -json {name}.json",
        ],
        cwd=tmp_path,  # YoWASP sees relative paths only
        check=True,
    )
    module = json.loads((tmp_path / f"{name}.json").read_text())["modules"][name]
    return module


def _dp16kd_view(module):
    """The module's one DP16KD: its parameters, and every input pin's source, followed back
    through flip-flops to a top-level port bit (``("write_addr", 3)``), or a constant."""
    port_bit = {}
    for pname, port in module["ports"].items():
        for i, bit in enumerate(port["bits"]):
            port_bit[bit] = (pname, i)
    driver = {}
    for cell in module["cells"].values():
        for pin, bits in cell["connections"].items():
            if cell["port_directions"][pin] == "output":
                for bit in bits:
                    driver[bit] = (cell, pin)

    def source(bit):
        for _ in range(4):
            if not isinstance(bit, int) or bit in port_bit:
                break
            cell, pin = driver[bit]
            if cell["type"] != "TRELLIS_FF" or pin != "Q":
                return ("logic", cell["type"])
            bit = cell["connections"]["DI"][0]
        return port_bit.get(bit, bit)

    (ram,) = [c for c in module["cells"].values() if c["type"] == "DP16KD"]
    pins = {
        pin: source(bits[0])
        for pin, bits in ram["connections"].items()
        if ram["port_directions"][pin] == "input"
    }
    outputs = {pin: port_bit.get(bits[0]) for pin, bits in ram["connections"].items()}
    params = {k: v for k, v in ram["parameters"].items()}
    return params, pins, outputs


@pytest.mark.synthesis
@pytest.mark.parametrize(
    "width, depth",
    [
        (16, 256),
        pytest.param(8, 512, marks=pytest.mark.slow),
        pytest.param(12, 1024, marks=pytest.mark.slow),
        (5, 2048),
    ],
)
def test_ecp5_instance_is_yosys_mapping_plus_the_output_register(tmp_path, width, depth):
    init = (1 << width) - 1
    ours = _synth_ecp5(
        tmp_path, "ours", RegisteredReadMemory(width, depth, init), SynthesisTarget("ecp5")
    )
    yosys = _synth_ecp5(tmp_path, "yosys", RegisteredReadMemory(width, depth, init), None)
    our_params, our_pins, our_outputs = _dp16kd_view(ours)
    ys_params, ys_pins, _ = _dp16kd_view(yosys)

    # The one intended difference.
    assert ys_params.pop("REGMODE_B") == "NOREG"
    assert our_params.pop("REGMODE_B") == "OUTREG"
    # Same configuration and the same initial contents (INITVAL_00 .. 3F).
    for key in set(our_params) | set(ys_params):
        assert our_params.get(key) == ys_params.get(key), key
    assert sum(key.startswith("INITVAL") for key in ys_params) == 64
    # Every pin Yosys drives from a port bit (directly or through its write-side registers)
    # or a constant is driven by the same port bit or constant in ours ("x" = don't care).
    assert ys_pins.keys() == our_pins.keys()
    for pin, want in ys_pins.items():
        if want != "x":
            assert our_pins[pin] == want, (pin, our_pins[pin], want)
    low = 4 if width > 9 else 3  # 1K x 18: row address on AD[13:4]; 2K x 9: AD[13:3]
    assert ys_pins[f"ADB{low}"] == ("read_addr", 0) and ys_pins["CLKB"] == ("clk", 0)
    # In ours the block RAM's output register drives the outputs directly.
    assert all(our_outputs[f"DOB{k}"] == ("read_data", k) for k in range(width))
    # Yosys's form has a fabric register (and the collision bypass) behind the RAM; ours none.
    assert "TRELLIS_FF" not in {c["type"] for c in ours["cells"].values()}


def test_primitive_models_only_for_what_is_instantiated():
    from fattree.sim.primitives import models_for

    instance = '  DP16KD #(\n    .REGMODE_B("OUTREG")\n  ) ram (\n'
    assert models_for(None, instance) == ""
    assert models_for("ice40", instance) == ""
    assert models_for("ecp5", "module top(); endmodule") == ""
    model = models_for("ecp5", instance)
    assert model.count("module DP16KD(") == 1 and "INITVAL_3F" in model
