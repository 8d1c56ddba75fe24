"""Timing diagrams drawn from real simulation traces.

Each entry of :data:`DIAGRAMS` runs a short amaranth.sim scenario of a design (the RTL, not a
drawing of it), writes its VCD, samples the chosen signals once per clock cycle (the value the
design sees at each rising edge) and renders them with WaveDrom (``yowasp-wavedrom``), so the
diagrams in the docs cannot drift from the hardware. ``fattree wave NAME -o FILE.svg``.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .registry import Registry, resolve

__all__ = ["Trace", "Diagram", "DIAGRAMS", "read_vcd", "wavejson", "render_svg", "trace"]


@dataclass
class Trace:
    """What a scenario recorded: per label the value in each cycle, cycle 0 being the first
    rising edge after reset; ``buses`` are the labels drawn as values, not levels."""

    title: str
    rows: dict[str, list[int]]
    buses: set[str] = field(default_factory=set)
    first: int = 0
    #: One-line notes under the diagram (what happens in which cycle).
    notes: list[str] = field(default_factory=list)


def read_vcd(path: str | Path, signals: dict[str, str], clock: str) -> dict[str, list[int]]:
    """Sample the VCD signals ``signals`` (label -> full dotted name, e.g.
    ``bench.top.ni0.up__valid``) just before every rising edge of ``clock``: the value the
    design samples there. Raises ``KeyError`` naming a signal the trace does not have."""
    from vcd.reader import TokenKind, tokenize

    scope: list[str] = []
    codes: dict[str, str] = {}
    wanted = {**signals, "\0clk": clock}
    value: dict[str, int] = {}
    samples: dict[str, list[int]] = {label: [] for label in signals}
    clk_code = None
    # Amaranth names some signals with a leading "$" (a memory's port address, for one), which
    # pyvcd's reader takes for a keyword: read them with "_" instead.
    text = re.sub(rb"(\$var \S+ \d+ \S+ )\$", rb"\1_", Path(path).read_bytes())
    with io.BytesIO(text) as f:
        for tok in tokenize(f):
            kind = tok.kind
            if kind is TokenKind.SCOPE:
                scope.append(tok.scope.ident)
            elif kind is TokenKind.UPSCOPE:
                scope.pop()
            elif kind is TokenKind.VAR:
                name = ".".join([*scope, tok.var.reference])
                for label, want in wanted.items():
                    if want == name:
                        codes[label] = tok.var.id_code
            elif kind is TokenKind.ENDDEFINITIONS:
                missing = [wanted[label] for label in wanted if label not in codes]
                if missing:
                    raise KeyError(f"the trace has no signal {missing[0]!r}")
                clk_code = codes["\0clk"]
            elif kind in (TokenKind.CHANGE_SCALAR, TokenKind.CHANGE_VECTOR):
                code = tok.data.id_code
                new = tok.data.value
                new = int(new) if isinstance(new, int) else int(str(new) in ("1",))
                if code == clk_code and new and not value.get(code):
                    for label in signals:
                        samples[label].append(value.get(codes[label], 0))
                value[code] = new
    return samples


def wavejson(trace: Trace) -> dict:
    """The trace as a WaveDrom source: levels for 1-bit rows, labelled values for buses
    (blank where 0), ``.`` where nothing changes."""
    signal = []
    for label, values in trace.rows.items():
        wave, data, last = "", [], None
        for v in values:
            if v == last:
                wave += "."
            elif label in trace.buses:
                wave += "=" if v else "x"
                if v:
                    data.append(f"{v:x}")
            else:
                wave += "1" if v else "0"
            last = v
        row = {"name": label, "wave": wave}
        if data:
            row["data"] = data
        signal.append(row)
    cycles = max((len(v) for v in trace.rows.values()), default=0)
    signal.insert(0, {"name": "clk", "wave": "p" + "." * (cycles - 1)})
    return {
        "signal": signal,
        "head": {"text": trace.title, "tick": trace.first},
        "foot": {"text": " ".join(trace.notes)} if trace.notes else {},
        "config": {"hscale": 1},
    }


def render_svg(source: dict) -> str:
    """Render a WaveDrom source with yowasp-wavedrom (pure Python and WASM, from pip)."""
    import yowasp_wavedrom

    return yowasp_wavedrom.render(source)


@dataclass(frozen=True)
class Diagram:
    name: str
    summary: str
    #: ``"module:function"``: ``function(vcd_path) -> Trace`` runs the scenario.
    scenario: str

    def run(self, vcd_path: str | Path) -> Trace:
        function: Callable[[str], Trace] = resolve(self.scenario)
        return function(str(vcd_path))


#: Keyed by diagram; the design record (``fattree.designs.Design.diagrams``) names each
#: scenario under the design it shows, and tests/test_design_record.py checks that the two
#: agree, both ways.
DIAGRAMS: Registry[Diagram] = Registry(
    "diagram",
    [
        Diagram(
            "circuit-tree-drop",
            "circuit tree, 4 nodes: two heads meet at a down port; the dropped one is not "
            "acknowledged and its sender sends it again (docs/circuit_tree_fast.md)",
            "fattree.wave_scenarios:circuit_tree_drop",
        ),
        Diagram(
            "circuit-tree-paper-reject",
            "circuit tree, 2 nodes: a receiver that is not ready makes its interface reject "
            "the second message; the sender retries (docs/circuit_tree.md)",
            "fattree.wave_scenarios:circuit_tree_reject",
        ),
        Diagram(
            "leiserson-stream-cycle",
            "Leiserson tree behind stream ports, 4 leaves: load, one delivery cycle, a stalled "
            "receiver holds back the next cycle (docs/leiserson.md)",
            "fattree.wave_scenarios:leiserson_stream_cycle",
        ),
    ],
)


def trace(name: str, build_dir: str | Path) -> Trace:
    """Run diagram ``name``'s scenario with its VCD under ``build_dir``."""
    diagram = DIAGRAMS.get_or_raise(name)
    where = Path(build_dir)
    where.mkdir(parents=True, exist_ok=True)
    return diagram.run(where / f"{name}.vcd")
