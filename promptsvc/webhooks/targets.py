"""Where a webhook may point: the SSRF checks, at creation and before each delivery.

A target is an ``https://`` URL whose host resolves only to public addresses. The
address checked is the one connected to (:class:`Target`), so a name that resolves
elsewhere between the check and the connection (DNS rebinding) gains nothing. With
``allow_private`` (``PROMPTSVC_WEBHOOK_ALLOW_PRIVATE=1``) ``http://`` and non-public
addresses are accepted, for tests and private networks.

IPv6 addresses that carry an IPv4 address (IPv4-mapped ``::ffff:0:0/96``,
IPv4-translated ``::ffff:0:0:0/96`` (SIIT, RFC 2765), IPv4-compatible ``::/96``, NAT64
``64:ff9b::/96``, 6to4 ``2002::/16``, Teredo ``2001::/32``) reach that IPv4 address
through a translator or tunnel, so the IPv4 address must be public too. The local-use
NAT64 prefix ``64:ff9b:1::/48`` (RFC 8215) is never public, whatever it embeds.
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


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
# The prefixes whose last 32 bits are the IPv4 address (the mapped one: ipv4_mapped).
LOW32_PREFIXES = (NAT64, IPV4_COMPATIBLE, IPV4_TRANSLATED)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address leads to, by the forms that embed one."""
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    found: list[ipaddress.IPv4Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if any(address in prefix for prefix in LOW32_PREFIXES):
        found.append(low32)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)  # the server and the (obfuscated) client
    return found


def _public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return _public(address.ipv4_mapped)  # Python's is_global refuses the prefix
        if address in LOCAL_NAT64:
            return False
        if not all(_public(inner) for inner in _embedded_ipv4(address)):
            return False
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
