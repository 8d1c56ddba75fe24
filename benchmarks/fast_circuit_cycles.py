"""Time the compiled cycle-level simulator against the cycle-exact model, side by side.

Usage::

    python benchmarks/fast_circuit_cycles.py [--min-lg 4] [--max-lg 16] [--model-max 10]
                                             [--retry immediate] [--repeats 3] [--json]

One random batch per size (every node sends one message to a uniform other node, all
offered at cycle 0) run to the last acknowledge by
:class:`fattree.sim.fast.circuit_cycles.CycleSim` (median CPU and wall time over
``--repeats``, the network built once per repeat, numba's compilation excluded by a warm-up
run) and, up to ``--model-max``, by
:func:`fattree.sim.models.circuit.run_model` once; the cycles and rejects must be equal.
CPU time is ``time.process_time`` (what other jobs on a shared machine do not inflate).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from fattree.sim.fast.circuit_cycles import CycleSim, run_cycles
from fattree.sim.models.circuit import CircuitTreeModel, run_model


def _model(n, src, dst, retry):
    queues = [[] for _ in range(n)]
    for s, d in zip(src.tolist(), dst.tolist(), strict=True):
        queues[s].append((d, 0))
    cpu, wall = time.process_time(), time.perf_counter()
    out = run_model(CircuitTreeModel(n, 1, 2, 1, retry), queues)
    return out["cycles"], out["rejects"], time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--min-lg", type=int, default=4)
    p.add_argument("--max-lg", type=int, default=16)
    p.add_argument("--model-max", type=int, default=10)
    p.add_argument("--retry", default="immediate", choices=["immediate", "round", "backoff"])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    run_cycles(8, [0, 1], [5, 4], retry=args.retry)  # compile (or load numba's cache)
    rows = []
    for h in range(args.min_lg, args.max_lg + 1):
        n = 1 << h
        rng = np.random.default_rng(h)
        src = np.arange(n)
        dst = (src + 1 + rng.integers(0, n - 1, n)) % n
        cpu, wall, build = [], [], []
        for _ in range(args.repeats):
            c0, w0 = time.process_time(), time.perf_counter()
            sim = CycleSim(n, src, dst, 2, 1, args.retry)
            c1 = time.process_time()
            res = sim.run()
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
            build.append(c1 - c0)
        row = {
            "n": n,
            "cycles": res.cycles,
            "rejects": res.rejects,
            "fast_cpu_s": round(statistics.median(cpu), 4),
            "fast_wall_s": round(statistics.median(wall), 4),
            "build_cpu_s": round(statistics.median(build), 4),
            "router_cycles_per_s": round(h * n // 2 * res.cycles / statistics.median(cpu)),
        }
        if h <= args.model_max:
            cycles, rejects, mcpu, mwall = _model(n, src, dst, args.retry)
            if (cycles, rejects) != (res.cycles, res.rejects):
                raise SystemExit(
                    f"n = {n}: model {cycles, rejects}, fast {res.cycles, res.rejects}"
                )
            row.update(
                model_cpu_s=round(mcpu, 3),
                model_wall_s=round(mwall, 3),
                speedup_cpu=round(mcpu / statistics.median(cpu), 1),
            )
        rows.append(row)
        if not args.json:
            print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
