"""Finding entity names in a question as a user writes it: any case, accents or none, partial names,
small misspellings, demonyms.

`NameIndex` holds every (entity, name) pair of a graph (names and aliases, `KnowledgeGraph.all_names`)
under a token normal form, and answers `mentions(question)`: every span of the question that names
some entity, each with the entity, the name it matched and how (`exact`, `variant`, `partial`,
`fuzzy`). It is built once per store and saved beside it (`save`/`load`); which mentions are the
question's topic entities is the linker's decision (`kgqa.programs.linking`), not the index's.
`LabelVectors` adds the names' sentence vectors (built once per store and kept beside it too): a
span written unlike any name in letters but like one in meaning finds it (`embedding`).
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

INDEX_FILE = "names.json"
VECTORS_FILE = "name_vectors.npz"
VERSION = 3  # 2: folding reads misread UTF-8 again (`repaired`); 3: letters without accents to strip are spelled out (æ -> ae)
# Words that start no mention on their own: a name made of them only ("The", "Who") is matched only
# exactly and in full.
STOPWORDS = frozenset(
    "a an and are as at be by did do does for from has have he her his how in is it its of on or she "
    "that the their they this to was were what when where which who whom whose why will with".split()
)
LONGEST_MENTION = 12  # tokens ("Abbott and Costello Meet Dr. Jekyll and Mr. Hyde" has 9)
PREFIX = 4  # characters of a token that find names spelled a little differently (jamaican -> jamaica)
MISSPELT = 5  # a token this long finds names one letter away from it (gifoyle -> Gilfoyle, cabodian -> Cambodian)
COMMON_POSTING = 400  # a token or prefix in more names than this finds no fuzzy candidates by itself


# Characters that UTF-8 bytes become when read as Windows-1252 or Latin-1 ("JosÃ©" for "José"), and
# the byte each stands for.
_MISREAD = {chr(b): b for b in range(0x80, 0x100)}  # Latin-1
_MISREAD |= {bytes([b]).decode("cp1252"): b for b in range(0x80, 0xA0) if b not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)}
_MISREAD_RUN = re.compile("[" + re.escape("".join(sorted(_MISREAD))) + "]{2,}")


def repaired(text: str) -> str:
    """Text whose UTF-8 was read as Windows-1252 or Latin-1, read again: "HagÃ¥tÃ±a" -> "Hagåtña",
    "UTCâ\x88\x9205:00" -> "UTC−05:00". A run of such characters that is not valid UTF-8 stays as written."""

    def reread(run: re.Match) -> str:
        try:
            return bytes(_MISREAD[c] for c in run.group()).decode("utf-8")
        except UnicodeDecodeError:
            return run.group()

    return _MISREAD_RUN.sub(reread, text)


# Letters that carry no accent to strip, as an English keyboard spells them ("Læsø" -> "Laeso")
_SPELLED = str.maketrans({"æ": "ae", "Æ": "Ae", "ø": "o", "Ø": "O", "ß": "ss", "œ": "oe", "Œ": "Oe", "ł": "l", "Ł": "L",
                          "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "Th", "ı": "i"})


def plain(text: str) -> str:
    """Misread UTF-8 repaired, accents removed (and letters like æ, ø, ß spelled out), possessive 's
    dropped, "&" read as "and"; case kept."""
    text = unicodedata.normalize("NFKD", repaired(text)).translate(_SPELLED)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"['’]s\b", "", text, flags=re.IGNORECASE)
    return text.replace("&", " and ")


def fold(text: str) -> str:
    """`plain`, lower case."""
    return plain(text).casefold()


TOKEN = re.compile(r"[a-z0-9]+")  # a word of folded text


def tokens(text: str) -> tuple[str, ...]:
    return tuple(TOKEN.findall(fold(text)))


def _variants(name: str) -> set[tuple[str, ...]]:
    """Other ways a name is written: without its parenthesis or its part after a comma ("Monte
    Alto, São Paulo" -> "monte alto"), without a leading "the", initials joined ("J. R. R. Tolkien"
    -> "jrr tolkien")."""
    full = tokens(name)
    forms = {full, tokens(re.sub(r"\s*\(.*?\)", "", name)), tokens(name.split(",")[0])}
    forms |= {form[1:] for form in forms if len(form) > 1 and form[0] == "the"}
    for form in list(forms):
        joined, run = [], ""
        for token in form:
            if len(token) == 1:
                run += token
            else:
                joined += [run] if run else []
                joined.append(token)
                run = ""
        forms.add(tuple(joined + ([run] if run else [])))
    variants = {form for form in forms if form and not all(t in STOPWORDS for t in form)}  # not "the who" -> "who"
    return variants | {full} if full else set()


def _deleted(token: str) -> set[str]:
    """Posting keys of a word of `MISSPELT` letters or more: the word with each letter left out
    (symmetric deletion: two words one edit apart share one of them, or one is the other's)."""
    if len(token) < MISSPELT or not token.isalpha():
        return set()
    return {"-" + token[:i] + token[i + 1 :] for i in range(len(token))}


def trigram_similarity(a: str, b: str) -> float:
    """Dice coefficient of the padded character trigrams of two folded strings."""
    def grams(text: str) -> set[str]:
        padded = f"  {text} "
        return {padded[i : i + 3] for i in range(len(padded) - 2)}

    x, y = grams(a), grams(b)
    return 2 * len(x & y) / (len(x) + len(y)) if x and y else 0.0


@dataclass(frozen=True)
class Mention:
    """A question span [start, end) (in `tokens(question)`) that names `entity` by `name`."""

    start: int
    end: int
    text: str  # the span, folded
    entity: str
    name: str
    how: str  # exact | variant | partial | fuzzy | embedding
    similarity: float  # 1.0 for exact; cosine of the sentence vectors for embedding; trigram similarity otherwise

    def to_dict(self) -> dict:
        return {"span": self.text, "entity": self.entity, "name": self.name, "how": self.how,
                "similarity": round(self.similarity, 3)}


class NameIndex:
    """Every (entity, name) pair of a graph, looked up by token normal form.

    >>> index = NameIndex([("m.1", "Monte Alto, São Paulo"), ("m.2", "Miley Cyrus")])
    >>> [(m.text, m.how) for m in index.mentions("starring Miley Cirus in monte alto") if m.similarity > 0.7]
    [('miley cirus', 'fuzzy'), ('monte alto', 'variant')]
    """

    def __init__(self, names: Iterable[tuple[str, str]], *, fuzzy_cutoff: float = 0.6) -> None:
        self.names: list[tuple[str, str]] = list(dict.fromkeys((e, n) for e, n in names if tokens(n)))
        self.fuzzy_cutoff = fuzzy_cutoff
        self._forms: dict[tuple[str, ...], list[tuple[int, bool]]] = defaultdict(list)  # form -> (name, is_full)
        self._postings: dict[str, list[int]] = defaultdict(list)  # token or prefix -> names
        self._folded: list[str] = []
        self._by_name: dict[str, list[str]] = defaultdict(list)
        self._first_name: dict[str, str] = {}
        for i, (entity, name) in enumerate(self.names):
            self._first_name.setdefault(entity, name)
            full = tokens(name)
            self._folded.append(" ".join(full))
            self._by_name[name].append(entity)
            for form in _variants(name):
                self._forms[form].append((i, form == full))
            for key in {k for t in full if t not in STOPWORDS for k in (t, "~" + t[:PREFIX], *_deleted(t))}:
                self._postings[key].append(i)

    def __len__(self) -> int:
        return len(self.names)

    def resolve(self, entity_or_name: str) -> list[tuple[str, str]]:
        """(entity, name) for an entity id the index holds, else for every entity of that exact name."""
        if entity_or_name in self._first_name:
            return [(entity_or_name, self._first_name[entity_or_name])]
        return [(entity, entity_or_name) for entity in self._by_name.get(entity_or_name, ())]

    def mentions(self, question: str) -> list[Mention]:
        """Every span of the question that names an entity, at most one mention per (span, entity)."""
        words = tokens(question)
        found: dict[tuple[int, int, str], Mention] = {}
        near_word: dict[str, set[int]] = {}  # a word is in up to ten spans: its near names are looked up once

        def near(span: tuple[str, ...]) -> set[int]:
            """Names near a (non-stop) word of the span (`_near`)."""
            for token in set(span) - STOPWORDS - near_word.keys():
                near_word[token] = self._near(token)
            return set().union(*(near_word[t] for t in span if t not in STOPWORDS))

        def keep(mention: Mention) -> None:
            key = (mention.start, mention.end, mention.entity)
            if key not in found or mention.similarity > found[key].similarity:
                found[key] = mention

        for start in range(len(words)):
            for end in range(start + 1, min(len(words), start + LONGEST_MENTION) + 1):
                span = words[start:end]
                text = " ".join(span)
                for i, is_full in self._forms.get(span, ()):
                    entity, name = self.names[i]
                    keep(Mention(start, end, text, entity, name, "exact" if is_full else "variant", 1.0 if is_full else 0.95))
                if all(t in STOPWORDS for t in span) or end - start > 4:
                    continue
                for i in near(span):
                    entity, name = self.names[i]
                    folded = self._folded[i]
                    similarity = trigram_similarity(text, folded)
                    if similarity < self.fuzzy_cutoff or folded == text:
                        continue
                    partial = _contains(folded.split(), span)
                    keep(Mention(start, end, text, entity, name, "partial" if partial else "fuzzy", similarity))
        return sorted(found.values(), key=lambda m: (m.start, -m.end, -m.similarity, m.entity))

    def _near(self, token: str) -> set[int]:
        """Names sharing the (non-stop) word or its first letters, or with a word one letter away
        from it (a letter missing, added, changed, or two swapped)."""
        near: set[int] = set()
        misspelt = _deleted(token)  # the name's word with a letter more, or as far from it
        for key in (token, "~" + token[:PREFIX], "-" + token, *misspelt, *(key[1:] for key in misspelt)):
            posting = self._postings.get(key, ())
            if len(posting) <= COMMON_POSTING:
                near.update(posting)
        return near

    # -- kept beside the store -----------------------------------------------------------------

    def save(self, directory: str | Path, *, stamp: str = "") -> Path:
        """Write the index into `directory`; `stamp` says what it was built from (checked by `load`)."""
        path = Path(directory) / INDEX_FILE
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        data = {"version": VERSION, "stamp": stamp, "names": self.names}
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, directory: str | Path, *, stamp: str = "") -> NameIndex | None:
        """The index saved in `directory`, or None when there is none, it is unreadable, of another
        version, or was built from something else (`stamp`)."""
        path = Path(directory) / INDEX_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("version") != VERSION or data.get("stamp") != stamp:
            return None
        if not isinstance(data.get("names"), list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in data["names"]):
            return None
        return cls((e, n) for e, n in data["names"])


class LabelVectors:
    """A `NameIndex` that also finds names by meaning: every distinct folded name as a unit sentence
    vector (`encode(texts)` gives one row per text), and each question span of up to
    `EMBEDDED_SPAN` words that names nothing exactly matched against them by cosine. Other spans are
    the index's. Same `mentions` and `resolve` as a `NameIndex`; `encode` is the caller's model, so
    the graph layer holds no model of its own."""

    EMBEDDED_SPAN = 4
    PER_SPAN = 3  # nearest names kept per span
    ENTITIES_PER_NAME = 5  # homonyms of a name kept per span

    def __init__(self, index: NameIndex, vectors, encode: Callable[[Sequence[str]], object], *, cutoff: float = 0.75) -> None:
        import numpy as np

        self.index, self.encode, self.cutoff = index, encode, cutoff
        self.texts = sorted(set(index._folded))
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape[0] != len(self.texts):
            raise ValueError(f"{vectors.shape[0]} name vectors for {len(self.texts)} names")
        self.vectors = vectors
        self._named: dict[str, list[int]] = defaultdict(list)  # folded name -> (entity, name) pairs
        for i, text in enumerate(index._folded):
            self._named[text].append(i)

    @classmethod
    def build(cls, index: NameIndex, encode, *, directory: str | Path | None = None, stamp: str = "") -> LabelVectors:
        """The vectors saved in `directory` for the same names (`stamp` and the name count), else
        every name encoded (and saved there)."""
        import numpy as np

        texts = sorted(set(index._folded))
        path = Path(directory) / VECTORS_FILE if directory else None
        if path is not None and path.exists():
            try:
                with np.load(path, allow_pickle=False) as saved:
                    if str(saved["stamp"]) == f"{VERSION}:{stamp}:{len(texts)}":
                        return cls(index, saved["vectors"], encode)
            except (OSError, ValueError, KeyError):
                pass  # unreadable or another index's: encoded again below
        vectors = np.asarray(encode(texts), dtype=np.float32) if texts else np.zeros((0, 1), dtype=np.float32)
        if path is not None:
            tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
            np.savez(tmp, vectors=vectors, stamp=np.array(f"{VERSION}:{stamp}:{len(texts)}"))
            tmp.replace(path)
        return cls(index, vectors, encode)

    def __len__(self) -> int:
        return len(self.index)

    def resolve(self, entity_or_name: str) -> list[tuple[str, str]]:
        return self.index.resolve(entity_or_name)

    def mentions(self, question: str) -> list[Mention]:
        """The index's mentions, and for each span naming nothing exactly (up to `EMBEDDED_SPAN` words,
        not only stop words or digits) the names whose vectors are within `cutoff` of its own."""
        return self.by_meaning(question, self.index.mentions(question))

    def by_meaning(self, question: str, found: list[Mention]) -> list[Mention]:
        """`found` (the mentions of an index of these names or more) and, for each span of the question
        they name nothing exactly, the names of these vectors within `cutoff` of its own."""
        import numpy as np

        named = {(m.start, m.end) for m in found if m.how in ("exact", "variant")}
        words = tokens(question)
        spans = [
            (start, end) for start in range(len(words)) for end in range(start + 1, min(len(words), start + self.EMBEDDED_SPAN) + 1)
            if (start, end) not in named and not all(t in STOPWORDS or t.isdigit() for t in words[start:end])
        ]
        if not spans or not len(self.texts):
            return found
        texts = [" ".join(words[start:end]) for start, end in spans]
        scores = np.asarray(self.encode(texts), dtype=np.float32) @ self.vectors.T
        kept = {(m.start, m.end, m.entity) for m in found}
        extra = []
        for (start, end), text, row in zip(spans, texts, scores):
            for j in np.argsort(-row)[: self.PER_SPAN]:
                if row[j] < self.cutoff:
                    break
                for i in self._named[self.texts[j]][: self.ENTITIES_PER_NAME]:
                    entity, name = self.index.names[i]
                    if (start, end, entity) not in kept:
                        kept.add((start, end, entity))
                        extra.append(Mention(start, end, text, entity, name, "embedding", float(row[j])))
        return sorted([*found, *extra], key=lambda m: (m.start, -m.end, -m.similarity, m.entity))


def search_words(question: str) -> list[str]:
    """The words a text index is asked for a question's names: its tokens but stop words, and the
    first letters of the longer ones (`jamai*` finds Jamaica for "jamaican")."""
    words = [t for t in tokens(question) if t not in STOPWORDS]
    prefixes = [f"{t[:PREFIX + 1]}*" for t in words if len(t) > PREFIX + 1 and t.isalpha()]
    return list(dict.fromkeys([*words, *prefixes]))


class TextSearchIndex:
    """A question's names found through the graph's text index (an endpoint's `bif:contains`, the
    embedded store's table of names on disk), for a graph with too many names to hold in memory (a
    full Freebase): one query per question for the names that share a word with it, then a
    `NameIndex` over just those matches its spans as the whole-graph index would. With `encode`, the
    first `VECTOR_NAMES` of them (best text matches first) also get sentence vectors, so spans find
    them by meaning as `LabelVectors` finds a small graph's names. `search(words)` and
    `resolve(entity_or_name)` are the graph's queries."""

    VECTOR_NAMES = 256  # a question's names encoded at most (MiniLM in double precision: about 0.5 s on 2 cores)

    def __init__(self, search, resolve, *, encode: Callable[[Sequence[str]], object] | None = None,
                 fuzzy_cutoff: float = 0.6, cached: int = 64) -> None:
        self._search, self._resolve, self.fuzzy_cutoff, self._cached = search, resolve, fuzzy_cutoff, cached
        self.encode = encode
        self._indexes: dict[str, NameIndex | LabelVectors] = {}

    def with_vectors(self, encode: Callable[[Sequence[str]], object]) -> TextSearchIndex:
        """The same search, its names given sentence vectors by `encode`."""
        return TextSearchIndex(self._search, self._resolve, encode=encode, fuzzy_cutoff=self.fuzzy_cutoff, cached=self._cached)

    def index_for(self, question: str) -> NameIndex | LabelVectors:
        """The names the question's words find, as an index (the last `cached` questions kept)."""
        if question not in self._indexes:
            words = search_words(question)
            if len(self._indexes) >= self._cached:
                self._indexes.pop(next(iter(self._indexes)))
            found = self._search(words) if words else []
            index = NameIndex(found, fuzzy_cutoff=self.fuzzy_cutoff)
            if self.encode is not None:
                encoded = NameIndex(found[: self.VECTOR_NAMES], fuzzy_cutoff=self.fuzzy_cutoff)
                index = _Searched(index, LabelVectors.build(encoded, self.encode))
            self._indexes[question] = index
        return self._indexes[question]

    def mentions(self, question: str) -> list[Mention]:
        return self.index_for(question).mentions(question)

    def resolve(self, entity_or_name: str) -> list[tuple[str, str]]:
        return self._resolve(entity_or_name)


class _Searched:
    """A question's searched names: every one matched by its words (`index`), the first few also by meaning (`vectors`)."""

    def __init__(self, index: NameIndex, vectors: LabelVectors) -> None:
        self.index, self.vectors = index, vectors

    def mentions(self, question: str) -> list[Mention]:
        return self.vectors.by_meaning(question, self.index.mentions(question))


def _contains(words: list[str], span: tuple[str, ...]) -> bool:
    n = len(span)
    return any(tuple(words[i : i + n]) == span for i in range(len(words) - n + 1))
