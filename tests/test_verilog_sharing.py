"""Identical Verilog modules written once (fattree/verilog_sharing.py)."""

import re

from fattree.verilog_sharing import share_modules

CHILD = """(* generator = "Amaranth" *)
module \\top.ni{k} (clk, \\port${n}$0 , y);
  input clk;
  input \\port${n}$0 ;
  output y;
  reg \\$1{n} ;
  always @(posedge clk) \\$1{n} <= \\port${n}$0 ;
  assign y = \\$1{n} ;
endmodule
"""

TOP = """module top(clk, a, b, y0, y1);
  input clk, a, b;
  output y0, y1;
  \\top.ni0  ni0 (
    .clk(clk),
    .\\port$70$0 (a),
    .y(y0)
  );
  \\top.ni1  ni1 (
    .clk(clk),
    .\\port$90$0 (b),
    .y(y1)
  );
endmodule
"""


def _modules(text):
    return re.findall(r"^module (\\\S+|[^\s(]+)", text, re.M)


def test_copies_become_one_module_under_their_common_name():
    text = TOP + CHILD.format(k=0, n=70) + CHILD.format(k=1, n=90)
    shared = share_modules(text)
    assert _modules(shared) == ["top", "\\top.ni"]
    # Both instances name the kept module, the second's automatic port renamed to its name.
    assert shared.count("\\top.ni  ni0 (") == shared.count("\\top.ni  ni1 (") == 1
    assert ".\\port$70$0 (a)" in shared and ".\\port$70$0 (b)" in shared
    assert "$90" not in shared
    assert shared.count('(* generator = "Amaranth" *)') == 1  # the copy's attributes went too
    assert share_modules(shared) == shared


def test_different_modules_stay_apart():
    other = CHILD.format(k=1, n=90).replace("<= \\port$90$0 ;", "<= ~\\port$90$0 ;")
    text = TOP + CHILD.format(k=0, n=70) + other
    assert share_modules(text) == text


def test_a_common_stem_that_names_nothing_keeps_the_first_name():
    text = TOP + CHILD.format(k=0, n=70) + CHILD.format(k=1, n=90)
    text = text.replace("\\top.ni1", "\\top.up1").replace("\\top.ni0", "\\top.down0")
    shared = share_modules(text)
    assert _modules(shared) == ["top", "\\top.down0"]
    assert shared.count("\\top.down0  ") == 2


def test_copies_that_list_their_ports_in_another_order_are_alike():
    # Instances connect by name, so the order of a module's port list is not the circuit.
    other = CHILD.format(k=1, n=90).replace("(clk, \\port$90$0 , y)", "(y, clk, \\port$90$0 )")
    text = TOP + CHILD.format(k=0, n=70) + other
    shared = share_modules(text)
    assert _modules(shared) == ["top", "\\top.ni"]
    assert "module \\top.ni (clk, \\port$70$0 , y);" in shared
    assert ".\\port$70$0 (a)" in shared and ".\\port$70$0 (b)" in shared


def test_placed_counts_through_the_hierarchy():
    from fattree.verilog_sharing import placed

    text = share_modules(TOP + CHILD.format(k=0, n=70) + CHILD.format(k=1, n=90))
    assert text.count("module \\top.ni") == 1
    assert placed(text, "\\top.ni", "top") == 2  # one module written, placed twice

    def module(name: str, cell: str, *instances: str) -> str:
        places = "".join(f"  {cell} {i} (\n    .a(a)\n  );\n" for i in instances)
        return f"module {name}(a);\n  input a;\n{places}endmodule\n"

    leaf = module("leaf", "DP16KD #(.X(1))", "ram")
    mid = module("mid", "leaf", "l0", "l1")
    top = module("t", "mid", "m0", "m1")
    assert placed(top + mid + leaf, "DP16KD", "t") == 4
    assert placed(top + mid + leaf, "DP16KD", "leaf") == 1
