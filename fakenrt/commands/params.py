"""The kinds of values fakenrt's options take, each checked and bounded where it is read:
click parameter types whose refusal is one line naming the option (the group prints it,
``fakenrt/cli.py``).

* :class:`Duration` - Go-style durations or seconds, finite, within the option's bounds
  (``inf`` once reached a timer and ended a thread while a daemon ran on);
* :class:`Number` - a finite number within bounds (``nan`` passes click's ranges);
* :class:`Name` - a Kubernetes object name (DNS-1123 label or subdomain, or a label
  value), as the API server would check it, never a 10,000-character or ``Bad_Name!``
  one that fails later or nowhere;
* :class:`BindAddress` - ``host:port`` or ``:port`` to listen on;
* :class:`Image` - a container image reference;
* :class:`Directory` - a directory a command creates files in: absolute, within
  ``PATH_MAX``, and existing (or created only when its parent exists).
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click
from click.core import ParameterSource

from exporter.validation import (
    bind_address_problem,
    dns_label_problem,
    dns_subdomain_problem,
    quoted,
)
from fakenrt.durations import DurationError, parse_duration

DURATION_HELP = "Durations: 30s, 1m30s, 250ms, or a number of seconds."
DAY = 86_400.0
#: Paths are at most PATH_MAX (4096) bytes.
MAX_PATH_BYTES = 4096
#: A unix socket path is at most 107 bytes (sun_path).
MAX_SOCKET_PATH = 107
_KIND_CLUSTER = re.compile(r"^[a-z0-9.-]+$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# distribution/reference's grammar, simplified: [host[:port]/]path[:tag][@digest]
_IMAGE = re.compile(
    r"^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
    r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[\w][\w.-]{0,127})?(?:@[a-z0-9]+:[a-f0-9]{32,})?$"
)


class _EnvNamed:
    """A refusal that names the environment variable when the value came from there
    (``fakenrt nrt publish``'s ``NODE_NAME``), not only the option."""

    def fail(
        self,
        message: str,
        param: click.Parameter | None = None,
        ctx: click.Context | None = None,
    ) -> NoReturn:
        if (
            ctx is not None
            and param is not None
            and param.name
            and ctx.get_parameter_source(param.name) == ParameterSource.ENVIRONMENT
        ):
            names = [param.envvar] if isinstance(param.envvar, str) else param.envvar or []
            message += f" (from the environment variable {', '.join(names)})"
        raise click.BadParameter(message, ctx=ctx, param=param)


class Duration(_EnvNamed, click.ParamType[float]):
    """Seconds from a duration (``90s``, ``1m30s``, ``250ms``, ``1.5h``) or a number,
    in [minimum, maximum]; ``positive`` refuses 0."""

    name = "duration"

    def __init__(
        self, *, minimum: float = 0.0, maximum: float = DAY, positive: bool = False
    ) -> None:
        self.minimum = minimum
        self.maximum = maximum
        self.positive = positive

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float):
            seconds = float(value)
        else:
            try:
                seconds = parse_duration(str(value))
            except DurationError as exc:
                self.fail(str(exc), param, ctx)
        if not math.isfinite(seconds) or not self.minimum <= seconds <= self.maximum:
            self.fail(
                f"{quoted(value)} is not between {self.minimum:g} s and {self.maximum:g} s",
                param,
                ctx,
            )
        if self.positive and seconds == 0:
            self.fail("must be more than 0", param, ctx)
        return seconds


#: Delays, jitters and intervals: at most a day.
DURATION = Duration()


class Number(_EnvNamed, click.ParamType[float]):
    """A finite number in [minimum, maximum]."""

    name = "number"

    def __init__(self, *, minimum: float, maximum: float) -> None:
        self.minimum = minimum
        self.maximum = maximum

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{quoted(value)} is not a number", param, ctx)
        if not math.isfinite(number) or not self.minimum <= number <= self.maximum:
            self.fail(
                f"{quoted(value)} is not between {self.minimum:g} and {self.maximum:g}",
                param,
                ctx,
            )
        return number


class Name(_EnvNamed, click.ParamType[str]):
    """A name the API server accepts: ``subdomain`` (nodes, pods), ``label`` (namespaces,
    ServiceAccounts) or ``label-value`` (label values, e.g. the controller's name)."""

    def __init__(self, kind: str = "subdomain") -> None:
        self.kind = kind
        self.name = "name"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if self.kind == "label":
            problem = dns_label_problem(text)
        elif self.kind == "label-value":
            problem = (
                "must not be empty"
                if not text
                else None
                if len(text) <= 63 and _LABEL_VALUE.match(text)
                else f"{quoted(text)} is not a label value: at most 63 letters, digits, '-', "
                "'_' or '.', starting and ending with a letter or digit"
            )
        else:
            problem = dns_subdomain_problem(text)
        if problem:
            self.fail(problem, param, ctx)
        return text


class BindAddress(_EnvNamed, click.ParamType[str]):
    """``host:port``, ``:port`` or ``[v6]:port`` to listen on (exporter.health's syntax);
    with ``optional``, empty means no server."""

    name = "address"

    def __init__(self, *, optional: bool = False) -> None:
        self.optional = optional

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if not text and self.optional:
            return text
        problem = bind_address_problem(text)
        if problem:
            self.fail(problem, param, ctx)
        return text


class Image(_EnvNamed, click.ParamType[str]):
    """A container image reference (``registry/path:tag``), at most 255 characters."""

    name = "image"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if not text:
            self.fail("must not be empty", param, ctx)
        if len(text) > 255 or not _IMAGE.match(text):
            self.fail(f"{quoted(text)} is not an image reference such as repo/name:tag", param, ctx)
        return text


class KindClusterName(_EnvNamed, click.ParamType[str]):
    """A Kind cluster name: Kind's own rule (``^[a-z0-9.-]+$``, in
    ``sigs.k8s.io/kind/pkg/internal/apis/config/validate.go``), at most 50 characters so
    that its node names (``<cluster>-worker12``) stay DNS labels."""

    name = "cluster"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if not text or len(text) > 50 or not _KIND_CLUSTER.match(text):
            self.fail(
                f"{quoted(text)} is not a Kind cluster name: 1-50 lower-case letters, digits, "
                "'.' and '-'",
                param,
                ctx,
            )
        return text


class HostPath(_EnvNamed, click.ParamType[str]):
    """An absolute path on another host, written into manifests (a hostPath): printable,
    one line, within PATH_MAX."""

    name = "path"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if not text.startswith("/"):
            self.fail(f"{quoted(text)} is not an absolute path", param, ctx)
        if len(os.fsencode(text)) > MAX_PATH_BYTES or not text.isprintable():
            self.fail(f"{quoted(text)} is not a path for a hostPath volume", param, ctx)
        return text


class DaskAddress(_EnvNamed, click.ParamType[str]):
    """A Dask scheduler's address: ``[tcp|tls|ucx]://host:port`` or ``host:port``."""

    name = "address"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        scheme, sep, rest = text.partition("://")
        if not sep:
            scheme, rest = "tcp", text
        problem = None if scheme in ("tcp", "tls", "ucx") else f"scheme {quoted(scheme)}"
        host = rest.rpartition(":")[0]
        problem = problem or bind_address_problem(rest) or ("no host" if not host else None)
        if problem:
            self.fail(
                f"{quoted(text)} is not a scheduler address such as tcp://HOST:8786 ({problem})",
                param,
                ctx,
            )
        return text


class OutputFile(_EnvNamed, click.ParamType[Path]):
    """A file a command writes: not a directory, its directory existing, the path within
    Linux's limits (writing it may still fail: the error names it)."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        path = Path(value)
        text = str(path)
        if not text or text == ".":
            self.fail("must not be empty", param, ctx)
        if _too_long(path):
            self.fail(f"{quoted(text)}: too long a path for Linux", param, ctx)
        if path.is_dir():
            self.fail(f"{text} is a directory", param, ctx)
        if not path.absolute().parent.is_dir():
            self.fail(f"{text}: its directory does not exist", param, ctx)
        return path


class NodePath(_EnvNamed, click.ParamType[Path]):
    """A path on the node a daemon reads again at every poll (sysfs, the kubelet's socket
    or configuration file): it may appear later, so only what can never work is refused
    here - too long a path, the wrong kind of file, a socket path past ``sun_path``."""

    name = "path"

    def __init__(self, *, directory: bool = False, socket: bool = False) -> None:
        self.directory = directory
        self.socket = socket

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        path = Path(value)
        text = str(path)
        if not text or text == ".":
            self.fail("must not be empty", param, ctx)
        if _too_long(path):
            self.fail(f"{quoted(text)}: too long a path for Linux", param, ctx)
        if self.socket and len(os.fsencode(str(path.absolute()))) > MAX_SOCKET_PATH:
            self.fail(
                f"{quoted(text)}: a unix socket path is at most {MAX_SOCKET_PATH} bytes",
                param,
                ctx,
            )
        if path.exists() and path.is_dir() != self.directory:
            kind = "not a directory" if self.directory else "a directory"
            self.fail(f"{text} is {kind}", param, ctx)
        return path


def _too_long(path: Path) -> bool:
    return len(os.fsencode(str(path))) > MAX_PATH_BYTES or any(
        len(os.fsencode(part)) > 255 for part in path.parts
    )


def listed(names: Sequence[str], shown: int = 10) -> str:
    """Names for a message: the first ``shown`` and how many more."""
    head = ", ".join(names[:shown]) or "none"
    return f"{head} and {len(names) - shown} more" if len(names) > shown else head


class Directory(_EnvNamed, click.ParamType[Path]):
    """A directory a command writes into: absolute (``relative=False``) or not, at most
    PATH_MAX, writable (checked by making and removing an empty directory in it), and
    either existing or, with ``create``, creatable because its parent exists - never a
    chain of directories made anywhere a typo points."""

    name = "directory"

    def __init__(self, *, relative: bool = True, create: bool = True) -> None:
        self.relative = relative
        self.create = create

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        path = Path(value)
        text = str(path)
        if not text or text == ".":
            self.fail("must not be empty", param, ctx)
        if _too_long(path):
            self.fail(f"{quoted(text)}: too long a path for Linux", param, ctx)
        if not self.relative and not path.is_absolute():
            self.fail(f"{quoted(text)} is not an absolute path", param, ctx)
        if path.is_dir():
            try:
                os.rmdir(tempfile.mkdtemp(prefix=".fakenrt-probe-", dir=path))
            except OSError as exc:
                self.fail(f"{text}: cannot create files in it ({exc.strerror or exc})", param, ctx)
            return path
        if path.exists():
            self.fail(f"{text} is not a directory", param, ctx)
        if not self.create:
            self.fail(f"{text} does not exist", param, ctx)
        if not path.absolute().parent.is_dir():
            self.fail(f"{text}: its parent directory does not exist", param, ctx)
        return path
