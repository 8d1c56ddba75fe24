"""What a module imports, read from its source (``ast``), not run: the layer walls of
tests/test_layers.py and the sweep's cache key (the source a job can reach) both need it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

__all__ = ["imported_names"]

#: A ``"module:attribute"`` string: how the registries name what they import on first use
#: (``"fattree.hdl.circuit_tree:CircuitFatTree"``), relative with leading dots as in ``from``.
_NAMED = re.compile(r"(\.*)([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):[A-Za-z_]\w*")


def imported_names(
    module: str, path: Path, source: str | bytes | None = None, *, named: bool = False
) -> set[str]:
    """Absolute names of everything ``module`` (its file ``path``) imports, at the top or
    inside functions; ``from x import y`` gives ``x`` and ``x.y``.

    With ``named``, a ``"x.y:attr"`` string constant is an import too (``x.y`` and
    ``x.y.attr``): the registries resolve such names when they are used, so the walls must
    see them. A name with leading dots is relative, as in ``from``; a bare ``"x:attr"``
    whose ``x`` is a module beside this one is read as that module (the soak table names its
    soaks so); any other name is absolute."""
    if source is None:
        source = path.read_text()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(package, node.level, node.module or "")
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif named and isinstance(node, ast.Constant) and isinstance(node.value, str):
            if found := _NAMED.fullmatch(node.value):
                dots, name = found.groups()
                if not dots and "." not in name and _beside(path, name):
                    dots = "."
                base = _absolute(package, len(dots), name)
                names.update({base, f"{base}.{node.value.rpartition(':')[2]}"})
    return names


def _absolute(package: str, level: int, name: str) -> str:
    """``name`` imported ``level`` dots up from inside ``package`` (0: absolute)."""
    if not level:
        return name
    anchor = package.split(".")
    anchor = anchor[: len(anchor) - level + 1]
    return ".".join(anchor + ([name] if name else []))


def _beside(path: Path, name: str) -> bool:
    """Whether the folder of ``path`` holds a module or package ``name``."""
    return (path.parent / f"{name}.py").is_file() or (path.parent / name / "__init__.py").is_file()
