import gc
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from hypothesis import settings

from fattree import toolchain


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="also run tests marked slow")
    parser.addoption(
        "--run-wheel",
        action="store_true",
        help="also run the wheel test (builds the wheel, installs it into a clean venv)",
    )


#: Examples per hypothesis test that does not set its own count: a quick sample in the default
#: run, hypothesis's usual 100 with --run-slow.
settings.register_profile("default-run", max_examples=25)
settings.register_profile("run-slow", max_examples=100)


def pytest_configure(config):
    toolchain.setup_environment()
    settings.load_profile("run-slow" if config.getoption("--run-slow") else "default-run")
    # YoWASP's first run compiles WASM and its cache write is not atomic: warm it once here,
    # in the controller, before xdist workers start (a no-op once warm).
    if not hasattr(config, "workerinput"):
        toolchain.warm_yowasp()


def pytest_collection_modifyitems(config, items):
    wheel = pytest.mark.skip(reason="wheel: give --run-wheel")
    slow = pytest.mark.skip(reason="slow: give --run-slow")
    for item in items:
        if "wheel" in item.keywords and not config.getoption("--run-wheel"):
            item.add_marker(wheel)
        elif "slow" in item.keywords and not config.getoption("--run-slow"):
            item.add_marker(slow)


@pytest.fixture
def built_but_unused():
    """For tests that build components and never elaborate them (a parameter accepted, a
    command's heavy work stubbed out): Amaranth warns when such an object is collected, and
    with warnings as errors that fails whichever test happens to run the garbage collector
    next. Collect them here, where the warning is expected."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        yield
        gc.collect()
