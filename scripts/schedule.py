"""``fattree schedule``: placeholder until the Ding scheduler lands (issue 4)."""

NAME = "schedule"
HELP = "schedule requests on an FT(l, w) fat-tree (not yet available)"


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    from .common import CliError

    raise CliError("not yet available", code=1)
