"""Where a webhook may point: the SSRF checks, at creation and before each delivery.

A target is an ``https://`` URL whose host resolves only to public addresses. The
address checked is the one connected to (:class:`Target`), so a name that resolves
elsewhere between the check and the connection (DNS rebinding) gains nothing. With
``allow_private`` (``PROMPTSVC_WEBHOOK_ALLOW_PRIVATE=1``) ``http://`` and non-public
addresses are accepted, for tests and private networks.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_URL_LENGTH = 2048


class UnsafeTarget(Exception):
    """A URL no webhook may be delivered to; the message says why."""


@dataclass(frozen=True, slots=True)
class Target:
    """A checked URL and the address to connect to for it."""

    url: str
    scheme: str
    host: str  # as written in the URL: the Host header and the TLS server name
    port: int
    address: str  # the checked IP address


def _public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return _public(address.ipv4_mapped)
    return address.is_global and not address.is_multicast


def check_url(url: str, allow_private: bool) -> tuple[str, str, int]:
    """The URL's scheme, host and port, or UnsafeTarget for one that is never accepted."""
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeTarget(f"the URL is longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise UnsafeTarget("not a valid URL") from None
    allowed = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in allowed:
        raise UnsafeTarget("the URL must start with https://")
    if not parts.hostname:
        raise UnsafeTarget("the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise UnsafeTarget("the URL may not carry credentials")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


def resolve(url: str, allow_private: bool) -> Target:
    """Check ``url`` and resolve its host: every address it resolves to must be public
    (unless ``allow_private``); the first is the one to connect to."""
    scheme, host, port = check_url(url, allow_private)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise UnsafeTarget(f"the host {host!r} does not resolve") from None
    addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
    if not addresses:
        raise UnsafeTarget(f"the host {host!r} does not resolve")
    if not allow_private:
        for address in addresses:
            if not _public(address):
                raise UnsafeTarget(
                    f"the host {host!r} resolves to {address}, which is not a public address"
                )
    return Target(url, scheme, host, port, str(addresses[0]))
