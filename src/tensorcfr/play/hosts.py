"""Which ``Host`` headers the play server answers: :class:`HostPolicy` (DNS rebinding guard).

A web page on another site can make a browser send requests to this machine's server by
re-pointing its own domain name at 127.0.0.1 (DNS rebinding); the browser then treats the
server's answers as the attacker's own origin. Such a request always carries the attacker's
*name* in its ``Host`` header, so the server answers only the names it is known by:

* always the loopback names ``localhost``, ``127.0.0.1`` and ``[::1]`` (any port);
* the ``--host`` it listens on, unless that is a wildcard (``0.0.0.0``, ``::``);
* listening on a wildcard, also any IP address literal (``192.168.1.5:8000``, ``[fe80::1]``:
  a rebinding attack cannot put an address in ``Host``, the browser sends the name it
  resolved) and this machine's own names (``socket.gethostname()``, its FQDN);
* every ``--allowed-host NAME`` (a reverse proxy's public name, a LAN alias).

Any other ``Host`` (or none) gets a 400 with a one-line JSON ``detail``. Ports are not
compared (a proxy may forward from another port). Nothing here knows HTTP frameworks.

>>> HostPolicy.for_listen("127.0.0.1").allows("localhost:8000")
True
>>> HostPolicy.for_listen("127.0.0.1").allows("evil.example.com")
False
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import Iterable

from tensorcfr.errors import TensorCFRError

__all__ = ["LOOPBACK_NAMES", "WILDCARD_HOSTS", "HostPolicy", "check_host_name", "host_name"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
"""Names every server answers (``::1`` is written ``[::1]`` in a ``Host`` header)."""
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
"""``--host`` values that listen on every address of the machine."""
MAX_HOST_CHARS = 253
"""Longest DNS name (RFC 1035); a longer ``Host`` is refused unread."""
_NAME = re.compile(r"[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?")


def host_name(header: str) -> str | None:
    """The name of a ``Host`` header value, lower case, without port, brackets or trailing
    dot (``"[::1]:8000"`` -> ``"::1"``, ``"Example.COM.:80"`` -> ``"example.com"``); None for
    a value that is no host (empty, a bad port, a bracket left open, over 253 characters)."""
    value = header.strip().lower()
    if not value or len(value) > MAX_HOST_CHARS + 8:
        return None
    if value.startswith("["):  # [v6] or [v6]:port
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1:]
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return None
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            return None
        return name
    name, colon, port = value.rpartition(":") if ":" in value else (value, "", "")
    if colon and not port.isdigit():
        return None
    name = name.rstrip(".")
    if not name or len(name) > MAX_HOST_CHARS or ":" in name:
        return None
    return name


def check_host_name(value: str, option: str = "--allowed-host") -> str:
    """``value`` as a host name to allow (lower case, no port); :class:`TensorCFRError`
    (one line naming ``option``) for one that is not a host name or IP address."""
    text = value.strip()
    if text.count(":") > 1 and not text.startswith("["):  # a bare IPv6 address
        text = f"[{text}]"
    name = host_name(text)
    if name is None or not (_is_ip(name) or _NAME.fullmatch(name)):
        raise TensorCFRError(f"{option} {value!r} is not a host name or IP address")
    return name


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _machine_names() -> set[str]:
    """This machine's host name and fully qualified name, lower case (no DNS wait past the
    resolver's own)."""
    names = set()
    for fetch in (socket.gethostname, socket.getfqdn):
        try:
            name = fetch().strip().lower().rstrip(".")
        except OSError:  # pragma: no cover - no name at all
            continue
        if name:
            names.add(name)
    return names


@dataclass(frozen=True)
class HostPolicy:
    """The ``Host`` names a server answers: ``names`` (lower case, no port, IPv6 without
    brackets) and, with ``any_ip``, every IP address literal."""

    names: frozenset[str]
    any_ip: bool = False

    @classmethod
    def for_listen(cls, host: str = "127.0.0.1", allowed: Iterable[str] = ()) -> "HostPolicy":
        """The policy of a server listening on ``host`` (the ``--host`` option) with the extra
        names ``allowed`` (``--allowed-host``, checked by :func:`check_host_name`)."""
        listen = host.strip().strip("[]").lower()
        names = set(LOOPBACK_NAMES)
        names.update(check_host_name(a) for a in allowed)
        wildcard = listen in WILDCARD_HOSTS
        if wildcard:
            names.update(_machine_names())
        else:
            names.add(listen.rstrip("."))
        return cls(frozenset(names), any_ip=wildcard)

    def allows(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header value (None: no header) is answered."""
        if header is None:
            return False
        name = host_name(header)
        if name is None:
            return False
        return name in self.names or (self.any_ip and _is_ip(name))

    def describe(self) -> str:
        """The allowed names, one line (for the refusal message and the start-up line)."""
        shown = sorted(f"[{n}]" if ":" in n else n for n in self.names)
        return ", ".join(shown) + (", any IP address" if self.any_ip else "")
