"""Strumpen and Krishnamurthy (2005): the three retry strategies compared, clock cycle by cycle.

``retry-strategies``: immediate retry, round-based retry and binary exponential back-off
(docs/circuit_tree.md, "Network interface") on the circuit-switched fat tree, every message
of a batch offered at cycle 0 (section 7's setting), for random traffic (the paper's: every
node a source, independent uniform destinations), random permutations, transpose, bit
reversal, cyclic shift (a random shift per trial) and the hot spot. Per point: clock cycles
until the last acknowledge, the same divided by the cycles of one message across the
diameter alone (Fig. 4's normalisation), and rejects (retries) per message.

Every point runs on the compiled cycle-level simulator (:mod:`fattree.sim.fast.circuit_cycles`);
up to ``--model-max`` the cycle-exact model (:mod:`fattree.sim.models.circuit`, what the
RTL is checked against) runs the same traffic too, and a note says whether both gave the
same cycles and rejects everywhere.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ...spec import traffic as patterns
from ..fast.circuit_cycles import MAX_LEAVES, CycleSim, diameter_cycles
from ..fast.circuit_rounds import delivery_rounds
from . import Experiment, Result, counted, lg_sizes

RETRIES = ("immediate", "round", "backoff")
PATTERNS = ("random", "permutation", "transpose", "bit-reversal", "shift", "hotspot")
MAX_LG = MAX_LEAVES.bit_length() - 1
#: The RTL's largest tree (CircuitFatTree's leaves go to 1024): the model's reach.
MODEL_MAX_LG = 10
_sizes = lg_sizes(1, MAX_LG)


def _int(name: str, text: str, lo: int, hi: int | None = None) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise ValueError(f"--{name} wants an integer, not {text!r}") from None
    if value < lo or (hi is not None and value > hi):
        bound = f"{lo}..{hi}" if hi is not None else f"at least {lo}"
        raise ValueError(f"--{name} must be {bound}, not {value}")
    return value


def _choices(name: str, text: str, allowed: tuple[str, ...]) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in values if v not in allowed]
    if not values or bad:
        raise ValueError(
            f"--{name} wants a comma list of {', '.join(allowed)}, not {(bad or [text])[0]!r}"
        )
    return list(dict.fromkeys(values))


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=_sizes,
        default=_sizes("2..8"),
        help=f"lg n values, A..B or a comma list, 1..{MAX_LG} (default 2..8; 16 takes "
        "about 10 s per run)",
    )
    p.add_argument(
        "--patterns",
        default=",".join(PATTERNS),
        help=f"comma list of {', '.join(PATTERNS)} (default all)",
    )
    p.add_argument(
        "--retry", default=",".join(RETRIES), help="comma list of immediate, round, backoff"
    )
    p.add_argument("--trials", default="3", help="runs per point, 1..1000 (default 3)")
    p.add_argument("--length", default="2", help="data words per message, 1..64 (default 2)")
    p.add_argument(
        "--model-max",
        default="6",
        metavar="LG",
        help=f"also run the cycle-exact model (pure Python) up to n = 2^LG, 0..{MODEL_MAX_LG} "
        "(the RTL's largest tree; default 6)",
    )
    p.add_argument(
        "--hotspot-max",
        default="10",
        metavar="LG",
        help="hot spot only up to n = 2^LG (its n - 1 messages go one at a time through "
        "one link: cycles grow like n; default 10)",
    )
    p.add_argument("--seed", default="1", help="traffic and network seed, 0..65535 (default 1)")


def options(args) -> dict:
    """The checked options (``ValueError`` with a one-line message for a bad one)."""
    return {
        "sizes": list(args.sizes),
        "patterns": _choices("patterns", args.patterns, PATTERNS),
        # Immediate first: the other strategies' rows are relative to it.
        "retry": sorted(_choices("retry", args.retry, RETRIES), key=RETRIES.index),
        "trials": _int("trials", args.trials, 1, 1000),
        "length": _int("length", args.length, 1, 64),
        "model_max": _int("model-max", args.model_max, 0, MODEL_MAX_LG),
        "hotspot_max": _int("hotspot-max", args.hotspot_max, 1, MAX_LG),
        "seed": _int("seed", args.seed, 0, (1 << 16) - 1),
    }


def batch(pattern: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One batch of messages ``(src, dst)``: ``random`` every node sends to a uniform other
    node; ``permutation`` a uniform random permutation; ``shift`` by a uniform ``k`` in
    ``1 .. n-1``; transpose, bit reversal and hot spot as :mod:`fattree.spec.traffic`.
    Fixed points are dropped (a message to oneself never enters the network)."""
    h = n.bit_length() - 1
    p = np.arange(n, dtype=np.int64)
    if pattern == "random":
        q = (p + 1 + rng.integers(0, n - 1, n)) % n
    elif pattern == "permutation":
        q = rng.permutation(n).astype(np.int64)
    elif pattern == "shift":
        q = patterns.cyclic_shift(p, n, int(rng.integers(1, n)))
    else:
        q = patterns.destination(pattern, p, h)
    keep = p != q
    return p[keep], np.asarray(q, dtype=np.int64)[keep]


def _model_run(n, src, dst, length, seed, retry) -> tuple[int, int]:
    from ..models.circuit import CircuitTreeModel, run_model

    queues = [[] for _ in range(n)]
    for s, d in zip(src.tolist(), dst.tolist(), strict=True):
        queues[s].append((d, 0))
    out = run_model(CircuitTreeModel(n, 1, length, seed, retry), queues)
    return out["cycles"], out["rejects"]


def _strategy_trials(n, pattern, retry, batches, opts, compare: bool, mismatches: list):
    """Every trial of one retry strategy on the compiled simulator (and, with ``compare``,
    on the cycle-exact model, a disagreement appended to ``mismatches``): per trial the
    cycles and rejects, the most rejects of one message, the CPU seconds of both."""
    cycles, rejects, worst, fast_s, model_s = [], [], 0, 0.0, 0.0
    for trial, (src, dst) in enumerate(batches):
        net_seed = (opts["seed"] + trial) & 0xFFFF
        started = time.process_time()
        res = CycleSim(n, src, dst, opts["length"], net_seed, retry).run()
        fast_s += time.process_time() - started
        cycles.append(res.cycles)
        rejects.append(res.rejects)
        worst = max(worst, int(res.rejects_per_message.max(initial=0)))
        if compare:
            started = time.process_time()
            got = _model_run(n, src, dst, opts["length"], net_seed, retry)
            model_s += time.process_time() - started
            if got != (res.cycles, res.rejects):
                mismatches.append(f"n={n} {pattern} {retry} trial {trial}: {got}")
    return cycles, rejects, worst, fast_s, model_s


def _notes(opts: dict, compared: int, mismatches: list) -> list[str]:
    notes = [
        "every message of the batch offered at cycle 0; cycles: until the last acknowledge "
        "is seen at its source (run_model's count); per_diameter: mean cycles / cycles of one "
        "message from node 0 to node n-1 alone (Fig. 4's normalisation)",
        "vs_immediate: mean cycles / immediate retry's mean cycles (same traffic, same seeds); "
        "retries: rejects per message (mean over the trials); max_retries: most rejects of "
        "one message",
        "rounds: delivery rounds of the paper's round-based simulator (sim/fast/circuit_rounds.py, "
        "circuits held to the end of each round) on the same batches, mean over the trials",
        f"fast_s, model_s: CPU seconds for the {opts['trials']} trials on the compiled "
        "simulator and on the cycle-exact model",
    ]
    if compared:
        notes.append(
            f"model = fast simulator (cycles and rejects) in all {compared} runs up to "
            f"n = 2^{opts['model_max']}"
            if not mismatches
            else f"MODEL AND FAST SIMULATOR DIFFER in {len(mismatches)} of {compared} runs: "
            + "; ".join(mismatches[:5])
        )
    return notes


def _run(args, progress) -> Result:
    opts = options(args)
    points = [
        (h, pattern)
        for h in opts["sizes"]
        for pattern in opts["patterns"]
        if not (pattern == "hotspot" and h > opts["hotspot_max"])
    ]
    rows, mismatches, compared = [], [], 0
    for h, pattern in counted(progress, points):
        n = 1 << h
        progress(f"retry-strategies: n = 2^{h}, {pattern}")
        diameter = diameter_cycles(n, opts["length"])
        rng = np.random.default_rng([opts["seed"], h, PATTERNS.index(pattern)])
        batches = [batch(pattern, n, rng) for _ in range(opts["trials"])]
        if not batches[0][0].size:
            continue  # every node maps to itself (transpose and bit reversal at n = 2)
        # The paper's round-based simulator on the same batches (circuits held to the end
        # of the round): the rounds that Fig. 4 sets beside the normalised cycles.
        rounds_rng = np.random.default_rng([opts["seed"], h, PATTERNS.index(pattern), 1])
        rounds = float(
            np.mean([delivery_rounds(n, src, dst, rounds_rng).rounds for src, dst in batches])
        )
        compare = h <= opts["model_max"]
        immediate_mean = None
        for retry in opts["retry"]:
            cycles, rejects, worst, fast_s, model_s = _strategy_trials(
                n, pattern, retry, batches, opts, compare, mismatches
            )
            compared += len(batches) if compare else 0
            mean = float(np.mean(cycles))
            if retry == "immediate":
                immediate_mean = mean
            messages = int(batches[0][0].size)
            rows.append(
                [
                    n,
                    pattern,
                    retry,
                    messages,
                    min(cycles),
                    mean,
                    max(cycles),
                    mean / diameter,
                    None if immediate_mean is None else mean / immediate_mean,
                    float(np.sum(rejects)) / max(1, sum(b[0].size for b in batches)),
                    worst,
                    rounds,
                    round(fast_s, 3),
                    round(model_s, 3) if compare else None,
                ]
            )
    notes = _notes(opts, compared, mismatches)
    return Result(
        "retry-strategies",
        opts,
        [
            "n",
            "pattern",
            "retry",
            "messages",
            "cycles_min",
            "cycles_mean",
            "cycles_max",
            "per_diameter",
            "vs_immediate",
            "retries",
            "max_retries",
            "rounds",
            "fast_s",
            "model_s",
        ],
        rows,
        notes,
        extra={"model_equal": not mismatches, "model_runs": compared},
    )


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    names = [p for p in PATTERNS if any(r[1] == p for r in result.rows)]
    fig, axes = plt.subplots(
        2, len(names), figsize=(3.2 * len(names), 6), squeeze=False, sharex=True
    )
    for col, name in enumerate(names):
        for retry, marker in zip(RETRIES, "os^", strict=True):
            rows = [r for r in result.rows if r[1] == name and r[2] == retry]
            if not rows:
                continue
            x = [r[0].bit_length() - 1 for r in rows]
            axes[0][col].plot(x, [r[7] for r in rows], marker + "-", ms=4, label=retry)
            axes[1][col].plot(x, [r[9] for r in rows], marker + "-", ms=4, label=retry)
        first = {}
        for r in result.rows:
            if r[1] == name:
                first.setdefault(r[0], r[11])
        x = [k.bit_length() - 1 for k in first]
        axes[0][col].plot(x, list(first.values()), "k:", label="round-based simulator, rounds")
        axes[0][col].set_title(name)
        axes[1][col].set_xlabel("lg n")
    axes[0][0].set_ylabel("cycles / one message across the diameter")
    axes[0][0].legend(fontsize="small")
    axes[1][0].set_ylabel("retries per message")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


EXPERIMENTS = [
    Experiment(
        "retry-strategies",
        "Strumpen-Krishnamurthy: immediate, round-based and back-off retry, cycles and "
        "retries per message, model and compiled cycle-level simulator",
        _args,
        _run,
        _plot,
    ),
]
