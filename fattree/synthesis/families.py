"""The FPGA families ``fattree synth`` targets: part, package, tools and their flags.

This is the one family table: the board table (:mod:`fattree.boards.platforms`) names its
boards' families by the keys of :data:`FAMILIES`, and the nextpnr log parser
(:func:`fattree.synthesis.reports.parse_nextpnr_summary`) reads each family's packing report.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..registry import Registry

__all__ = ["Family", "FAMILIES", "LUT_MAPPINGS", "NEXTPNR_ROUTERS", "get_family"]

#: nextpnr's routers (its ``--router``), for every family; nextpnr's default is router1.
NEXTPNR_ROUTERS = ("router1", "router2")

#: How Yosys maps logic to LUTs: ``delay`` is the family's script as it stands (ABC9 for
#: depth; on the ECP5 with LUT5..LUT7 made of PFU multiplexers), ``area`` maps to LUT4 only
#: with ABC9's delay target relaxed (:attr:`Family.map_luts_area`).
LUT_MAPPINGS = ("delay", "area")


@dataclass(frozen=True)
class Family:
    """An FPGA family, the part and package we place and route on, and the tools for it."""

    name: str
    #: Yosys synthesis script.
    synth: str
    #: Key in :data:`fattree.toolchain.TOOLS`.
    nextpnr: str
    device: str
    package: str
    board: str
    #: Device and package flags of nextpnr.
    nextpnr_args: tuple[str, ...]
    #: Pin-constraint flag, its "others may float" flag, and the file suffix.
    constraints: tuple[str, str, str]
    #: The board's clock pin, so ``clk`` arrives on a global clock input as it would there.
    clock_pin: str
    #: Default ``--freq`` target in MHz.
    default_freq: float
    #: The synthesis script's LUT mapping with ``abc`` instead of ``abc9``: Yosys commands
    #: run between ``-run :map_luts`` and ``-run map_cells:`` of :attr:`synth`. Used when
    #: ABC9 fails (YoWASP's Yosys stops inside it, without a message, on large designs).
    map_luts_abc: tuple[str, ...] = ()
    #: The ``area`` LUT mapping: flags added to :attr:`synth`, and the Yosys commands run in
    #: place of its ``map_luts`` step (ABC9 with a delay target so loose that it maps for
    #: area), then with ``abc`` if ABC9 stops.
    synth_area_flags: str = ""
    map_luts_area: tuple[str, ...] = ()
    map_luts_area_abc: tuple[str, ...] = ()

    def constraint_text(self) -> str:
        if self.name == "ice40":
            return f"set_io clk {self.clock_pin}\n"
        return f'LOCATE COMP "clk" SITE "{self.clock_pin}";\nIOBUF PORT "clk" IO_TYPE=LVCMOS33;\n'


FAMILIES: Registry[Family] = Registry(
    "family",
    [
        Family(
            name="ice40",
            synth="synth_ice40",
            nextpnr="nextpnr-ice40",
            device="iCE40UP5K",
            package="SG48",
            board="iCEBreaker",
            nextpnr_args=("--up5k", "--package", "sg48"),
            constraints=("--pcf", "--pcf-allow-unconstrained", "pcf"),
            # iCEBreaker's 12 MHz oscillator is on pin 35, a global buffer input.
            clock_pin="35",
            default_freq=100.0,
            map_luts_abc=(
                "techmap -map +/ice40/latches_map.v",
                "abc -dress -lut 4",
                "ice40_wrapcarry -unwrap",
                "techmap -map +/ice40/ff_map.v",
                "clean",
                "opt_lut -tech ice40",
            ),
            # synth_ice40's map_luts step with a 100 us delay target: ABC9 recovers area.
            map_luts_area=(
                "techmap -map +/ice40/latches_map.v",
                "read_verilog -D ICE40_HX -icells -lib -specify +/ice40/abc9_model.v",
                "abc9 -W 250 -D 100000",
                "ice40_wrapcarry -unwrap",
                "techmap -map +/ice40/ff_map.v",
                "clean",
                "opt_lut -tech ice40",
            ),
            map_luts_area_abc=(
                "techmap -map +/ice40/latches_map.v",
                "abc -dress -lut 4",
                "ice40_wrapcarry -unwrap",
                "techmap -map +/ice40/ff_map.v",
                "clean",
                "opt_lut -tech ice40",
            ),
        ),
        Family(
            name="ecp5",
            synth="synth_ecp5",
            nextpnr="nextpnr-ecp5",
            device="LFE5U-85F",
            package="CABGA381",
            board="ULX3S 85F",
            # ULX3S boards carry the slowest speed grade, -6.
            nextpnr_args=("--85k", "--package", "CABGA381", "--speed", "6"),
            constraints=("--lpf", "--lpf-allow-unconstrained", "lpf"),
            # ULX3S's 25 MHz oscillator (clk_25mhz) is on ball G2.
            clock_pin="G2",
            default_freq=150.0,
            # What synth_ecp5 -noabc9 did before synth_lattice replaced it (Yosys 0.70 has
            # no such option): LUT4 .. LUT7, the wide ones from PFU multiplexers.
            map_luts_abc=(
                "techmap -map +/lattice/latches_map.v",
                "abc -dress -lut 4:7",
                "clean",
            ),
            # LUT4 only (a LUT6 of PFU multiplexers costs four LUT4, a LUT7 eight), mapped
            # with a 100 us delay target: the RN1 router 2607 -> ~1700 LUT4 (docs/dehon.md).
            synth_area_flags=" -nowidelut",
            map_luts_area=(
                "techmap -map +/lattice/latches_map.v",
                "abc9 -maxlut 4 -W 300 -D 100000",
                "clean",
            ),
            map_luts_area_abc=(
                "techmap -map +/lattice/latches_map.v",
                "abc -dress -lut 4",
                "clean",
            ),
        ),
    ],
    plural="families",
    # In table order: the one the command line defaults to first.
    sort_known=False,
)


def get_family(name: str) -> Family:
    """The family named ``name``; ``ValueError`` naming the known ones if there is none."""
    return FAMILIES.get_or_raise(name)
