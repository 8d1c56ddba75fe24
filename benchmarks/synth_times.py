"""Wall time of ``fattree synth``, cold and warm, and the selector's resources and Fmax.

    .venv/bin/python benchmarks/synth_times.py                  # widths 8 and 64, both families
    .venv/bin/python benchmarks/synth_times.py --no-cold --widths 8 16 32 64

"Cold" is a first-ever run: YoWASP's cache is pointed at an empty folder
(``YOWASP_CACHE_DIR``), so the run includes compiling Yosys's and nextpnr's WebAssembly.
"Warm" runs reuse that cache. Each run is the installed console script in a fresh process, as
a user would run it, timed from outside. Everything goes under ``build/synth-times/``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path("build/synth-times")
FATTREE = str(Path(sys.executable).parent / "fattree")


def synth(family: str, width: int, cache: Path | None) -> tuple[float, dict]:
    env = dict(os.environ)
    if cache is not None:
        env["YOWASP_CACHE_DIR"] = str(cache.resolve())
    argv = [FATTREE, "synth", "selector", "-p", f"width={width}", "--family", family, "--json"]
    argv += ["--build-root", str(ROOT / "runs")]
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"synth_times: {' '.join(argv[1:])} failed: {proc.stderr.strip()}")
    return seconds, json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", nargs="+", default=["ice40", "ecp5"])
    parser.add_argument("--widths", nargs="+", type=int, default=[8, 64])
    parser.add_argument("--warm", type=int, default=2, help="warm runs per point (default 2)")
    parser.add_argument("--no-cold", action="store_true", help="skip the first-ever runs")
    args = parser.parse_args()

    rows = []
    for family in args.families:
        cache = None
        if not args.no_cold:
            # Fresh per family, so each cold run pays for both of its tools' compilation.
            cache = ROOT / f"yowasp-cache-{family}"
            shutil.rmtree(cache, ignore_errors=True)
            seconds, _ = synth(family, args.widths[0], cache)
            rows.append({"family": family, "width": args.widths[0], "run": "cold", "s": seconds})
            print(f"{family} width={args.widths[0]} cold: {seconds:.1f} s", file=sys.stderr)
        for width in args.widths:
            times = []
            for _ in range(args.warm):
                seconds, data = synth(family, width, cache)
                times.append(seconds)
            r = data["resources"]
            row = {
                "family": family,
                "device": f"{data['device']}-{data['package']}",
                "width": width,
                "run": "warm",
                "s": min(times),
                "luts": r["luts"],
                "ffs": r["ffs"],
                "carries": r["carries"],
                "fmax_mhz": data["fmax_mhz"],
                "target_mhz": data["target_mhz"],
                "tool_s": data["seconds"],
            }
            rows.append(row)
            print(f"{family} width={width} warm: {min(times):.1f} s", file=sys.stderr)

    print("| family | width | run | wall s | LUTs | FFs | carries | Fmax MHz (target) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["run"] == "cold":
            print(f"| {r['family']} | {r['width']} | cold | {r['s']:.1f} | | | | |")
        else:
            print(
                f"| {r['family']} | {r['width']} | warm (best of {args.warm}) | {r['s']:.1f} "
                f"| {r['luts']} | {r['ffs']} | {r['carries']} "
                f"| {r['fmax_mhz']:.1f} ({r['target_mhz']:g}) |"
            )
    ROOT.mkdir(parents=True, exist_ok=True)
    (ROOT / "results.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
