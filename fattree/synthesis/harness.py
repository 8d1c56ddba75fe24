"""The place-and-route harness: any component between a serial-in and a serial-out register.

A component's ports usually outnumber the package's pins, so its Fmax is measured inside a
harness with five pins (``clk``, ``rst``, ``sdi``, ``load``, ``sdo``); see
:func:`make_harness` and ``docs/synthesis.md``.
"""

from __future__ import annotations

__all__ = ["HARNESS_TOP", "make_harness"]

#: Name of the harness's top module (and of its RTLIL, netlist and constraint files).
HARNESS_TOP = "fattree_harness"


def _flat_ports(component):
    """``[(name, direction, value)]`` of every port bit group of a wiring.Component."""
    from amaranth.hdl import Value
    from amaranth.lib import wiring

    if not isinstance(component, wiring.Component):
        raise TypeError(
            f"the harness needs an amaranth.lib.wiring.Component, not {type(component).__name__}"
        )
    ports = []
    for path, member, value in component.signature.flatten(component):
        name = "__".join(str(p) for p in path)
        direction = "in" if member.flow == wiring.In else "out"
        ports.append((name, direction, Value.cast(value)))
    return ports


def make_harness(component):
    """Wrap ``component`` between a serial-in shift chain and a serial-out capture register.

    Pins: ``sdi`` feeds a shift chain whose flip-flops drive every input bit of the component;
    every output bit is registered into ``capture`` each cycle; ``load`` copies ``capture``
    into a shift register whose bit 0 is ``sdo``. ``clk`` and ``rst`` are the ``sync``
    domain's, shared with the component. The harness adds at most one LUT (the ``load``
    multiplexer) between flip-flops, so it is not the critical path of any component that has
    logic of its own.
    """
    from amaranth.hdl import Cat, Elaboratable, Module, Signal

    ports = _flat_ports(component)
    inputs = [v for _, d, v in ports if d == "in"]
    outputs = [v for _, d, v in ports if d == "out"]
    n_in = sum(len(v) for v in inputs)
    n_out = sum(len(v) for v in outputs)
    if n_out == 0:
        component._MustUse__silence = True  # never elaborated: say why, not "unused" as well
        raise ValueError("the component has no outputs: nothing of it would survive synthesis")

    class _Harness(Elaboratable):
        def __init__(self):
            self.sdi = Signal()
            self.load = Signal()
            self.sdo = Signal()
            self.dut = component
            self.n_in = n_in
            self.n_out = n_out

        def ports(self):
            return [self.sdi, self.load, self.sdo]

        def elaborate(self, platform):
            m = Module()
            m.submodules.dut = self.dut
            if n_in:
                # Reset-less, so that no chain or capture flip-flop is identical to (and merged
                # with) one of the component's, which all reset with `rst`.
                chain = Signal(n_in, reset_less=True)
                m.d.sync += chain.eq(Cat(self.sdi, chain[:-1]))
                offset = 0
                for value in inputs:
                    m.d.comb += value.eq(chain[offset : offset + len(value)])
                    offset += len(value)
            capture = Signal(n_out, reset_less=True)
            shift = Signal(n_out, reset_less=True)
            m.d.sync += capture.eq(Cat(*outputs))
            with m.If(self.load):
                m.d.sync += shift.eq(capture)
            with m.Else():
                m.d.sync += shift.eq(shift >> 1)
            m.d.comb += self.sdo.eq(shift[0])
            return m

    return _Harness()
