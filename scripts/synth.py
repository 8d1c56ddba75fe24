"""placeholder"""

NAME = "synth"
HELP = "synth"


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    return 0
