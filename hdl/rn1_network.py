"""Networks of RN1 routers from a link list (the definitions' wiring): the one place that
turns ``(source, sink)`` link ends into router instances and wires.

Link ends are ``("in", *key, port)`` and ``("out", *key, port)`` for router ``key``; any
other end is an edge of the network, named in ``inputs`` (sources: the network's input
channels, in order) or ``outputs`` (sinks: its output channels). The reference model is
:class:`fattree.sim.models.rn1.RN1NetworkModel`, which reads the same lists.
"""

from amaranth import Module
from amaranth.hdl import Value

from .rn1 import RN1Router

__all__ = ["wire_network"]


def wire_network(m: Module, routers: dict, links, inputs, outputs, i, o) -> dict:
    """Add one :class:`RN1Router` per ``routers`` entry (``key -> (mode, seed)``) to ``m``
    and the links between them and the edge channels ``i`` (the component's input channels,
    ``inputs[c]`` is ``i[c]``) and ``o``; returns the routers by key."""
    made = {}
    for key, (mode, seed) in routers.items():
        router = RN1Router(mode, seed)
        m.submodules["r_" + "_".join(str(k) for k in key)] = router
        made[key] = router
    in_index = {end: c for c, end in enumerate(inputs)}
    out_index = {end: c for c, end in enumerate(outputs)}

    def channel(end, edge):
        if end[0] == "in":
            return made[end[1:-1]].i[end[-1]]
        if end[0] == "out":
            return made[end[1:-1]].o[end[-1]]
        return i[in_index[end]] if edge == "in" else o[out_index[end]]

    for src, dst in links:
        a, b = channel(src, "in"), channel(dst, "out")
        m.d.comb += [
            Value.cast(b.fwd).eq(Value.cast(a.fwd)),
            Value.cast(a.bk).eq(Value.cast(b.bk)),
        ]
    return made
