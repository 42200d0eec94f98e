"""NEON's rules: tokens, 403s, 400s for unknown codes, rate limits and their headers."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from upstream_sim.server import SimServer
from upstream_sim.tokens import check_token, issue_token

TOKEN_ONLY = ["/data/DP1.00001.001/ABBY/2023-01", "/data/package/DP1.00001.001/ABBY/2023-01",
              "/data/query?productCode=DP1.00001.001&siteCode=ABBY&startDateMonth=2023-01&endDateMonth=2023-01",
              "/releases/RELEASE-2025/data/DP1.00001.001/ABBY/2023-01", "/samples/view?barcode=A00000123456",
              "/samples/download?barcode=A00000123456"]


def test_tokens_look_like_neons_jwts_with_an_exp_claim():
    tok = issue_token(seed=1, exp_s=60)
    header, payload, sig = tok.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    assert json.loads(base64.urlsafe_b64decode(header + "=="))["typ"] == "JWT"
    assert isinstance(claims["exp"], int) and sig
    assert check_token(tok, seed=1) == "valid"
    assert check_token(tok, seed=2) == "invalid"
    assert check_token(issue_token(seed=1, exp_s=-5), seed=1) == "expired"


@pytest.mark.parametrize("path", TOKEN_ONLY)
def test_token_only_endpoints_deny_access_without_a_token(path, anon):
    r = anon.get(path)
    assert r.status_code == 403
    assert r.json() == {"error": {"status": 403, "detail": "Access Denied"}, "data": None}
    assert r.headers["x-ratelimit-limit"] == "200"


def test_a_token_is_accepted_as_header_or_as_apitoken_query_parameter(anon, token):
    path = "/data/DP1.00001.001/ABBY/2023-01"
    assert anon.get(path, headers={"X-API-Token": token}).status_code == 200
    assert anon.get(path, params={"apiToken": token}).status_code == 200


def test_an_expired_or_forged_token_is_refused(sim_server, anon, token):
    path = "/data/DP1.00001.001/ABBY/2023-01"
    assert anon.get(path, headers={"X-API-Token": sim_server.issue_token(exp_s=-1)}).status_code == 403
    assert anon.get(path, headers={"X-API-Token": token[:-4] + "AAAA"}).status_code == 403


def test_a_token_gets_the_token_rate_limit_and_anonymous_callers_the_ip_limit(anon, token):
    assert anon.get("/products/DP1.00001.001").headers["x-ratelimit-limit"] == "200"
    r = anon.get("/products/DP1.00001.001", headers={"X-API-Token": token})
    assert r.headers["x-ratelimit-limit"] == "2000"
    assert int(r.headers["x-ratelimit-remaining"]) == 1999


@pytest.mark.parametrize("path,detail", [
    ("/products/DP9.99999.999", "Product code not found"),
    ("/sites/ZZZZ", "Site code not found"),
    ("/locations/NOPE_NOT_A_LOCATION", "Location not found."),
    ("/releases/RELEASE-2025/products/DP9.99999.999", "Product code not found"),
    ("/releases/RELEASE-2025/sites/ZZZZ", "Site code not found"),
])
def test_unknown_codes_answer_400_with_neons_detail_not_404(path, detail, anon):
    r = anon.get(path)
    assert r.status_code == 400
    assert r.json() == {"error": {"status": 400, "detail": detail}, "data": None}


@pytest.mark.parametrize("path", ["/releases/RELEASE-1999", "/releases/RELEASE-1999/products",
                                  "/sites/HARV?release=RELEASE-1999", "/products?release=PROVISIONAL"])
def test_unknown_release_answers_400_with_the_valid_releases(path, anon):
    r = anon.get(path)
    assert r.status_code == 400
    assert r.json()["data"]["validReleases"] == [f"RELEASE-{y}" for y in range(2021, 2027)]


def test_rate_limits_refuse_with_429_retryafter_and_neons_body_when_the_burst_is_spent():
    with SimServer(seed=1, anon_burst=3, anon_rps=0.5, token_burst=5, token_rps=0.5) as small:
        tok = small.issue_token()
        with httpx.Client(base_url=small.base_url, timeout=10) as c:
            codes = [c.get("/sites/HARV").status_code for _ in range(4)]
            assert codes == [200, 200, 200, 429]
            refused = c.get("/sites/HARV")
            assert refused.json() == {"message": "API rate limit exceeded"}
            assert int(refused.headers["retryafter"]) >= 1
            assert refused.headers["x-ratelimit-remaining"] == "0"
            # a token has its own, larger budget, shared by every client using it
            assert [c.get("/sites/HARV", headers={"X-API-Token": tok}).status_code for _ in range(6)] == [200] * 5 + [429]
            with httpx.Client(base_url=small.base_url, timeout=10) as other:
                assert other.get("/sites/HARV", params={"apiToken": tok}).status_code == 429
            small.reset()
            assert c.get("/sites/HARV").status_code == 200


def test_rate_limit_headers_are_on_every_api_answer_including_errors(anon):
    for path in ["/products/DP1.00001.001", "/products/NOPE", "/data/DP1.00001.001/ABBY/2023-01"]:
        h = anon.get(path).headers
        assert {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"} <= set(h)


def test_rate_limit_scale_shrinks_all_limits():
    small = SimServer(seed=1, rate_limit_scale=0.01)
    limits = small.state.limiter.limits
    assert (limits.anon_burst, limits.token_burst) == (2, 20)
