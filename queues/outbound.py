"""Where Queuewatch may send outbound requests (webhooks): one policy, checked on the address
actually connected to.

A webhook URL is typed by an administrator, but the request is made from inside the network the
dashboard runs in: without a policy, a URL is a way to reach services that only listen on
loopback, the cloud metadata service (link-local ``169.254.169.254``), or to port-scan.

The rule, in order (the first that matches decides):

1. an explicit **deny** entry (``QUEUEWATCH_WEBHOOK_DENY``) refuses;
2. an explicit **allow** entry (``QUEUEWATCH_WEBHOOK_ALLOW``) permits, even a built-in denial
   (e.g. ``127.0.0.1`` for a receiver on the same machine);
3. built-in denials refuse: cloud metadata services (``169.254.169.254``, ``fd00:ec2::254``,
   ``100.100.100.200``, ``192.0.0.192``), loopback, link-local, unspecified (``0.0.0.0``),
   multicast, and every other IANA special-purpose range that is not globally reachable
   (``SPECIAL_NETWORKS``: benchmarking ``198.18.0.0/15``, protocol assignments ``192.0.0.0/24``
   and ``2001::/23`` with Teredo, documentation, discard-only, local NAT64, reserved ``240/4``…),
   listed here rather than read from ``ipaddress.is_global``, whose answer differs between
   interpreter releases; and IPv4 addresses embedded in IPv6 (mapped, 6to4, NAT64) are judged
   as the IPv4 address;
4. anything else is permitted — including private ranges (10/8, 172.16/12, 192.168/16,
   fc00::/7): a self-hosted dashboard commonly delivers to receivers on its own network. Deny
   them with ``QUEUEWATCH_WEBHOOK_DENY=private`` (a shorthand for those ranges).

Entries are networks or addresses (``10.0.0.0/8``, ``::1``), host names (``hooks.example.com``)
or a domain with its sub-domains (``.example.com``). Host entries match the URL's host name;
network entries match every address it resolves to.

The check happens after DNS resolution, every address the name resolves to must pass (a name
with one public and one loopback record is refused), and the connection is made to the checked
address (``connect``), so a name cannot resolve to a public address for the check and to
loopback for the connection (DNS rebinding). Redirects are not followed by the webhook sender.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

PRIVATE_NETWORKS = tuple(
    ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7")
)
SHORTHANDS = {"private": PRIVATE_NETWORKS}


class OutboundRefused(Exception):
    """The policy forbids this destination; the message says which address and why."""


class Unresolvable(OutboundRefused):
    """The name does not resolve (now): nothing to check, nothing to connect to."""


@dataclass(frozen=True)
class OutboundPolicy:
    allow_networks: tuple = ()
    allow_hosts: tuple[str, ...] = ()
    deny_networks: tuple = ()
    deny_hosts: tuple[str, ...] = ()

    @classmethod
    def from_entries(cls, *, allow: list[str], deny: list[str]) -> OutboundPolicy:
        """Build from setting entries; raises ``ValueError`` naming a malformed entry."""
        allow_networks, allow_hosts = _split_entries(allow)
        deny_networks, deny_hosts = _split_entries(deny)
        return cls(
            allow_networks=allow_networks, allow_hosts=allow_hosts, deny_networks=deny_networks, deny_hosts=deny_hosts
        )

    def address_refusal(self, address: str, *, host: str = "") -> str | None:
        """Why connecting to ``address`` (reached through the name ``host``) is refused, or None."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        host = host.lower().rstrip(".")
        if _host_matches(host, self.deny_hosts) or any(ip in n for n in _comparable(self.deny_networks, ip)):
            return f"{ip} is denied by QUEUEWATCH_WEBHOOK_DENY"
        if _host_matches(host, self.allow_hosts) or any(ip in n for n in _comparable(self.allow_networks, ip)):
            return None
        kind = builtin_denial(ip)
        if kind:
            return f"{ip} is a {kind} address (allow it with QUEUEWATCH_WEBHOOK_ALLOW if you mean it)"
        return None


# Cloud instance metadata services (credentials for the host's role): AWS, GCP, Azure and others
# on 169.254.169.254 (also link-local), AWS's IPv6 endpoint inside fc00::/7 (which is otherwise
# permitted, as a private range), Alibaba's inside 100.64.0.0/10 (likewise), Oracle's.
METADATA_NETWORKS = tuple(
    ipaddress.ip_network(n) for n in ("169.254.169.254/32", "fd00:ec2::254/128", "100.100.100.200/32", "192.0.0.192/32")
)
# IANA's special-purpose registries (iana-ipv4/ipv6-special-registry), the entries that are not
# globally reachable, besides the private ranges above (permitted unless denied) and the embedding
# prefixes judged by their IPv4 address (::ffff:0:0/96, 64:ff9b::/96, 2002::/16).
SPECIAL_NETWORKS = tuple(
    (kind, ipaddress.ip_network(n))
    for kind, n in (
        ("unspecified", "0.0.0.0/8"),
        ("loopback", "127.0.0.0/8"),
        ("link-local", "169.254.0.0/16"),
        ("protocol-assignment", "192.0.0.0/24"),
        ("documentation", "192.0.2.0/24"),
        ("6to4-relay", "192.88.99.0/24"),
        ("benchmarking", "198.18.0.0/15"),
        ("documentation", "198.51.100.0/24"),
        ("documentation", "203.0.113.0/24"),
        ("multicast", "224.0.0.0/4"),
        ("reserved", "240.0.0.0/4"),
        ("unspecified", "::/128"),
        ("loopback", "::1/128"),
        ("local NAT64", "64:ff9b:1::/48"),
        ("discard-only", "100::/64"),
        ("dummy", "100:0:0:1::/64"),
        ("protocol-assignment (Teredo, benchmarking, ORCHID)", "2001::/23"),
        ("documentation", "2001:db8::/32"),
        ("documentation", "3fff::/20"),
        ("segment-routing", "5f00::/16"),
        ("link-local", "fe80::/10"),
        ("site-local", "fec0::/10"),
        ("multicast", "ff00::/8"),
    )
)
NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _embedded_ipv4(ip):
    """The IPv4 address an IPv6 address stands for (mapped, 6to4, NAT64), or None."""
    if ip.version != 6:
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def builtin_denial(ip) -> str | None:
    """The kind of address denied by default, or None."""
    if (embedded := _embedded_ipv4(ip)) is not None:
        ip = embedded
    if any(ip in n for n in _comparable(METADATA_NETWORKS, ip)):
        return "cloud metadata"
    for kind, network in SPECIAL_NETWORKS:
        if ip.version == network.version and ip in network:
            return kind
    return None


def resolve(host: str, port: int, *, policy: OutboundPolicy) -> list[tuple]:
    """The ``getaddrinfo`` results for ``host``, after checking every address against the
    policy; ``OutboundRefused`` if any is refused (or the name does not resolve)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise Unresolvable(f"cannot resolve {host}: {exc.strerror}") from None
    for *_, sockaddr in infos:
        why = policy.address_refusal(str(sockaddr[0]), host=host)  # the host part: always a str for INET(6)
        if why:
            raise OutboundRefused(why)
    return infos


def connect(host: str, port: int, *, policy: OutboundPolicy, timeout: float) -> socket.socket:
    """A TCP connection to one of ``host``'s checked addresses (never a second lookup)."""
    last_error: OSError | None = None
    for family, socktype, proto, _, sockaddr in resolve(host, port, policy=policy):
        sock = socket.socket(family, socktype, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            sock.close()
            last_error = exc
    raise last_error or OSError(f"no address for {host}")


def _split_entries(entries: list[str]) -> tuple[tuple, tuple[str, ...]]:
    networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
    hosts: list[str] = []
    for entry in entries:
        entry = entry.strip().lower()
        if not entry:
            continue
        if entry in SHORTHANDS:
            networks.extend(SHORTHANDS[entry])
            continue
        try:
            networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            continue
        except ValueError:
            pass
        if not _valid_host_entry(entry):
            raise ValueError(f"{entry!r} is not a network, an address or a host name")
        hosts.append(entry.rstrip("."))
    return tuple(networks), tuple(hosts)


def _valid_host_entry(entry: str) -> bool:
    name = entry[1:] if entry.startswith(".") else entry
    return bool(name) and all(part and part.replace("-", "").replace("_", "").isalnum() for part in name.split("."))


def _host_matches(host: str, entries: tuple[str, ...]) -> bool:
    return bool(host) and any(host == e or (e.startswith(".") and (host.endswith(e) or host == e[1:])) for e in entries)


def _comparable(networks, ip):
    return (n for n in networks if n.version == ip.version)


__all__ = [
    "OutboundPolicy",
    "OutboundRefused",
    "Unresolvable",
    "builtin_denial",
    "connect",
    "resolve",
    "PRIVATE_NETWORKS",
]
