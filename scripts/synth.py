"""``fattree synth``: resources of a design and post-route Fmax, for iCE40 or ECP5.

What is measured where is explained in ``docs/synthesis.md`` and in
:mod:`fattree.synthesis`: resources are those of the component alone; Fmax is that of the
component placed and routed inside a harness with registered, serialised I/O.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..designs import DESIGNS, build_dir
from ..synthesis import (
    FAMILIES,
    LUT_MAPPINGS,
    NEXTPNR_ROUTERS,
    SynthError,
    get_family,
    synthesise,
)
from .common import (
    CliError,
    add_design_arguments,
    emit,
    progress_display,
    resolve_design,
    writable_dir,
)

NAME = "synth"
HELP = "synthesise a design: LUT/FF/carry/RAM counts and post-route Fmax (iCE40 or ECP5)"


def add_arguments(parser) -> None:
    add_design_arguments(parser, designs=sorted(DESIGNS))
    devices = "; ".join(f"{f.name} = {f.device}-{f.package} ({f.board})" for f in FAMILIES.values())
    parser.add_argument(
        "--family",
        "-f",
        default="ice40",
        metavar="FAMILY",
        help=f"FPGA family: {devices}; default ice40",
    )
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placement seed (default 1)")
    parser.add_argument(
        "--freq",
        type=float,
        default=None,
        metavar="MHZ",
        help="nextpnr target frequency in MHz (default: "
        + ", ".join(f"{f.name} {f.default_freq:g}" for f in FAMILIES.values())
        + "); Fmax is reported whether or not it is met",
    )
    parser.add_argument(
        "--nextpnr-router",
        choices=NEXTPNR_ROUTERS,
        default=None,
        help="nextpnr's router (default nextpnr's own, router1); router2 routes large ECP5 "
        "netlists router1 does not finish (the 64-leaf circuit tree: 78 s against over an hour)",
    )
    parser.add_argument(
        "--lut-mapping",
        choices=LUT_MAPPINGS,
        default="delay",
        help="Yosys's LUT mapping: delay (the family's script, default) or area (LUT4 only, "
        "ABC9's delay target relaxed: fewer LUTs, deeper logic)",
    )
    parser.add_argument(
        "--build-root",
        default="build/synth",
        metavar="DIR",
        help="reports go to DIR/<family>/<design>/<params>/ (default build/synth)",
    )


def _summary(data: dict) -> str:
    r = data["resources"]
    params = ", ".join(f"{k}={v}" for k, v in data["params"].items())
    cells = ", ".join(f"{k} {v}" for k, v in r["cells"].items()) or "none"
    used = ", ".join(
        f"{bel} {u['used']}/{u['available']}"
        for bel, u in data["harness"]["utilisation"].items()
        if u["used"]
    )
    lines = [
        f"{data['design']} ({params}) on {data['device']}-{data['package']} "
        f"({data['board']}), nextpnr seed {data['seed']}"
        + (f", {data['nextpnr_router']}" if data.get("nextpnr_router") else "")
        + (", LUTs mapped for area" if data.get("lut_mapping") == "area" else ""),
        f"  resources of the component: {r['luts']} LUTs, {r['ffs']} FFs, "
        f"{r['carries']} carries, {r['brams']} block RAMs, {r['lutrams']} LUT RAMs, "
        f"{r['dsps']} DSPs",
        f"    cells: {cells}",
    ]
    if data.get("abc9_error"):
        lines.append(f"  synthesis: {data['synth_script']} (ABC9 failed: {data['abc9_error']})")
    if data["fmax_mhz"] is None:
        lines.append(f"  no Fmax: place and route failed: {data['pnr_error']}")
    else:
        met = "met" if data["timing_met"] else "NOT met"
        lines.append(
            f"  post-route Fmax in the harness: {data['fmax_mhz']:.2f} MHz "
            f"(target {data['target_mhz']:g} MHz, {met}; clock {data['clock']})"
        )
    path = data["critical_path"]
    if path:
        lines.append(
            f"    critical path: {path['delay_ns']:.2f} ns, {path['logic_levels']} logic levels, "
            f"{path['from']} -> {path['to']} (limited by the {path['limited_by']})"
        )
    lines += [
        f"    harness ({data['harness']['input_bits']} input bits shifted in, "
        f"{data['harness']['output_bits']} output bits captured) uses: {used}",
        "  reports:",
    ]
    width = max(len(k) for k in data["files"])
    lines += [f"    {k:<{width}}  {v}" for k, v in data["files"].items()]
    return "\n".join(lines)


def _overfill(data: dict) -> str:
    """``"; needs 100506 of 83640 TRELLIS_COMB (120 %)"`` for every cell type nextpnr found
    short, from its utilisation table, or ``""``."""
    over = [
        f"{u['used']} of {u['available']} {bel} ({100 * u['used'] / u['available']:.0f} %)"
        for bel, u in data["harness"]["utilisation"].items()
        if u["available"] and u["used"] > u["available"]
    ]
    return f"; the harness needs {', '.join(over)}" if over else ""


def run(args) -> int:
    design, params = resolve_design(args)
    family = get_family(args.family)
    if args.freq is not None and not (math.isfinite(args.freq) and args.freq > 0):
        raise CliError(f"--freq must be a positive number of MHz, not {args.freq:g}")
    if args.seed < 0:
        raise CliError(f"--seed must be a non-negative integer, not {args.seed}")
    writable_dir(build_dir(family.name, design, params, Path(args.build_root)))
    try:
        with progress_display(args.json) as show:
            result = synthesise(
                design,
                params,
                family,
                root=Path(args.build_root),
                seed=args.seed,
                freq_mhz=args.freq,
                progress=show,
                router=args.nextpnr_router,
                lut_mapping=args.lut_mapping,
            )
    except SynthError as exc:
        raise CliError(str(exc), code=1) from None
    data = result.as_dict()
    emit(args, data, _summary(data))
    if result.pnr_error:
        # The resources above are valid; say on stderr, in one line, why there is no Fmax,
        # and by how much the harness overfills the part when that is the reason.
        raise CliError(result.pnr_error + _overfill(data), code=1)
    return 0
