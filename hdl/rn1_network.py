"""Networks of RN1 routers from a link list (the definitions' wiring): the one place that
turns ``(source, sink)`` link ends into router instances and wires.

Link ends are ``("in", *key, port)`` and ``("out", *key, port)`` for router ``key`` (or
swallow element ``key``, port 0: :class:`fattree.hdl.rn1_swallow.RN1Swallow`); any other end
is an edge of the network, named in ``inputs`` (sources: the network's input channels, in
order) or ``outputs`` (sinks: its output channels). The reference model is
:class:`fattree.sim.models.rn1.RN1NetworkModel`, which reads the same lists.
"""

from amaranth import Module
from amaranth.hdl import Value

from .rn1 import RN1Router
from .rn1_swallow import RN1Swallow

__all__ = ["wire_network"]


def wire_network(m: Module, routers: dict, links, inputs, outputs, i, o, swallows=()) -> dict:
    """Add one :class:`RN1Router` per ``routers`` entry (``key -> (mode, seed)``) and one
    :class:`RN1Swallow` per ``swallows`` key to ``m``, and the links between them and the
    edge channels ``i`` (the component's input channels, ``inputs[c]`` is ``i[c]``) and
    ``o``; returns the routers and swallows by key."""
    made = {}
    for key, (mode, seed) in routers.items():
        router = RN1Router(mode, seed)
        m.submodules["r_" + "_".join(str(k) for k in key)] = router
        made[key] = router
    for key in swallows:
        element = RN1Swallow()
        m.submodules["_".join(str(k) for k in key)] = element
        made[key] = element
    in_index = {end: c for c, end in enumerate(inputs)}
    out_index = {end: c for c, end in enumerate(outputs)}

    def channel(end, edge):
        if end[0] in ("in", "out"):
            element = made[end[1:-1]]
            port = element.i if end[0] == "in" else element.o
            return port if isinstance(element, RN1Swallow) else port[end[-1]]
        return i[in_index[end]] if edge == "in" else o[out_index[end]]

    for src, dst in links:
        a, b = channel(src, "in"), channel(dst, "out")
        m.d.comb += [
            Value.cast(b.fwd).eq(Value.cast(a.fwd)),
            Value.cast(a.bk).eq(Value.cast(b.bk)),
        ]
    return made
