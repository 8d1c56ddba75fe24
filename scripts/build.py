"""placeholder"""

NAME = "build"
HELP = "build"


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    return 0
