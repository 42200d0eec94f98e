"""Everything one running simulator holds: the world, caches, faults, log, limits, clock."""

from __future__ import annotations

import calendar
import hashlib
import hmac
import threading
import time
from urllib.parse import quote

from .biodata import Prototypes, Samples, Taxonomy
from .datafiles import DataFiles
from .documents import Documents
from .faults import Faults
from .locations import Locations
from .ratelimit import Limits, RateLimiter
from .reqlog import RequestLog
from .tokens import issue_token
from .world import World

SIGNED_URL_TTL_S = 604800  # NEON's signed storage URLs live 7 days (X-Goog-Expires=604800)
_WORLDS: dict[int, World] = {}
_WORLDS_LOCK = threading.Lock()


_FILES: dict[int, DataFiles] = {}


def world_for(seed: int) -> World:
    """Worlds are immutable, so all simulators with one seed share one (and its caches)."""
    with _WORLDS_LOCK:
        w = _WORLDS.get(seed)
        if w is None:
            w = _WORLDS[seed] = World(seed)
        return w


def files_for(seed: int) -> DataFiles:
    """File bytes depend only on the seed, so simulators with one seed share one byte cache."""
    world = world_for(seed)
    with _WORLDS_LOCK:
        f = _FILES.get(seed)
        if f is None:
            f = _FILES[seed] = DataFiles(world)
        return f


class SimState:
    def __init__(self, seed: int = 1, limits: Limits | None = None):
        self.seed = seed
        self.world = world_for(seed)
        self.files = files_for(seed)
        self.documents = Documents(self.world, self.files.bytes_cache)
        self.clock_offset = 0.0
        self.faults = Faults()
        self.requests = RequestLog()
        self.limiter = RateLimiter(limits or Limits())
        self.storage_base: str | None = None  # set by the server once the storage port is known
        self.shutdown = threading.Event()
        self.epoch = 0  # bumped by reset(); held ("hang") requests end when it changes
        self.body_cache: dict[tuple, bytes] = {}
        self._locations: Locations | None = None
        self._bio: tuple | None = None

    # lazily built parts (keep startup fast)
    @property
    def locations(self) -> Locations:
        if self._locations is None:
            self._locations = Locations(self.world)
        return self._locations

    def _biodata(self) -> tuple:
        if self._bio is None:
            self._bio = (Taxonomy(self.world), Samples(self.world), Prototypes(self.world))
        return self._bio

    @property
    def taxonomy(self) -> Taxonomy:
        return self._biodata()[0]

    @property
    def samples(self) -> Samples:
        return self._biodata()[1]

    @property
    def prototypes(self) -> Prototypes:
        return self._biodata()[2]

    def now(self) -> float:
        return time.time() + self.clock_offset

    def issue_token(self, exp_s: float = 3600) -> str:
        return issue_token(self.seed, exp_s=exp_s, now=self.now())

    def reset(self) -> None:
        self.epoch += 1
        self.faults.clear()
        self.requests.clear()
        self.limiter.reset()

    # ------------------------------------------------------------ signed URLs
    def _sig(self, path: str, stamp: str) -> str:
        key = hashlib.sha256(f"storage|{self.seed}".encode()).digest()
        return hmac.new(key, f"{path}|{stamp}".encode(), hashlib.sha256).hexdigest()

    def sign(self, storage_base: str, path: str) -> str:
        """A GCS-style V4 signed URL for a storage object path (relative to storage_base)."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self.now()))
        cred = quote(f"neon-sim@neon-publication.iam.gserviceaccount.com/{stamp[:8]}/auto/storage/goog4_request",
                     safe="")
        return (f"{storage_base}/{quote(path)}?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential={cred}"
                f"&X-Goog-Date={stamp}&X-Goog-Expires={SIGNED_URL_TTL_S}&X-Goog-SignedHeaders=host"
                f"&X-Goog-Signature={self._sig(path, stamp)}")

    def check_signature(self, path: str, query: dict) -> str | None:
        """None when the signed URL is good, else the GCS error code."""
        stamp, sig = query.get("X-Goog-Date"), query.get("X-Goog-Signature")
        if not stamp or not sig:
            return "AccessDenied"
        if not hmac.compare_digest(sig, self._sig(path, stamp)):
            return "SignatureDoesNotMatch"
        try:
            issued = calendar.timegm(time.strptime(stamp, "%Y%m%dT%H%M%SZ"))
        except ValueError:
            return "AccessDenied"
        if self.now() > issued + int(query.get("X-Goog-Expires", SIGNED_URL_TTL_S)):
            return "ExpiredToken"
        return None
