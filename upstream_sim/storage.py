"""The signed-URL object store (like storage.googleapis.com/neon-publication), on its own host."""

from __future__ import annotations

import base64
import hashlib
import re
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .rest import CONTENT_TYPES, manifest, proto_bytes

DATA_PATH = re.compile(r"^(?:release/tag/(?P<tag>RELEASE-\d{4})/)?NEON\.DOM\.SITE\.(?P<code>DP\d\.\d{5}\.\d{3})/"
                       r"(?P<site>[A-Z]{4})/(?P<y>\d{4})(?P<m>\d{2})01T000000--\d{8}T000000/"
                       r"(?P<pkg>basic|expanded)/(?P<name>[^/]+)$")
RANGE = re.compile(r"^bytes=(?P<start>\d+)-(?P<end>\d*)$")
MANIFEST_PATH = re.compile(r"^release/build/(?P<uuid>[0-9a-f-]{36})/(?P<name>manifest-[^/]+\.json)$")


def gcs_error(status: int, code: str, message: str) -> Response:
    body = f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code><Message>{message}</Message></Error>"
    return Response(body, status, media_type="application/xml; charset=UTF-8")


def _lookup(sim, path: str) -> tuple[str, bytes, str | None] | None:
    m = DATA_PATH.match(path)
    if m:
        w = sim.world
        code, site, ym = m["code"], m["site"], f"{m['y']}-{m['m']}"
        if code not in w.products or site not in w.sites:
            return None
        served = w.release_for_month(code, site, ym, m["tag"])
        if served is None or (m["tag"] is None and served != "PROVISIONAL"):
            return None
        for spec in sim.files.package_files(code, site, ym, m["pkg"], served):
            if spec.name == m["name"]:
                return spec.name, sim.files.content(spec), sim.files.meta(spec)[1]
        return None
    m = MANIFEST_PATH.match(path)
    if m:
        rel = sim.world.release_by_key.get(m["uuid"])
        if rel:
            name, body = manifest(sim, rel["release"])
            if name == m["name"]:
                return name, body, None
    return None


async def storage_object(request: Request) -> Response:
    sim = request.app.state.sim
    bucket = request.path_params["bucket"]
    path = unquote(request.path_params["path"])
    problem = sim.check_signature(path, dict(request.query_params))
    if problem == "ExpiredToken":
        return gcs_error(400, "ExpiredToken", "Invalid argument.")
    if problem:
        return gcs_error(403, problem, "Access denied.")
    found: tuple[str, bytes, str | None] | None
    if bucket == "neon-publication-proto":
        m = re.match(r"^datasets/(?P<uuid>[^/]+)/(?P<name>[^/]+)$", path)
        ds = sim.prototypes.datasets.get(m["uuid"]) if m else None
        f = next((f for f in ds["_files"] if f["fileName"] == m["name"]), None) if ds and m else None
        found = (f["fileName"], proto_bytes(f), None) if f else None
    else:
        found = _lookup(sim, path)
    if found is None:
        return gcs_error(404, "NoSuchKey", "The specified key does not exist.")
    name, body, md5 = found
    fault = sim.faults.take(request.url.path, {"bad_md5", "truncate"})
    if fault and fault.kind == "bad_md5":
        body = bytes([body[0] ^ 0xFF]) + body[1:] if body else b"x"
        md5 = None
    digest = bytes.fromhex(md5) if md5 else hashlib.md5(body).digest()
    headers = {"x-goog-hash": "md5=" + base64.b64encode(digest).decode(),
               "x-goog-stored-content-length": str(len(body)), "accept-ranges": "bytes"}
    ctype = CONTENT_TYPES.get(name.rsplit(".", 1)[-1], "application/octet-stream")
    if fault and fault.kind == "truncate":
        return TruncatedResponse(body, int(fault.params.get("keep", len(body) // 2)), ctype, headers)
    if request.method == "HEAD":
        headers["content-length"] = str(len(body))
        return Response(b"", media_type=ctype, headers=headers)
    wanted = RANGE.match(request.headers.get("range", ""))
    if wanted:  # resumable downloads ask for the rest of a file
        start = int(wanted["start"])
        end = min(int(wanted["end"]) if wanted["end"] else len(body) - 1, len(body) - 1)
        if start >= len(body) or start > end:
            return Response(b"", 416, headers={"content-range": f"bytes */{len(body)}"})
        headers["content-range"] = f"bytes {start}-{end}/{len(body)}"
        return Response(body[start:end + 1], 206, media_type=ctype, headers=headers)
    return Response(body, media_type=ctype, headers=headers)


class TruncatedResponse(Response):
    """Announces the full content-length, sends only `keep` bytes, then drops the connection."""

    def __init__(self, body: bytes, keep: int, ctype: str, headers: dict):
        super().__init__(body, media_type=ctype, headers=headers)
        self.keep = keep

    async def __call__(self, scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": self.body[: self.keep], "more_body": True})
        abort_connection(scope)


def abort_connection(scope) -> None:
    """Close the client's TCP connection at once (RST), like a network failure would."""
    import socket
    import struct
    transport = scope.get("sim.transport")
    if transport is None:
        raise ConnectionAbortedError("simulated connection reset")
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport.abort()


def routes() -> list[Route]:
    return [Route("/storage/{bucket}/{path:path}", storage_object, methods=["GET"])]
