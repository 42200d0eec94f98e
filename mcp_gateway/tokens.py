"""Which upstream token a tool call runs with (spec, Authentication 3 and 4).

stdio: the configured token. HTTP: the caller's own token header, honoured only when
`server.accept_header_token` is on and the service is reached over https (`public_base_url`) or
the development switch `allow_insecure_header_token` is set; otherwise the operator's token, lent
only when `share_config_token_over_http` is on; otherwise none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from eco_core.config import EcoConfig
from eco_core.redact import register_secret
from upstream.context import TokenSource


@dataclass(frozen=True)
class TokenChoice:
    token: str | None
    source: TokenSource
    header_ignored: bool = False

    def __repr__(self) -> str:  # the token must not show up in a traceback's locals
        return f"TokenChoice(source={self.source!r}, header_ignored={self.header_ignored})"


def header_token_honoured(cfg: EcoConfig) -> bool:
    s = cfg.server
    if not s.accept_header_token:
        return False
    return bool(s.public_base_url and s.public_base_url.startswith("https://")) or s.allow_insecure_header_token


def header_ignored_note(cfg: EcoConfig) -> str:
    """What every answer to a caller whose token header was ignored says, success or error: that
    it was ignored, and which setting would have it honoured."""
    s = cfg.server
    if not s.accept_header_token:
        why = "this server does not accept callers' tokens (server.accept_header_token is off)"
    else:
        why = ("this server accepts callers' tokens only behind an https server.public_base_url "
               "(or, for development only, with server.allow_insecure_header_token)")
    return f"The {s.request_token_header} header was ignored: {why}."


def printable_ascii(value: str | bytes) -> bool:
    """Letters, digits, punctuation and spaces only (0x20-0x7E): what an HTTP header can carry
    to the upstream. Anything else is no real token, and httpx cannot send it."""
    raw = value.encode("latin-1", "replace") if isinstance(value, str) else value
    return all(0x20 <= b <= 0x7E for b in raw)


def header_token_problem(cfg: EcoConfig, raw: bytes | None) -> str | None:
    """Why the caller's token header (raw bytes as received) cannot be used, or None. Only a
    header that would be honoured is judged: an ignored one is ignored whatever it holds. The
    reason never quotes the value."""
    if raw is None or not cfg.is_http or not header_token_honoured(cfg):
        return None
    value = raw.strip(b" \t")
    if not value or printable_ascii(value):
        return None
    return (f"{cfg.server.request_token_header}: the header is not printable ASCII (a token is letters, digits and "
            "punctuation); its value is not shown")


def choose_token(cfg: EcoConfig, headers: Mapping[str, str] | None) -> TokenChoice:
    configured = cfg.eco.api_token.reveal() if cfg.eco.api_token else None
    # Keeps the operator's token fresh in the redaction registry's LRU while it is in use.
    register_secret(configured)
    if not cfg.is_http or headers is None:
        return TokenChoice(configured, "config" if configured else "none")
    sent = (headers.get(cfg.server.request_token_header.lower()) or headers.get(cfg.server.request_token_header) or "").strip()
    # A header value is caller input: it is never registered process-wide. An honoured one is
    # masked in its own call only (calls.execute), so nobody can choose what gets masked in
    # other callers' answers.
    if sent and header_token_honoured(cfg):
        return TokenChoice(sent, "request")
    if configured and cfg.server.share_config_token_over_http:
        return TokenChoice(configured, "config", header_ignored=bool(sent))
    return TokenChoice(None, "none", header_ignored=bool(sent))
