"""placeholder"""
NAME = "experiment"
HELP = "experiment"


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    return 0
