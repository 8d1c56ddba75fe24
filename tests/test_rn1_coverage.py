"""Functional coverage of ``rn1-bidelta-stream``: the cover points of its model (the routers'
per stage, the endpoints'), that counting changes nothing, that the counts agree along the
reverse path, and which bins a design point declares (docs/dehon.md, "Coverage of the
network with endpoints"). The benches that close the holes are in tests/test_rn1_endpoint.py."""

import random

import pytest

from fattree.sim.checks.rn1_endpoint import model_outputs
from fattree.sim.models.rn1_endpoint import RN1BideltaStreamModel


def _run(model, cycles=3000, seed=7):
    """Random stream users: a beat offered half the cycles (any data and destination, a
    frame's last beat a third of the time, so some frames are too long), receivers ready
    70 % of the cycles. Returns every cycle's outputs, the network's links included."""
    rng = random.Random(seed)
    n, trace = len(model.endpoints), []
    for _ in range(cycles):
        tx = [
            (int(rng.random() < 0.5), rng.getrandbits(8), rng.randrange(n), int(rng.random() < 0.3))
            for _ in range(n)
        ]
        ready = [int(rng.random() < 0.7) for _ in range(n)]
        trace.append((model_outputs(model.endpoints), model.net.o_fwd, model.net.i_bk))
        model.step(tx, ready)
    return trace


@pytest.mark.parametrize(
    "endpoints, retry, dead",
    [(16, "immediate", ()), (4, "round", ()), (4, "backoff", ()), (4, "immediate", (0, 2, 3))],
)
def test_counting_does_not_change_the_model(endpoints, retry, dead):
    plain = RN1BideltaStreamModel(endpoints, 3, retry, 4, dead_outputs=dead)
    counted = RN1BideltaStreamModel(endpoints, 3, retry, 4, dead_outputs=dead)
    coverage = counted.start_coverage()
    assert _run(plain) == _run(counted)
    report = coverage.as_dict()
    assert report["hit"] > 0.7 * report["bins"], coverage.holes()


def _drain(model, quiet=16) -> None:
    """Step with nothing offered and every receiver ready until every endpoint has been
    waiting for a frame for ``quiet`` cycles: no status left on the way."""
    n, idle = len(model.endpoints), 0
    for _ in range(20_000):
        model.step([(0, 0, 0, 0)] * n, [1] * n)
        idle = idle + 1 if all(ep.tx_ready for ep in model.endpoints) else 0
        if idle == quiet:
            return
    raise AssertionError("the network did not drain")


def _hits(model) -> dict[str, dict[str, int]]:
    return {name: point["bins"] for name, point in model.coverage.as_dict()["points"].items()}


@pytest.mark.parametrize("endpoints", [4, 16, 64])
def test_counts_agree_along_the_reverse_path(endpoints):
    """Each discarded transmission's BLOCKED reaches its sender from its stage (told by its
    wait), each refusal of a full receiver from the receiver, and every circuit before is
    released by that status passing back; the endpoints' counters agree."""
    model = RN1BideltaStreamModel(endpoints, 1, "immediate", 4)
    model.start_coverage()
    _run(model, cycles=2000 if endpoints < 64 else 800)
    _drain(model)
    hits, stages = _hits(model), model.net.net.stages
    answer = hits["answer"]
    later = answer["BLOCKED by the receiver"]
    for j in reversed(range(stages)):
        assert hits[f"discard/S{j}"]["answered BLOCKED"] == answer[f"BLOCKED by stage {j}"] > 0
        release = hits[f"release/S{j}"]
        assert release == {"CONNECTED back": answer["CONNECTED"], "BLOCKED back": later}
        later += answer[f"BLOCKED by stage {j}"]
    assert answer["BLOCKED by the receiver"] == hits["receive"]["refused: full"] > 0
    eps = model.endpoints
    assert answer["CONNECTED"] == sum(ep.sent for ep in eps) == sum(hits["message"].values())
    assert sum(hits["status"].values()) == sum(answer.values())
    assert sum(v for b, v in hits["status"].items() if "BLOCKED" in b) == sum(
        ep.retries for ep in eps
    )
    assert hits["frame"]["too long: dropped"] == sum(ep.dropped for ep in eps) > 0
    assert hits["receive"]["accepted"] >= sum(ep.received for ep in eps)
    retried = hits["retry/immediate"]
    assert retried["retry CONNECTED"] == answer["CONNECTED"] - hits["message"]["first try"]


def test_the_points_follow_the_design_point():
    points = {p.name: p.bins for p in RN1BideltaStreamModel(16).cover_points()}
    # Stage 1 of 16 is the dual-crossbar stage: one output per group, no choice to make.
    assert "choice/S0" in points and "choice/S1" not in points
    assert points["arbitrate/S1"][-1] == "3+ heads, held"
    assert points["answer"] == (
        "CONNECTED",
        "BLOCKED by stage 0",
        "BLOCKED by stage 1",
        "BLOCKED by the receiver",
    )
    assert points["retry/immediate"] == ("retry CONNECTED", "retry BLOCKED")
    assert "timeout on output 0" not in points["status"] and "given up" not in points["message"]
    # The one router of 4 endpoints sees four senders: two held outputs and three heads
    # for one direction need five.
    small = {p.name: p.bins for p in RN1BideltaStreamModel(4, retry="backoff").cover_points()}
    assert "3+ heads, none free" not in small["arbitrate/S0"]
    assert "2 heads, none free" in small["arbitrate/S0"]
    assert small["retry/backoff"][-1] == "window capped"
    one = {p.name: p.bins for p in RN1BideltaStreamModel(4, max_bytes=1).cover_points()}
    assert one["frame"] == ("max_bytes", "too long: dropped")
    cut = RN1BideltaStreamModel(4, dead_outputs=[2, 3]).cover_points()
    cut = {p.name: p.bins for p in cut}
    assert cut["status"][-2:] == ("timeout on output 0", "timeout on output 1")
    assert cut["message"][-1] == "given up"


def test_timeouts_and_given_up_messages_are_counted_with_dead_outputs():
    model = RN1BideltaStreamModel(4, 1, "immediate", 4, dead_outputs=[0, 2, 3])
    model.start_coverage()
    _run(model, cycles=3000)
    hits = _hits(model)
    timeouts = hits["status"]["timeout on output 0"] + hits["status"]["timeout on output 1"]
    assert timeouts == sum(ep.timeouts for ep in model.endpoints) > 0
    assert hits["status"]["timeout on output 1"] > 0  # endpoint 1's second output
    # Endpoint 1 (both outputs cut) gives every message up; ``dropped`` counts those and
    # the frames too long.
    given_up = hits["message"]["given up"]
    assert given_up > 0 and "given up" not in _hits(_counted_plain())["message"]
    assert given_up + hits["frame"]["too long: dropped"] == sum(
        ep.dropped for ep in model.endpoints
    )


def _counted_plain():
    model = RN1BideltaStreamModel(4, 1, "immediate", 4)
    model.start_coverage()
    return model


def test_the_clone_counts_apart():
    model = RN1BideltaStreamModel(4, 1, "immediate", 4)
    coverage = model.start_coverage()
    _run(model, cycles=200)
    before = coverage.as_dict()
    twin = model.clone()
    _run(twin, cycles=200, seed=8)
    assert coverage.as_dict() == before and twin.coverage.as_dict() != before
    assert _run(model.clone(), cycles=50, seed=9) == _run(model, cycles=50, seed=9)
