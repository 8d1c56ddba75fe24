"""Time the round-based fast simulator: one random trial (m = n) from n = 2^10 to 2^20.

Usage: ``python benchmarks/fastsim.py [--min-lg 10] [--max-lg 20] [--repeats 3] [--json]``.
Prints the median wall time per trial (all rounds until every message is delivered).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from fattree.sim.fastsim import delivery_rounds, random_traffic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-lg", type=int, default=10)
    parser.add_argument("--max-lg", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    for h in range(args.min_lg, args.max_lg + 1):
        n = 2**h
        times, rounds = [], []
        for _ in range(args.repeats):
            src, dst = random_traffic(n, n, rng)
            started = time.perf_counter()
            rounds.append(delivery_rounds(n, src, dst, rng).rounds)
            times.append(time.perf_counter() - started)
        rows.append(
            {
                "lg_n": h,
                "n": n,
                "median_s": statistics.median(times),
                "rounds": statistics.median(rounds),
            }
        )
        if not args.json:
            print(
                f"n = 2^{h:2d}  median {rows[-1]['median_s']:8.3f} s per trial  "
                f"({rows[-1]['rounds']:g} rounds)",
                flush=True,
            )
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
