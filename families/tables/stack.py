"""eco_stack_tables: a selection's monthly CSVs stacked into one typed Parquet file per table.

It lists the selection once (as eco_list_files does), keeps the files a stack reads
(tables.stack.needed), plans them as eco_download_files plans data files (caps and confinement
before any byte; downloads.max_stack_files for their number), and answers from the dataset's
dataset.json when every source is unchanged and on disk. Otherwise it downloads what is missing or
changed through downloads/ (verified, resumable, in the manifest) and stacks with tables/, which
rebuilds only the tables whose sources changed. The stacking runs on worker threads; progress goes
to stderr and, when the client asked, as MCP progress notifications.

Over HTTP the same selection is planned here and built by a worker into the server's dataset
store (tables.store): the call answers the dataset's state, and waits for it when asked.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import Field

from catalog import months
from catalog.access import catalog_index, catalog_read
from catalog.citation_text import product_citation
from catalog.index import CatalogIndex
from catalog.months import MONTH_PATTERN
from catalog.releases import bare_doi, doi_link
from catalog.resolve import PROVISIONAL
from downloads import paths
from downloads.files import FileRecord, list_site_months
from downloads.plan import Item, Plan, check, start
from downloads.selection import select
from downloads.transfer import PROGRESS_EVERY_S, download
from eco_core.bounds import Configured
from eco_core.errors import EcoError
from eco_core.wire import Envelope, NextStep, Source, ToolInput, WireModel
from families.call import CallContext
from families.tables.common import LISTING_ENDPOINT, NEED, Package
from families.tables.query import query_next_step
from tables import layout, names
from tables.layout import on_disk

log = logging.getLogger("eco.tables")

# The longest a stack call over HTTP waits for its build (wait_seconds), the wait its nextSteps
# propose while a dataset builds, the room kept before the call's deadline and how often the
# row is read meanwhile.
STACK_WAIT_MAX_S = 25
STACK_WAIT_S = 20
STACK_WAIT_RESERVE_S = 2.0
STACK_WAIT_POLL_S = 0.25


class StackTablesInput(ToolInput):
    product: str | None = Field(None, max_length=300, description="With site_codes, start_month: the selection.")
    site_codes: Annotated[list[str] | None, Configured("limits.max_sites_per_call", "maxItems")] = Field(
        None, min_length=1)
    start_month: str | None = Field(None, pattern=MONTH_PATTERN)
    end_month: str | None = Field(None, pattern=MONTH_PATTERN)
    package: Package = "basic"
    release: str | None = Field(None, max_length=64, description="Default: latest per month.")
    include_provisional: bool = Field(False, description="Also PROVISIONAL months (see the release column).")
    tables: list[str] | None = Field(None, min_length=1, max_length=50, description=(
        "Only these (and sensor_positions, science_review_flags)."))
    max_bytes: int | None = Field(None, ge=1, description="Refuse a selection of more source bytes.")
    dataset_id: str | None = Field(None, pattern=layout.DATASET_ID_PATTERN, max_length=200, description=(
        "An earlier call's datasetId, instead of a selection."))
    wait_seconds: int = Field(0, ge=0, le=STACK_WAIT_MAX_S, description=(
        "HTTP: wait up to this long for a building dataset to be ready; 0 answers at once."))


class StackedColumn(WireModel):
    name: str
    type: str
    units: str | None


class StackedTable(WireModel):
    name: str
    layout: str
    file: str = Field(description="Under folder.")
    rows: int
    columns: list[StackedColumn]
    time_span: dict[str, str] | None = Field(description="start, end (UTC) and the columns they come from.")
    rebuilt: bool = Field(description="false: unchanged, kept.")


class DatasetCitation(WireModel):
    release: str
    doi: str | None
    doi_url: str | None = None
    text: str | None
    bibtex: str | None


class StackTotals(WireModel):
    source_files: int
    downloaded: int
    bytes_transferred: int
    tables_rebuilt: int
    seconds: float


class BuildProgress(WireModel):
    phase: str = Field(description="queued, downloading, stacking or ready.")
    files_total: int | None = None
    files_downloaded: int | None = None
    bytes_total: int | None = None
    bytes_downloaded: int | None = None
    tables_total: int | None = None
    tables_done: int | None = None


class BuildError(WireModel):
    code: str
    message: str
    retryable: bool


class StackTablesOutput(Envelope):
    dataset_id: str
    state: Literal["building", "ready", "failed"] = Field("ready", description=(
        "building: call again with dataset_id; failed: see buildError."))
    progress: BuildProgress | None = None
    build_error: BuildError | None = Field(None, description="When state is failed.")
    folder: str | None = Field(description="stdio only; null over HTTP.")
    product_code: str
    package: Package
    site_codes: list[str]
    start_month: str
    end_month: str
    releases: list[str]
    tables: list[StackedTable]
    files: dict[str, str] = Field(description="Metadata files by kind.")
    citations: list[DatasetCitation]
    totals: StackTotals


# Files transferred per download batch: between batches the call reports its progress.
BATCH = 32


class _Reporter:
    """Progress of one stack on stderr (logging) and, when the client asked (a progressToken), as
    MCP progress notifications. `advance` may be called from the stacking's worker thread: the
    notifications are always sent from the call's event loop, and `flush` waits for them so they
    reach the client before the result."""

    def __init__(self, call: CallContext, total: int) -> None:
        self.call, self.total, self.done = call, total, 0
        self.loop = asyncio.get_running_loop()
        self.last = 0.0
        self.pending: set[asyncio.Future[None]] = set()

    def advance(self, n: int, message: str, *, force: bool = False) -> None:
        self.done += n
        now = time.monotonic()
        if not force and now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        log.info("stack progress: %s", message)
        if self.call.progress is not None:
            self.loop.call_soon_threadsafe(self._send, float(self.done), message)

    def _send(self, done: float, message: str) -> None:
        assert self.call.progress is not None
        fut = asyncio.ensure_future(self.call.progress(done, float(self.total), message))
        self.pending.add(fut)
        fut.add_done_callback(self.pending.discard)

    async def flush(self) -> None:
        if self.pending:
            # A client that went away must not fail the stack: its notifications are best effort.
            await asyncio.gather(*self.pending, return_exceptions=True)


def _plan_items(idx: CatalogIndex, product: str, files: list[FileRecord], base: PurePosixPath) -> list[Item]:
    """Each source file once (a lab or site-all file repeats in every site-month: the first copy
    is fetched), under product/site/month as eco_download_files places it."""
    items: dict[str, Item] = {}
    for f in files:
        if f.name in items:
            continue
        items[f.name] = Item(url=f.url or "", rel=base.joinpath(product, f.site_code, f.month, paths.plain_name(f.name)),
                             name=f.name, source="data", size=f.size, md5=f.md5, token_only=False, product=product,
                             site=f.site_code, month=f.month, release=f.release)
    return list(items.values())


async def _citations(call: CallContext, product: str, releases: list[str], sites: list[str]) -> list[dict[str, Any]]:
    idx = await catalog_index(call.cfg, call.client, need=NEED)
    when = datetime.now(UTC).date()
    out = []
    for rel in releases:
        provisional = rel == PROVISIONAL
        got = product_citation(idx, product, release="latest" if provisional else rel, provisional=provisional,
                               sites=sites, when=when)
        out.append({"release": rel, "doi": got.doi, "text": got.text, "bibtex": got.bibtex})
    return out


async def _issue_log(call: CallContext, product: str, notes: list[str]) -> list[dict[str, Any]] | None:
    try:
        rec = await call.client.product(product)
    except EcoError as exc:
        notes.append(f"The issue log could not be read ({exc.code}); the tables are complete without it.")
        return None
    logs = [c.model_dump(by_alias=True) for c in rec.change_logs or []]
    return logs or None


def _answer(record: dict[str, Any], folder: Path | None, rebuilt: set[str], totals: StackTotals, resolved: dict[str, Any],
            notes: list[str], steps: list[NextStep], cfg: Any, endpoint: str) -> StackTablesOutput:
    sel = record["selection"]
    tables = [StackedTable(name=t["name"], layout=t["layout"], file=t["file"], rows=t["rows"],
                           columns=[StackedColumn(**c) for c in t["columns"]], time_span=t.get("timeSpan"),
                           rebuilt=t["name"] in rebuilt) for t in record["tables"].values()]
    return StackTablesOutput(
        dataset_id=record["datasetId"], folder=None if folder is None else str(folder), product_code=record["product"],
        package=record["package"], site_codes=sel["siteCodes"], start_month=sel["startMonth"],
        end_month=sel["endMonth"], releases=record["releases"], tables=tables,
        files={k: v["file"] for k, v in (record.get("files") or {}).items()},
        citations=[DatasetCitation(**{**c, "doi": bare_doi(c.get("doi")), "doi_url": doi_link(c.get("doi"))})
                   for c in record.get("citations") or []], totals=totals,
        resolved=resolved, notes=[*notes, *record.get("notes", [])], next_steps=steps,
        source=Source(origin="upstream", endpoints=[endpoint], api_base_url=cfg.eco.base_url))


def _stack_steps(product: str, record: dict[str, Any]) -> list[NextStep]:
    names_ = list(record["tables"])
    data = [n for n in names_ if n not in (names.SENSOR_POSITIONS, names.SCIENCE_REVIEW_FLAGS)]
    args: dict[str, Any] = {"product": product}
    if data:
        args["tables"] = data[:50]
    steps = [NextStep(tool="eco_describe_tables", arguments=args, why="What each column means, its type and units.")]
    # The dataset is stacked (ready): ask it in SQL next.
    ask = query_next_step(record)
    return steps if ask is None else [ask, *steps]


def _selection_of(args: StackTablesInput) -> None:
    """A dataset id alone, or a selection (product, site_codes, start_month): checked before anything."""
    if args.dataset_id is not None:
        extra = [f for f in ("product", "site_codes", "start_month", "end_month", "tables", "release")
                 if getattr(args, f) is not None]
        if extra:
            raise EcoError("invalid_argument", f"dataset_id: give it alone, or a selection without it (also given: "
                           f"{', '.join(extra)})", details={"field": "dataset_id"})
        return
    missing = [f for f in ("product", "site_codes", "start_month") if getattr(args, f) is None]
    if missing:
        raise EcoError("invalid_argument", f"{missing[0]}: required (a selection is product, site_codes and "
                       "start_month; or give dataset_id)", details={"field": missing[0]})


class _Listed:
    """A selection listed and planned: caps, hosts and confinement checked, nothing fetched."""

    def __init__(self, query: Any, resolved: dict[str, Any], plan: Plan, wanted: list[str] | None,
                 endpoint: str, provisional_left: int = 0) -> None:
        self.query, self.resolved, self.plan, self.wanted, self.endpoint = query, resolved, plan, wanted, endpoint
        self.provisional_left = provisional_left

    def provisional_note(self) -> list[str]:
        """What was left out by default: neonUtilities too stacks released data only unless asked."""
        n = self.provisional_left
        if not n:
            return []
        return [f"Left out {n} provisional site-month{'s' if n != 1 else ''} (not in a release yet, may change): "
                "released data only by default; include_provisional=true stacks them too, told apart by each "
                "row's release column."]

    @property
    def selection(self) -> dict[str, Any]:
        q = self.query
        return {"product": q.product, "siteCodes": list(q.sites), "startMonth": q.start, "endMonth": q.end,
                "package": q.package, "release": q.release, "includeProvisional": q.include_provisional,
                "tables": self.wanted}


async def _list_and_plan(args: StackTablesInput, call: CallContext, idx: CatalogIndex, plan: Plan, query: Any,
                         resolved: dict[str, Any]) -> _Listed:
    from tables import stack
    cfg, client = call.cfg, call.client
    wanted = sorted(set(args.tables)) if args.tables else None
    listing = await list_site_months(client, cfg, query)
    endpoint = LISTING_ENDPOINT if len(query.sites) == 1 and query.start == query.end else "POST /data/query"
    left = len(_provisional_left(idx, query, listing))
    if not listing.files:
        raise EcoError("not_found", f"start_month: no data for {query.product} at {', '.join(query.sites)} from "
                       f"{query.start} to {query.end}" + ("" if query.include_provisional else " (released data)"),
                       details={"field": "start_month", **({"provisionalSiteMonths": left} if left else {})},
                       hint=f"{left} site-month(s) hold provisional data only: include_provisional=true stacks them."
                       if left else "eco_get_availability tells which months each site has.")
    present = {f.table for f in listing.files if f.kind == "data" and f.table}
    if wanted:
        unknown = [t for t in wanted if t not in present and t not in (names.SENSOR_POSITIONS,
                                                                       names.SCIENCE_REVIEW_FLAGS)]
        if unknown:
            raise EcoError("not_found", f"tables: {', '.join(unknown)} has no file in this selection",
                           details={"field": "tables", "didYouMean": sorted(present)[:50]})
    if not any(f.kind == "variables" for f in listing.files):
        raise EcoError("not_found", f"product: {query.product} has no variables file in this selection: nothing "
                       "to stack (no data, or not a tabular product)", details={"field": "product"})
    use = stack.needed((f.name for f in listing.files), set(wanted) if wanted else None,
                       {f.name: f.md5 for f in listing.files})
    plan.items = _plan_items(idx, query.product, [f for f in listing.files if f.name in use], plan.base)
    check(plan, cfg, if_exists="skip", max_bytes=args.max_bytes, max_files=cfg.downloads.max_stack_files)
    return _Listed(query, resolved, plan, wanted, endpoint, left)


def _provisional_left(idx: CatalogIndex, query: Any, listing: Any) -> set[tuple[str, str]]:
    """The site-months left out for holding provisional data only (include_provisional false): as
    the upstream answered, else as the availability catalog says (NEON's POST query omits them)."""
    if query.include_provisional or query.release is not None:
        return set()
    entry = idx.by_code.get(query.product)
    out = set(listing.provisional_only)
    for site in query.sites:
        cell = entry.cells.get(site) if entry is not None else None
        for a, b in cell.by_release.get(PROVISIONAL, ()) if cell is not None else ():
            out.update((site, months.month_from_index(k)) for k in range(a, b + 1)
                       if query.start <= months.month_from_index(k) <= query.end
                       and (site, months.month_from_index(k)) not in listing.site_months)
    return out


def _zero_totals(n: int, started: float) -> StackTotals:
    return StackTotals(source_files=n, downloaded=0, bytes_transferred=0, tables_rebuilt=0,
                       seconds=round(time.monotonic() - started, 3))


async def stack_tables(args: StackTablesInput, call: CallContext) -> StackTablesOutput:
    from tables import dataset
    from tables.stack import SourceFile
    _selection_of(args)
    if call.transport == "http":
        return await _stack_on_server(args, call)
    cfg, client = call.cfg, call.client
    started = time.monotonic()
    idx = await catalog_index(cfg, client, need=NEED)
    if not cfg.downloads_enabled:
        raise EcoError("feature_unavailable", "downloads are disabled on this server (downloads.enabled): stacking "
                       "reads its files from the download directory", details={"setting": "downloads.enabled"})
    plan = start(cfg, None)
    if args.dataset_id is not None:
        folder = plan.confiner.directory(PurePosixPath(dataset.FOLDER, args.dataset_id), "dataset_id")
        record = await asyncio.to_thread(dataset.load, folder)
        if record is None:
            raise EcoError("not_found", f"dataset_id: no dataset {args.dataset_id} in the download directory",
                           details={"field": "dataset_id"})
        return _answer(record, folder, set(), _zero_totals(len(record.get("sources") or []), started), {},
                       ["Answered from the dataset's dataset.json (not checked against upstream: call with the "
                        "selection for that)."], _stack_steps(record["product"], record), cfg, LISTING_ENDPOINT)
    query, resolved = select(idx, cfg, args)
    wanted = sorted(set(args.tables)) if args.tables else None
    ds_id = dataset.dataset_id(query.product, list(query.sites), query.start, query.end, query.package,
                               query.release, query.include_provisional, wanted)
    # The dataset's folder must resolve inside the download directory, checked before any request.
    folder = plan.confiner.directory(PurePosixPath(dataset.FOLDER, ds_id), "dataset folder")
    listed = await _list_and_plan(args, call, idx, plan, query, resolved)
    endpoint = listed.endpoint
    notes: list[str] = listed.provisional_note()
    sources = [SourceFile(plan.root / i.rel, i.name, i.md5, i.release or PROVISIONAL) for i in plan.items]
    record = await asyncio.to_thread(dataset.load, folder)
    current = record is not None and await asyncio.to_thread(dataset.is_current, record, folder, sources)
    if current and record is not None:
        notes.append("Unchanged upstream since the dataset was stacked: answered from its dataset.json.")
        return _answer(record, folder, set(), _zero_totals(len(sources), started), resolved, notes,
                       _stack_steps(query.product, record), cfg, endpoint)
    # Only what is missing or changed goes to the transfers; what the dataset recorded with the
    # same MD5 and size is on disk already.
    recorded = {(s["name"], s.get("md5")): s.get("size") for s in (record or {}).get("sources") or []}
    fetch = [i for i, s in zip(plan.items, sources, strict=True)
             if not on_disk(s.path, recorded.get((i.name, i.md5)))]
    reporter = _Reporter(call, len(fetch) + len(sources))
    downloaded = moved = 0
    for k in range(0, len(fetch), BATCH):
        batch = Plan(root=plan.root, base=plan.base, name_max=plan.name_max, path_max=plan.path_max,
                     confiner=plan.confiner, items=fetch[k:k + BATCH])
        _, got = await download(client, cfg, batch)
        notes += batch.notes
        downloaded += got.downloaded + got.resumed
        moved += got.bytes_transferred
        reporter.advance(len(batch.items), f"downloaded {min(k + BATCH, len(fetch))}/{len(fetch)} files, "
                         f"{moved} bytes", force=k + BATCH >= len(fetch))
    releases = sorted({s.release for s in sources})
    cites = await _citations(call, query.product, releases, list(query.sites))
    issue_log = await _issue_log(call, query.product, notes)
    selection = listed.selection

    def report(p: dataset.Progress) -> None:
        reporter.done = len(fetch) + p.files_done
        reporter.advance(0, f"stacking: {p.tables_done}/{p.tables_total} tables, {p.files_done}/{p.files_total} "
                            "files read", force=p.tables_done == p.tables_total and p.tables_total > 0)

    try:
        built = await asyncio.to_thread(
            dataset.build, folder, dataset.table_sources(sources), root=plan.root, product=query.product,
            package=query.package, wanted=wanted, selection=selection, citations=cites, issue_log=issue_log,
            progress=dataset.Progress(report=report))
    except dataset.NoVariables:
        raise EcoError("not_found", f"product: {query.product} has no variables file in this selection",
                       details={"field": "product"}) from None
    await reporter.flush()
    totals = StackTotals(source_files=len(sources), downloaded=downloaded, bytes_transferred=moved,
                         tables_rebuilt=len(built.rebuilt), seconds=round(time.monotonic() - started, 3))
    if built.kept and built.rebuilt:
        notes.append(f"Rebuilt {', '.join(built.rebuilt)} (their sources changed upstream); kept the other tables.")
    return _answer(built.record, folder, set(built.rebuilt), totals, resolved, notes,
                   _stack_steps(query.product, built.record), cfg, endpoint)


# -- eco_stack_tables over HTTP: the server's dataset store --------------------------------------

def _server_steps(row: Any, record: dict[str, Any] | None, selection_call: dict[str, Any]) -> list[NextStep]:
    from tables.models import BUILDING, FAILED
    from tables.store import MAX_ATTEMPTS

    if row.state == BUILDING:
        return [NextStep(tool="eco_stack_tables", arguments={"dataset_id": row.dataset_id,
                                                             "wait_seconds": STACK_WAIT_S},
                         why="The dataset is being built on the server: call again (waiting for it) until it is "
                             "ready.")]
    if row.state == FAILED:
        if row.attempts < MAX_ATTEMPTS:
            return [NextStep(tool="eco_stack_tables", arguments=selection_call,
                             why="Call again with the selection to build it again (fresh file URLs).")]
        return []
    return _stack_steps(row.product, record) if record is not None else []


def _selection_call(sel: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"product": sel["product"], "site_codes": sel["siteCodes"], "start_month": sel["startMonth"],
                           "end_month": sel["endMonth"]}
    if sel.get("package") != "basic":
        out["package"] = sel["package"]
    if sel.get("release"):
        out["release"] = sel["release"]
    if sel.get("includeProvisional"):
        out["include_provisional"] = True
    if sel.get("tables"):
        out["tables"] = sel["tables"]
    return out


def _server_answer(row: Any, record: dict[str, Any] | None, *, resolved: dict[str, Any], notes: list[str], cfg: Any,
                   endpoint: str, started: float) -> StackTablesOutput:
    """The dataset's state as an HTTP caller may see it: never a server path."""
    sel = row.selection
    prog = row.progress or {}
    progress = BuildProgress(phase=prog.get("phase", row.state), files_total=prog.get("filesTotal"),
                             files_downloaded=prog.get("filesDownloaded"), bytes_total=prog.get("bytesTotal"),
                             bytes_downloaded=prog.get("bytesDownloaded"), tables_total=prog.get("tablesTotal"),
                             tables_done=prog.get("tablesDone"))
    steps = _server_steps(row, record, _selection_call(sel))
    totals = _zero_totals(len(row.plan.get("items") or []) if row.plan else prog.get("filesTotal") or 0, started)
    if record is not None:
        # Ready: the build's own figures, as its progress reports them (not the zeros of a call
        # that only read the result).
        totals = totals.model_copy(update={"downloaded": prog.get("filesDownloaded") or 0,
                                           "bytes_transferred": prog.get("bytesDownloaded") or 0,
                                           "tables_rebuilt": prog.get("tablesDone") or 0})
        out = _answer(record, None, set(), totals, resolved, notes, steps, cfg, endpoint)
        return out.model_copy(update={"state": "ready", "progress": progress})
    error = BuildError(**row.error) if row.error else None
    return StackTablesOutput(
        dataset_id=row.dataset_id, state=row.state, progress=progress, build_error=error, folder=None,
        product_code=sel["product"], package=sel["package"], site_codes=sel["siteCodes"], start_month=sel["startMonth"],
        end_month=sel["endMonth"], releases=[], tables=[], files={}, citations=[], totals=totals, resolved=resolved,
        notes=notes, next_steps=steps, source=Source(origin="upstream", endpoints=[endpoint],
                                                     api_base_url=cfg.eco.base_url))


def _ready_record(cfg: Any, row: Any) -> tuple[Any, dict[str, Any] | None]:
    """The row and, when ready, its dataset.json (its last use touched). A ready dataset whose
    files this process cannot read is recorded failed (store.missing): a call with the selection
    builds it again, and the reason says what to check."""
    from tables import dataset, store
    from tables.models import READY

    if row.state != READY:
        return row, None
    record = dataset.load(store.folder_of(cfg, row.dataset_id))
    if record is None:
        return store.missing(row), None
    store.touch(row)
    return row, record


async def _stack_on_server(args: StackTablesInput, call: CallContext) -> StackTablesOutput:
    """Over HTTP: the dataset's state in the server's store, its build queued when it is new (or
    failed before); see tables.store for where the caller's token goes (the listing only)."""
    from tables import store
    from tables.models import READY
    from upstream import context

    cfg = call.cfg
    started = time.monotonic()
    if args.dataset_id is not None:
        row = await catalog_read(store.lookup, args.dataset_id)
        if row is None:
            raise _no_dataset(args.dataset_id)
        row = await _wait_built(call, row, args.wait_seconds)
        row, record = await catalog_read(_ready_record, cfg, row)
        return _server_answer(row, record, resolved={}, notes=[], cfg=cfg, endpoint=LISTING_ENDPOINT, started=started)
    idx = await catalog_index(cfg, call.client, need=NEED)
    query, resolved = select(idx, cfg, args)
    root = store.store_root(cfg)
    name_max, path_max = paths.limits(root)
    plan = Plan(root=root / store.SOURCES, base=PurePosixPath(), name_max=name_max, path_max=path_max,
                confiner=paths.Confiner(root / store.SOURCES))
    listed = await _list_and_plan(args, call, idx, plan, query, resolved)
    limit = min(cfg.tables.max_bytes_per_dataset, cfg.tables.max_store_bytes)
    if plan.bytes > limit:
        setting = ("tables.max_bytes_per_dataset" if limit == cfg.tables.max_bytes_per_dataset
                   else "tables.max_store_bytes")
        raise EcoError("download_limit_exceeded", f"the selection is {plan.bytes} source bytes, at most {limit} per "
                       f"dataset on this server ({setting}); narrow the sites, months or tables",
                       details={"bytes": plan.bytes, "maxBytes": limit, "setting": setting, "files": len(plan.items)})
    selection = listed.selection
    key = store.dataset_key(selection, [(i.name, i.md5, i.release or PROVISIONAL) for i in plan.items],
                            cfg.eco.base_url)
    notes: list[str] = listed.provisional_note()
    row = await catalog_read(store.lookup, key)
    record = None
    if row is not None:
        row, record = await catalog_read(_ready_record, cfg, row)
    if row is None or _restartable(row):
        # New (or its last build failed): the citations and issue log are read here, with the
        # caller's token, so the worker needs none.
        releases = sorted({i.release or PROVISIONAL for i in plan.items})
        build_plan = {
            "items": [{"url": i.url, "rel": str(i.rel), "name": i.name, "size": i.size, "md5": i.md5,
                       "release": i.release, "site": i.site, "month": i.month} for i in plan.items],
            "citations": await _citations(call, query.product, releases, list(query.sites)),
            "issueLog": await _issue_log(call, query.product, notes),
        }
        acct = context.current()
        row, queued = await catalog_read(store.claim, key, product=query.product, selection=selection,
                                         plan=build_plan, planned_bytes=plan.bytes,
                                         requested_by=acct.identity if acct is not None else "anonymous")
        if queued and (note := await catalog_read(store.dispatch, key)):
            notes.append(note)
        claimed, record = await catalog_read(_ready_record, cfg, await _wait_built(call, row, args.wait_seconds))
        row = claimed
        if claimed.state == "building":
            notes.append("The dataset is being built on the server: call again with dataset_id to follow it.")
    elif row.state != READY:
        shared, record = await catalog_read(_ready_record, cfg, await _wait_built(call, row, args.wait_seconds))
        row = shared
        notes.append("Its builds failed too often; an operator can delete it so it is built anew."
                     if _restartable(shared) is False and shared.state == "failed"
                     else "This dataset is being built already (asked for before): this call shares that build.")
    else:
        notes.append("Built before for this selection of the same files: answered from the server's store.")
    return _server_answer(row, record, resolved=listed.resolved, notes=notes, cfg=cfg, endpoint=listed.endpoint,
                          started=started)


def _no_dataset(dataset_id: str) -> EcoError:
    return EcoError("not_found", f"dataset_id: no dataset {dataset_id} on this server (never built, deleted, or "
                    "evicted from the store after a long time unused): call with the selection to build it",
                    details={"field": "dataset_id"})


async def _wait_built(call: CallContext, row: Any, wait_s: float) -> Any:
    """The dataset's row once its build has ended, or as it is after `wait_s` (cut to end before
    the call's deadline): a caller that asks to wait needs no poll for a small build."""
    from tables import store
    from tables.models import BUILDING

    remaining = call.accounting.remaining() if call.accounting is not None else None
    if remaining is not None:
        wait_s = min(wait_s, remaining - STACK_WAIT_RESERVE_S)
    dataset_id = row.dataset_id
    until = time.monotonic() + wait_s
    while row.state == BUILDING and time.monotonic() < until:
        await asyncio.sleep(min(STACK_WAIT_POLL_S, max(0.0, until - time.monotonic())))
        row = await catalog_read(store.lookup, dataset_id)
        if row is None:  # deleted while it built
            raise _no_dataset(dataset_id)
    return row


def _restartable(row: Any) -> bool:
    from tables.models import FAILED
    from tables.store import MAX_ATTEMPTS

    return row.state == FAILED and row.attempts < MAX_ATTEMPTS
