"""``fattree prove``: prove a design's properties with SymbiYosys (docs/verification.md)."""

from __future__ import annotations

from ..designs import DESIGNS
from ..proofs import PROOFS, prove
from .common import CliError, emit, given_once, progress_display

NAME = "prove"
HELP = "prove a design's properties (SymbiYosys k-induction, bounded where it cannot close)"


def add_arguments(parser) -> None:
    parser.add_argument(
        "design", metavar="DESIGN", help="design with a proof: " + ", ".join(sorted(PROOFS))
    )
    parser.add_argument(
        "--param",
        "-p",
        action="append",
        metavar="NAME=VALUE",
        help="set a design parameter (repeatable), e.g. --param retry=backoff",
    )
    parser.add_argument(
        "--property", action="append", metavar="NAME", help="prove only this property"
    )
    parser.add_argument(
        "--broken",
        action="store_true",
        help="prove a deliberately broken variant (the proof must fail with a counterexample)",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--build-root", default="build/prove", metavar="DIR", help="where sby runs")


def run(args) -> int:
    try:
        proof = PROOFS.get_or_raise(args.design)
    except KeyError as exc:
        raise CliError(str(exc)) from None
    # The proof's own small parameter point, with what --param sets.
    params = dict(proof.params)
    for item in given_once(args.param):
        name, _, value = item.partition("=")
        if name not in proof.params:
            known = ", ".join(proof.params) or "none"
            raise CliError(f"the {args.design} proof has no parameter {name!r}; it has: {known}")
        params[name] = _value(name, value, proof.params[name])
    with progress_display(quiet=args.json) as show:
        rows = prove(
            args.design,
            params,
            root=args.build_root,
            broken=args.broken,
            only=args.property,
            progress=show,
        )
    failed = [r for r in rows if r["status"] in ("failed", "error")]
    lines = [f"{args.design} ({', '.join(f'{k}={v}' for k, v in params.items())}):"]
    for r in rows:
        extra = f" (assumes {', '.join(r['assumes'])})" if r["assumes"] else ""
        lines.append(f"  {r['property']:28s} {r['status']:11s} {r['seconds']:6.1f} s{extra}")
        if r["counterexample"]:
            lines.append(f"    counterexample: {r['counterexample']}")
    emit(args, {"design": args.design, "params": params, "properties": rows}, "\n".join(lines))
    return 1 if failed else 0


#: The design table's named parameters (a retry strategy, a memory kind), by name: a proof's
#: parameter of that name reads as the command line reads it everywhere else.
_CHOICES = {p.name: p for d in DESIGNS.values() for p in d.params if p.choices}


def _value(name: str, text: str, default):
    """A proof parameter's value: a name (and its aliases) where the default is one, else an
    integer."""
    if isinstance(default, str) and name in _CHOICES:
        try:
            return _CHOICES[name].parse(text)
        except ValueError as error:
            raise CliError(str(error)) from None
    try:
        return int(text)
    except ValueError:
        raise CliError(f"parameter {name} must be an integer, not {text!r}") from None
