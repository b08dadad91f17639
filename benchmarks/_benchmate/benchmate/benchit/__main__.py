"""Entry point: ``python -m benchmate.benchit models|ops``."""

from __future__ import annotations

import sys

from benchmate.benchit.protocol import Protocol

USAGE = "usage: python -m benchmate.benchit models|ops  (started by the benchit command)"


def main(argv: list[str]) -> int:
    """Run the worker mode named by ``argv[0]``; return the exit status."""
    if len(argv) != 1 or argv[0] not in ("models", "ops"):
        print(USAGE, file=sys.stderr)
        return 2
    protocol = Protocol.take_stdout()
    if argv[0] == "models":
        from benchmate.benchit.models import serve
    else:
        from benchmate.benchit.ops import serve
    return serve(protocol)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
