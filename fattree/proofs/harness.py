"""What every proof harness shares: the property it asserts this run, the first-cycle flag
(``Past`` means nothing in cycle 0), and the stream rule a free input is assumed to keep."""

from __future__ import annotations

from amaranth import Const, Elaboratable, Signal
from amaranth.hdl import Assert, Assume, Fragment

__all__ = ["Harness", "any_of", "at_most_one", "elaborated"]


def any_of(bits):
    """The OR of ``bits`` (0 for none)."""
    out = Const(0)
    for b in bits:
        out = out | b
    return out


def at_most_one(bits):
    """True when at most one of ``bits`` is set (pairwise, for a handful of bits)."""
    bits = list(bits)
    ok = Const(1)
    for x in range(len(bits)):
        for y in range(x + 1, len(bits)):
            ok = ok & ~(bits[x] & bits[y])
    return ok


def elaborated(dut, platform=None) -> tuple[Fragment, dict]:
    """``dut`` elaborated, and its registers and wires by name: ``{path: signal}``, the path
    the names of the submodules down to it and the signal's own name, joined by ``.``.

    For a harness that must read state the design keeps to itself (an invariant that makes
    induction close speaks of it), without changing the design: add the fragment as the
    submodule (``m.submodules.dut = fragment``) and read the signals from the dict."""
    fragment = Fragment.get(dut, platform)
    found: dict[str, Signal] = {}
    ambiguous: set[str] = set()

    def walk(frag, path):
        for statements in frag.statements.values():
            for statement in statements:
                for signal in statement._lhs_signals():
                    key = ".".join((*path, signal.name))
                    if found.setdefault(key, signal) is not signal:
                        ambiguous.add(key)
        for sub, name, *_ in frag.subfragments:
            walk(sub, (*path, str(name)))

    walk(fragment, ())
    return fragment, {k: v for k, v in found.items() if k not in ambiguous}


class Harness(Elaboratable):
    """Subclasses set ``dut`` and ``ports`` (the free inputs) and, in ``elaborate``, build
    their properties (name -> list of conditions) and hand them to :meth:`emit`."""

    def __init__(self):
        self.selected: str | None = None
        self.assumed: tuple[str, ...] = ()
        self.properties: dict[str, list] = {}

    def select(self, name: str, assumes=()) -> None:
        """Assert property ``name`` only; assume the invariants ``assumes``."""
        self.selected, self.assumed = name, tuple(assumes)

    @staticmethod
    def first_cycle(m) -> Signal:
        """High in the first cycle only."""
        first = Signal(init=1)
        m.d.sync += first.eq(0)
        return first

    @staticmethod
    def keeps_offer(m, stream, first) -> None:
        """Assume the stream rule of a free input stream: an offer not taken stays, with the
        same payload, until it is taken."""
        was_valid, was_ready = Signal(), Signal()
        was_payload = Signal.like(stream.payload.as_value())
        m.d.sync += [
            was_valid.eq(stream.valid),
            was_ready.eq(stream.ready),
            was_payload.eq(stream.payload.as_value()),
        ]
        kept = stream.valid & (stream.payload.as_value() == was_payload)
        m.d.comb += Assume(first | ~(was_valid & ~was_ready) | kept)

    def emit(self, m, props: dict[str, list]) -> None:
        """Record ``props``; assert the selected one, assume its invariants."""
        self.properties = props
        if self.selected is None:
            return
        for name in self.assumed:
            m.d.comb += [Assume(c) for c in props[name]]
        m.d.comb += [Assert(c) for c in props[self.selected]]
