"""The public Python API: ``fattree.hdl`` exports one component class per design (and the
AXI4-Stream tops), each constructed with the design's parameters as keyword arguments."""

import inspect
import subprocess
import sys

import pytest
from amaranth.lib import wiring

import fattree.hdl
from fattree.designs import DESIGNS


def _built(design, ports="native"):
    return design.build(design.defaults(), ports)


def test_every_design_and_axi_top_class_is_exported_and_nothing_else(built_but_unused):
    made = {type(_built(d)) for d in DESIGNS.values()}
    for d in DESIGNS.values():
        if d.axis is not None:
            made.add(type(_built(d, "axis")))
    exported = {getattr(fattree.hdl, name) for name in fattree.hdl.__all__}
    assert exported == made
    assert sorted(cls.__name__ for cls in made) == sorted(fattree.hdl.__all__)


@pytest.mark.parametrize("name", fattree.hdl.__all__)
def test_each_export_is_a_documented_component_class(name):
    cls = getattr(fattree.hdl, name)
    assert inspect.isclass(cls) and issubclass(cls, wiring.Component)
    assert cls.__module__.startswith("fattree.hdl.")
    assert len(inspect.getdoc(cls) or "") > 40, f"{name} needs a docstring for the reference"
    assert name in dir(fattree.hdl)


@pytest.mark.parametrize("design", sorted(DESIGNS), ids=str)
def test_the_class_takes_the_designs_parameters_as_keywords(design, built_but_unused):
    # The same component as the command line builds, from the design's parameter names and
    # defaults (`fattree designs NAME`), with no adapter in between.
    d = DESIGNS[design]
    reference = _built(d)
    made = getattr(fattree.hdl, type(reference).__name__)(**d.defaults())
    assert made.signature == reference.signature


def test_bad_names_and_a_bare_import():
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        fattree.hdl.Nope  # noqa: B018
    code = "import sys, fattree.hdl; assert 'amaranth' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
