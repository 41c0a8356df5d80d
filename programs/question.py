"""What the walk reads in a question's own words, in one place: the names it brackets, its shape
(topic names blanked out, as demos are matched to it), whether it names a value, the comparison it
makes ("the latest founding date", "fewer than 15,208 undergraduates", "later than October 25,
2005"), and the plan's hop wording ("movie (directed by)"). `Question` reads a question once,
after its topic entities are known, and the steps that need it are handed it.

English only: these are word lists and patterns, not learned. The graph's side of a comparison
(reading the answers' values and deciding) is `programs.values`."""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

BRACKETED = re.compile(r"\[([^\[\]]{1,200})\]")  # a name the question marks: "who directed [Heat]"
# words of questions whose answer a value decides: a number, a date, a comparison, an extreme
_VALUE_WORDS = re.compile(
    r"\d|\b(before|after|since|until|during|first|last|earliest|latest|oldest|youngest|newest|largest|smallest|"
    r"biggest|highest|lowest|longest|shortest|most|least|more|less|fewer|greater|over|under|than|year|when|date)\b",
    re.IGNORECASE,
)
# words too common to name what a comparison compares
STOP_WORDS = frozenset("a an the of in on at to by for with and or is was were has have had that which who what whose "
                       "did does do be been its their his her it this than as".split())

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}

_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DATE_TEXT = [  # (pattern, reader of its groups as (year, month, day))
    (re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s*(\d{{4}})\b", re.I),
     lambda g: (int(g[2]), MONTHS[g[0].lower()], int(g[1]))),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\.?,?\s+(\d{{4}})\b", re.I),
     lambda g: (int(g[2]), MONTHS[g[1].lower()], int(g[0]))),
    (re.compile(rf"\b({_MONTH})\.?,?\s+(?:of\s+)?(\d{{4}})\b", re.I), lambda g: (int(g[1]), MONTHS[g[0].lower()])),
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), lambda g: (int(g[0]), int(g[1]), int(g[2]))),
    (re.compile(r"\b(\d{1,2})[-/](\d{1,2})[-/](\d{4})\b"), lambda g: (int(g[2]), int(g[0]), int(g[1]))),  # US order
    (re.compile(r"\b(\d{4})-(\d{1,2})\b"), lambda g: (int(g[0]), int(g[1]))),
    (re.compile(r"\b(1\d{3}|20\d{2})\b"), lambda g: (int(g[0]),)),
]
_NUMBER_TEXT = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w-])")

# a year, and the words a year on its own follows when it is a bound, not part of a name ("prior to 2013")
YEAR = re.compile(r"1[0-9]{3}|20[0-9]{2}")
_MONTH_WORDS = frozenset("january february march april may june july august september october november december".split())
_BOUND_WORDS = frozenset("after before since until till prior to than from during".split())

# The words that set a comparison. A bound is read from the text right after its cue.
_MORE = r"(?:greater|more|higher|larger|bigger|longer|taller|later|newer|heavier)"
_LESS = r"(?:less|fewer|lower|smaller|shorter|earlier|older|lighter)"
_BOUNDS = [
    (re.compile(rf"\b(?:{_MORE}\s+than|over|above|exceed(?:s|ed|ing)?|after|since|from after)\s+", re.I), ">"),
    (re.compile(rf"\b(?:{_LESS}\s+than|under|below|before|prior\s+to|from before)\s+", re.I), "<"),
]
_EXTREMES = [
    (re.compile(r"\b(?:latest|most\s+recent(?:ly)?|newest|youngest|largest|biggest|highest|greatest|longest|tallest|"
                r"maximum|heaviest)\b", re.I), "max"),
    (re.compile(r"\b(?:earliest|oldest|smallest|lowest|least|fewest|shortest|minimum|lightest)\b", re.I), "min"),
    # "the most seasons"; "released last", "died first" (at the end of the question), "the last to serve"
    (re.compile(r"\bthe\s+most\b(?!\s+(?:popular|famous|common|important|known|well)\b)", re.I), "max"),
    (re.compile(r"\blast(?=\s*[?.!]*\s*$)|\bthe\s+last(?=\s+(?:to|time|year)\b)", re.I), "max"),
    (re.compile(r"\bfirst(?=\s*[?.!]*\s*$)|\bthe\s+first(?=\s+(?:to|time|year)\b)", re.I), "min"),
]
# a value the answer must have: a number no name or count is written as ("a CPI inflation rate of
# -1.61", "CO2 emissions of 1.26211727", "a GDP of 100349905926"), not a year, an ordinal or "#7"
_EXACT_NUMBER = re.compile(r"(?<![\w.#,-])(?:-\d+(?:\.\d+)?|\d+\.\d+|\d{5,})(?![\w.,]\d|\w)")
_FILLER = re.compile(r"^(?:the\s+)?(?:(?:month|year|date|day)\s+of\s+)?(?:the\s+)?", re.I)


@dataclass(frozen=True)
class Question:
    """A question as the walk reads it, once its topic entities are known (`topics`: their names)."""

    text: str
    topics: tuple[str, ...] = ()
    comparison: Comparison | None = field(init=False)
    names_values: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "comparison", read_comparison(self.text, names=self.topics))
        object.__setattr__(self, "names_values", names_values(self.text, self.topics))


@dataclass(frozen=True)
class Comparison:
    """What a question compares: the extreme (`max`, `min`), a bound (`>`, `<` a value) or the
    exact value (`=` a number) of a value named by `words` ("founding date", "number of
    undergraduates")."""

    op: str
    words: str
    bound: tuple | float | None = None  # a date (year, month, day: as many as written) or a number
    cue: str = ""

    @property
    def date_bound(self) -> bool:
        return isinstance(self.bound, tuple)


def read_comparison(question: str, *, names: Sequence[str] = ()) -> Comparison | None:
    """The comparison a question makes, if any; words inside `names` (the topic entities') set none
    ("Fewer Than Zero", "The Oldest Living Confederate Widow")."""
    masked = question
    for name in sorted(filter(None, names), key=len, reverse=True):
        masked = re.sub(re.escape(name), " " * len(name), masked, flags=re.I)
    for pattern, op in _BOUNDS:
        for match in pattern.finditer(masked):
            rest = masked[match.end():]
            rest = rest[_FILLER.match(rest).end():]
            bound, length = _bound(rest)
            if bound is None:
                continue
            words = _words(masked[: match.start()], last=6) + " " + _words(rest[length:], first=4)
            return Comparison(op, words.strip(), bound, match.group(0).strip())
    for match in _EXACT_NUMBER.finditer(masked):
        number = as_number(match.group(0))
        if number is not None:
            words = _words(masked[: match.start()], last=6) + " " + _words(masked[match.end():], first=3)
            return Comparison("=", words.strip(), number, f"of {match.group(0)}")
    for pattern, op in _EXTREMES:
        match = pattern.search(masked)
        if match:
            after = _words(masked[match.end():], first=6)
            before = _words(masked[: match.start()], last=6)
            return Comparison(op, f"{before} {after}".strip(), None, match.group(0))
    return None


def names_values(question: str, topics: Sequence[str] = ()) -> bool:
    """The question names a value or a comparison outside its topic entities' names (`topics`:
    "before 2000", "largest"; not the "First" of [Feet First])."""
    words = question
    for name in topics:
        words = re.sub(re.escape(name), " ", words, flags=re.IGNORECASE)
    return bool(_VALUE_WORDS.search(words))


def question_shape(question: str, topics: Sequence[str]) -> str:
    """The question with its topic entities blanked out, as demos are matched to it: each topic name
    and each bracketed span becomes "X"/"[X]" ("what films did [Ridley Scott] direct" -> "what films
    did [X] direct")."""
    for name in sorted({n.strip() for n in topics if len(n.strip()) > 1}, key=len, reverse=True):
        question = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", "X", question, flags=re.IGNORECASE)
    return BRACKETED.sub("[X]", question)


def as_number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    try:
        number = float(text)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


def _bound(text: str) -> tuple[tuple | float | None, int]:
    """The date or number `text` starts with, and how many characters it takes."""
    for pattern, read in _DATE_TEXT:
        match = pattern.match(text)
        if match:
            return read(match.groups()), match.end()
    match = _NUMBER_TEXT.match(text)
    if match:
        return as_number(match.group(0)), match.end()
    return None, 0


def _words(text: str, *, first: int | None = None, last: int | None = None) -> str:
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z'_-]*", text) if w.lower() not in STOP_WORDS]
    return " ".join(words[:first] if first is not None else words[-last:] if last else words)


def standalone_years(words: Sequence[str]) -> dict[int, str]:
    """The positions of `words` that are a year on its own: not part of a date, not after a bound."""
    def dated(i: int) -> bool:
        return 0 <= i < len(words) and (words[i].isdigit() or words[i] in _MONTH_WORDS)

    return {i: w for i, w in enumerate(words)
            if YEAR.fullmatch(w) and not dated(i - 1) and not dated(i + 1) and not (i and words[i - 1] in _BOUND_WORDS)}


def hop_relation(target: str) -> str:
    """The relation words a plan's hop names: "movie (written by)" -> "written by"; a hop without
    them names its relation by its kind ("capital")."""
    inside = target.split("(", 1)[1].rsplit(")", 1)[0].strip() if "(" in target else ""
    return inside or target


def hop_kind(target: str) -> str:
    """The kind a plan's hop names (hops are written `kind (relation words)`): "movie (directed by)" -> "movie"."""
    return target.split("(", 1)[0].strip()


def _noun(text: object) -> str:
    """A kind as compared with others, singular and lower case: "Movies (directed by)" -> "movie"."""
    return hop_kind(text).lower().removesuffix("s") if isinstance(text, str) else ""


def start_after_topic(targets: list[str], kind: object) -> list[str]:
    """Leading hops that reach the topic's own kind are no hops: a small planner counts the topic
    ("the directors of the films written by [X]" -> writer, movie, director)."""
    start = 0
    while start < len(targets) - 1 and _noun(kind) and _noun(targets[start]) == _noun(kind):
        start += 1
    return targets[start:]


def end_at_answer(targets: list[str], kind: object) -> list[str]:
    """A plan whose last hop is not the kind the question asks for, when an earlier hop is, ends
    there: a small planner adds a hop after the answer ("who starred in [X]" -> actor, movie)."""
    if not _noun(kind) or not targets or _noun(targets[-1]) == _noun(kind):
        return targets
    hits = [i for i, target in enumerate(targets) if _noun(target) == _noun(kind)]
    return targets[: hits[-1] + 1] if hits else targets
