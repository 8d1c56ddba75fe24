"""Soak runs: a design's RTL on Verilator against its reference model for many messages.

One module per design writes the stimulus and the expectation in bulk (numpy arrays, chunk
by chunk) from its model; :mod:`.harness` replays the stimulus on the RTL in a compiled
Verilator main and compares every output of every cycle. :func:`run_soak` puts the two
together; ``fattree soak`` is its command line (docs/verification.md, "Soak").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...designs import DESIGNS, Design, build_dir, elaborate_verilog, top_name
from ...registry import resolve
from ..scoreboard import break_reference
from .harness import Harness, build_harness, top_ports

__all__ = ["SOAKS", "SoakResult", "run_soak", "soak_class"]

#: Design name -> "module:class" of its soak (imported when used), from the design record.
SOAKS = {name: design.soak for name, design in DESIGNS.items() if design.soak}


def soak_class(name: str):
    return resolve(SOAKS[name])


@dataclass
class SoakResult:
    design: str
    params: dict
    simulator: str
    seed: int
    unit: str
    requested: int
    checked: int
    cycles: int
    mismatches: int
    first_mismatch: dict | None
    seconds: float
    build_seconds: float
    #: CPU time of the model (every segment, every worker) and of the harness: beside the
    #: wall time, what other jobs on a shared machine do not inflate.
    model_cpu_seconds: float
    harness_cpu_seconds: float
    details: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.mismatches == 0 and self.checked >= self.requested

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["passed"] = self.passed
        d[f"{self.unit}_per_second"] = (
            round(self.checked / self.seconds, 1) if self.seconds else None
        )
        d["cycles_per_second"] = round(self.cycles / self.seconds, 1) if self.seconds else None
        return d


def _mutate(expected: np.ndarray, words) -> tuple[np.ndarray, object, bool]:
    """Break the reference once, as :func:`fattree.sim.scoreboard.break_reference` does: the
    first non-zero expected value (cycle by cycle, port by port; then the stream's words)
    loses its lowest set bit. Returns the arrays and whether it happened."""
    flat = expected.reshape(-1)
    hits = np.flatnonzero(flat)
    if len(hits):
        expected = expected.copy()
        k = hits[0]
        expected.reshape(-1)[k] = break_reference(int(flat[k]))
        return expected, words, True
    if words is not None:
        for k, w in enumerate(words):
            if w:
                words = list(words)
                words[k] = break_reference(int(w))
                return expected, words, True
    return expected, words, False


def _plan(soak, messages: int, seed: int) -> list[tuple[int, int]]:
    """``(messages, seed)`` of each segment."""
    size = getattr(soak, "SEGMENT", None) or messages
    sizes = [size] * (messages // size) + ([messages % size] if messages % size else [])
    return [(m, seed * 1_000_003 + k) for k, m in enumerate(sizes)]


def _segment(name: str, params: dict, messages: int, seed: int, knobs: dict):
    """One segment's chunks, summary, model failures, count checked and model seconds (run
    in a worker process when ``jobs`` > 1; arrays travel in the smallest unsigned type)."""
    started = time.process_time()
    soak = soak_class(name)(params, messages=messages, seed=seed, **knobs)
    chunks = []
    for stimulus, expected, queue, expect in soak.chunks():
        chunks.append((_small(stimulus), _small(expected), queue, expect))
    seconds = time.process_time() - started  # CPU time: other jobs do not inflate it
    return chunks, soak.summary(), list(getattr(soak, "failures", [])), soak.checked, seconds


def _small(array: np.ndarray) -> np.ndarray:
    top = int(array.max()) if array.size else 0
    for kind in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(kind).max:
            return array.astype(kind)
    return array


def _segments(name, params, plan, knobs, jobs: int):
    """The segments' results in order: computed here one by one (``jobs`` = 1), or by a
    pool of ``jobs`` processes, at most ``jobs + 1`` ahead of the harness."""
    if jobs <= 1 or len(plan) == 1:
        for messages, seed in plan:
            yield _segment(name, params, messages, seed, knobs)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn: the harness's reader thread must not be forked along.
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending = []
        todo = iter(plan)
        for messages, seed in todo:
            pending.append(pool.submit(_segment, name, params, messages, seed, knobs))
            if len(pending) > jobs:
                break
        while pending:
            result = pending.pop(0).result()
            for messages, seed in todo:
                pending.append(pool.submit(_segment, name, params, messages, seed, knobs))
                break
            yield result


def _merge(summaries: list[dict]) -> dict:
    """Segment summaries added up (numbers summed, dicts of numbers summed key by key)."""
    total: dict = {}
    for summary in summaries:
        for key, value in summary.items():
            if isinstance(value, dict):
                into = total.setdefault(key, {})
                for k, v in value.items():
                    into[k] = into.get(k, 0) + v
            else:
                total[key] = total.get(key, 0) + value
    return total


def _check_ports(layout, verilog: str, top: str) -> None:
    """Every port the soak drives or checks is in the Verilog with the width it expects;
    a stream's ports are there and at most 64 bits wide."""
    ports = top_ports(verilog, top)
    for port in layout.inputs + layout.outputs + layout.tied:
        have = ports.get(port.name)
        if have is None or have[1].bits != port.bits:
            raise ValueError(f"the soak expects port {port} of {top}, the Verilog has {have}")
    for stream in (layout.stream_in, layout.stream_out):
        for name in () if stream is None else (stream.valid, stream.ready, stream.payload):
            if name not in ports or ports[name][1].bits > 64:
                raise ValueError(f"the soak expects a port {name} of at most 64 bits in {top}")


@dataclass
class _Replayed:
    """What the model's side of a soak added up while the harness replayed it."""

    model_seconds: float = 0.0
    checked: int = 0
    summaries: list = field(default_factory=list)
    failures: list = field(default_factory=list)


def _replay(harness: Harness, results, *, mutate: bool, progress, label: str) -> _Replayed:
    """Send every segment's chunks to the harness (a reset between segments), breaking the
    reference once if ``mutate``; ``label`` (design, messages, unit) names the progress."""
    name, messages, unit = label
    armed = mutate
    replayed = _Replayed()
    for number, (chunks, summary, seg_failures, seg_checked, seconds) in enumerate(results):
        if number:
            harness.reset()
        for stimulus, expected, queue, expect in chunks:
            if armed:
                expected, expect, hit = _mutate(expected, expect)
                armed = not hit
            harness.send(stimulus, expected, queue, expect)
        replayed.model_seconds += seconds
        replayed.checked += seg_checked
        replayed.summaries.append(summary)
        replayed.failures += [f"segment {number}: {f}" for f in seg_failures]
        if progress is not None:
            progress(
                f"soaking {name}: {replayed.checked}/{messages} {unit}, "
                f"{harness.sent_cycles} cycles"
            )
    return replayed


def _first_mismatch(totals: dict, failures: list[str]) -> dict | None:
    """The first output that differed (cycle, signal, values), else the model's first
    failure, else None."""
    if totals["first"] is not None:
        cycle, port, want, got = totals["first"]
        return {"cycle": cycle, "signal": port, "expected": want, "got": got}
    if failures:
        return {"model": failures[0]}
    return None


def run_soak(
    design: Design,
    params: dict,
    *,
    messages: int,
    seed: int = 1,
    knobs: dict | None = None,
    root: Path | None = None,
    mutate: bool = False,
    jobs: int = 1,
    progress=None,
) -> SoakResult:
    """Soak ``design`` for ``messages`` messages (results, for the scheduler).

    A design whose soak has a ``SEGMENT`` size runs in segments of that many messages, each
    from reset with a traffic seed of its own (derived from ``seed``, so the run is the same
    for any ``jobs``); ``jobs`` processes write segments ahead while the harness replays them.
    """
    if design.name not in SOAKS:
        raise ValueError(
            f"design {design.name} has no soak yet; designs with one: {', '.join(SOAKS)}"
        )
    soak = soak_class(design.name)(params, messages=messages, seed=seed, **(knobs or {}))
    layout = soak.layout()
    top = top_name(design)
    started = time.perf_counter()
    verilog = elaborate_verilog(design, params)
    _check_ports(layout, verilog, top)
    where = build_dir("soak", design, params, root)
    exe = build_harness(where, top, verilog, layout, progress)
    built = time.perf_counter()
    if progress is not None:
        progress(f"soaking {design.name}: {messages} {soak.unit} ...")
    plan = _plan(soak, messages, seed)
    knobs = knobs or {}
    results = _segments(design.name, params, plan, knobs, jobs)
    harness = Harness(exe, layout)
    try:
        replayed = _replay(
            harness,
            results,
            mutate=mutate,
            progress=progress,
            label=(design.name, messages, soak.unit),
        )
    finally:
        totals = harness.finish()
    finished = time.perf_counter()
    failures = replayed.failures
    return SoakResult(
        design=design.name,
        params=params,
        simulator="verilator",
        seed=seed,
        unit=soak.unit,
        requested=messages,
        # A stream design's results are counted where they are compared, in the harness.
        checked=totals["taken"] if layout.stream_out is not None else replayed.checked,
        cycles=totals["cycles"],
        mismatches=totals["mismatches"] + len(failures),
        first_mismatch=_first_mismatch(totals, failures),
        seconds=round(finished - built, 2),
        build_seconds=round(built - started, 2),
        model_cpu_seconds=round(replayed.model_seconds, 2),
        harness_cpu_seconds=round(totals["cpu_seconds"], 2),
        details={
            **_merge(replayed.summaries),
            "segments": len(plan),
            "jobs": jobs,
            "output_mismatches": totals["mismatches"],
            "model_failures": failures[:5],
        },
    )
