"""The ``numa-exporter`` command line: ``run`` (the daemon) and ``observe`` (a dry run).

Built on the standard library's ``argparse``, not click as ``fakenrt`` is: the exporter
starts on every node, and click's import (``inspect``, ``typing``, ``uuid``, ``platform``,
``datetime``...) was about 10 ms of CPU at every start for two commands. Options take
their value from the command line, else from the environment variable named in their
help (the DaemonSet's way), else the default. Every value is checked before anything
starts (names as the API server checks them, seconds finite and bounded). Usage errors
exit 2 and failures of the command exit 1, each with one line ``Error: <what>`` on stderr
naming the option (and the environment variable when the value came from there).
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from exporter import __version__, kubeparts
from exporter.podresources_settings import (
    DEFAULT_SOCKET,
    DEFAULT_TIMEOUT_S,
    configure_grpc_core,
)
from exporter.validation import (
    bind_address_problem,
    dns_label_problem,
    dns_subdomain_problem,
    one_line,
    quoted,
    seconds_problem,
)
from exporter.writepool import DEFAULT_WRITE_CONCURRENCY, MAX_WRITE_CONCURRENCY

PROG = "numa-exporter"
LOG_LEVELS = ("debug", "info", "warning", "error")
_SOCKET_HELP = "The kubelet podresources unix socket."
_SYSFS_HELP = "Root of sysfs; CPU -> NUMA comes from <root>/devices/system/node/node*/cpulist."
#: The longest pass interval and podresources deadline: an hour (a longer wait is a typo,
#: and an infinite one once ended a thread while the daemon ran on).
MAX_SECONDS = 3600.0
#: A unix socket path is at most 107 bytes (sun_path).
MAX_SOCKET_PATH = 107
#: Paths are at most PATH_MAX (4096) bytes.
MAX_PATH = 4096


def _seconds(minimum: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{quoted(text)} is not a number") from None
        problem = seconds_problem(value, minimum=minimum, maximum=MAX_SECONDS)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = "seconds"
    return parse


def _path(text: str) -> Path:
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    if len(os.fsencode(text)) > MAX_PATH or any(
        len(os.fsencode(part)) > 255 for part in Path(text).parts
    ):
        raise argparse.ArgumentTypeError(f"{quoted(text)}: too long a path for Linux")
    return Path(text)


def _socket(text: str) -> Path:
    path = _path(text)
    if len(str(path.absolute()).encode(errors="surrogateescape")) > MAX_SOCKET_PATH:
        raise argparse.ArgumentTypeError(
            f"{quoted(text)}: a unix socket path is at most {MAX_SOCKET_PATH} bytes"
        )
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{quoted(text)} is a directory, not a socket")
    return path


def _node_name(text: str) -> str:
    problem = dns_subdomain_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"not a node name: {problem}")
    return text


def _count(minimum: int, maximum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{quoted(text)} is not a whole number") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"{text} is not between {minimum} and {maximum}")
        return value

    parse.__name__ = "count"
    return parse


def _existing_file(text: str) -> Path:
    path = _path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{quoted(text)} does not exist")
    return path


def _log_level(text: str) -> str:
    if text not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not one of {', '.join(LOG_LEVELS)}")
    return text


def _bind_address(text: str) -> str:
    problem = bind_address_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def _pod(text: str) -> str:
    namespace, slash, name = text.partition("/")
    if not slash:
        raise argparse.ArgumentTypeError(f"{quoted(text)}: expected NAMESPACE/NAME")
    problem = dns_label_problem(namespace)
    if problem:
        raise argparse.ArgumentTypeError(f"namespace {problem}")
    problem = dns_subdomain_problem(name)
    if problem:
        raise argparse.ArgumentTypeError(f"pod name {problem}")
    return text


def _env(name: str, default: object) -> object:
    """The default of an option settable by environment variable (a string there:
    argparse converts and checks it with the option's type, as a command-line value)."""
    return os.environ.get(name, default)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line naming the option - and its environment variable when
    the value came from there (argparse checks an environment default as it checks a
    command-line value)."""

    given: Sequence[str] = ()

    def error(self, message: str) -> NoReturn:
        match = _ARGUMENT.match(message)
        if (
            match
            and match.group(1) in _ENV
            and not any(
                a == match.group(1) or a.startswith(f"{match.group(1)}=") for a in self.given
            )
        ):
            message += f" (from the environment variable {_ENV[match.group(1)]})"
        self.exit(2, f"Error: {one_line(message)} (see {self.prog} --help)\n")


_ARGUMENT = re.compile(r"^argument (--[a-z-]+)")
#: The environment variable of each option of ``run``.
_ENV = {
    "--node-name": "NODE_NAME",
    "--podresources-socket": "PODRESOURCES_SOCKET",
    "--sysfs-root": "SYSFS_ROOT",
    "--poll-interval": "POLL_INTERVAL",
    "--metrics-bind-address": "METRICS_BIND_ADDRESS",
    "--kubeconfig": "KUBECONFIG",
    "--rpc-timeout": "PODRESOURCES_TIMEOUT",
    "--write-concurrency": "WRITE_CONCURRENCY",
    "--log-level": "LOG_LEVEL",
}


class _Help(argparse.HelpFormatter):
    """Help lines end with the option's default, when it has one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and action.option_strings:
            text += " (default: %(default)s)"
        return text


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Publish each pod's NUMA placement, read from the kubelet. Reads the "
        "kubelet podresources API and sysfs on one node and writes "
        "kai.scheduler/numa-placement-observed and kai.scheduler/numa-memory-groups-observed "
        "onto the node's pods.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"{PROG}, version {__version__}",
        help="Show the version and exit.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = commands.add_parser(
        "run",
        formatter_class=_Help,
        help="Run the exporter daemon for one node until SIGTERM.",
        description="Run the exporter daemon for one node until SIGTERM.",
    )
    run.add_argument(
        "--node-name",
        metavar="NAME",
        type=_node_name,
        default=_env("NODE_NAME", None),
        required="NODE_NAME" not in os.environ,
        help="This node's name (env NODE_NAME, from the downward API spec.nodeName).",
    )
    run.add_argument(
        "--podresources-socket",
        metavar="PATH",
        type=_socket,
        default=_env("PODRESOURCES_SOCKET", str(DEFAULT_SOCKET)),
        help=f"{_SOCKET_HELP} (env PODRESOURCES_SOCKET)",
    )
    run.add_argument(
        "--sysfs-root",
        metavar="PATH",
        type=_path,
        default=_env("SYSFS_ROOT", "/sys"),
        help=f"{_SYSFS_HELP} (env SYSFS_ROOT)",
    )
    run.add_argument(
        "--poll-interval",
        metavar="SECONDS",
        type=_seconds(0.05),
        default=_env("POLL_INTERVAL", "1"),
        help="Seconds between reconcile passes; pod events also trigger one (env POLL_INTERVAL).",
    )
    run.add_argument(
        "--metrics-bind-address",
        metavar="ADDRESS",
        type=_bind_address,
        default=_env("METRICS_BIND_ADDRESS", ":8080"),
        help="host:port (or :port) serving /metrics, /healthz and /readyz "
        "(env METRICS_BIND_ADDRESS).",
    )
    run.add_argument(
        "--kubeconfig",
        metavar="PATH",
        type=_existing_file,
        default=_env("KUBECONFIG", None),
        help="kubeconfig file; without it the in-cluster ServiceAccount is used (env KUBECONFIG).",
    )
    run.add_argument(
        "--rpc-timeout",
        type=_seconds(0.01),
        metavar="SECONDS",
        default=_env("PODRESOURCES_TIMEOUT", str(DEFAULT_TIMEOUT_S)),
        help="Deadline in seconds of every podresources call (env PODRESOURCES_TIMEOUT).",
    )
    run.add_argument(
        "--write-concurrency",
        metavar="N",
        type=_count(1, MAX_WRITE_CONCURRENCY),
        default=_env("WRITE_CONCURRENCY", DEFAULT_WRITE_CONCURRENCY),
        help="Pod patches in flight at once, one per pod: a slow API server costs latency, "
        f"not one pass of pods x latency; 1 to {MAX_WRITE_CONCURRENCY} (env WRITE_CONCURRENCY).",
    )
    run.add_argument(
        "--log-level",
        metavar="LEVEL",
        type=_log_level,
        default=_env("LOG_LEVEL", "info"),
        help=f"Minimum level of the JSON log lines on stderr, one of {', '.join(LOG_LEVELS)} "
        "(env LOG_LEVEL).",
    )

    observe = commands.add_parser(
        "observe",
        formatter_class=_Help,
        help="Print the annotations the exporter would write on this node, once; writes nothing.",
        description="Print the annotations the exporter would write on this node, once; "
        "writes nothing.",
    )
    observe.add_argument(
        "--podresources-socket",
        type=_socket,
        metavar="PATH",
        default=DEFAULT_SOCKET,
        help=_SOCKET_HELP,
    )
    observe.add_argument(
        "--sysfs-root", type=_path, metavar="PATH", default=Path("/sys"), help=_SYSFS_HELP
    )
    observe.add_argument(
        "--kubeconfig",
        type=_existing_file,
        metavar="PATH",
        default=None,
        help="Read the pods from this cluster to judge Memory Manager completeness as the "
        "daemon does; without it no API server is needed.",
    )
    observe.add_argument(
        "--node-name",
        metavar="NAME",
        type=_node_name,
        default=None,
        help="With --kubeconfig: list this node's pods in one call instead of one GET per pod.",
    )
    observe.add_argument(
        "--pod",
        type=_pod,
        default=None,
        metavar="NAMESPACE/NAME",
        help="Only this pod (podresources Get, or List where Get is not served).",
    )
    observe.add_argument(
        "--rpc-timeout",
        type=_seconds(0.01),
        metavar="SECONDS",
        default=DEFAULT_TIMEOUT_S,
        help="Deadline in seconds of every podresources call.",
    )
    observe.add_argument(
        "--json",
        dest="as_json",
        action="store_true",
        help='Print one JSON object {"namespace/name": {annotation: value}} on stdout '
        "(the only output format).",
    )
    return parser


def cli(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: the process's arguments) and run the command; returns the
    exit status (usage errors and ``--help`` raise ``SystemExit``, as argparse does)."""
    given = list(sys.argv[1:] if argv is None else argv)
    _Parser.given = given  # so that an error can tell a command-line value from an env one
    args = vars(build_parser().parse_args(given))
    name = args.pop("command")
    from exporter import commands  # after parsing: --help and usage errors load nothing more

    command: Callable[..., None] = (
        commands.run_command if name == "run" else commands.observe_command
    )
    try:
        command(**args)
    except commands.CommandError as exc:
        sys.stderr.write(f"Error: {one_line(str(exc))}\n")
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """The console script: run the command line and exit with its status. Before any
    library is imported: no garbage collection while they import (what they create lives
    as long as the process: ~8 % of the start's import CPU spent walking it; the daemon
    turns it on once that heap is frozen, ``exporter.daemon.freeze_startup_heap``, a
    one-shot command ends first), gRPC's core set up for one small call a second
    (``exporter.podresources_settings``), and only the parts of the kubernetes library
    that are used imported (``exporter.kubeparts``). This module imports neither."""
    gc.disable()
    configure_grpc_core()
    kubeparts.import_parts_only()
    sys.exit(cli(argv))
