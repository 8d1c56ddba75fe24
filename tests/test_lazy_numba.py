"""numba is optional (the ``fast`` extra) and imported only when a compiled kernel first runs."""

import subprocess
import sys
import textwrap


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )


def test_commands_and_fast_modules_import_without_numba():
    proc = _python(
        """
        import sys
        from fattree.scripts.main import main, make_parser
        make_parser()  # every command and experiment's options
        import fattree.sim.fast.circuit_cycles, fattree.sim.fast.circuit_rounds
        import fattree.sim.fast.schedulers
        main(["verilog", "selector", "-o", "/dev/null"])
        assert "numba" not in sys.modules, "numba imported before a kernel ran"
        import numpy as np
        from fattree.sim.fast import circuit_rounds
        src, dst = circuit_rounds.transpose(16)
        result = circuit_rounds.delivery_rounds(16, src, dst, np.random.default_rng(1))
        assert "numba" in sys.modules
        assert result.rounds >= 1
        """
    )
    assert proc.returncode == 0, proc.stderr


def test_a_kernel_without_numba_says_which_extra_to_install():
    proc = _python(
        """
        import sys, importlib.abc

        class NoNumba(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name == "numba" or name.startswith("numba."):
                    raise ModuleNotFoundError(f"No module named {name!r}")
                return None

        sys.meta_path.insert(0, NoNumba())
        import numpy as np
        from fattree.sim.fast import circuit_rounds
        from fattree.toolchain import ToolMissing
        src, dst = circuit_rounds.transpose(16)  # a plain helper works
        try:
            circuit_rounds.delivery_rounds(16, src, dst, np.random.default_rng(1))
        except ToolMissing as error:
            print(error)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        "numba not found; install it with: pip install 'fattree[fast]'  (or: pip install numba)"
    )
