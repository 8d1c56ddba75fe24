"""``fattree designs``: what each design has (the design record, ``fattree.designs.Design``).

Without a name, the design-by-piece matrix: one row per design, one column per piece
(definitions, component, model, ...), a mark where the design has it. With a name, that
design's summary, its pieces, its parameters and the commands it supports.
"""

from __future__ import annotations

from ..boards import SELFTESTS
from ..designs import DESIGNS, PIECES, Design, Param, get_design
from ..proofs import PROOFS
from ..waves import DIAGRAMS
from .common import CliError, emit

NAME = "designs"
HELP = "list the designs and the pieces each has, or one design's parameters and commands"

#: Marks of the matrix.
PRESENT, ABSENT = "x", "."


def add_arguments(parser) -> None:
    parser.add_argument(
        "design",
        nargs="?",
        metavar="NAME",
        help="a design: its pieces, parameters and commands (default: the matrix of all): "
        + ", ".join(DESIGNS),
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def run(args) -> int:
    if args.design is None:
        emit(args, matrix_data(), matrix_text())
        return 0
    try:
        design = get_design(args.design)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    data = design_data(design)
    emit(args, data, design_text(data))
    return 0


def matrix_data() -> dict:
    """Every design and, per piece, whether it has it."""
    return {
        "pieces": [{"piece": f, "title": t, "what": w} for f, t, w in PIECES],
        "designs": [
            {"name": d.name, "summary": d.summary, "pieces": {f: d.has(f) for f, _, _ in PIECES}}
            for d in DESIGNS.values()
        ],
    }


def matrix_text() -> str:
    wide = max(map(len, DESIGNS))
    titles = [title for _, title, _ in PIECES]
    lines = [" ".join([f"{'design':<{wide}}", *titles])]
    for design in DESIGNS.values():
        marks = [
            f"{PRESENT if design.has(field) else ABSENT:^{len(title)}}"
            for field, title, _ in PIECES
        ]
        lines.append(" ".join([f"{design.name:<{wide}}", *marks]).rstrip())
    lines.append("")
    tall = max(len(title) for title in titles)
    lines += [f"{title:>{tall}}: {what}" for _, title, what in PIECES]
    lines.append("fattree designs NAME: one design's pieces, parameters and commands")
    return "\n".join(lines)


def _beyond(param: Param) -> str:
    """Where the component or the model takes more than the command line's ``hi`` (a
    practical bound there), in words; empty where they take the same."""
    component, model = param.upper(), param.upper(model=True)
    if component == model == param.hi:
        return ""

    def words(hi):
        return "any" if hi is None else f"up to {hi}"

    if component == model:
        return f" (component and model: {words(model)})"
    if component == param.hi:
        return f" (model: {words(model)})"
    return f" (component: {words(component)}, model: {words(model)})"


def param_data(param: Param) -> dict:
    """A parameter as data: name, default, its range in words, and what it means."""
    if param.text is not None:
        kind, values = "text", "text"
    elif param.choices:
        kind, values = "choice", " | ".join(param.choices)
    else:
        kind = "integer"
        values = f"at least {param.lo}" if param.hi is None else f"{param.lo}..{param.hi}"
        values += ", a power of two" if param.power_of_two else ""
        values += _beyond(param)
    data = {"name": param.name, "default": param.default, "kind": kind, "range": values}
    if kind == "integer":
        data.update(lo=param.lo, hi=param.hi)
        data.update(component_hi=param.upper(), model_hi=param.upper(model=True))
    if kind == "choice":
        data["choices"] = list(param.choices)
        if param.aliases:
            data["aliases"] = dict(param.aliases)
    data["help"] = param.help
    return data


def _pieces(design: Design) -> dict:
    pieces = {}
    for field, _, _ in PIECES:
        value = getattr(design, field)
        if field == "axis" and value is not None:
            value = {"component": value.component, "bench": value.bench}
        elif isinstance(value, tuple):
            value = list(value)
        pieces[field] = value if design.has(field) else None
    return pieces


def commands(design: Design) -> dict[str, list[str]]:
    """Command -> the command lines that run it on ``design`` (empty where it has no such
    piece)."""
    name = design.name
    proof_of = {proof.harness: n for n, proof in PROOFS.items()}
    diagram_of = {diagram.scenario: n for n, diagram in DIAGRAMS.items()}
    proofs = [proof_of[h] for h in design.proofs if h in proof_of]
    diagrams = [diagram_of[s] for s in design.diagrams if s in diagram_of]
    boards = sorted(SELFTESTS[name].board_params) if name in SELFTESTS else []
    have = {
        "verilog": [f"fattree verilog {name}"],
        "sim": [f"fattree sim {name}"] * bool(design.bench),
        "axis": [f"fattree sim {name} --ports axis"] * bool(design.axis),
        "synth": [f"fattree synth {name}"],
        "build": [f"fattree build {name} --board {b}" for b in boards]
        or [f"fattree build {name}"] * bool(design.selftest),
        "prove": [f"fattree prove {p}" for p in proofs],
        "soak": [f"fattree soak {name}"] * bool(design.soak),
        "mutants": [f"fattree mutants {name}"] * bool(design.bench),
        "draw": [f"fattree draw {name}"] * bool(design.drawing),
        "wave": [f"fattree wave {d}" for d in diagrams],
    }
    return have


def design_data(design: Design) -> dict:
    return {
        "name": design.name,
        "summary": design.summary,
        "pieces": _pieces(design),
        "params": [param_data(p) for p in design.params],
        "bench_params": [param_data(p) for p in design.bench_params],
        "commands": commands(design),
    }


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    return [
        indent + "  ".join(f"{cell:<{w}}" for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _shown(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict) and set(value) == {"component", "bench"}:
        return f"{value['component']} (bench {value['bench']})"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "the defaults"
    if isinstance(value, list):
        return ", ".join(value)
    return str(value)


def design_text(data: dict) -> str:
    lines = [f"{data['name']}: {data['summary']}", "", "pieces:"]
    lines += _table([[f"{field}", _shown(data["pieces"][field])] for field, _, _ in PIECES])
    for key, title in (
        ("params", "parameters (--param NAME=VALUE)"),
        ("bench_params", "bench parameters (--bench-param NAME=VALUE)"),
    ):
        if data[key]:
            lines += ["", f"{title}:"]
            rows = [
                [p["name"], repr(p["default"]) if p["default"] == "" else str(p["default"])]
                + [p["range"], p["help"]]
                for p in data[key]
            ]
            lines += _table(rows)
    lines += ["", "commands:"]
    lines += _table(
        [
            [command if k == 0 else "", run]
            for command, runs in data["commands"].items()
            for k, run in enumerate(runs or ["-"])
        ]
    )
    return "\n".join(lines)
