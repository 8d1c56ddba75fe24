"""One Verilog module for each set of identical ones.

Amaranth 0.5 writes every elaborated component as a module of its own, so a tree of 16
identical network interfaces is 16 copies of one module, differing only in their names, in
the numbers of their automatic names (``$17``, ``\\port$12633$0``) and in the order of their
port lists (the order in which the design made the nets). :func:`share_modules` keeps
one module of each such set, under the set's common name, and points every instance at it,
renaming the automatic port names an instance connects; what is left is the same circuit.
"""

from __future__ import annotations

import os
import re

__all__ = ["share_modules", "placed"]

_MODULE_RE = re.compile(r"^module (\\\S+ |\S+?) ?\((.*?)\);\n(.*?)^endmodule\n", re.S | re.M)
# Automatic names: an identifier with a `$` and a number in it (escaped or not).
_AUTO_RE = re.compile(r"\\[^\s]*\$\d[^\s]* |[A-Za-z_][\w]*\$\d[\w$]*")


def _key(header: str, body: str) -> tuple[str, list[str]]:
    """The module's text with its automatic names numbered by first appearance in the body,
    and those names in that order. The port list is taken in sorted order: Amaranth lists a
    module's ports in the order the design made their nets, which differs between copies
    wired to different neighbours, and every instance connects its ports by name."""
    order: dict[str, str] = {}

    def number(match: re.Match) -> str:
        return order.setdefault(match.group(0), f"@{len(order)}@")

    text = _AUTO_RE.sub(number, body)
    ports = sorted(_AUTO_RE.sub(number, port) for port in _ports(header))
    return ", ".join(ports) + ");\n" + text, list(order)


def _ports(header: str) -> list[str]:
    return [p.strip() for p in header.replace("\n", " ").split(",") if p.strip()]


def _common_name(names: list[str], taken: set[str]) -> str:
    """The names' common stem without a trailing index (``\\tree.ni0``, ``\\tree.ni1`` ->
    ``\\tree.ni``), if it is free; else the first name."""
    escaped = names[0].startswith("\\")
    stem = os.path.commonprefix([n.strip() for n in names]).rstrip("0123456789_")
    name = stem + " " if escaped else stem
    # A stem that ends where a name of its own should begin (``\\tree.`` of ``\\tree.up0``
    # and ``\\tree.down0``) names nothing.
    ok = re.fullmatch(r"\\.*[\w$]" if escaped else r"[A-Za-z_]\w*", stem) is not None
    return name if ok and name not in taken else names[0]


def _rename_instances(text: str, renames: dict[str, tuple[str, dict[str, str]]]) -> str:
    """Every instance of a module ``old`` of ``renames`` (``old -> (new, ports)``) made an
    instance of ``new``, its connections to the automatic ports renamed by ``ports``; in one
    pass over the text."""
    names = "|".join(map(re.escape, sorted(renames, key=len, reverse=True)))
    head = re.compile(rf"^(\s*)({names})(\s+\S+\s*\(\n)(.*?^\s*\);)", re.S | re.M)

    def instance(match: re.Match) -> str:
        new, ports = renames[match.group(2)]
        block = match.group(4)
        for a, b in ports.items():
            b = b.strip()
            port = f".{b} (" if b[0] == "\\" else f".{b}("
            block = re.sub(rf"\.{re.escape(a.strip())}\s*\(", lambda _m, p=port: p, block)
        return f"{match.group(1)}{new.strip()}{match.group(3)}{block}"

    return head.sub(instance, text)


def share_modules(text: str) -> str:
    """Verilog ``text`` with each set of identical modules written once (see the module's
    description); repeated until no two modules are alike (a parent's copies become alike
    once their children are shared)."""
    while True:
        modules = [
            (m.group(1), m.group(2), m.group(3), m.span()) for m in _MODULE_RE.finditer(text)
        ]
        groups: dict[str, list[int]] = {}
        keys = []
        for k, (_name, header, body, _span) in enumerate(modules):
            key, autos = _key(header, body)
            keys.append(autos)
            groups.setdefault(key, []).append(k)
        sets = [ks for ks in groups.values() if len(ks) > 1]
        if not sets:
            return text
        text = _merge(text, modules, keys, sets)


def _merge(text: str, modules, keys, sets) -> str:
    """One round of :func:`share_modules`: the kept module of each set renamed, the others
    removed and their instances pointed at it."""
    taken = {m[0] for m in modules}
    headers: dict[str, str] = {}  # kept module -> its shared name
    instances: dict[str, tuple[str, dict[str, str]]] = {}  # module -> (shared name, ports)
    drop = set()
    for ks in sets:
        names = [modules[k][0] for k in ks]
        shared = _common_name(names, taken)
        taken.add(shared)
        headers[names[0].strip()] = shared.strip()
        for k in ks:
            ports = {a: b for a, b in zip(keys[k], keys[ks[0]], strict=True) if a != b}
            instances[modules[k][0].strip()] = (shared, ports)
        drop.update(ks[1:])
    pieces, last = [], 0
    for k, (_name, _header, _body, (start, end)) in enumerate(modules):
        pieces.append(text[last:start])
        if k in drop:
            # The dropped module's attribute lines (`(* ... *)`) go with it.
            pieces[-1] = re.sub(r"(?:\(\*.*\*\)\n)+\Z", "", pieces[-1])
        else:
            pieces.append(text[start:end])
        last = end
    pieces.append(text[last:])
    text = "".join(pieces)
    names = "|".join(map(re.escape, sorted(headers, key=len, reverse=True)))
    text = re.sub(
        rf"^module ({names})(?=[\s(])", lambda m: f"module {headers[m.group(1)]}", text, flags=re.M
    )
    return _rename_instances(text, instances)


_INSTANCE_RE = re.compile(r"^\s*(\\\S+|[A-Za-z_][\w$]*)\s+(?:#\(|[^\s(]+\s*\()", re.M)
_KEYWORDS = {"module", "input", "output", "inout", "wire", "reg", "assign", "always", "initial"}


def placed(text: str, cell: str, top: str) -> int:
    """How many ``cell`` s (a module or a primitive, e.g. ``DP16KD``) the design ``top`` of
    Verilog ``text`` places, through every level of its hierarchy: with identical modules
    written once, counting the text's instantiations undercounts."""
    bodies = {m.group(1).strip(): m.group(3) for m in _MODULE_RE.finditer(text)}
    counts: dict[str, int] = {}

    def within(name: str) -> int:
        if name not in counts:
            total = 0
            for child in _INSTANCE_RE.findall(bodies.get(name, "")):
                if child == cell:
                    total += 1
                elif child in bodies and child not in _KEYWORDS:
                    total += within(child)
            counts[name] = total
        return counts[name]

    return within(top)
