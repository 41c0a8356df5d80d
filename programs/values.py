"""Comparisons a value decides: "the latest founding date", "fewer than 15,208 undergraduates",
"released later than October 25, 2005". A small LM reads the values it is shown and does not compare
them (1e132b4:bench/results/path-values-cwq-dev/), so the program compares them itself: the question's
words name the comparison (`programs.question.read_comparison`), the graph gives each answer's
values, and `decide` keeps the answers the comparison holds for, by the value relation most like
the words.

Pure functions over text; the value check step fetches the values (`programs.steps.value_check`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from kgqa.kg.profiles import KGProfile
from kgqa.programs.question import STOP_WORDS, Comparison, as_number

_ISO_DATE = re.compile(r"^(-?\d{4})(?:-(\d{2}))?(?:-(\d{2}))?(?:T[\d:.]+Z?)?$")
_GENERIC = frozenset(("date", "numbe", "time", "year", "value", "type"))
_BARE = frozenset(("to", "from", "since", "until"))
_SUFFIXES = ("ing", "ed", "es", "s")


def as_date(text: str) -> tuple | None:
    """A graph's date value ('1936-09', '2006-09-01T00:00:00Z', '1927') as (year, month, day), as
    many parts as it has; None for anything else."""
    match = _ISO_DATE.match(text.strip())
    if not match:
        return None
    return tuple(int(part) for part in match.groups() if part is not None)


def is_value(text: str) -> bool:
    """A date or a number, as a graph writes one."""
    return as_date(text) is not None or as_number(text) is not None


def decide(
    comparison: Comparison,
    values: Mapping[str, Sequence[tuple[str, str]]],
    similar: Callable[[str, Sequence[str]], list[float]],
    *,
    profile: KGProfile,
    min_similarity: float = 0.2,
) -> tuple[list[str], str] | None:
    """The answers (keys of `values`, each with its (relation id, value text) pairs) the
    comparison keeps, best first, and the relation it compared them by; None when no relation
    with comparable values is like the comparison's words (it shares a word with them, or is the
    end of a term they name: "started" a term's `from`; an identifier only where they name one).
    A bound keeps every answer whose value meets it; an extreme compares at least two answers'
    values and keeps the answers at it. The graph's `profile` says how a relation id reads as words."""
    texts: dict[str, dict[str, list[str]]] = {}  # relation -> answer -> its value texts
    for answer, pairs in values.items():
        for relation, text in pairs:
            texts.setdefault(relation, {}).setdefault(answer, []).append(text)
    words = comparison.words or comparison.cue
    said = _stems(words)
    by_relation = {relation: got for relation, got in ((r, _comparable(t, comparison)) for r, t in texts.items())
                   if got and (said & {"id", "ids"} or not _is_id(profile.relation_parts(relation)))}
    needed = 1 if comparison.bound is not None else 2
    relations = [r for r, got in by_relation.items() if len(got) >= needed]
    if not relations:
        return None
    shared = [_shared(said, relation, profile) for relation in relations]
    hints = [_edge_hint(said, profile.relation_parts(relation)) for relation in relations]
    phrases = [profile.relation_phrase(r) for r in relations]
    scores = [similarity + share + hint for similarity, share, hint in zip(similar(words, phrases), shared, hints)]
    best = max(range(len(relations)), key=scores.__getitem__)
    if scores[best] < min_similarity or not (shared[best] or hints[best] > 0):
        return None
    kept = _kept(comparison, list(values), by_relation[relations[best]])
    return (kept, relations[best]) if kept else None


def _kept(comparison: Comparison, answers: list[str], got: Mapping[str, list]) -> list[str]:
    """The answers whose values (`got`: answer -> its comparable values) meet the bound, or hold the extreme."""
    if comparison.bound is not None:
        return [a for a in answers if a in got and any(_meets(v, comparison.op, comparison.bound) for v in got[a])]
    pick = max if comparison.op == "max" else min
    extreme = pick(pick(vs) for vs in got.values())
    return [a for a in answers if a in got and extreme in got[a]]


def _comparable(texts: Mapping[str, list[str]], comparison: Comparison) -> dict[str, list]:
    """One relation's values of each answer as one kind the comparison can order: dates for a
    date bound, numbers for a number bound; for an extreme, numbers where every value is one
    (a bare year orders as a number does), else dates where every value is one. Values of
    another kind are left out; a relation with none left, or of mixed kinds, gives {}."""
    if comparison.date_bound:
        read = as_date
    elif comparison.bound is not None:
        read = lambda text: None if "-" in text.strip()[1:] else as_number(text)  # noqa: E731  (1841-02 is no number)
    else:
        every = [text for values in texts.values() for text in values]
        read = as_number if all(as_number(t) is not None for t in every) else as_date
        if not all(read(t) is not None for t in every):
            return {}
    got = {answer: [v for v in map(read, values) if v is not None] for answer, values in texts.items()}
    return {answer: values for answer, values in got.items() if values}


def _meets(value, op: str, bound) -> bool:
    """Whether a value meets a bound. A number must pass it ("ISO numbers above 052": not 052). A
    date meets it on the day itself: a date stands for its first day (1841 is 1841-01-01), so a term
    from 1841-02 is "after the month of February, 1841", as the CWQ questions that write one count it."""
    if op == "=":
        return abs(value - bound) <= 1e-9 * max(1.0, abs(bound))
    if isinstance(bound, tuple):
        value, bound = _day(value), _day(bound)
        return value >= bound if op == ">" else value <= bound
    return value > bound if op == ">" else value < bound


def _day(date: tuple) -> tuple:
    return (*date, 1, 1)[:3]


def _stems(text: str) -> set[str]:
    """Content words, an inflection cut off and cut to five letters ("opened" and "open", "founding"
    and "founded"); words every value relation may hold ("date", "number") left out."""
    return {_stem(w.lower()) for w in re.findall(r"[A-Za-z]+", text) if w.lower() not in STOP_WORDS and len(w) > 1} - _GENERIC


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)][:5]
    return word[:5]


def _is_id(names: tuple[str, ...]) -> bool:
    """A relation (its `names`, `KGProfile.relation_parts`) to an identifier ('film.film.netflix_id',
    'education.school.nces_school_id')."""
    return names[-1].lower().split("_")[-1] == "id"


def _own_words(relation: str, profile: KGProfile) -> str:
    """What a relation says of its subject: its last name ('calling code', not the 'country' every
    country relation names), or its phrase, its last two, when the last says nothing of its own
    ('position held to', 'award honor year')."""
    own = profile.relation_parts(relation)[-1].replace("_", " ")
    return own if _stems(own) - _BARE else profile.relation_phrase(relation)


def _shared(said: set[str], relation: str, profile: KGProfile) -> float:
    """A bonus for each word stem the comparison's words (`said`, their stems) and the relation's
    own words share ("founding" and "date founded"; "calling code")."""
    return 0.25 * len(said & _stems(_own_words(relation, profile)))


def _edge_hint(said: set[str], names: tuple[str, ...]) -> float:
    """Which end of a term the words (`said`, their stems) mean: "ended" its `to`, "started" its `from`."""
    last = [names[-1].lower()]
    ends = bool(said & {"ended", "end", "endin", "until", "left", "stopp"})
    starts = bool(said & {"start", "began", "begin", "begun", "from"})
    if last in (["to"], ["end_date"], ["until"]):
        return 0.2 * ends - 0.2 * starts
    if last in (["from"], ["start_date"], ["since"]):
        return 0.2 * starts - 0.2 * ends
    return 0.0
