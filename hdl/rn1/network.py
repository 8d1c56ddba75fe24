"""Networks of RN1 routers from a link list (the definitions' wiring): the one place that
turns ``(source, sink)`` link ends into router instances and wires.

Link ends are ``("in", *key, port)`` and ``("out", *key, port)`` for router ``key`` (or
swallow element ``key``, port 0: :class:`fattree.hdl.rn1.swallow.RN1Swallow`); any other end
is an edge of the network, named in ``inputs`` (sources: the network's input channels, in
order) or ``outputs`` (sinks: its output channels). The reference model is
:class:`fattree.sim.models.rn1.RN1NetworkModel`, which reads the same lists.

Two forms of the same network: flat (each router a :class:`RN1Router` component, as
amaranth.sim runs it), or ``hierarchy=True``: each router and swallow an ``Instance`` of one
shared Verilog module per router mode (:mod:`fattree.hdl.rn1.modules`), the seed a constant on
the instance's ``seed`` port, so the export grows with the wires, not with copies of the
router (two unit-tree stages, 4160 routers, export; flat they do not).
"""

from amaranth import ClockSignal, Const, Module, ResetSignal, Signal
from amaranth.hdl import Instance, Value

from ...spec.rn1 import CHANNELS, LFSR_WIDTH, WORD_BITS
from .modules import MODULES
from .router import RN1Router
from .swallow import RN1Swallow

__all__ = ["wire_network"]


class _Channel:
    """A channel of an instance: its two links as plain signals (``fwd``, ``bk``)."""

    def __init__(self, name: str):
        self.fwd = Signal(WORD_BITS, name=f"{name}_fwd")
        self.bk = Signal(WORD_BITS, name=f"{name}_bk")


class _Placed:
    """An ``Instance`` of a shared module, with channels ``i`` and ``o`` as the component has
    them (a list of eight for a router, one channel for a swallow)."""

    def __init__(self, m: Module, name: str, module: str, ports: int, seed: int | None):
        def channels(side):
            made = [_Channel(f"{name}_{side}{k}") for k in range(ports)]
            return made if ports > 1 else made[0]

        self.i, self.o = channels("i"), channels("o")
        # Verilog port names as the component's export has them: i__3__fwd (a router's
        # arrays), i__fwd (the swallow's single channel).
        conns = {"i_clk": ClockSignal(), "i_rst": ResetSignal()}
        for side, chans in (("i", self.i), ("o", self.o)):
            for k, c in enumerate(chans if ports > 1 else [chans]):
                port = f"{side}__{k}__" if ports > 1 else f"{side}__"
                conns[("i_" if side == "i" else "o_") + port + "fwd"] = c.fwd
                conns[("o_" if side == "i" else "i_") + port + "bk"] = c.bk
        if seed is not None:
            conns["i_seed"] = Const(seed, LFSR_WIDTH)
        m.submodules[name] = Instance(module, **conns)


def wire_network(
    m: Module, routers: dict, links, inputs, outputs, i, o, swallows=(), *, hierarchy=False
) -> dict:
    """Add one :class:`RN1Router` per ``routers`` entry (``key -> (mode, seed)``) and one
    :class:`RN1Swallow` per ``swallows`` key to ``m``, and the links between them and the
    edge channels ``i`` (the component's input channels, ``inputs[c]`` is ``i[c]``) and
    ``o``; returns the routers and swallows by key. ``hierarchy``: place them as
    ``Instance`` s of the modules of :func:`fattree.hdl.rn1.modules.network_modules`
    instead (the caller's export must add those modules)."""
    made = {}
    swallow_keys = set(swallows)
    for key, (mode, seed) in routers.items():
        name = "r_" + "_".join(str(k) for k in key)
        if hierarchy:
            made[key] = _Placed(
                m, name, MODULES[mode], CHANNELS, seed if mode == "primary" else None
            )
        else:
            made[key] = m.submodules[name] = RN1Router(mode, seed)
    for key in swallows:
        name = "_".join(str(k) for k in key)
        if hierarchy:
            made[key] = _Placed(m, name, MODULES["swallow"], 1, None)
        else:
            made[key] = m.submodules[name] = RN1Swallow()
    in_index = {end: c for c, end in enumerate(inputs)}
    out_index = {end: c for c, end in enumerate(outputs)}

    def channel(end, edge):
        if end[0] in ("in", "out"):
            key = end[1:-1]
            element = made[key]
            port = element.i if end[0] == "in" else element.o
            return port if key in swallow_keys else port[end[-1]]
        return i[in_index[end]] if edge == "in" else o[out_index[end]]

    for src, dst in links:
        a, b = channel(src, "in"), channel(dst, "out")
        m.d.comb += [
            Value.cast(b.fwd).eq(Value.cast(a.fwd)),
            Value.cast(a.bk).eq(Value.cast(b.bk)),
        ]
    return made
