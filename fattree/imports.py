"""What a module imports, read from its source (``ast``), not run: the layer walls of
tests/test_layers.py and the sweep's cache key (the source a job can reach) both need it."""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["imported_names"]


def imported_names(module: str, path: Path, source: str | bytes | None = None) -> set[str]:
    """Absolute names of everything ``module`` (its file ``path``) imports, at the top or
    inside functions; ``from x import y`` gives ``x`` and ``x.y``."""
    if source is None:
        source = path.read_text()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names
