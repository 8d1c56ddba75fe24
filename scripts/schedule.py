"""``fattree schedule``: schedule (source, destination) requests on an FT(l, w) fat-tree, or
on FT(l, m, w) (``--m``: ``m`` children and ``w`` parents per switch).

Reads requests from a CSV or JSON file (or makes a random permutation), runs one of the
reference schedulers of :mod:`fattree.sim.models.scheduler`, and prints, per request,
whether it was granted and its up-port vector ``P_0 .. P_{H-1}``.

Request files
-------------
CSV: one ``source,destination`` pair of node numbers per line; an optional header line of
words (``src,dst``); blank lines and ``#`` comments are ignored. JSON: a top-level array of
``[source, destination]`` pairs or ``{"src": s, "dst": d}`` objects. Errors name the line.
"""

from __future__ import annotations

import csv
import io
import json
import random
import sys
from pathlib import Path

from .common import CliError, emit

NAME = "schedule"
HELP = "schedule (source, destination) requests on an FT(l, w) fat-tree (Ding et al.)"

#: The models keep a Python list per level of switches: keep the trees to a sane size.
MAX_NODES = 1 << 20


def add_arguments(parser) -> None:
    from ..sim.models.scheduler import ALGORITHMS, FAILURE_MODES

    parser.add_argument(
        "requests",
        nargs="?",
        metavar="REQUESTS",
        help="CSV or JSON file of (source, destination) node pairs, '-' for stdin",
    )
    parser.add_argument("--levels", "-l", type=int, default=3, help="levels l (default 3)")
    parser.add_argument("--w", "-w", type=int, default=4, help="ports per side w (default 4)")
    parser.add_argument(
        "--m",
        "-m",
        type=int,
        default=None,
        help="children per switch m of FT(l, m, w), w then being the parents (default: m = w)",
    )
    parser.add_argument(
        "--algorithm",
        "-a",
        choices=ALGORITHMS,
        default="level-wise",
        help="level-wise (Fig. 7), local greedy, local random, or optimal (default level-wise)",
    )
    parser.add_argument(
        "--failure-mode",
        choices=FAILURE_MODES,
        default="keep",
        help="links a refused request took: keep them taken (as Fig. 7 is written) or "
        "release them (default keep)",
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="seed of random and --random-permutation"
    )
    parser.add_argument(
        "--rounds",
        action="store_true",
        help="accept several requests per node and schedule round after round until all are "
        "granted (optimal: the fewest rounds possible)",
    )
    parser.add_argument(
        "--random-permutation",
        action="store_true",
        help="schedule a random permutation of all nodes instead of a file (seeded by --seed)",
    )
    parser.add_argument(
        "--format", choices=("auto", "csv", "json"), default="auto", help="request file format"
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


class Requests(list):
    """``(src, dst)`` pairs plus the line of the file each came from."""

    def __init__(self, pairs=(), lines=(), name="requests"):
        super().__init__(pairs)
        self.lines = list(lines)
        self.name = name


def _node(value, what: str, where: str) -> int:
    """A node number from a CSV field (text) or a JSON value (an integer, not a string)."""
    if isinstance(value, str):
        try:
            return int(value.strip(), 10)
        except ValueError:
            raise CliError(
                f"{where}: {what} must be a node number, not {value.strip()!r}"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise CliError(f"{where}: {what} must be a node number, not {json.dumps(value)}")
    return value


def parse_csv(text: str, name: str) -> Requests:
    pairs, lines = [], []
    header_allowed = True
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = next(csv.reader(io.StringIO(line)))
        where = f"{name} line {number}"
        if len(fields) != 2:
            raise CliError(
                f"{where}: expected 'source,destination', got {len(fields)} field"
                f"{'s' if len(fields) != 1 else ''}: {line!r}"
            )
        if header_allowed and not any(f.strip().lstrip("-").isdigit() for f in fields):
            header_allowed = False
            continue
        header_allowed = False
        pairs.append((_node(fields[0], "source", where), _node(fields[1], "destination", where)))
        lines.append(number)
    return Requests(pairs, lines, name)


def parse_json(text: str, name: str) -> Requests:
    """A top-level array, decoded element by element so errors can name the line."""
    decoder = json.JSONDecoder()

    def line_of(index: int) -> int:
        return text.count("\n", 0, index) + 1

    def skip(index: int) -> int:
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        return index

    i = 0
    try:
        i = skip(0)
        if i >= len(text) or text[i] != "[":
            raise CliError(f"{name} line {line_of(i)}: expected a JSON array of requests")
        i = skip(i + 1)
        pairs, lines = [], []
        if i < len(text) and text[i] == "]":
            i += 1
        else:
            while True:
                item, end = decoder.raw_decode(text, i)
                where = f"{name} line {line_of(i)}"
                if isinstance(item, dict):
                    if set(item) != {"src", "dst"}:
                        raise CliError(
                            f"{where}: a request object has keys src and dst, "
                            f"not {json.dumps(item)}"
                        )
                    src, dst = item["src"], item["dst"]
                elif isinstance(item, list) and len(item) == 2:
                    src, dst = item
                else:
                    raise CliError(
                        f"{where}: expected [source, destination], not {json.dumps(item)}"
                    )
                for what, value in (("source", src), ("destination", dst)):
                    if isinstance(value, str):
                        raise CliError(
                            f"{where}: {what} must be a node number, not {json.dumps(value)}"
                        )
                pairs.append((_node(src, "source", where), _node(dst, "destination", where)))
                lines.append(line_of(i))
                i = skip(end)
                if i < len(text) and text[i] == ",":
                    i = skip(i + 1)
                    continue
                if i < len(text) and text[i] == "]":
                    i += 1
                    break
                raise CliError(f"{name} line {line_of(i)}: expected ',' or ']' in the array")
        if skip(i) != len(text):
            raise CliError(f"{name} line {line_of(skip(i))}: extra data after the array")
    except json.JSONDecodeError as exc:
        raise CliError(f"{name} line {exc.lineno}: invalid JSON: {exc.msg}") from None
    except ValueError:
        # json reads integers with int(), which refuses more than 4300 digits.
        raise CliError(f"{name} line {line_of(i)}: invalid JSON: a number too long") from None
    except RecursionError:
        raise CliError(f"{name} line {line_of(i)}: invalid JSON: nested too deeply") from None
    return Requests(pairs, lines, name)


def read_requests(path: str, fmt: str = "auto") -> Requests:
    if path == "-":
        name = "<stdin>"
        try:
            text = sys.stdin.read()
        except UnicodeDecodeError:
            raise CliError(f"cannot read {name}: not a text file") from None
    else:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}", code=1) from None
        except UnicodeDecodeError:
            raise CliError(f"cannot read {path}: not a text file") from None
        name = path
    if fmt == "auto":
        if path.endswith(".json"):
            fmt = "json"
        elif path.endswith(".csv"):
            fmt = "csv"
        else:
            fmt = "json" if text.lstrip().startswith("[") else "csv"
    requests = parse_json(text, name) if fmt == "json" else parse_csv(text, name)
    if not requests:
        # Nothing to schedule is a mistake (a wrong or truncated file), not "all granted".
        raise CliError(f"{name}: no requests to schedule")
    return requests


def check_requests(tree, requests: Requests, *, rounds: bool) -> None:
    """Nodes in range; without --rounds each node sends and receives at most once (the
    model's :func:`~fattree.sim.models.scheduler.permutation_conflict`, reported by line)."""
    from ..sim.models.scheduler import permutation_conflict

    top = tree.num_nodes - 1
    for (src, dst), line in zip(requests, requests.lines, strict=True):
        for what, node in (("source", src), ("destination", dst)):
            if not 0 <= node <= top:
                raise CliError(
                    f"{requests.name} line {line}: {what} {node} is not a node of "
                    f"{_name(tree)} (0..{top})"
                )
    conflict = None if rounds else permutation_conflict(requests)
    if conflict:
        k, role, node, earlier = conflict
        verb = "sends" if role == "source" else "receives"
        raise CliError(
            f"{requests.name} line {requests.lines[k]}: {role} {node} already {verb} on line "
            f"{requests.lines[earlier]} (give --rounds to schedule several rounds)"
        )


def _name(tree) -> str:
    m = getattr(tree, "m", tree.w)
    return f"FT({tree.levels}, {tree.w})" if m == tree.w else f"FT({tree.levels}, {m}, {tree.w})"


def run(args) -> int:
    from ..sim.models.scheduler import schedule
    from ..spec.scheduler import GeneralizedFatTree
    from ..spec.topology import FatTree

    m = args.w if args.m is None else args.m
    name = f"FT({args.levels}, {args.w})" if args.m is None else f"FT({args.levels}, {m}, {args.w})"
    if m >= 2 and args.w >= 2 and args.levels >= MAX_NODES.bit_length():
        # Too many nodes whatever m is; said before m**levels, which for --levels 1000000000
        # would take minutes to compute.
        raise CliError(
            f"{name} has more than {MAX_NODES} nodes; the scheduler models take at most {MAX_NODES}"
        )
    if args.m is None:
        tree = FatTree(args.levels, args.w)
    else:
        tree = GeneralizedFatTree(args.levels, args.m, args.w)
        if tree.num_switches > MAX_NODES:  # w far above m: the top levels' switches
            raise CliError(
                f"{name} has {tree.num_switches} switches on a level; "
                f"the scheduler models take at most {MAX_NODES}"
            )
    if tree.num_nodes > MAX_NODES:
        raise CliError(
            f"{name} has {tree.num_nodes} nodes; the scheduler models take at most {MAX_NODES}"
        )
    if args.random_permutation:
        if args.requests is not None:
            raise CliError("give either a REQUESTS file or --random-permutation, not both")
        dst = list(tree.nodes())
        random.Random(args.seed).shuffle(dst)
        requests = Requests(
            zip(tree.nodes(), dst, strict=True), range(1, tree.num_nodes + 1), "permutation"
        )
    elif args.requests is None:
        raise CliError("give a REQUESTS file (CSV or JSON) or --random-permutation")
    else:
        requests = read_requests(args.requests, args.format)
    check_requests(tree, requests, rounds=args.rounds)
    grants = schedule(
        tree,
        list(requests),
        args.algorithm,
        failure_mode=args.failure_mode,
        seed=args.seed,
        rounds=args.rounds,
    )
    granted = sum(g.granted for g in grants)
    local = sum(g.height == 0 for g in grants)
    round_count = 1 + max((g.round for g in grants), default=-1)
    data = {
        "levels": tree.levels,
        "w": tree.w,
        **({} if args.m is None else {"m": args.m}),
        "nodes": tree.num_nodes,
        "algorithm": args.algorithm,
        "failure_mode": args.failure_mode,
        "seed": args.seed,
        "requests": len(grants),
        "granted": granted,
        "local": local,
        "ratio": granted / len(grants) if grants else 1.0,
        "rounds": round_count if args.rounds else None,
        "grants": [
            {
                "line": line,
                "src": g.src,
                "dst": g.dst,
                "granted": g.granted,
                "height": g.height,
                "ports": list(g.ports),
                "failed_level": g.failed_level,
                "round": g.round,
            }
            for g, line in zip(grants, requests.lines, strict=True)
        ],
    }
    emit(args, data, _text(tree, args, data))
    return 0


def _text(tree, args, data) -> str:
    ratio = 100 * data["ratio"]
    head = (
        f"{_name(tree)}, {tree.num_nodes} nodes, {args.algorithm}, failure mode "
        f"{args.failure_mode}: {data['granted']} of {data['requests']} granted ({ratio:.1f} %; "
        f"{data['local']} within one leaf switch, granted without inter-switch links)"
    )
    if args.rounds:
        head += f", {data['rounds']} round{'s' if data['rounds'] != 1 else ''}"
    ports = [f"P{h}" for h in range(tree.levels - 1)]
    columns = ["line", "src", "dst", "H", "granted"] + (["round"] if args.rounds else []) + ports
    rows = []
    for g in data["grants"]:
        status = "yes" if g["granted"] else f"no (level {g['failed_level']})"
        cells = [g["line"], g["src"], g["dst"], g["height"], status]
        if args.rounds:
            cells.append(g["round"])
        # Ports chosen below a refusal are shown too: with --failure-mode keep they stay taken.
        cells += [str(p) for p in g["ports"]] + ["-"] * (len(ports) - len(g["ports"]))
        rows.append([str(c) for c in cells])
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(columns)]
    lines = [head, "  ".join(h.rjust(w) for h, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)
