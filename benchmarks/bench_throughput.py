"""RTL bench throughput of the 16-leaf circuit tree, every cycle checked: the cocotb bench
(``fattree sim``: the model stepped and every port read and written through VPI, cycle by
cycle) and the soak harness (``fattree soak``: the model writes stimulus and expectation in
bulk, a compiled Verilator main replays and compares), side by side, alternating.

Usage::

    python benchmarks/bench_throughput.py [--frames 1000] [--messages 20000] [--repeats 3]
                                          [--jobs 1 2] [--build-root build/bench-throughput]
                                          [--json]
    python benchmarks/bench_throughput.py --model-against REV [--messages 20000] [--repeats 5]

Both are built once first (not timed). Each repeat runs the bench, then the soak with each
``--jobs``. Figures: cycles per second of wall time (what a user waits for, inflated by
whatever else runs on the machine) and per second of CPU time (the bench: the simulator
process with its embedded Python; the soak: its model processes plus the harness), medians
over the repeats. Issue 15's row: ~2,900 cycles/s for the bench, target >= 20,000 cycles/s.

``--model-against REV``: no RTL; the soak's model work alone (what each soak worker does:
step the model and write the stimulus and expectation of ``--messages`` messages) with this
tree's ``sim/models/circuit.py`` and with the one of git revision ``REV``, alternating, in one
process; CPU seconds (``time.process_time``), medians over the repeats. The two must write
identical arrays, cycle for cycle.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fattree.designs import get_design, parse_params
from fattree.sim.cocotb_runner import run_bench
from fattree.sim.soak import run_soak


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bench(design, params, frames: int, root: Path, startup_cpu: float = 0.0) -> dict:
    cpu = _children_cpu()
    wall = time.perf_counter()
    result = run_bench(design, params, "verilator", seed=1, bench={"frames": frames}, root=root)
    wall = time.perf_counter() - wall
    cpu = _children_cpu() - cpu - startup_cpu
    s = result.summary
    if not result.passed:
        raise SystemExit(f"the bench failed: {s.get('first_mismatch') or result.log}")
    return {
        "cycles": s["cycles"],
        "messages": s["messages_checked"],
        # The bench's own timer covers its cycle loop only (not start-up or build).
        "wall_cycles_per_second": s["cycles_per_second"],
        "cpu_cycles_per_second": round(s["cycles"] / cpu, 1),
        "run_seconds": round(wall, 2),
    }


def soak(design, params, messages: int, jobs: int, root: Path) -> dict:
    r = run_soak(design, params, messages=messages, seed=1, root=root, jobs=jobs)
    if r.mismatches:
        raise SystemExit(f"the soak failed: {r.first_mismatch}")
    cpu = r.model_cpu_seconds + r.harness_cpu_seconds
    return {
        "cycles": r.cycles,
        "messages": r.checked,
        "wall_cycles_per_second": round(r.cycles / r.seconds, 1),
        "cpu_cycles_per_second": round(r.cycles / cpu, 1),
        "model_cpu_seconds": r.model_cpu_seconds,
        "harness_cpu_seconds": r.harness_cpu_seconds,
        "run_seconds": r.seconds,
    }


def _model_of(rev: str):
    """``sim/models/circuit.py`` as it was at ``rev``, imported inside the package (its
    relative imports resolve against today's definitions)."""
    root = Path(__file__).resolve().parent.parent
    text = subprocess.run(
        ["git", "show", f"{rev}:sim/models/circuit.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(text)
    name = "fattree.sim.models._circuit_before"
    spec = importlib.util.spec_from_file_location(name, f.name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    os.unlink(f.name)
    return module


def model_work(model_class, params, messages: int) -> tuple[int, float, str]:
    """Cycles, CPU seconds and a digest of the arrays of one soak segment's model work."""
    from fattree.sim.soak import circuit_tree

    circuit_tree.CircuitTreeModel = model_class
    soak = circuit_tree.CircuitTreeSoak(params, messages=messages, seed=1)
    digest = hashlib.sha256()
    cycles = 0
    cpu = time.process_time()
    for stimulus, expected, _, _ in soak.chunks():
        digest.update(stimulus.tobytes())
        digest.update(expected.tobytes())
        cycles += len(stimulus)
    return cycles, time.process_time() - cpu, digest.hexdigest()


def model_against(rev: str, messages: int, repeats: int, as_json: bool) -> None:
    from fattree.sim.models.circuit import CircuitTreeModel

    params = parse_params(get_design("circuit-tree-paper"), [])
    models = {rev: _model_of(rev).CircuitTreeModel, "this tree": CircuitTreeModel}
    rates: dict[str, list[float]] = {name: [] for name in models}
    digests = set()
    for _ in range(repeats):
        for name, model_class in models.items():
            cycles, cpu, digest = model_work(model_class, params, messages)
            rates[name].append(cycles / cpu)
            digests.add(digest)
    if len(digests) != 1:
        raise SystemExit(f"the models wrote different stimulus or expectation ({rev})")
    table = {name: round(statistics.median(r)) for name, r in rates.items()}
    if as_json:
        print(json.dumps({"cycles": cycles, "cycles_per_cpu_second": table, "runs": rates}))
        return
    print(
        f"soak model work, 16-leaf circuit tree, {messages} messages ({cycles} cycles), "
        f"identical arrays; medians of {repeats}, alternating"
    )
    for name, rate in table.items():
        print(f"{name:12s} {rate:8d} cycles per CPU second")
    print(f"speed-up     {table['this tree'] / table[rev]:8.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=1000, help="messages of the bench")
    parser.add_argument("--messages", type=int, default=20000, help="messages of the soak")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--build-root", default="build/bench-throughput")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--model-against", metavar="REV", help="time the model alone against revision REV's"
    )
    args = parser.parse_args()
    if args.model_against:
        model_against(args.model_against, args.messages, args.repeats, args.json)
        return
    root = Path(args.build_root)
    design = get_design("circuit-tree-paper")
    params = parse_params(design, [])
    # Build both once, untimed; then the bench's CPU time without traffic (simulator start-up,
    # reset, Python imports), which its figures leave out.
    bench(design, params, 16, root)
    soak(design, params, 100, 1, root)
    cpu = _children_cpu()
    bench(design, params, 1, root)
    startup = _children_cpu() - cpu
    runs: dict[str, list[dict]] = {"bench": []} | {f"soak-jobs{j}": [] for j in args.jobs}
    for _ in range(args.repeats):
        runs["bench"].append(bench(design, params, args.frames, root, startup))
        for j in args.jobs:
            runs[f"soak-jobs{j}"].append(soak(design, params, args.messages, j, root))
    table = {}
    table["bench startup CPU seconds"] = round(startup, 2)
    for name, rows in runs.items():
        table[name] = {
            key: statistics.median(r[key] for r in rows)
            for key in ("cycles", "messages", "wall_cycles_per_second", "cpu_cycles_per_second")
        }
    base = table["bench"]
    for name, row in table.items():
        if name not in runs:
            continue
        row["wall_speedup"] = round(
            row["wall_cycles_per_second"] / base["wall_cycles_per_second"], 2
        )
        row["cpu_speedup"] = round(row["cpu_cycles_per_second"] / base["cpu_cycles_per_second"], 2)
    if args.json:
        print(json.dumps({"median": table, "runs": runs}, indent=2))
        return
    print(
        f"16-leaf circuit tree, width 8, every cycle checked; medians of {args.repeats}; "
        f"bench start-up CPU {startup:.2f} s left out"
    )
    print(
        f"{'':12s} {'cycles':>8s} {'wall cyc/s':>11s} {'CPU cyc/s':>10s} "
        f"{'x wall':>7s} {'x CPU':>6s}"
    )
    for name, row in table.items():
        if name not in runs:
            continue
        print(
            f"{name:12s} {row['cycles']:8.0f} {row['wall_cycles_per_second']:11.0f} "
            f"{row['cpu_cycles_per_second']:10.0f} {row['wall_speedup']:7.2f} "
            f"{row['cpu_speedup']:6.2f}"
        )


if __name__ == "__main__":
    main()
