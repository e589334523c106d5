"""The ``fakenrt`` command: a click group; each family of commands lives in its own module
under :mod:`fakenrt.commands`. The console script enters through :mod:`fakenrt.launch`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from exporter.extras import MissingExtra, import_optional, missing_extra
from exporter.validation import one_line
from fakenrt import __version__

#: Each command and where it lives ("module:attribute"), imported when it runs: a
#: command's start pays for its own modules only (``fakenrt kubelet explain`` loads
#: neither grpc nor the simulation), and a command whose extra is missing names it.
COMMANDS = {
    "simulate": "fakenrt.commands.simulate:simulate",
    "demo": "fakenrt.commands.demo:demo",
    "kubelet": "fakenrt.commands.kubelet:kubelet",
    "nrt": "fakenrt.commands.nrt:nrt",
    "controller": "fakenrt.commands.controller:controller",
    "scheduler": "fakenrt.commands.scheduler:scheduler",
    "harness": "fakenrt.commands.harness:harness",
    "device-plugin": "fakenrt.commands.deviceplugin:device_plugin",
    "dra-plugin": "fakenrt.commands.draplugin:dra_plugin",
    "realnode": "fakenrt.commands.realnode:realnode",
}


class _Main(click.Group):
    """The group, whose every refusal is one ``Error:`` line on stderr: usage errors
    (click's usage text and hint are left out: ``--help`` shows them), command errors, an
    optional part the install lacks (e.g. pod validation's ``kubernetes``, naming the
    extra) and a file the system refuses (an OSError naming the path)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attribute = target.partition(":")
        command: click.Command = getattr(
            import_optional(module, needed_by=f"fakenrt {cmd_name}"), attribute
        )
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MissingExtra as exc:
            raise click.ClickException(str(exc)) from None

    def main(  # type: ignore[override]
        self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: Any
    ) -> NoReturn:
        extra.pop("standalone_mode", None)
        try:
            code = super().main(args, prog_name, standalone_mode=False, **extra)
        except click.ClickException as exc:
            _refuse(exc.format_message(), exc.exit_code)
        except MissingExtra as exc:
            _refuse(str(exc), 1)
        except ModuleNotFoundError as exc:  # imported where it is needed, e.g. matplotlib
            refusal = missing_extra(exc, needed_by="fakenrt")
            if refusal is None:
                raise
            _refuse(str(refusal), 1)
        except click.Abort:
            _refuse("aborted", 1)
        except BrokenPipeError:  # e.g. `fakenrt nrt render | head -1`: the reader left
            sys.stdout = None  # nothing more to flush at exit
            sys.exit(1)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename is not None else ""
            _refuse(f"{where}{exc.strerror or exc}", 1)
        sys.exit(code if isinstance(code, int) else 0)


def _refuse(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"Error: {one_line(message)}\n")
    sys.exit(code)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fakenrt")
def main() -> None:
    """fakenrt: NUMA nodes without NUMA hardware.

    The main job: `fakenrt simulate` compares scheduling strategies on a whole simulated
    GPU cluster. Also node profiles, a kubelet Topology Manager simulator, NRT objects,
    fake nodes with podresources sockets, and a reference NUMA scheduler plugin.
    """
