"""Suggestions for a name that resolved to nothing: values the same argument accepts, nearest first.

    nearest(text, accepted, limit=5) -> list[str]
        accepted: {value the argument accepts: the text it is known by (a name, a description)}

A suggestion is always a key of `accepted`, never the text it was matched on: a caller feeds
`didYouMean` back as it stands, so "HARV Harvard Forest ..." (a description) would fail again.
"""

from __future__ import annotations

from collections.abc import Mapping

# A mistyped code is compared with the codes themselves (fuzz.ratio), a name's words with each
# value's description (fuzz.WRatio, which scores a part of a long text); these are the scores
# below which a match only adds noise.
CODE_CUTOFF = 70
TEXT_CUTOFF = 60


def nearest(text: str, accepted: Mapping[str, str], *, limit: int = 5) -> list[str]:
    """Up to `limit` keys of `accepted` nearest to `text`: close spellings of a key first, then keys
    whose description `text` resembles."""
    from rapidfuzz import fuzz, process, utils  # imported by the first miss, not to list the tools

    if not text.strip() or not accepted:
        return []
    keys = {k: k.upper() for k in accepted}
    found = [k for _, _, k in process.extract(text.strip().upper(), keys, scorer=fuzz.ratio,
                                              score_cutoff=CODE_CUTOFF, limit=limit)]
    # WRatio finds the descriptions the text resembles, but scores a part of a long text: every
    # "... Forest NEON" ties for "Harvrd Forest". The tied are ranked by how well each word of the
    # text matches a word of the description, so the one misspelt word decides.
    described = process.extract(text, dict(accepted), scorer=fuzz.WRatio, processor=utils.default_process,
                                score_cutoff=TEXT_CUTOFF, limit=max(limit * 4, 20))
    wanted = utils.default_process(text).split()
    ranked = sorted(described, key=lambda m: (-_word_score(wanted, m[0]), -m[1]))
    for _, _, k in ranked:
        if k not in found:
            found.append(k)
    return found[:limit]


def _word_score(wanted: list[str], description: str) -> float:
    """The mean, over the text's words, of each one's best fuzz.ratio against a word of `description`."""
    from rapidfuzz import fuzz, utils

    words = utils.default_process(description).split()
    if not wanted or not words:
        return 0.0
    return sum(max(fuzz.ratio(w, d) for d in words) for w in wanted) / len(wanted)
