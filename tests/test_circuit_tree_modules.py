"""The circuit trees' Verilog (``fattree verilog circuit-tree``, ``circuit-tree-paper``) holds one
module per kind of block: every router of a level is one module, every network interface one.

The routers and interfaces of a tree differ only in what the tree connects to them (the random
bit, the subtree or node number), so :func:`fattree.verilog_sharing.share_modules` writes each
kind once; a constant of one instance folded into its block would make it a module of its own
again, and the text grow with every instance (the 16-leaf fast tree was 67,789 lines, the
paper tree 49,076). The line bounds are the measured sizes with about 20 % margin.
"""

from __future__ import annotations

import re

import pytest

from fattree.designs import DESIGNS, elaborate_verilog, parse_params

# An instance in the top module: `<module> <name> (`, the name a router's `r<level>_<t>` or an
# interface's `ni<node>`.
_INSTANCE = re.compile(r"^\s+(\\\S+ |\w+)\s+(r(\d+)_\d+|ni\d+) \($", re.M)


def block_modules(text: str) -> dict[str, set[str]]:
    """The modules the top instantiates for each kind of block: ``"r<level>"`` for the
    routers of a level, ``"ni"`` for the interfaces."""
    kinds: dict[str, set[str]] = {}
    for module, _name, level in _INSTANCE.findall(text):
        kind = "ni" if level == "" else f"r{level}"
        kinds.setdefault(kind, set()).add(module.strip())
    return kinds


@pytest.mark.parametrize(
    "design, leaves, bound",
    [
        ("circuit-tree-paper", 4, 4_500),
        ("circuit-tree", 4, 8_000),
        ("circuit-tree-paper", 16, 11_000),
        pytest.param("circuit-tree", 16, 21_000, marks=pytest.mark.slow),
    ],
)
def test_one_module_per_router_level_and_one_interface_module(design, leaves, bound):
    d = DESIGNS[design]
    text = elaborate_verilog(d, parse_params(d, [f"leaves={leaves}"]))
    kinds = block_modules(text)
    levels = leaves.bit_length() - 1
    assert set(kinds) == {"ni", *(f"r{level}" for level in range(levels))}, kinds
    assert all(len(modules) == 1 for modules in kinds.values()), kinds
    assert text.count("\n") < bound


def test_back_off_interfaces_are_one_module():
    # With back-off every interface has an LFSR of its own seed: the tree holds it, so the
    # interfaces stay one module.
    d = DESIGNS["circuit-tree-paper"]
    text = elaborate_verilog(d, parse_params(d, ["leaves=4", "retry=backoff"]))
    kinds = block_modules(text)
    assert len(kinds["ni"]) == 1 and all(len(m) == 1 for m in kinds.values()), kinds
