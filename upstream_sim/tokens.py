"""NEON-like API tokens: JWT-shaped (HS256), with an `exp` claim, signed by a per-seed secret.

The payload is plain JSON with only strings and integers, because neonutilities reads it
with ast.literal_eval (JSON true/false/null would break it).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def secret_for(seed: int) -> bytes:
    return hashlib.sha256(f"eco-sim-token-secret|{seed}".encode()).digest()


def issue_token(seed: int = 1, exp_s: float = 3600, sub: str = "sim-user@example.org",
                now: float | None = None) -> str:
    now = time.time() if now is None else now
    header = _b64(json.dumps({"typ": "JWT", "alg": "HS256"}, separators=(",", ":")).encode())
    claims = {"aud": "https://data.neonscience.org/api/v0", "sub": sub, "scope": "rate:public",
              "iss": "https://data.neonscience.org/", "iat": int(now), "exp": int(now + exp_s)}
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    sig = hmac.new(secret_for(seed), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64(sig)}"


def check_token(token: str | None, seed: int, now: float | None = None) -> str:
    """'valid', 'expired', 'invalid' or 'missing'."""
    if not token:
        return "missing"
    parts = token.split(".")
    if len(parts) != 3:
        return "invalid"
    want = hmac.new(secret_for(seed), f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest()
    try:
        if not hmac.compare_digest(want, _unb64(parts[2])):
            return "invalid"
        claims = json.loads(_unb64(parts[1]))
    except (ValueError, TypeError):
        return "invalid"
    now = time.time() if now is None else now
    if not isinstance(claims.get("exp"), int) or claims["exp"] <= now:
        return "expired"
    return "valid"
