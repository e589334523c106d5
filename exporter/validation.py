"""Checks and quoting for what users give the commands: one-line, bounded messages. Pure.

Shared by both command lines (``numa-exporter`` and ``fakenrt``): the names the API
server accepts (rules of ``k8s.io/apimachinery/pkg/util/validation/validation.go``),
bounded numbers of seconds, and a quote of any value that stays short whatever its size
- a 7 MB token from a file is quoted as its first characters and its length, never
whole.
"""

from __future__ import annotations

import ipaddress
import math
import re

#: Characters of a value quoted in a message.
QUOTE_LIMIT = 60
#: Characters of one error line.
LINE_LIMIT = 900

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


def _printable(text: str) -> str:
    """``text`` safe to write to any stream: lone surrogates (the bytes of a non-UTF-8
    argument or file name) as escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)``, at most about ``limit`` characters as shown (escapes counted): a
    longer one is cut and says how long it was."""
    text = value if isinstance(value, str) else repr(value)
    whole = _printable(repr(value))
    if len(whole) <= limit + 2:
        return whole
    # the longest start whose escaped form fits: a character may show as up to 10 ("\U0001f600")
    keep, width = 0, 0
    for char in text[:limit]:
        width += len(_printable(repr(char))) - 2
        if width > limit:
            break
        keep += 1
    shown = _printable(repr(text[:keep]))
    return f"{shown[:-1]}...{shown[-1]} ({len(text)} characters)"


def one_line(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` as one printable line of at most about ``limit`` characters."""
    line = _printable(" ".join(text.split()))
    if len(line) > limit:
        return f"{line[:limit]}... ({len(line)} characters)"
    return line


def dns_label_problem(name: str) -> str | None:
    """Why ``name`` is not a DNS-1123 label (namespaces, ServiceAccount-like names), or
    None."""
    if not name:
        return "must not be empty"
    if len(name) > 63:
        return f"{quoted(name)} is longer than 63 characters"
    if not _DNS1123_LABEL.match(name):
        return (
            f"{quoted(name)} is not a DNS-1123 label: lower-case letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return None


def dns_subdomain_problem(name: str) -> str | None:
    """Why ``name`` is not a DNS-1123 subdomain (node and pod names), or None."""
    if not name:
        return "must not be empty"
    if len(name) > 253:
        return f"{quoted(name)} is longer than 253 characters"
    if not _DNS1123_SUBDOMAIN.match(name):
        return (
            f"{quoted(name)} is not a DNS-1123 subdomain: lower-case letters, digits, '-' "
            "and '.', starting and ending with a letter or digit"
        )
    return None


def seconds_problem(value: float, *, minimum: float, maximum: float) -> str | None:
    """Why ``value`` seconds is outside [minimum, maximum] (NaN and infinities too)."""
    if not math.isfinite(value) or not minimum <= value <= maximum:
        return f"{quoted(value)} is not between {minimum:g} and {maximum:g} seconds"
    return None


def bind_address_problem(address: str) -> str | None:
    """Why ``address`` is not ``host:port``, ``[v6]:port`` or ``:port`` to listen on (port
    0-65535; host an IP address or a DNS name), or None."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or len(port) > 5 or int(port) > 65535:
        return f"{quoted(address)} is not host:port or :port (port 0-65535)"
    if host.startswith("[") or host.endswith("]"):
        try:
            if not (host.startswith("[") and host.endswith("]")):
                raise ValueError(host)
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return f"{quoted(address)}: {quoted(host)} is not an IPv6 address in brackets"
        return None
    if not host:
        return None
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        if ":" in host:
            return f"{quoted(address)}: write an IPv6 address in brackets, [v6]:port"
        if dns_subdomain_problem(host.lower()) is not None:
            return f"{quoted(address)}: {quoted(host)} is not an IP address or a host name"
    return None
