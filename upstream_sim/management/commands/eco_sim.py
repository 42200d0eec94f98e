"""`python manage.py eco_sim --port PORT [--seed N]`: run the NEON upstream simulator."""

from __future__ import annotations

import errno

from django.core.management.base import BaseCommand

from upstream_sim.server import PortUnavailable, SimServer
from upstream_sim.tokens import issue_token


def _port_message(exc: PortUnavailable, opts: dict) -> str:
    """Which port could not be had, why, and how to pick another (no traceback: a taken port is a
    person's everyday mistake, not a bug)."""
    why = "taken by another process" if exc.errno == errno.EADDRINUSE else (exc.cause.strerror or "unavailable").lower()
    if exc.cause.errno == errno.EADDRNOTAVAIL:
        fix = "that host is not an address of this machine: pick another with --host (default 127.0.0.1)"
    elif exc.role == "API":
        fix = ("pick another with --port N (its storage then listens on N+1 unless --storage-port is given), "
               "or --port 0 for free ones")
    else:
        given = "given by --storage-port" if opts["storage_port"] else f"--port {opts['port']} plus one"
        fix = (f"that is the storage port ({given}): pick another with --storage-port N or another --port, "
               "or --port 0 for free ones")
    return f"eco_sim: cannot listen on {exc.host}:{exc.port} ({why}); {fix}."


class Command(BaseCommand):
    help = "Serve the NEON API simulator: REST at /api/v0, GraphQL at /graphql, storage on a second port."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8765)
        parser.add_argument("--storage-port", type=int, default=0,
                            help="port of the signed-URL storage host (default: PORT+1)")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--rate-limit-scale", type=float, default=1.0)
        parser.add_argument("--print-token", action="store_true", help="print a valid token and exit")
        parser.add_argument("--token-ttl", type=float, default=30 * 24 * 3600)

    def handle(self, *args, **opts):
        if opts["print_token"]:
            self.stdout.write(issue_token(opts["seed"], exp_s=opts["token_ttl"]))
            return
        storage_port = opts["storage_port"] or (opts["port"] + 1 if opts["port"] else 0)
        sim = SimServer(seed=opts["seed"], port=opts["port"], storage_port=storage_port, host=opts["host"],
                        rate_limit_scale=opts["rate_limit_scale"])
        try:
            sim._bind()
        except PortUnavailable as exc:
            self.stderr.write(_port_message(exc, opts))
            raise SystemExit(2) from None
        self.stdout.write(f"eco_sim seed={opts['seed']} REST {sim.base_url}/  GraphQL {sim.graphql_url}  "
                          f"storage {sim.storage_base}/")
        self.stdout.flush()
        sim._server = __import__("uvicorn").Server(sim._config())
        sim._server.run(sockets=sim._sockets)
