"""A memory with one write port and one read port whose data is registered behind the RAM.

Read timing (both forms): the address presented in cycle ``t`` is sampled at the end of ``t``,
the row is read in ``t+1`` and ``read_data`` holds it, from a register, in ``t+2``. A write
in cycle ``t`` (``write_en``) lands at the end of ``t``. A read of the row being written in
the same cycle returns an undefined value: users must not depend on it (the scheduler
forwards that write instead).

Two forms, chosen by the ``form`` parameter; ``"auto"`` picks one in ``elaborate`` from the
target family (:mod:`fattree.hdl.target`):

* **portable** (simulation, portable Verilog, iCE40; ``"auto"`` everywhere but ECP5): an
  :class:`amaranth.lib.memory.Memory` with a synchronous read port, followed by a register.
* **dp16kd** (``"auto"`` for family ``"ecp5"`` and a shape that fits one ``DP16KD`` in its
  2048 x 9 or 1024 x 18 configuration: 5..18 bits, :data:`ECP5_MIN_ROWS` rows up): the
  ``DP16KD`` instantiated directly, write on port A, read on port B with
  ``REGMODE_B = "OUTREG"``, so the register is the block RAM's own output register. Yosys's
  inference of the portable form gives the same block RAM without that register (its ECP5
  mapping never uses it), with the write delayed a cycle and a LUT behind the RAM that
  emulates a read-before-write collision; the RAM's 5.8 ns clock-to-output, routing and that
  LUT then end in a fabric register: the path that limited the scheduler to 131 MHz. The
  instance is configured, initialised and wired exactly as Yosys maps the portable form
  (``tests/test_registered_memory.py`` compares the two netlists), apart from the output
  register and the write-side registers.
"""

from amaranth import ClockSignal, Const, Instance, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ._validation import validates_parameters
from .target import family_of

__all__ = [
    "RegisteredReadMemory",
    "FORMS",
    "ECP5_MIN_ROWS",
    "DP16KD_SHAPES",
    "check_form",
    "ecp5_block_ram_fits",
]

#: The values of ``form``: by the target family, or one form whatever the target.
FORMS = ("auto", "portable", "dp16kd")

#: The DP16KD configurations we instantiate, as Yosys picks them for the portable form:
#: data width -> (rows, lowest address pin). 2K x 9 keeps the row address on AD[13:3]; 1K x 18
#: on AD[13:4], with AD[1:0] the write byte enables. A 20-bit slot of INITVAL holds 18 bits:
#: one 18-bit row or two 9-bit rows.
DP16KD_FORMS = {9: (2048, 3), 18: (1024, 4)}
DP16KD_SLOT_BITS = 18
#: Below this many rows Yosys keeps such memories in LUT RAM on ECP5 (16 and 64 rows of the
#: scheduler's FT(3, 4) and FT(3, 8)), which has no slow clock-to-output: leave them portable.
ECP5_MIN_ROWS = 256
#: Narrower memories would take a 4K x 4 or narrower form, which is not written here.
ECP5_MIN_WIDTH = 5


def _dp16kd_form(width: int) -> int | None:
    """The DP16KD data width for ``width`` bits, or None if none of ours fits."""
    fitting = [form for form in DP16KD_FORMS if ECP5_MIN_WIDTH <= width <= form]
    return min(fitting) if fitting else None


def ecp5_block_ram_fits(width: int, depth: int) -> bool:
    """Whether ``width x depth`` is built as one directly instantiated ECP5 ``DP16KD``."""
    form = _dp16kd_form(width)
    return form is not None and ECP5_MIN_ROWS <= depth <= DP16KD_FORMS[form][0]


def _dp16kd_shapes() -> str:
    """The shapes :func:`ecp5_block_ram_fits` accepts, in words."""
    shapes, narrowest = [], ECP5_MIN_WIDTH
    for form, (rows, _) in sorted(DP16KD_FORMS.items()):
        shapes.append(f"{narrowest}..{form} bits x {ECP5_MIN_ROWS}..{rows} rows")
        narrowest = form + 1
    return " or ".join(shapes)


#: "5..9 bits x 256..2048 rows or 10..18 bits x 256..1024 rows", for error messages.
DP16KD_SHAPES = _dp16kd_shapes()


def check_form(name: str, form) -> str:
    """``form`` if it is one of :data:`FORMS`; messages name the parameter ``name``."""
    if not isinstance(form, str):
        raise TypeError(f"{name} must be a string, not {form!r}")
    if form not in FORMS:
        choices = ", ".join(map(repr, FORMS[:-1])) + f" or {FORMS[-1]!r}"
        raise ValueError(f"{name} must be {choices}, not {form!r}")
    return form


class RegisteredReadMemory(wiring.Component):
    """``depth`` rows of ``width`` bits, all starting at ``init``; see the module docstring.

    Parameters
    ----------
    width, depth : int
        Bits per row, rows.
    init : int
        The initial value of every row.
    form : str
        ``"auto"`` (``"dp16kd"`` when building for ECP5 and the shape fits one, else
        ``"portable"``), ``"portable"`` or ``"dp16kd"`` (only for a shape that fits:
        :data:`DP16KD_SHAPES`).
    poison_collisions : bool
        For tests, with ``form="portable"``: a read of the row written in the cycle its
        address was sampled returns the row inverted, so that a user who depends on that
        undefined read (which the block RAM does not define either) fails in simulation.

    Attributes
    ----------
    read_addr, write_addr, write_data, write_en : In
        The ports, in clock domain ``sync``.
    read_data : Out
        The row, from a register, two cycles after its address.
    """

    @validates_parameters
    def __init__(
        self,
        width: int,
        depth: int,
        init: int = 0,
        *,
        form: str = "auto",
        poison_collisions=False,
    ):
        for name, value in (("width", width), ("depth", depth), ("init", init)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an integer, not {value!r}")
        if width < 1:
            raise ValueError(f"width must be at least 1, not {width}")
        if depth < 1:
            raise ValueError(f"depth must be at least 1, not {depth}")
        if not 0 <= init < 1 << width:
            raise ValueError(f"init must fit in {width} bits, not {init}")
        check_form("form", form)
        if form == "dp16kd" and not ecp5_block_ram_fits(width, depth):
            raise ValueError(
                f"form 'dp16kd' needs {DP16KD_SHAPES}, not {width} bits x {depth} rows"
            )
        if poison_collisions and form != "portable":
            raise ValueError(f"poison_collisions needs form 'portable', not {form!r}")
        self.width, self.depth, self.init = width, depth, init
        self.form = form
        self.poison_collisions = poison_collisions
        super().__init__(
            {
                "read_addr": In(range(depth)),
                "read_data": Out(width),
                "write_addr": In(range(depth)),
                "write_data": In(width),
                "write_en": In(1),
            }
        )

    def form_for(self, platform) -> str:
        """The form ``elaborate(platform)`` builds: ``"portable"`` or ``"dp16kd"``."""
        if self.form != "auto":
            return self.form
        if family_of(platform) == "ecp5" and ecp5_block_ram_fits(self.width, self.depth):
            return "dp16kd"
        return "portable"

    def elaborate(self, platform):
        if self.form_for(platform) == "dp16kd":
            return self._ecp5_dp16kd()
        return self._portable()

    def _portable(self):
        m = Module()
        m.submodules.memory = memory = Memory(
            shape=self.width, depth=self.depth, init=[self.init] * self.depth
        )
        read, write = memory.read_port(), memory.write_port()
        m.d.comb += [
            read.addr.eq(self.read_addr),
            write.addr.eq(self.write_addr),
            write.data.eq(self.write_data),
            write.en.eq(self.write_en),
        ]
        # No reset: a reset would put a LUT between the RAM and the register.
        data = Signal(self.width, reset_less=True)
        m.d.sync += data.eq(read.data)
        if self.poison_collisions:
            collided = Signal()
            m.d.sync += [
                collided.eq(self.write_en & (self.write_addr == self.read_addr)),
                data.eq(Mux(collided, ~read.data, read.data)),
            ]
        m.d.comb += self.read_data.eq(data)
        return m

    def _initval(self, form: int) -> dict[str, Const]:
        """``INITVAL_00 .. INITVAL_3F``: 16 slots of 20 bits each (18 data bits, 2 unused)."""
        per_slot = DP16KD_SLOT_BITS // form
        slots = [0] * (64 * 16)
        for row in range(self.depth):
            slots[row // per_slot] |= self.init << (form * (row % per_slot))
        return {
            f"p_INITVAL_{block:02X}": Const(
                sum(slot << (20 * j) for j, slot in enumerate(slots[block * 16 : block * 16 + 16])),
                320,
            )
            for block in range(64)
        }

    def _ecp5_dp16kd(self):
        m = Module()
        form = _dp16kd_form(self.width)
        low = DP16KD_FORMS[form][1]
        abits = (self.depth - 1).bit_length()

        def pins(prefix, value):
            """``{i_<prefix><k>: bit k of value}`` for the 18 data pins, zeros above it."""
            return {
                f"i_{prefix}{k}": value[k] if k < len(value) else Const(0)
                for k in range(DP16KD_SLOT_BITS)
            }

        ports = {}
        for side, addr in (("A", self.write_addr), ("B", self.read_addr)):
            for k in range(14):
                bit = addr[k - low] if low <= k < low + abits else Const(0)
                ports[f"i_AD{side}{k}"] = bit
        if form == 18:
            # The write byte enables, driven by the write enable as Yosys does.
            ports["i_ADA0"] = ports["i_ADA1"] = self.write_en
        ports.update(pins("DIA", self.write_data))
        ports.update(pins("DIB", Const(0, DP16KD_SLOT_BITS)))
        read_data = Signal(DP16KD_SLOT_BITS)
        for k in range(DP16KD_SLOT_BITS):
            ports[f"o_DOB{k}"] = read_data[k]
        for side in "AB":
            ports.update(
                {
                    f"i_CLK{side}": ClockSignal("sync"),
                    f"i_CE{side}": Const(1),
                    f"i_OCE{side}": Const(1),
                    f"i_RST{side}": Const(0),
                    **{f"i_CS{side}{k}": Const(0) for k in range(3)},
                }
            )
        ports["i_WEA"] = self.write_en
        ports["i_WEB"] = Const(0)
        m.submodules.dp16kd = Instance(
            "DP16KD",
            p_DATA_WIDTH_A=form,
            p_DATA_WIDTH_B=form,
            p_CLKAMUX="CLKA",
            p_CLKBMUX="CLKB",
            p_REGMODE_A="NOREG",
            # The point of the direct instance: the read data leaves the RAM from its own
            # output register (one more cycle, as the portable form's fabric register).
            p_REGMODE_B="OUTREG",
            p_RESETMODE="ASYNC",
            p_ASYNC_RESET_RELEASE="ASYNC",
            p_CSDECODE_A="0b000",
            p_CSDECODE_B="0b000",
            p_WRITEMODE_A="READBEFOREWRITE",
            p_WRITEMODE_B="READBEFOREWRITE",
            p_GSR="DISABLED",
            **self._initval(form),
            **ports,
        )
        m.d.comb += self.read_data.eq(read_data[: self.width])
        return m
