"""Map the top-level folders into the ``fattree`` namespace (the rest is in pyproject.toml).

The folders show the design (hdl, sim, boards, scripts); setuptools' ``package-dir`` maps
them into ``fattree.*``. Sub-packages are found by walking each folder, so a new one needs no
edit here.
"""

import os

from setuptools import setup

ROOTS = {
    "fattree": "fattree",
    "fattree.hdl": "hdl",
    "fattree.sim": "sim",
    "fattree.boards": "boards",
    "fattree.scripts": "scripts",
}


def packages():
    found = []
    for name, folder in ROOTS.items():
        for path, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
            if "__init__.py" in files:
                rel = os.path.relpath(path, folder)
                found.append(name if rel == "." else f"{name}.{rel.replace(os.sep, '.')}")
    return found


setup(package_dir=ROOTS, packages=packages())
