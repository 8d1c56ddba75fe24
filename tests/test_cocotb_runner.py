"""The cocotb runner's Verilator build: only the top module is visible to VPI.

cocotb's runner passes ``--public-flat-rw`` (every signal of every module public, which
costs Verilator most of its optimisations); ``run_bench`` turns it off with the documented
``--no-public-flat-rw`` in the build arguments and a control file for the top module. If
cocotb ever passes the flag after the user's arguments, or Verilator stops taking the
``--no-`` form, inner modules show up in the symbol table again and this test fails.
"""

import re
import shutil

import pytest

from fattree.designs import DESIGNS
from fattree.sim.cocotb_runner import run_bench

pytestmark = pytest.mark.cocotb


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
def test_verilator_makes_only_the_top_module_public(tmp_path):
    params = {"leaves": 2, "width": 1, "length": 1, "seed": 1, "retry": "immediate"}
    result = run_bench(DESIGNS["circuit-tree-paper"], params, "verilator", root=tmp_path)
    assert result.passed, result.summary
    (syms,) = tmp_path.rglob("Vtop__Syms__Slow.cpp")
    scopes = set(re.findall(r"__Vscopep_(\w+)->varInsert", syms.read_text()))
    # TOP holds the ports, circuit_tree_paper the top module's own signals; the routers and
    # interfaces below it (public under --public-flat-rw) must not be there.
    assert scopes == {"TOP", "circuit_tree_paper"}


def test_verilator_builds_use_ccache_when_it_is_installed(tmp_path):
    # The dev install brings ccache; a user's own OBJCACHE (even empty, to turn it off) is kept.
    from fattree import toolchain

    fake = tmp_path / "ccache"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    env = {"PATH": str(tmp_path)}
    toolchain.setup_environment(env)
    assert env["OBJCACHE"] == "ccache"
    env = {"PATH": str(tmp_path), "OBJCACHE": ""}
    toolchain.setup_environment(env)
    assert env["OBJCACHE"] == ""
