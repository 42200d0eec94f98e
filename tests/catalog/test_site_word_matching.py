"""eco_search_sites scores each query word against a site by the first rule that holds: the site's
code (10), one of its tokens from its name (3), state (2) or domain (1.5), a token the word
begins (1, 3+ letters), a token it nearly is (0.6, 5+ letters, ratio >= 80). The search looks
words up in tables built once per index; these tests hold the tables to the rule, site by site."""

from __future__ import annotations

import pytest
from rapidfuzz import fuzz

from catalog.index import words

# The word tables are the search's own, private: the rule is held to them word by word and site by
# site, which no answer of the tool can show.
from families.sites import SearchSitesInput, _SiteWords, _words_of, find_sites


def rule(site, w: str) -> tuple[float, str] | None:
    if w == site.code.lower():
        return 10.0, "siteCode"
    if w in site.tokens:
        if w in words(site.name):
            return 3.0, "siteName"
        if w in (site.state_code.lower(), *words(site.state_name)):
            return 2.0, "state"
        return 1.5, "domain"
    if len(w) >= 3 and any(t.startswith(w) for t in site.tokens):
        return 1.0, "siteName"
    if len(w) >= 5 and any(fuzz.ratio(w, t) >= 80 for t in site.tokens):
        return 0.6, "siteName"
    return None


def probe_words(idx) -> set[str]:
    vocab = {t for s in idx.sites for t in s.tokens}
    out = vocab | {s.code.lower() for s in idx.sites}
    for t in vocab:
        # prefixes, plurals, a dropped first or last letter, one letter changed
        out |= {t[:3], t[:5], t + "s", t[1:], t[:-1], t[:2] + "x" + t[3:]}
    return {w for w in out if w}


def test_every_word_scores_every_site_as_the_rule_says(idx):
    table = _SiteWords.of(idx.sites)
    wrong = []
    for w in sorted(probe_words(idx)):
        found = table.matches(w)
        for pos, site in enumerate(idx.sites):
            if found.get(pos) != rule(site, w):
                wrong.append((w, site.code, rule(site, w), found.get(pos)))
    assert not wrong, wrong[:10]


@pytest.mark.parametrize("query", ["forest", "harvard", "prarie", "Harvard Forest", "d01", "colorado mountain"])
def test_search_keeps_the_sites_every_word_matches_scored_by_the_rule(idx, query):
    qwords = words(query)
    result = find_sites(idx, SearchSitesInput(query=query))
    expected = {}
    for site in idx.sites:
        scores = [rule(site, w) for w in qwords]
        if all(scores):
            expected[site.code] = round(sum(s[0] for s in scores), 3)
    assert {h.site.code: h.score for h in result.hits} == expected


def test_the_word_tables_are_built_once_per_index(idx):
    assert _words_of(idx) is _words_of(idx)
