"""``python -m fattree``: the ``fattree`` command line, for when the console script is not on
``PATH`` (or to pick the interpreter explicitly).

The command line lives in ``fattree.scripts``, which nothing in the library imports
(docs/architecture.md, ``tests/test_layers.py``). This module is an entry point, not a
library module: like the ``[project.scripts]`` entry in pyproject.toml, it names the command
line by string and runs it, so no import edge from the package root to ``scripts`` exists.
"""

import runpy

if __name__ == "__main__":
    runpy.run_module("fattree.scripts", run_name="__main__", alter_sys=True)
