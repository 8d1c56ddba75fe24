"""Time the fast simulators side by side with an earlier revision of them.

Usage::

    python benchmarks/fast_simulators.py rounds [--min-lg 10] [--max-lg 20] [--repeats 3] [--json]
    python benchmarks/fast_simulators.py schedulability [--repeats 3] [--old-repeats 3]
        [--trials 100]
    python benchmarks/fast_simulators.py compile

``rounds``: one random trial (m = n, all rounds until every message is delivered) by this
tree's ``sim/fast/circuit_rounds.py`` and by the one of ``--against`` (default: the numpy simulator
before the numba kernels), on the same traffic and seed, alternating; the rounds must be
identical. ``schedulability``: ``fattree experiment schedulability`` (its defaults) by this
tree and by ``--against``'s experiment module (the pure-Python models), whose JSON must be
byte-identical. ``compile``: a small trial and a small schedule in fresh processes, with an
empty numba cache (compilation) and then with the cache it wrote. Medians of wall and CPU
time (``time.process_time``: what other jobs on a shared machine do not inflate).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fattree.sim.fast import circuit_rounds

ROOT = Path(__file__).resolve().parent.parent
#: The last commit with the numpy simulator and the pure-Python schedulability run.
BEFORE = "30d0c99"


def _revision(module: str, path: str, rev: str):
    """``path`` as it was at ``rev``, imported as ``module`` (a name inside the package, so
    its relative imports resolve against today's definitions)."""
    text = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location(module, f.name)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    spec.loader.exec_module(mod)
    os.unlink(f.name)
    return mod


def _timed(call):
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def _median(rows, key):
    return statistics.median(r[key] for r in rows)


def _old_rounds(rev: str):
    """The round-based simulator as it was at ``rev``, under the path it had then."""
    try:
        return _revision(
            "fattree.sim.fast._circuit_rounds_before", "sim/fast/circuit_rounds.py", rev
        )
    except subprocess.CalledProcessError:  # before the move into sim/fast/
        return _revision("fattree.sim._fastsim_before", "sim/fastsim.py", rev)


def rounds(args) -> list[dict]:
    old = _old_rounds(args.against)
    rng = np.random.default_rng(0)
    circuit_rounds.delivery_rounds(16, np.array([0]), np.array([3]), rng)  # load the kernels
    out = []
    for h in range(args.min_lg, args.max_lg + 1):
        n = 2**h
        runs = {"new": [], "old": []}
        for r in range(args.repeats):
            seed = args.seed + r
            for name, mod in (("old", old), ("new", circuit_rounds)):
                if name == "old" and h > args.old_max_lg:
                    continue
                rng = np.random.default_rng(seed)
                src, dst = mod.random_traffic(n, n, rng)
                res, wall, cpu = _timed(lambda: mod.delivery_rounds(n, src, dst, rng))  # noqa: B023
                runs[name].append({"wall": wall, "cpu": cpu, "per_round": res.delivered_per_round})
            if runs["old"] and runs["old"][-1]["per_round"] != runs["new"][-1]["per_round"]:
                raise SystemExit(f"n = 2^{h}, seed {seed}: the two simulators disagree")
        row = {"lg_n": h, "n": n, "rounds": len(runs["new"][0]["per_round"])}
        for name in ("new", "old"):
            if runs[name]:
                row[f"{name}_wall_s"] = _median(runs[name], "wall")
                row[f"{name}_cpu_s"] = _median(runs[name], "cpu")
        out.append(row)
        if not args.json:
            text = f"n = 2^{h:2d}  new {row['new_wall_s']:7.3f} s wall "
            text += f"{row['new_cpu_s']:7.3f} s cpu"
            if "old_cpu_s" in row:
                text += (
                    f"  old {row['old_wall_s']:7.3f} s wall {row['old_cpu_s']:7.3f} s cpu"
                    f"  ({row['old_cpu_s'] / row['new_cpu_s']:.1f}x, identical)"
                )
            print(f"{text}  ({row['rounds']} rounds)", flush=True)
    return out


def schedulability(args) -> list[dict]:
    from fattree.sim.experiments import scheduler_schedulability as new

    try:
        old = _revision(
            "fattree.sim.experiments._schedulability_before",
            "sim/experiments/scheduler_schedulability.py",
            args.against,
        )
    except subprocess.CalledProcessError:  # before the module had its design's name
        old = _revision(
            "fattree.sim.experiments._schedulability_before",
            "sim/experiments/schedulability.py",
            args.against,
        )
    out = []
    for name, mod, repeats in (("new", new, args.repeats), ("old", old, args.old_repeats)):
        parser = argparse.ArgumentParser()
        mod.add_arguments(parser)
        exp_args = parser.parse_args(["--trials", str(args.trials)])
        for _ in range(repeats):
            result, wall, cpu = _timed(lambda: mod.run(exp_args, lambda _: None))  # noqa: B023
            text = json.dumps(result.as_dict(), indent=2)
            out.append({"which": name, "wall": wall, "cpu": cpu, "json": text})
            if not args.json:
                print(f"{name}: {wall:8.2f} s wall {cpu:8.2f} s cpu", flush=True)
    texts = {r["json"] for r in out}
    if len(texts) != 1:
        raise SystemExit("the runs' JSON differ")
    summary = []
    for name in ("new", "old"):
        rows = [r for r in out if r["which"] == name]
        if rows:
            summary.append(
                {
                    "which": name,
                    "runs": len(rows),
                    "median_wall_s": _median(rows, "wall"),
                    "median_cpu_s": _median(rows, "cpu"),
                }
            )
    if not args.json:
        for s in summary:
            print(
                f"{s['which']}: median of {s['runs']}: {s['median_wall_s']:.2f} s wall, "
                f"{s['median_cpu_s']:.2f} s cpu"
            )
        print("JSON of every run byte-identical")
    return summary


_PROBE = """
import time
t = time.perf_counter()
import numpy as np
from fattree.sim.fast import circuit_rounds, schedulers
shifted = (np.arange(64) + 5) % 64
circuit_rounds.delivery_rounds(64, np.arange(64), shifted, np.random.default_rng(1))
a = time.perf_counter()
schedulers.schedule_permutations(2, 2, [[1, 0, 3, 2]], "random", rounds=True)
schedulers.schedule_permutations(2, 2, [[1, 0, 3, 2]], "optimal")
print(a - t, time.perf_counter() - a)
"""


def compile_times(args) -> list[dict]:
    out = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("first (empty cache)", "warm (cached)", "warm (cached)"):
            got = subprocess.run(
                [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True
            ).stdout.split()
            row = {"run": label, "rounds_s": float(got[0]), "schedulers_s": float(got[1])}
            out.append(row)
            if not args.json:
                print(
                    f"{label:20s}: import + round kernel {row['rounds_s']:6.2f} s, "
                    f"scheduler kernels {row['schedulers_s']:6.2f} s"
                )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("rounds", "schedulability", "compile"), nargs="?")
    parser.add_argument("--against", default=BEFORE, help=f"git revision (default {BEFORE})")
    parser.add_argument("--min-lg", type=int, default=10)
    parser.add_argument("--max-lg", type=int, default=20)
    parser.add_argument("--old-max-lg", type=int, default=20, help="largest n the old one runs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--old-repeats", type=int, default=3)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    what = args.what or "rounds"
    load = os.getloadavg()[0]
    rows = {"rounds": rounds, "schedulability": schedulability, "compile": compile_times}[what](
        args
    )
    if args.json:
        print(json.dumps({"what": what, "load_average": load, "rows": rows}, indent=2))
    else:
        print(f"load average at the start: {load:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
