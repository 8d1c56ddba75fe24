"""Behavioural Verilog models of the vendor primitives our components instantiate, so that the
family-specific Verilog (``fattree verilog --family``) runs under the cocotb benches too.

Yosys ships these primitives as black boxes, and the vendors' own simulation libraries are not
open, so the models here are written from the primitive's documented behaviour, for the subset
we use, and refuse anything else at time 0. Their configuration (address pins, data pins,
``INITVAL`` layout) is the one Yosys itself uses (``tests/test_registered_memory.py`` checks
our instances against Yosys's mapping), so a model and an instance can only agree if both
read it the same way.

``DP16KD`` (ECP5 16 kbit block RAM), as :class:`fattree.hdl.registered_memory.RegisteredReadMemory`
uses it: data widths 9 and 18 on both ports, port A writes, port B reads, ``REGMODE_B``
``NOREG`` or ``OUTREG`` (the output register, one more cycle), clock enables, no resets, chip
selects at 0. A port-B read of the row port A writes at the same edge returns ``x`` (the
silicon does not define it), so a design that used such a read fails under Icarus.
"""

from __future__ import annotations

__all__ = ["MODELS", "models_for"]


def _dp16kd() -> str:
    pins = []
    for side in "AB":
        pins += [f"input DI{side}{k}" for k in range(18)]
        pins += [f"input AD{side}{k}" for k in range(14)]
        pins += [f"input {p}{side}" for p in ("CE", "OCE", "CLK", "WE", "RST")]
        pins += [f"input CS{side}{k}" for k in range(3)]
        pins += [f"output DO{side}{k}" for k in range(18)]
    initvals = "\n".join(f"    parameter INITVAL_{i:02X} = 320'h0;" for i in range(64))
    init_rows = "\n".join(
        f"        for (j = 0; j < 16; j = j + 1) mem[{i * 16} + j] = INITVAL_{i:02X}[j * 20 +: 18];"
        for i in range(64)
    )

    def bus(prefix, count):
        return "{" + ", ".join(f"{prefix}{k}" for k in reversed(range(count))) + "}"

    return f"""\
// Behavioural model of the Lattice ECP5 DP16KD subset fattree instantiates (see
// fattree/sim/primitives.py): widths 9 and 18, port A writes, port B reads.
module DP16KD(
    {("," + chr(10) + "    ").join(pins)}
);
    parameter DATA_WIDTH_A = 18;
    parameter DATA_WIDTH_B = 18;
    parameter REGMODE_A = "NOREG";
    parameter REGMODE_B = "NOREG";
    parameter RESETMODE = "SYNC";
    parameter ASYNC_RESET_RELEASE = "SYNC";
    parameter CSDECODE_A = "0b000";
    parameter CSDECODE_B = "0b000";
    parameter WRITEMODE_A = "NORMAL";
    parameter WRITEMODE_B = "NORMAL";
    parameter CLKAMUX = "CLKA";
    parameter CLKBMUX = "CLKB";
    parameter GSR = "ENABLED";
{initvals}

    // 1024 slots of 18 bits; a 9-bit row r is bits 9*(r%2) .. of slot r/2.
    reg [17:0] mem [0:1023];
    wire [17:0] dia = {bus("DIA", 18)};
    wire [13:0] ada = {bus("ADA", 14)};
    wire [13:0] adb = {bus("ADB", 14)};
    wire [13:0] row_a = DATA_WIDTH_A == 18 ? ada[13:4] : ada[13:3];
    wire [13:0] row_b = DATA_WIDTH_B == 18 ? adb[13:4] : adb[13:3];
    reg [17:0] array_b, out_b;
    integer j;

    initial begin
        if ((DATA_WIDTH_A != 9 && DATA_WIDTH_A != 18) || DATA_WIDTH_B != DATA_WIDTH_A
            || (REGMODE_B != "NOREG" && REGMODE_B != "OUTREG") || REGMODE_A != "NOREG") begin
            $display("DP16KD model: unsupported configuration DATA_WIDTH_A=%0d B=%0d REGMODE_B=%0s",
                     DATA_WIDTH_A, DATA_WIDTH_B, REGMODE_B);
            $finish;
        end
{init_rows}
    end

    // Port A: write (the byte enables ADA[1:0] of the x18 form are tied to WEA by the user).
    always @(posedge CLKA)
        if (CEA && WEA) begin
            if (DATA_WIDTH_A == 18) mem[row_a] <= dia;
            else if (row_a[0]) mem[row_a[10:1]][17:9] <= dia[8:0];
            else mem[row_a[10:1]][8:0] <= dia[8:0];
        end

    // Port B: read; the row port A writes at the same edge reads as x.
    always @(posedge CLKB)
        if (CEB) begin
            if (CEA && WEA && row_a == row_b)
                array_b <= 18'bx;
            else if (DATA_WIDTH_B == 18)
                array_b <= mem[row_b];
            else
                array_b <= {{9'b0, row_b[0] ? mem[row_b[10:1]][17:9] : mem[row_b[10:1]][8:0]}};
        end
    always @(posedge CLKB)
        if (OCEB) out_b <= array_b;
    wire [17:0] dob = REGMODE_B == "OUTREG" ? out_b : array_b;
    assign {bus("DOB", 18)} = dob;
    assign {bus("DOA", 18)} = 18'b0;
endmodule
"""


#: Family -> ``{primitive name: Verilog model text}``.
MODELS = {"ecp5": {"DP16KD": _dp16kd}}


def models_for(family: str | None, verilog: str) -> str:
    """The models of every primitive of ``family`` that ``verilog`` instantiates ('' if none)."""
    if family is None:
        return ""
    return "".join(
        make() for name, make in MODELS.get(family, {}).items() if f"{name} #(" in verilog
    )
