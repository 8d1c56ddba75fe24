"""Plumbing shared by the subcommands: errors, output, paths, design/parameter options."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from ..designs import DESIGNS, PORTS, Design, get_design, parse_params

__all__ = [
    "CliError",
    "add_design_arguments",
    "add_build_root_argument",
    "given_once",
    "add_ports_argument",
    "resolve_ports",
    "resolve_design",
    "emit",
    "writable_file",
    "progress",
    "progress_display",
    "ProgressDisplay",
]


class CliError(Exception):
    """A one-line error for the user; ``main`` prints it and exits with ``code``."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def add_design_arguments(parser, *, designs: list[str] | None = None) -> None:
    parser.add_argument("design", help="design name: " + ", ".join(designs or []))
    add_param_argument(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def add_param_argument(parser) -> None:
    parser.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a design parameter (repeatable), e.g. --param width=8",
    )


def resolve_design(args) -> tuple[Design, dict[str, int]]:
    try:
        design = get_design(args.design)
        return design, parse_params(design, given_once(args.param))
    except ValueError as exc:
        raise CliError(str(exc)) from None


def given_once(items: list[str] | None, option: str = "--param") -> list[str]:
    """The ``NAME=VALUE`` texts of a repeatable option, or a one-line CliError if a NAME comes
    twice (the last would silently win)."""
    seen: dict[str, str] = {}
    for item in items or []:
        name, equals, _ = item.partition("=")
        if equals and name in seen:
            raise CliError(f"{option} {name} given twice ({seen[name]}, {item}); give it once")
        seen[name] = item
    return list(items or [])


def add_build_root_argument(parser, default: str = "build", where: str = "") -> None:
    """``--build-root DIR``: where a command that writes puts its build folders (``where``
    says what goes under DIR, e.g. ``<kind>/<design>/<params>/``)."""
    parser.add_argument(
        "--build-root",
        default=default,
        metavar="DIR",
        help=f"root of the build folders (default {default}{': ' + where if where else ''})",
    )


def add_ports_argument(parser) -> None:
    axis = sorted(name for name, d in DESIGNS.items() if d.axis)
    parser.add_argument(
        "--ports",
        choices=PORTS,
        default="native",
        help="top-level ports: native (the design's own streams, default) or axis (AXI4-Stream "
        f"names, top <design>_axis, docs/axis.md; designs: {', '.join(axis)})",
    )


def resolve_ports(design, ports: str) -> str:
    """``ports``, or a one-line CliError if the design has no such top."""
    try:
        design.top(ports)
    except ValueError as error:
        raise CliError(str(error)) from None
    return ports


def emit(args, data: dict, text: str) -> None:
    """Print ``data`` as JSON with --json, else the human ``text``."""
    if getattr(args, "json", False):
        json.dump(data, sys.stdout, indent=2, sort_keys=True, default=str)
        sys.stdout.write("\n")
    else:
        print(text)


def writable_file(path: str | Path) -> Path:
    """Create the parent folder and check the file can be written, or raise CliError."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        with open(path, "a"):
            pass
        if not existed:  # a run that fails later leaves no empty file behind
            path.unlink()
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}", code=1) from None
    return path


def writable_dir(path: str | Path) -> Path:
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-probe"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise CliError(f"cannot write to {path}: {exc.strerror or exc}", code=1) from None
    return path


def progress(message: str, *, quiet: bool = False) -> None:
    """Progress for long runs goes to stderr so --json output on stdout stays clean."""
    if not quiet:
        print(message, file=sys.stderr, flush=True)


def _terminal_console():
    """A rich Console on stderr if stderr is a terminal, else None (pipes, CI logs, pytest).

    Our own test rather than rich's: rich counts FORCE_COLOR (set by many CI systems) as a
    terminal, and a live display in a log file is a mess of redrawn lines.
    """
    if os.environ.get("TERM") == "dumb":
        return None
    try:
        if not sys.stderr.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    from rich.console import Console

    return Console(stderr=True)


class ProgressDisplay:
    """What a long run reports, given to it by :func:`progress_display`.

    Call it (or ``step``) with a line of text when a step starts: it is the ``progress(str)``
    callback that experiments and the synthesis flow receive. A run that knows how many steps
    it has says so with ``total(n)`` and moves the bar with ``advance()``; on a terminal that
    adds a bar with a count and an ETA, elsewhere it prints nothing more.

    Three modes: ``quiet`` (--json, --quiet) prints nothing; off a terminal each step is one
    plain line on stderr; on a terminal a transient status line shows a spinner, the step's
    text and its elapsed time, and a finished step stays printed with the time it took.
    """

    def __init__(self, *, quiet: bool = False, live=None):
        self.quiet = quiet
        self._live = live  # a started rich.progress.Progress, or None (plain or quiet)
        self._task = None  # added on the first step, so nothing shows before it
        self._text: str | None = None
        self._started = 0.0

    def __call__(self, text: str) -> None:
        self.step(text)

    def step(self, text: str) -> None:
        """A new step starts; the previous one, if any, is done."""
        if self.quiet:
            return
        if self._live is None:
            print(text, file=sys.stderr, flush=True)
            return
        self._finish_step()
        self._text, self._started = text, time.monotonic()
        self._update()

    def total(self, steps: int | None) -> None:
        """The run has ``steps`` counted steps (None: unknown, a spinner only)."""
        if self._live is not None:
            self._update(total=steps)

    def advance(self, steps: int = 1) -> None:
        """``steps`` more of the counted steps are done."""
        if self._live is not None:
            self._update(advance=steps)

    def _update(self, **fields) -> None:
        if self._task is None:
            self._task = self._live.add_task("", total=None, visible=False)
        self._live.update(self._task, **fields)
        # A long step text is cut to the terminal's width, so the spinner and times stay in
        # view: room for the spinner and elapsed time, and the bar, count and ETA if counted.
        task = self._live.tasks[0]
        room = self._live.console.width - (14 if task.total is None else 62)
        text = self._text or ""
        if len(text) > room:
            text = text[: max(room - 1, 8)] + "\u2026"
        self._live.update(self._task, description=text, visible=True)

    def _finish_step(self) -> None:
        """Leave the finished step printed above the live line, with the time it took."""
        if self._text is not None:
            seconds = time.monotonic() - self._started
            from rich.text import Text

            line = Text.assemble(("\u2713 ", "green"), self._text, (f" ({seconds:.1f} s)", "dim"))
            self._live.console.print(line, highlight=False)
            self._text = None


@contextlib.contextmanager
def progress_display(quiet: bool = False, *, console=None) -> Iterator[ProgressDisplay]:
    """``with progress_display(quiet) as show: show("yosys ..."); ...``: see ProgressDisplay.

    ``console`` (a ``rich.console.Console``) forces the live display onto it, as the tests do;
    by default it is used only when stderr is a terminal.
    """
    if quiet:
        yield ProgressDisplay(quiet=True)
        return
    console = console or _terminal_console()
    if console is None:
        yield ProgressDisplay()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class IfCounted(ProgressColumn):
        """``column``, shown only once the run has said how many steps it has."""

        def __init__(self, column):
            super().__init__()
            self.column = column

        def render(self, task):
            return self.column.render(task) if task.total is not None else Text("")

    columns = [
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        IfCounted(BarColumn(bar_width=30)),
        IfCounted(MofNCompleteColumn()),
        TimeElapsedColumn(),
        IfCounted(TimeRemainingColumn()),
    ]
    with Progress(*columns, console=console, transient=True) as live:
        show = ProgressDisplay(live=live)
        try:
            yield show
        finally:
            show._finish_step()
