"""Median post-route Fmax over nextpnr seeds, with resources, for any design and parameters.

    .venv/bin/python benchmarks/fmax_seeds.py scheduler --points levels=3,w=4 levels=3,w=16 \\
        --families ecp5 --seeds 1 2 3 4 5
    .venv/bin/python benchmarks/fmax_seeds.py circuit-tree --points leaves=8 --families ice40

Placement seeds move Fmax by 10 % or more, so one seed says little: each point is placed and
routed once per seed (``fattree synth --seed S --json``, the installed console script, one
run at a time) and the median is reported with the range and the critical path of the
median seed. Runs go under ``build/fmax-seeds/<seed>/``; ``--json FILE`` keeps every run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path("build/fmax-seeds")
FATTREE = str(Path(sys.executable).parent / "fattree")


def run(design: str, point: str, family: str, seed: int) -> dict:
    argv = [FATTREE, "synth", design, "--family", family, "--seed", str(seed), "--json"]
    for param in filter(None, point.split(",")):
        argv += ["--param", param]
    argv += ["--build-root", str(ROOT / str(seed))]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"fmax_seeds: {' '.join(argv[1:])} failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("design")
    parser.add_argument(
        "--points", nargs="+", default=[""], help="parameter sets, e.g. levels=3,w=16"
    )
    parser.add_argument("--families", nargs="+", default=["ecp5"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3, 4, 5])
    parser.add_argument("--json", metavar="FILE", help="write every run's result here")
    args = parser.parse_args()

    rows, runs = [], []
    for family in args.families:
        for point in args.points:
            results = []
            for seed in args.seeds:
                result = run(args.design, point, family, seed)
                runs.append(result)
                fmax = result["fmax_mhz"]
                print(f"{family} {point} seed {seed}: {fmax} MHz", file=sys.stderr, flush=True)
                results.append(result)
            placed = [r for r in results if r["fmax_mhz"] is not None]
            if not placed:
                print(f"{family} {point}: place and route failed: {results[0]['pnr_error']}")
                continue
            fmaxes = sorted(r["fmax_mhz"] for r in placed)
            median = statistics.median(fmaxes)
            mid = min(placed, key=lambda r: abs(r["fmax_mhz"] - median))
            res = results[0]["resources"]
            rows.append(
                {
                    "family": family,
                    "point": point,
                    "median_mhz": round(median, 1),
                    "range": f"{fmaxes[0]:.1f}-{fmaxes[-1]:.1f}",
                    "ns": round(1000 / median, 2),
                    "luts": res["luts"],
                    "ffs": res["ffs"],
                    "brams": res["brams"],
                    "lutrams": res["lutrams"],
                    "critical": "{from} -> {to}, {delay_ns} ns".format(**mid["critical_path"])
                    if mid["critical_path"]
                    else "-",
                }
            )
    print("| family | params | Fmax median | seeds range | ns | LUT | FF | BRAM | LUTRAM |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['family']} | {r['point']} | {r['median_mhz']} MHz | {r['range']} | "
            f"{r['ns']} | {r['luts']} | {r['ffs']} | {r['brams']} | {r['lutrams']} |"
        )
    for r in rows:
        print(f"{r['family']} {r['point']}: median seed's critical path {r['critical']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
