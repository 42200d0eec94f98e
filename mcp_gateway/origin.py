"""DNS-rebinding protection for /mcp: the Host header must be on the allow-list (else 421) and a
browser's Origin header, when sent, must be too (else 403).

On by default for loopback binds or when allow-lists are set (`cfg.dns_rebinding_protection`).
The lists are `server.allowed_hosts` / `server.allowed_origins`, plus the host and origin of
`server.public_base_url`, plus the loopback names when bound to loopback. An entry without a port
(or with `:*`) matches any port.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from eco_service.config import EcoConfig

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def _split_host(value: str) -> tuple[str, str | None]:
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        host, rest = value[: end + 1], value[end + 1:]
        return host, rest[1:] if rest.startswith(":") else None
    if value.count(":") == 1:
        host, port = value.split(":")
        return host, port
    return value, None


def _host_matches(entry: str, host: str) -> bool:
    e_host, e_port = _split_host(entry)
    h_host, h_port = _split_host(host)
    if e_host != h_host:
        return False
    return e_port in (None, "*") or e_port == h_port


def _origin_matches(entry: str, origin: str) -> bool:
    e, o = urlsplit(entry.strip().lower()), urlsplit(origin.strip().lower())
    if e.scheme != o.scheme:
        return False
    return _host_matches(e.netloc, o.netloc)


@dataclass(frozen=True)
class HostPolicy:
    enabled: bool
    hosts: tuple[str, ...]
    origins: tuple[str, ...]

    @classmethod
    def from_config(cls, cfg: EcoConfig) -> HostPolicy:
        s = cfg.server
        hosts = list(s.allowed_hosts)
        origins = list(s.allowed_origins)
        if s.public_base_url:
            parts = urlsplit(s.public_base_url)
            hosts.append(parts.netloc)
            origins.append(f"{parts.scheme}://{parts.netloc}")
        bind = s.bind_address
        loopback = bind in ("127.0.0.1", "localhost", "::1") or bind.startswith("127.")
        if loopback or not (s.allowed_hosts or s.public_base_url):
            hosts += [*LOOPBACK_HOSTS, bind if ":" not in bind else f"[{bind}]"]
            origins += [f"{scheme}://{h}" for h in LOOPBACK_HOSTS for scheme in ("http", "https")]
        return cls(enabled=cfg.dns_rebinding_protection, hosts=tuple(dict.fromkeys(hosts)), origins=tuple(dict.fromkeys(origins)))

    def check(self, host: str | None, origin: str | None) -> tuple[int, str] | None:
        """None when allowed, else (HTTP status, reason)."""
        if not self.enabled:
            return None
        if not host or not any(_host_matches(e, host) for e in self.hosts):
            return 421, f"Host {host!r} is not allowed"
        if origin and not any(_origin_matches(e, origin) for e in self.origins):
            return 403, f"Origin {origin!r} is not allowed"
        return None
