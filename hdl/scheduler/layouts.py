"""The scheduler's payloads (the stream interface) and its pipeline registers."""

from amaranth.lib import data

from ...spec.scheduler import Op, request_fields, result_fields

__all__ = ["request_layout", "result_layout", "PipelineLayouts"]


def _layout(fields) -> data.StructLayout:
    """A :mod:`fattree.spec.scheduler` field list as a layout (``op`` typed as :class:`Op`)."""
    return data.StructLayout(
        {
            name: Op
            if name == "op"
            else data.ArrayLayout(*size)
            if isinstance(size, tuple)
            else size
            for name, size in fields
        }
    )


def request_layout(levels: int, w: int, m: int | None = None) -> data.StructLayout:
    """``op``, ``src``, ``dst`` and ``ports`` (``P_0 .. P_{l-2}``, read by ``RELEASE`` only);
    nodes of FT(levels, m, w), ``m`` defaulting to ``w``."""
    return _layout(request_fields(levels, w, m))


def result_layout(levels: int, w: int, m: int | None = None) -> data.StructLayout:
    """``op``, ``src``, ``dst``, ``granted`` and ``ports`` (``P_0 .. P_{l-2}``)."""
    return _layout(result_fields(levels, w, m))


class PipelineLayouts:
    """The layouts of the registers between the stages of FT(levels, w)'s pipeline (or
    FT(levels, m, w)'s: ``node_bits`` = ``levels * log2 m``, default ``levels * port_bits``;
    ``switch_bits`` the widest switch number of any level).

    Attributes
    ----------
    slot : StructLayout
        A command on its way up: ``valid``, ``op``, ``src``, ``dst``, ``height`` (the common
        level ``H``), ``alive`` (not refused so far), ``s``, ``d`` (the switches ``s_h``,
        ``d_h`` of the level it is at) and ``ports`` (``P_0 .. P_{l-2}``).
    write : StructLayout
        A write-back of both link memories of one level: ``enable``, the rows ``row_u``
        (``s_h``) and ``row_d`` (``d_h``), the new vectors ``new_u``, ``new_d``.
    update : StructLayout
        The U register: the ``slot`` already moved on to level ``h+1``, its ``write`` to level
        ``h``, and ``take``, the port taken one-hot (``P_h`` is encoded from it after U).
    """

    def __init__(
        self, levels: int, w: int, port_bits: int, switch_bits: int, node_bits: int | None = None
    ):
        node_bits = levels * port_bits if node_bits is None else node_bits
        self.slot = data.StructLayout(
            {
                "valid": 1,
                "op": Op,
                "src": node_bits,
                "dst": node_bits,
                "height": range(levels),
                "alive": 1,
                "s": switch_bits,
                "d": switch_bits,
                "ports": data.ArrayLayout(port_bits, levels - 1),
            }
        )
        self.write = data.StructLayout(
            {"enable": 1, "row_u": switch_bits, "row_d": switch_bits, "new_u": w, "new_d": w}
        )
        self.update = data.StructLayout({"slot": self.slot, "write": self.write, "take": w})
