"""Redaction cost with a hostile caller population (issue 21, item 1).

    .venv/bin/python bench/bench_redaction.py

Before the fix every X-API-Token value became a global secret and each result was substring-
scanned for all of them (10,000 distinct headers: search p50 4.1 ms -> 33 ms). Now header values
register nothing; honoured tokens used upstream go to a bounded LRU read only by the log filter.
This measures, before and after 10,000 distinct honoured-and-used tokens: the registry size,
masking one 27 KB result (configured token + the call's token, walking string values) and
one log line through the filter.

Last figures (2 shared CPU cores, load ~3, 2026-11-23 17:40 UTC):
    registry size          1 -> 257 (bound: 32 configured + 256 request tokens)
    result, 27 KB          p50 0.35 ms before, 0.33 ms after (answers never read the LRU)
    log line               p50 0.4 us before, 15.8 us after (257 substring checks per line)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eco_core import redact

CONFIGURED = "configured-operator-token-0123456789"


def _payload() -> dict:
    items = [{"productCode": f"DP1.{i:05d}.001", "productName": f"Product number {i}",
              "keywords": ["soil", "temperature", "wind"], "siteCodes": ["HARV", "BART", "SCBI"],
              "productAbstract": "An abstract of a few words " * 6} for i in range(80)]
    return {"resolved": {}, "notes": ["a note"], "nextSteps": [], "source": {"endpoints": []}, "items": items}


def _p50(fn, n: int = 300) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(label: str) -> None:
    payload = _payload()

    def result() -> None:
        with redact.call_secret("a-caller-token-abcdefgh"):
            redact.scrub_values(payload)

    line = "GET https://data.neonscience.org/api/v0/products/DP1.00001.001 200 in 123 ms " * 2
    print(f"{label}: registry {redact.registry_size()}, result p50 {_p50(result) * 1e3:.2f} ms, "
          f"log line p50 {_p50(lambda: redact.scrub_log(line), 3000) * 1e6:.1f} us")


def main() -> None:
    redact.register_secret(CONFIGURED)
    measure("before")
    for i in range(10_000):
        redact.remember_request_token(f"hostile-but-honoured-token-{i:05d}")
    measure("after 10,000 distinct used tokens")


if __name__ == "__main__":
    main()
