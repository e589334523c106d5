"""The ``fakenrt`` console script: the click command line, or - where ``pip install
numa-testkit`` left out the ``fakenrt`` extra that its commands import - one line naming
the extra to install instead of a ModuleNotFoundError traceback."""

from __future__ import annotations

import sys

from exporter.extras import missing_extra


def main() -> None:
    try:
        from fakenrt.cli import main as command_line
    except ModuleNotFoundError as exc:
        refusal = missing_extra(exc, needed_by="fakenrt")
        if refusal is None:
            raise
        sys.stderr.write(f"Error: {refusal}\n")
        sys.exit(1)
    command_line()
