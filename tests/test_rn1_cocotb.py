"""cocotb bench of the RN1 router on the generated Verilog, Icarus and Verilator.

Icarus builds and runs the bench in about a second; Verilator takes most of a minute to
build the router, so its runs are slow tests but one (the runtime router, which is either
fixed router), and so are the sweeps over seeds (one Verilator build per mode, reused for
every bench seed)."""

import json
import shutil

import pytest

from fattree.designs import get_design
from fattree.sim.cocotb_runner import run_bench

pytestmark = pytest.mark.cocotb

SIMULATORS = [
    pytest.param("verilator", marks=pytest.mark.slow),
    pytest.param(
        "icarus",
        marks=pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog"),
    ),
]


@pytest.mark.parametrize("simulator", SIMULATORS)
@pytest.mark.parametrize("mode", ["primary", "alternate"])
def test_traffic_phases(simulator, mode, tmp_path):
    result = run_bench(
        get_design("rn1"),
        {"mode": mode, "seed": 0x5EED},
        simulator,
        seed=7,
        bench={"frames": 64, "coverage": True},
        root=tmp_path,
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0
    # Random, hot spot, then the stress phases (rounds: four times as many, short ones),
    # which leave no hole of the model's coverage here (docs/dehon.md, "Coverage"): no
    # steered rounds.
    phases = {"random": 64, "hotspot": 64, "rounds": 4 * 64, "burst": 64}
    assert s["transmissions"] == {**phases, "burst-turns": 64, "noise": 64}
    assert s["checked"] == sum(s["transmissions"].values())
    assert s["heads_blocked"] > 0 and s["turned_segments"] > 0
    assert s["coverage"]["holes"] == [], s["coverage"]
    release = s["coverage"]["points"]["release/router"]["bins"]
    assert release["BLOCKED forward, not closing"] > 0  # a reply refused after a second turn


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_runtime_traffic_phases(simulator, tmp_path):
    result = run_bench(
        get_design("rn1"),
        {"mode": "runtime", "seed": 0x5EED},
        simulator,
        seed=7,
        bench={"frames": 64, "coverage": True},
        root=tmp_path,
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0
    # Every phase with the input at 0, then at 1, then random traffic and rounds with it
    # flipping under the traffic, then rounds steered into the coverage's holes (three
    # heads for one crossbar's held output are rare at this point).
    phases = {"random": 64, "hotspot": 64, "rounds": 4 * 64, "burst": 64}
    phases.update({"burst-turns": 64, "noise": 64})
    want = {f"{k}@{m}": v for m in ("primary", "alternate") for k, v in phases.items()}
    want.update({"random@flip": 64, "rounds@flip": 4 * 64})
    steered = s["transmissions"].pop("steered")
    assert s["transmissions"] == want and 0 < steered < 100
    assert s["checked"] == sum(want.values()) + steered
    assert s["alternate_flips"] > 20 and s["heads_blocked"] > 0 and s["turned_segments"] > 0
    assert s["coverage"]["holes"] == [], s["coverage"]
    assert s["coverage"]["points"]["alternate/router"]["bins"]["flipped, circuits held"] > 0


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")
# The run-time mode's bench runs both modes and flips between them; each fixed mode alone is a
# slow point.
@pytest.mark.parametrize(
    "mode",
    [*(pytest.param(m, marks=pytest.mark.slow) for m in ("primary", "alternate")), "runtime"],
)
def test_round_robin_traffic_phases(mode, tmp_path):
    result = run_bench(
        get_design("rn1"),
        {"mode": mode, "seed": 0x5EED, "priority": "round-robin"},
        "icarus",
        seed=5,
        bench={"frames": 48, "coverage": True},
        root=tmp_path,
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0 and s["checked"] > 0 and s["heads_blocked"] > 0
    # The round-robin ranking lets every input, the last of its group too, win a contest.
    assert s["coverage"]["holes"] == [], s["coverage"]
    ranks = [p for name, p in s["coverage"]["points"].items() if name.startswith("rank/")]
    assert all("input 7" in p["bins"] or "input 3" in p["bins"] for p in ranks)


@pytest.mark.slow  # the default point on Verilator: build and run
@pytest.mark.parametrize("mode", ["primary", "alternate", "runtime"])
def test_coverage_closes_at_the_default_point(mode, tmp_path, capsys):
    from fattree.scripts.main import main

    argv = ["sim", "rn1", "-p", f"mode={mode}", "--coverage", "--json"]
    code = main([*argv, "--build-root", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["coverage"]["holes"] == []
    assert code == 0 and out["passed"]


def sweep(simulator, mode, router_seeds, bench_seeds, root):
    """Every (router seed, bench seed) pair through the bench; the build is reused across
    bench seeds (same Verilog, same folder)."""
    seen = []
    for router_seed in router_seeds:
        for bench_seed in bench_seeds:
            result = run_bench(
                get_design("rn1"),
                {"mode": mode, "seed": router_seed},
                simulator,
                seed=bench_seed,
                bench={"frames": 48},
                root=root,
            )
            s = result.summary
            where = f"{mode} router seed {router_seed} bench seed {bench_seed}"
            assert result.passed, f"{where}: {s.get('first_mismatch') or result.log}"
            assert s["mismatches"] == 0 and s["checked"] > 0, where
            seen.append(s["cycles"])
    # Different bench seeds drove different traffic.
    assert len(set(seen)) >= len(bench_seeds)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")
@pytest.mark.parametrize("mode", ["primary", "alternate", "runtime"])
def test_icarus_sweep(mode, tmp_path):
    # Icarus builds in a second: four router seeds (four LFSRs) x four bench seeds; the
    # alternate mode has no LFSR, so eight bench seeds instead.
    if mode == "alternate":
        sweep("icarus", mode, [1], range(11, 19), tmp_path)
    else:
        sweep("icarus", mode, [1, 0x00FF, 0x8001, 0xFFFF], range(11, 15), tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["primary", "alternate", "runtime"])
def test_verilator_sweep(mode, tmp_path):
    # One Verilator build (most of a minute) per mode: one router seed, eight bench seeds.
    sweep("verilator", mode, [0xACE1], range(21, 29), tmp_path)


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_broken_reference_is_caught(simulator, tmp_path):
    result = run_bench(
        get_design("rn1"),
        {"mode": "primary", "seed": 1},
        simulator,
        seed=3,
        bench={"frames": 16, "mutation": True},
        root=tmp_path,
    )
    assert not result.passed
    assert result.failed == 1
    assert result.summary["cycle_mismatches"] == 1
