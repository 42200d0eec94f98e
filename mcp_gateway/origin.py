"""DNS-rebinding protection for every HTTP route: the Host header must be on the allow-list (else
421) and a browser's Origin header, when sent, must be too (else 403).

On by default for loopback binds or when allow-lists are set (`cfg.dns_rebinding_protection`).
The lists are `server.allowed_hosts` / `server.allowed_origins`, plus the host and origin of
`server.public_base_url`, plus the loopback names. A port is compared wherever one is configured:
an allowed_hosts entry with a port matches that port only (without one, or with `:*`, any port);
public_base_url's host matches its port, written or its scheme's default (a Host without a port
is taken as 80 or 443); an origin is scheme, host and port, so an allowed origin without a port
stands for its scheme's default (`:*` for any). Loopback names match any port: a rebinding page
cannot make a browser send them. A Host or Origin that is not exactly one well-formed
`host[:port]` (for example `127.0.0.1:8080, evil.example`) matches nothing.

Django's ALLOWED_HOSTS and CSRF_TRUSTED_ORIGINS are derived from the same policy
(`django_allowed_hosts`, `django_csrf_trusted_origins`), so the admin agrees with the router.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from eco_core.config import EcoConfig

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
DEFAULT_PORTS = {"http": "80", "https": "443"}
VERDICTS_KEPT = 256

# host [":" port]: a DNS name or IPv4 literal, or a bracketed IPv6 literal; the port digits only.
_HOST = re.compile(r"^(?P<host>\[[0-9a-f:.]+\]|[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?)(?::(?P<port>[0-9]{1,5}|\*))?$")
_ORIGIN = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<netloc>[^/?#\s]+)$")


def _split_host(value: str, *, wildcard_port: bool = False) -> tuple[str, str | None] | None:
    """(host, port) of a well-formed `host[:port]`, else None. `*` as a port only in entries."""
    m = _HOST.match(value.strip().lower())
    if m is None:
        return None
    port = m.group("port")
    if port == "*" and not wildcard_port:
        return None
    return m.group("host"), port


def _host_matches(entry: str, host: str) -> bool:
    e, h = _split_host(entry, wildcard_port=True), _split_host(host)
    if e is None or h is None or e[0] != h[0]:
        return False
    if e[1] in (None, "*"):
        return True
    if h[1] is None:  # no port: the default of the scheme the caller used
        return e[1] in DEFAULT_PORTS.values()
    return int(e[1]) == int(h[1])


def _split_origin(value: str) -> tuple[str, str] | None:
    m = _ORIGIN.match(value.strip().lower())
    return None if m is None else (m.group("scheme"), m.group("netloc"))


def _origin_matches(entry: str, origin: str) -> bool:
    e, o = _split_origin(entry), _split_origin(origin)
    if e is None or o is None or e[0] != o[0]:
        return False
    eh, oh = _split_host(e[1], wildcard_port=True), _split_host(o[1])
    if eh is None or oh is None or eh[0] != oh[0]:
        return False
    if eh[1] == "*":
        return True
    # An origin's port is its scheme's default when not written: https://a and https://a:443 are one.
    default = DEFAULT_PORTS.get(e[0])
    want, got = eh[1] or default, oh[1] or default
    return want is not None and got is not None and int(want) == int(got)


def _is_loopback_bind(bind: str) -> bool:
    return bind in ("127.0.0.1", "localhost", "::1") or bind.startswith("127.")


@dataclass(frozen=True)
class HostPolicy:
    enabled: bool
    hosts: tuple[str, ...]
    origins: tuple[str, ...]
    _verdicts: dict[tuple[str | None, str | None], tuple[int, str] | None] = field(
        default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_config(cls, cfg: EcoConfig) -> HostPolicy:
        s = cfg.server
        hosts = list(s.allowed_hosts)
        origins = list(s.allowed_origins)
        if s.public_base_url:
            scheme, _, rest = s.public_base_url.partition("://")
            netloc = rest.split("/", 1)[0]
            split = _split_host(netloc)
            default = DEFAULT_PORTS.get(scheme.lower())
            # Its port, written or implied by the scheme: the public URL names one place.
            hosts.append(f"{split[0]}:{default}" if split is not None and split[1] is None and default else netloc)
            origins.append(f"{scheme.lower()}://{netloc}")
        bind = s.bind_address
        # A rebinding page can only make the browser send its own name as Host, never a loopback
        # name, so loopback Hosts are always safe to accept; health probes inside a container use them.
        hosts += [*LOOPBACK_HOSTS, bind if ":" not in bind else f"[{bind}]"]
        if _is_loopback_bind(bind) or not (s.allowed_hosts or s.public_base_url):
            origins += [f"{scheme}://{h}:*" for h in LOOPBACK_HOSTS for scheme in ("http", "https")]
        return cls(enabled=cfg.dns_rebinding_protection, hosts=tuple(dict.fromkeys(hosts)), origins=tuple(dict.fromkeys(origins)))

    def check(self, host: str | None, origin: str | None) -> tuple[int, str] | None:
        """None when allowed, else (HTTP status, reason). Nearly every request of a deployment
        sends one of a few Host/Origin pairs: their verdicts are kept (a bounded number, so
        callers inventing headers cannot grow it)."""
        if not self.enabled:
            return None
        key = (host, origin)
        if key in self._verdicts:
            return self._verdicts[key]
        verdict = self._check(host, origin)
        if len(self._verdicts) >= VERDICTS_KEPT:
            self._verdicts.clear()
        self._verdicts[key] = verdict
        return verdict

    def _check(self, host: str | None, origin: str | None) -> tuple[int, str] | None:
        if not host or not any(_host_matches(e, host) for e in self.hosts):
            return 421, f"Host {host!r} is not allowed"
        if origin is not None and not any(_origin_matches(e, origin) for e in self.origins):
            return 403, f"Origin {origin!r} is not allowed"
        return None


def django_allowed_hosts(cfg: EcoConfig) -> list[str]:
    """ALLOWED_HOSTS for Django: the policy's host names (Django ignores ports; the router checks
    them first). `*` only when the protection is off, as it is for /mcp."""
    policy = HostPolicy.from_config(cfg)
    if not policy.enabled:
        return ["*"]
    names = (_split_host(e, wildcard_port=True) for e in policy.hosts)
    return list(dict.fromkeys(n[0] for n in names if n is not None))


def django_csrf_trusted_origins(cfg: EcoConfig) -> list[str]:
    """CSRF_TRUSTED_ORIGINS for Django: the configured origins (public_base_url's included), which
    Django needs behind a TLS-terminating proxy, where its own same-origin test sees http. Loopback
    origins need no entry: Django accepts an Origin equal to the request's own scheme and Host."""
    policy = HostPolicy.from_config(cfg)
    loopback = {f"{scheme}://{h}:*" for h in LOOPBACK_HOSTS for scheme in ("http", "https")}
    out = []
    for entry in policy.origins:
        parts = _split_origin(entry)
        if entry in loopback or parts is None or parts[0] not in ("http", "https"):
            continue
        hp = _split_host(parts[1], wildcard_port=True)
        if hp is None or hp[1] == "*":
            continue
        out.append(f"{parts[0]}://{parts[1]}")
    return list(dict.fromkeys(out))
