"""``fattree soak``: a design's RTL on Verilator against its reference model for many
messages, every output of every cycle checked (docs/verification.md, "Soak")."""

from __future__ import annotations

import os
from pathlib import Path

from .. import toolchain
from ..designs import get_design, parse_bench_params, parse_params
from ..sim.soak import SOAKS, run_soak, soak_class
from .common import CliError, emit, given_once, progress_display

NAME = "soak"
HELP = "run a design's RTL on Verilator against its cycle-exact model for many messages"


def add_arguments(parser) -> None:
    parser.add_argument("design", metavar="DESIGN", help="design: " + ", ".join(SOAKS))
    parser.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a design parameter (repeatable); the scheduler's soak defaults to w=16",
    )
    parser.add_argument(
        "--bench-param",
        "-b",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a bench knob, e.g. backpressure=30 (percent of cycles a receiver stalls)",
    )
    parser.add_argument(
        "--messages",
        "-n",
        type=int,
        default=100_000,
        help="messages to check (grants and results for the scheduler; default 100000)",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the traffic (default 1)")
    parser.add_argument(
        "--simulator",
        choices=["verilator"],
        default="verilator",
        help="Verilog simulator (only verilator: the harness is a compiled Verilator main)",
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="processes that run the model ahead of the simulator, segment by segment "
        "(default: the cores, at most 2); the result is the same for any number",
    )
    parser.add_argument(
        "--mutate-model",
        action="store_true",
        help="self-check: break one expected value on purpose; the soak must then fail",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument(
        "--build-root",
        default="build",
        metavar="DIR",
        help="root of the build folders (default build: build/soak/<design>/<params>/)",
    )


def run(args) -> int:
    if args.design not in SOAKS:
        raise CliError(
            f"design must be one of {', '.join(SOAKS)} (the designs with a soak), "
            f"not {args.design!r}"
        )
    if args.messages < 1:
        raise CliError(f"--messages must be at least 1, not {args.messages}")
    if args.jobs < 1:
        raise CliError(f"--jobs must be at least 1, not {args.jobs}")
    if args.seed < 0:
        raise CliError(f"--seed must be at least 0, not {args.seed}")
    design = get_design(args.design)
    cls = soak_class(args.design)
    try:
        defaults = [f"{k}={v}" for k, v in getattr(cls, "DEFAULTS", {}).items()]
        params = parse_params(design, defaults + given_once(args.param))
        knobs = parse_bench_params(design, given_once(args.bench_param, "--bench-param"))
        layout = cls(params, messages=1, seed=args.seed, **knobs).layout()
    except ValueError as error:
        raise CliError(str(error)) from None
    del layout  # built only to reject parameters the harness cannot carry, before any build
    toolchain.require("verilator")
    with progress_display(args.json) as show:
        try:
            result = run_soak(
                design,
                params,
                messages=args.messages,
                seed=args.seed,
                knobs=knobs,
                root=Path(args.build_root),
                mutate=args.mutate_model,
                jobs=args.jobs,
                progress=show,
            )
        except RuntimeError as error:
            raise CliError(str(error), code=1) from None
        except OSError as error:  # the build folder cannot be made or written
            raise CliError(f"cannot use the build folder {args.build_root}: {error}") from None
    data = result.as_dict()
    emit(args, data, describe(data))
    return 0 if result.passed else 1


def describe(d: dict) -> str:
    params = ", ".join(f"{k}={v}" for k, v in d["params"].items())
    unit = d["unit"]
    text = (
        f"{d['design']} ({params}) on {d['simulator']}: {d['checked']} {unit} checked over "
        f"{d['cycles']} cycles, mismatches {d['mismatches']}\n"
        f"  {d['seconds']} s: {d[unit + '_per_second']} {unit}/s, "
        f"{d['cycles_per_second']} cycles/s; CPU: model {d['model_cpu_seconds']} s, "
        f"simulator {d['harness_cpu_seconds']} s; build {d['build_seconds']} s"
    )
    details = ", ".join(
        f"{k} {v}" for k, v in d["details"].items() if isinstance(v, int) and k != "delivered"
    )
    if details:
        text += f"\n  {details}"
    first = d["first_mismatch"]
    if first:
        if "cycle" in first:
            text += (
                f"\n  first mismatch: cycle {first['cycle']}, {first['signal']}: "
                f"expected {first['expected']}, got {first['got']}"
            )
        else:
            text += f"\n  first mismatch: {next(iter(first.values()))}"
    return text + ("\nPASS" if d["passed"] else "\nFAIL")
