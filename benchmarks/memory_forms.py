"""The scheduler's link memories on ECP5: the direct DP16KD form (block-RAM output register)
against the portable form (Yosys's inference), side by side, seed by seed.

    .venv/bin/python benchmarks/memory_forms.py [--levels 3] [--w 16] [--seeds 1 2 3 4 5]

Both forms are synthesised in one process, alternating per seed (the scheduler's ``memory``
parameter chooses the form); runs go under ``build/memory-forms/``.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from fattree.designs import DESIGNS
from fattree.synthesis import synthesise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", type=int, default=3)
    parser.add_argument("--w", type=int, default=16)
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3, 4, 5])
    args = parser.parse_args()

    forms = ("dp16kd", "portable")
    fmax = {form: [] for form in forms}
    cost = {}
    for seed in args.seeds:
        for form in forms:
            r = synthesise(
                DESIGNS["scheduler"],
                {"levels": args.levels, "w": args.w, "memory": form},
                "ecp5",
                seed=seed,
                root=Path("build/memory-forms") / form,
            )
            fmax[form].append(r.timing.fmax_mhz)
            cost[form] = (r.core.luts, r.core.ffs, r.core.brams)
            path = r.timing.critical_path or {}
            print(
                f"{form} seed {seed}: {r.timing.fmax_mhz} MHz, {path.get('from')} -> "
                f"{path.get('to')}",
                flush=True,
            )
    print("| form | Fmax median | range | LUT4 | FF | block RAM |")
    print("|---|---|---|---|---|---|")
    for form, values in fmax.items():
        luts, ffs, brams = cost[form]
        print(
            f"| {form} | {statistics.median(values):.1f} MHz | {min(values):.1f}-"
            f"{max(values):.1f} | {luts} | {ffs} | {brams} |"
        )


if __name__ == "__main__":
    main()
