"""The documentation site builds with warnings as errors, and says what the package has."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fattree import hdl
from fattree.designs import DESIGNS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_site_builds_without_warnings_and_documents_the_api(tmp_path):
    for module in ("sphinx", "myst_parser", "furo"):
        pytest.importorskip(
            module, reason="the docs extra is not installed: pip install -e '.[docs]'"
        )
    out = tmp_path / "html"
    # One build checks everything below: the build takes seconds, and xdist would run a
    # module-scoped build once per worker.
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", DOCS, out],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # -q prints only warnings and errors, and -W makes any of them fail: nothing at all.
    assert run.stderr.strip() == "", run.stderr

    api = (out / "api.html").read_text()
    documented = set(re.findall(r'id="fattree\.hdl\.(\w+)"', api))
    missing = [name for name in hdl.__all__ if name not in documented]
    assert not missing, f"api.md lacks autoclass entries for fattree.hdl.{missing}"

    # Every design's page (the design record names it) is a page of the site.
    for design in DESIGNS.values():
        page = Path(design.docs).relative_to("docs").with_suffix(".html")
        assert (out / page).is_file(), f"{design.name}: {design.docs} is not in the site"


def test_getting_started_verilog_example_instantiates_the_generated_top(tmp_path):
    """docs/snippets/my_design.v (shown on the getting-started page) compiles against the
    Verilog the page tells the reader to generate."""
    if shutil.which("iverilog") is None:
        pytest.skip("Icarus Verilog is not installed (apt-get install -y iverilog)")
    page = (DOCS / "getting_started.md").read_text()
    command = "fattree verilog circuit-tree --ports axis -p leaves=4 -o circuit_tree_axis.v"
    assert command in page and command in (DOCS / "snippets" / "my_design.v").read_text()
    # The page's own command, in a subprocess: the many components it elaborates are then
    # not collected (and checked for use) in the middle of another test of this worker.
    verilog = tmp_path / "circuit_tree_axis.v"
    args = command.split()[1:-1] + [str(verilog)]
    subprocess.run([sys.executable, "-m", "fattree", *args], check=True, capture_output=True)
    run = subprocess.run(
        ["iverilog", "-g2012", "-Wall", "-o", tmp_path / "a.out", "-s", "my_design"]
        + [verilog, DOCS / "snippets" / "my_design.v"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    # Ports are connected by name: a port the top does not have is an error above, an input
    # of the top left unconnected a warning here.
    assert "my_design.v" not in run.stderr, run.stderr
