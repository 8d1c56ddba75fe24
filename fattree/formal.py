"""Formal checks with SymbiYosys (``yowasp-sby``, solver ``z3`` from z3-solver).

A check is an Amaranth elaboratable holding the design under test plus ``Assert``/``Assume``
statements; its free inputs are the ports given. :func:`run_sby` writes the RTLIL and the
``.sby`` file into a build folder and runs sby there with relative paths (YoWASP tools cannot
see absolute ``/tmp`` paths).
"""

from __future__ import annotations

import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

from . import toolchain

__all__ = ["FormalResult", "run_sby"]


@dataclass
class FormalResult:
    passed: bool
    status: str
    workdir: Path
    log: str


def run_sby(
    name: str,
    check,
    ports: list,
    workdir: Path,
    *,
    mode: str = "prove",
    depth: int = 20,
    timeout: int = 600,
    engine: str = "smtbmc z3",
    multiclock: bool = True,
    passes: tuple[str, ...] = (),
) -> FormalResult:
    """Run sby on ``check``; ``mode`` is ``prove`` (k-induction with ``smtbmc``, or IC3 with
    ``engine="abc pdr"``) or ``bmc`` (``smtbmc z3``, or ``abc bmc3``: much faster on larger
    designs). ``multiclock`` on, the clock is a free input and a cycle takes two solver steps
    or more; off, every step is one edge of the one clock, so ``depth`` counts cycles (and
    k-induction spans ``depth`` cycles: the solver cannot stall the clock). ``passes``: Yosys
    commands run after ``prep`` (``memory_map``: memories as flip-flops, which the solver
    takes much faster than arrays)."""
    if mode not in ("prove", "bmc"):
        raise ValueError(f"mode must be 'prove' or 'bmc', not {mode!r}")
    toolchain.require("sby", engine.split()[-1] if engine.startswith("smtbmc") else "sby")
    from amaranth.back import rtlil

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / f"{name}.il").write_text(rtlil.convert(check, ports=ports, name="top"))
    (workdir / f"{name}.sby").write_text(
        textwrap.dedent(
            f"""\
            [options]
            mode {mode}
            depth {depth}
            multiclock {"on" if multiclock else "off"}

            [engines]
            {engine}

            [script]
            read_rtlil {name}.il
            prep -top top
            {"; ".join(passes)}

            [files]
            {name}.il
            """
        )
    )
    try:
        proc = subprocess.run(
            ["yowasp-sby", "-f", f"{name}.sby"],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return FormalResult(False, "TIMEOUT", workdir, f"sby did not finish in {timeout} s")
    log = proc.stdout + proc.stderr
    status = "PASS" if "DONE (PASS" in log else ("FAIL" if "DONE (FAIL" in log else "ERROR")
    return FormalResult(passed=status == "PASS", status=status, workdir=workdir, log=log)
