import pytest

from fattree import toolchain


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="also run tests marked slow")


def pytest_configure(config):
    toolchain.setup_environment()
    # YoWASP's first run compiles WASM and its cache write is not atomic: warm it once here,
    # in the controller, before xdist workers start (a no-op once warm).
    if not hasattr(config, "workerinput"):
        toolchain.warm_yowasp()


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: give --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
