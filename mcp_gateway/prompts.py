"""The three eco_* prompts, declared as specs; the protocol handlers live in server.py.

Each prompt validates its arguments (a missing required one, an unknown one or a malformed value
is JSON-RPC -32602 naming it, data.code invalid_argument) and renders steps in the spec's order.
A step is kept only while every tool it names is listed on the transport, so a prompt never sends
an agent to a tool it cannot call; the transport decides between downloading (stdio) and signed
URLs (HTTP), and how a stack is waited for (answered when done on stdio, built on the server over
HTTP).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from catalog.months import MONTH
from mcp_gateway.registry import Registry

Transport = Literal["stdio", "http"]
RELEASE = re.compile(r"^(RELEASE-\d{4}|latest)$")
MAX_SITES = 30


@dataclass(frozen=True)
class Step:
    tools: tuple[str, ...]  # every tool the text names; the step is dropped unless all are registered
    text: str


@dataclass(frozen=True)
class PromptSpec:
    name: str
    description: str
    arguments: tuple[types.PromptArgument, ...]
    steps: Callable[[dict[str, str], Transport], list[Step]]
    validate: Callable[[dict[str, str]], None] = lambda args: None

    def prompt(self) -> types.Prompt:
        return types.Prompt(name=self.name, description=self.description, arguments=list(self.arguments))

    def text(self, args: dict[str, str], transport: Transport, tools: Iterable[str]) -> str:
        """The prompt's one user message, after its arguments are checked."""
        known = {a.name for a in self.arguments}
        unknown = sorted(set(args) - known)
        if unknown:
            raise bad_argument(unknown[0], f"{self.name}: unknown argument {unknown[0]!r}; valid: "
                                           f"{', '.join(sorted(known))}")
        args = {k: v.strip() for k, v in args.items() if v is not None and v.strip()}
        for a in self.arguments:
            if a.required and a.name not in args:
                raise bad_argument(a.name, f"{self.name}: missing required argument {a.name!r}")
        self.validate(args)
        have = set(tools)
        kept = [s.text for s in self.steps(args, transport) if set(s.tools) <= have]
        return "\n".join(f"{i}. {t}" if i else t for i, t in enumerate(kept))

    def messages(self, args: dict[str, str], transport: Transport, registry: Registry) -> list[types.PromptMessage]:
        # The tools this transport lists: a step never names one the client cannot see.
        listed = [s.name for s in registry.listed(http=transport == "http")]
        text = self.text(args, transport, listed)
        return [types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))]


def bad_argument(name: str, message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message, data={"code": "invalid_argument", "argument": name})


def _arg(name: str, description: str, required: bool = False) -> types.PromptArgument:
    return types.PromptArgument(name=name, description=description, required=required)


def _codes(value: str) -> list[str]:
    return [c.strip() for c in value.split(",") if c.strip()]


def _json_list(values: list[str]) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values) + "]"


def _check_month(args: dict[str, str], name: str) -> None:
    if name in args and not MONTH.match(args[name]):
        raise bad_argument(name, f"{name}: expected a month YYYY-MM, got {args[name]!r}")


def _check_release(args: dict[str, str]) -> None:
    if "release" in args and not RELEASE.match(args["release"]):
        raise bad_argument("release", f"release: expected RELEASE-YYYY or latest, got {args['release']!r} "
                                      "(PROVISIONAL is not a release)")


def _check_sites(args: dict[str, str], name: str) -> None:
    if name in args:
        codes = _codes(args[name])
        if not codes or len(codes) > MAX_SITES:
            raise bad_argument(name, f"{name}: give 1 to {MAX_SITES} comma-separated site codes or names")


def _transport_line(transport: Transport) -> Step:
    if transport == "stdio":
        return Step(("eco_download_files",), "This server runs on stdio: eco_download_files can save the files "
                                             "locally (checked against file and byte caps first).")
    return Step(("eco_list_files",), "This server runs over HTTP: downloads are not available here; hand the "
                                     "user the signed URLs from eco_list_files (they need no token and expire "
                                     "about 7 days after generation).")


# --- eco_find_data ------------------------------------------------------------------------------

# Words of a question that name no measured thing: a product search must match every word, so the
# first search is what is measured ("soil temperature"), not the whole question.
QUESTION_WORDS = frozenset("""a an the of at in on for to by and or with from during over per across between within
    what was were is are be been how which when where who why did does do there many much any all each this that
    mean average averaged monthly daily annual yearly weekly hourly seasonal total maximum minimum max min median
    highest lowest shallowest deepest depth depths height top bottom surface value values trend change changes
    data measured measurement measurements site sites year years month months neon""".split())
SITE_WORD = re.compile(r"\b(?!NEON\b)[A-Z]{4}\b")
YEAR = re.compile(r"\b((?:19|20)\d{2})(?:-(0[1-9]|1[0-2]))?\b")


def search_words(question: str) -> str:
    """What a question measures, for eco_search_products: its words less site codes, years, and
    words of place, time and statistics."""
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z-]*", question)
             if not SITE_WORD.fullmatch(w) and w.lower() not in QUESTION_WORDS]
    return " ".join(w.lower() for w in words) or question


def _window(text: str) -> tuple[str, str] | None:
    """The months a timeframe (or a question) names: a year, a month, or a range of them."""
    found = YEAR.findall(text)
    if not found:
        return None
    (y0, m0), (y1, m1) = found[0], found[-1]
    return f"{y0}-{m0 or '01'}", f"{y1}-{m1 or '12'}"


def _search_call(args: dict[str, str], what: str) -> str:
    extra = ""
    region = args.get("region") or ""
    site = region if SITE_WORD.fullmatch(region) else next(iter(SITE_WORD.findall(args["question"])), None)
    if site:
        extra += f", site=\"{site}\""
    window = _window(args.get("timeframe") or args["question"])
    if window:
        extra += f", available_from=\"{window[0]}\", available_to=\"{window[1]}\""
    return f"eco_search_products(query=\"{what}\"{extra})"


def _find_steps(args: dict[str, str], transport: Transport) -> list[Step]:
    what = args.get("organism_or_variable") or search_words(args["question"])
    region = args.get("region")
    when = args.get("timeframe")
    steps = [
        Step((), f"Help answer this question with NEON data: {args['question']!r}."
                 + (f" Region: {region}." if region else "") + (f" Timeframe: {when}." if when else "")
                 + (f" Organism or variable: {what}." if "organism_or_variable" in args else "")),
        Step(("eco_search_products",), f"Find candidate data products: {_search_call(args, what)} (every word "
             "of query must match: name what is measured; site, available_from and available_to give the place "
             "and time asked; theme or science_team narrow; valid values are in eco://reference/vocabularies). "
             "Read matchedOn and the month range of each hit; its nextSteps lead on."),
    ]
    if region:
        steps.append(Step(("eco_search_sites",), f"Find field sites for the region: eco_search_sites(query=\"{region}\") "
                          "or, for a point, eco_search_sites(latitude=..., longitude=..., radius_km=...); "
                          "domain_code and state_code filter too."))
    else:
        steps.append(Step(("eco_search_sites",), "If the question implies a place, find field sites with "
                          "eco_search_sites(query=...) or by latitude, longitude and radius_km."))
    steps += [
        Step(("eco_get_availability",), "If the months are unclear, check where and when the chosen product has "
             "data: eco_get_availability(product=..., site_codes=[...], start_month=\"YYYY-MM\", "
             "end_month=\"YYYY-MM\")" + (f" for {when}" if when else "")
             + ". Months under PROVISIONAL are not in a release yet."),
        Step(("eco_describe_tables",), "See its tables and fields with units: eco_describe_tables(product=..., "
             "site_code=..., start_month=..., end_month=...) (the search's nextSteps give it). For sensor data pick "
             "the coarsest averaging interval that answers the question (30-minute for monthly means). It needs an upstream API token; on auth_required tell the user how "
             "to set one (eco://guide/api-token)."),
        _stack_line(transport),
        Step(("eco_query_tables",), "Answer with SQL: eco_query_tables(dataset_id=..., sql=\"SELECT ...\"), "
             "starting from the query the stack's nextSteps propose (monthly means by site and sensor height, rows "
             "that failed NEON's quality assessment left out with finalQF = 0). "
             "<table>_positioned gives each row's zOffset and heightRank (1 = the top of the tower or the "
             "shallowest soil sensor). The answer has units and the citations of the releases it read."),
        Step(("eco_list_files",), "To hand over files instead, size them first: eco_list_files(product=..., "
             "site_codes=[...], start_month=..., end_month=..., detail=\"summary\")."),
        _transport_line(transport),
        Step(("eco_get_citation",), "Cite what you used: eco_get_citation(product=..., release=..., "
             "format=\"bibtex\"), as the query's nextSteps give it (provisional=true for provisional data, which "
             "has no DOI). Give the number with its units and the citation."),
        Step(("eco_plot_tables",), "End with a chart of the answer: eco_plot_tables(dataset_id=..., sql=\"SELECT ...\") "
             "with the query that gave it (a time column draws a line, a text column bars; one colour per site or "
             "depth). It returns a PNG with units on the axes and the citation as caption, and its Vega-Lite spec."),
    ]
    return steps


def _stack_line(transport: Transport) -> Step:
    call = ("Stack the table for the sites and months asked: eco_stack_tables(product=..., site_codes=[...], "
            "start_month=..., end_month=..., tables=[...]) (the selection eco_describe_tables proposes, with its "
            "window and table). Released data only, unless include_provisional=true. ")
    if transport == "stdio":
        return Step(("eco_stack_tables", "eco_describe_tables"), call + "It downloads into the download directory "
                    "and answers when done with dataset_id.")
    return Step(("eco_stack_tables", "eco_describe_tables"), call + "It is built on the server and answers state "
                "building: call eco_stack_tables(dataset_id=..., wait_seconds=20) as its nextSteps say until state "
                "is ready.")


# --- eco_cite_dataset ---------------------------------------------------------------------------

def _cite_steps(args: dict[str, str], transport: Transport) -> list[Step]:
    product = args["product"]
    release = args.get("release")
    sites = _codes(args["site_codes"]) if "site_codes" in args else None
    site_arg = f", site_codes={_json_list(sites)}" if sites else ""
    rel_arg = f", release=\"{release}\"" if release else ""
    return [
        Step((), f"Produce a citation for the NEON data product {product!r}"
                 + (f" as published in {release}" if release else "") + (f", sites {', '.join(sites)}" if sites else "")
                 + ": the citation text and BibTeX."),
        Step(("eco_get_product",), f"Resolve the product and its releases: eco_get_product(product=\"{product}\") "
             "(a name is resolved to its code; latestRelease is the newest release holding it)."),
        Step(("eco_get_availability",), f"Check whether the data used is provisional: eco_get_availability("
             f"product=\"{product}\"{site_arg}, provisional=\"only\"). Provisional months are not in any release, "
             "may change and have no DOI."),
        Step(("eco_get_citation",), f"Get the citation: eco_get_citation(product=\"{product}\"{rel_arg}{site_arg}, "
             "format=\"all\") for citationText and bibtex with the release DOI"
             + ("" if release else " (release defaults to latest)") + ". If provisional data was used, also "
             f"eco_get_citation(product=\"{product}\", provisional=true) and add the caveat that provisional data "
             "may change."),
        Step(("eco_get_citation",), "Give the user both forms, the DOI URL, the accessed date and the data "
             "policy link (CC BY 4.0; eco://guide/citing-neon-data)."),
    ]


def _cite_validate(args: dict[str, str]) -> None:
    _check_release(args)
    _check_sites(args, "site_codes")


# --- eco_plan_download --------------------------------------------------------------------------

def _plan_steps(args: dict[str, str], transport: Transport) -> list[Step]:
    product = args["product"]
    sites = _json_list(_codes(args["sites"]))
    start = args["start_month"]
    end = args.get("end_month", start)
    package = args.get("package", "basic")
    sel = (f"product=\"{product}\", site_codes={sites}, start_month=\"{start}\", end_month=\"{end}\", "
           f"package=\"{package}\"")
    steps = [
        Step((), f"Plan a download of {product} at {', '.join(_codes(args['sites']))} from {start} to {end} "
                 f"({package} package)."),
        Step(("eco_ping",), "Check the token first: eco_ping() reports tokenConfigured. Listing and downloading "
             "data files needs an upstream API token; without one, tell the user how to set it "
             "(eco://guide/api-token) and stop."),
        Step(("eco_get_availability",), f"Check availability: eco_get_availability(product=\"{product}\", "
             f"site_codes={sites}, start_month=\"{start}\", end_month=\"{end}\"); drop site-months without data."),
        Step(("eco_list_files",), f"Size it: eco_list_files({sel}, detail=\"summary\"). More than 500 "
             "site-months is query_too_large: split the window or the sites."),
    ]
    if transport == "stdio":
        steps.append(Step(("eco_download_files",), f"Download: eco_download_files({sel}, max_bytes=...) after "
                          "telling the user the size; files are MD5-verified. On download_limit_exceeded narrow "
                          "the selection or call again for the rest."))
    else:
        steps.append(Step(("eco_list_files",), f"Over HTTP downloads are not available: hand back the signed URLs "
                          f"from eco_list_files({sel}, detail=\"files\") (page with offset; they expire about 7 "
                          "days after generation and need no token)."))
    steps.append(Step(("eco_get_citation",), f"Cite: eco_get_citation(product=\"{product}\", site_codes={sites})"
                      " (with provisional=true if provisional months were included)."))
    return steps


def _plan_validate(args: dict[str, str]) -> None:
    _check_sites(args, "sites")
    _check_month(args, "start_month")
    _check_month(args, "end_month")
    if "end_month" in args and args["end_month"] < args["start_month"]:
        raise bad_argument("end_month", "end_month: must not be before start_month")
    if args.get("package", "basic") not in ("basic", "expanded"):
        raise bad_argument("package", f"package: expected basic or expanded, got {args['package']!r}")


PROMPTS: list[PromptSpec] = [
    PromptSpec(
        "eco_find_data",
        "Find NEON data that answers a question: products, sites, availability, size, citation.",
        (_arg("question", "What the user wants to know.", required=True),
         _arg("region", "A place: site, state, domain or area."),
         _arg("timeframe", "When, e.g. 2020-2023 or 2022-06."),
         _arg("organism_or_variable", "What is measured, e.g. soil temperature or ticks.")),
        _find_steps,
    ),
    PromptSpec(
        "eco_cite_dataset",
        "Cite a NEON data product: citation text and BibTeX, with the provisional caveat when needed.",
        (_arg("product", "Product code or name.", required=True),
         _arg("release", "RELEASE-YYYY or latest (default latest)."),
         _arg("site_codes", "Comma-separated site codes used.")),
        _cite_steps,
        _cite_validate,
    ),
    PromptSpec(
        "eco_plan_download",
        "Plan a data download: token, availability and size, then download (stdio) or signed URLs (HTTP), "
        "and cite.",
        (_arg("product", "Product code or name.", required=True),
         _arg("sites", "Comma-separated site codes or names (1-30).", required=True),
         _arg("start_month", "First month, YYYY-MM.", required=True),
         _arg("end_month", "Last month, YYYY-MM (default start_month)."),
         _arg("package", "basic (default) or expanded.")),
        _plan_steps,
        _plan_validate,
    ),
]

# Which prompt arguments complete to which codes (completion/complete).
PROMPT_COMPLETIONS = {
    ("eco_cite_dataset", "product"): "product",
    ("eco_cite_dataset", "release"): "release",
    ("eco_cite_dataset", "site_codes"): "site",
    ("eco_plan_download", "product"): "product",
    ("eco_plan_download", "sites"): "site",
}
