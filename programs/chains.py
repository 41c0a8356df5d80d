"""What training questions teach about relation chains: a compiled prior over the answer's chain.

Complex questions over one graph reuse a small set of relation chains ("films an actor was in" is
`film.actor.film -> film.performance.film` whoever the actor), and questions asked alike go by
alike chains. Compiling keeps each training question with its gold relation paths (the data's own
or found from its answers, `optimizers.paths`: relation ids, directions left out), keyed as
written or by its shape, its topic names blanked out (`programs.question.question_shape`, so that
"who directed [Heat]" is near "who directed [Alien]" and not near "who starred in [Heat]"),
whichever answers the training questions better (`ChainPrior.fit_best`). At answer time the
questions nearest the one asked, keyed alike (cosine of sentence vectors), vote: a chain's weight is the
weighted share of those neighbours whose gold paths include it, in 0..1, and a prefix of a chain
(the relations a walk has taken so far) gets the share whose gold paths start with it. A neighbour
weighs its similarity, or with a `temperature` exp((similarity - the nearest's) / temperature), so
that where some training questions are asked just like this one, they outvote the merely alike;
compiling chooses the temperature with the key. A question less like its nearest training question
than nearly every training question is like its nearest other (`familiar_at`, the `FAMILIAR`
quantile of those similarities, measured when compiling) is unlike what the prior was fitted on,
and the prior says nothing about it: trained on 2- and 3-hop questions alone, it would otherwise be
sure of a 3-relation chain for "who is the writer of [X]" because "who is the writer of the films
written by [X]" is the nearest template there is.
The walk ranks candidate answers and fills its beam with these weights beside question similarity
(`programs/kgqa.py`): retrieval-augmented relation planning, no LLM call.

Saved as `chains.json` beside the program (`programs.saving`); an uncompiled program has an empty
prior, and every weight is 0.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from kgqa.programs.question import question_shape

Chain = tuple[str, ...]
NEIGHBOURS = 10  # training questions that vote on one question's chains
MIN_SIMILARITY = 0.3  # a neighbour less like the question than this has no vote
_MAX_QUESTIONS = 20_000  # kept at most (a prior of every question a large trainset has, not unbounded)
Key = Literal["question", "shape"]  # a training question kept as written, or with its topic names blanked out
KEYS: tuple[Key, ...] = ("question", "shape")
TEMPERATURES = (None, 0.05, 0.02, 0.01)  # tried by `fit_best`; None: each neighbour weighs its similarity
FAMILIAR = 0.01  # the share of training questions less like their nearest other than a question may be like its
# nearest training question and still be voted on (hand-set: MetaQA's 1-hop questions asked of a prior of its 2- and
# 3-hop ones are all below it; of the 180 of seeds 0 and 1 asked of priors fitted on every hop, one)
_ROUNDING = 1e-5  # one similarity computed two ways (a question against the training matrix, or within it)


@dataclass
class Votes:
    """One question's weights: for whole chains (`chain`) and for the chains' prefixes (`prefix`)."""

    chains: dict[Chain, float] = field(default_factory=dict)
    prefixes: dict[Chain, float] = field(default_factory=dict)

    def chain(self, relations: Sequence[str]) -> float:
        return self.chains.get(tuple(relations), 0.0)

    def prefix(self, relations: Sequence[str]) -> float:
        return self.prefixes.get(tuple(relations), 0.0)

    def sure(self, at_least: float) -> Chain | None:
        """The heaviest chain where it weighs at least `at_least` (of equals, the first by name), else None."""
        ranked = sorted(self.chains.items(), key=lambda item: (-item[1], item[0]))
        return ranked[0][0] if ranked and ranked[0][1] >= at_least else None


@dataclass
class ChainPrior:
    """Training questions (keyed as `key` says) and their gold relation chains; `ask(question, topics,
    encode)` weighs chains for a question keyed alike, `votes(key, encode)` for one already keyed."""

    questions: list[str] = field(default_factory=list)
    chains: list[list[Chain]] = field(default_factory=list)
    neighbours: int = NEIGHBOURS
    key: Key = "question"
    temperature: float | None = None  # None: a neighbour weighs its similarity; else exp((it - the nearest's) / this)
    familiar_at: float | None = None  # the least similarity to its nearest training question a question is voted on at
    _vectors: object = field(default=None, repr=False, compare=False)

    @property
    def trained(self) -> bool:
        return bool(self.questions)

    @classmethod
    def fit(cls, labeled: Iterable[tuple[str, Sequence[Sequence[str]]]], *, neighbours: int = NEIGHBOURS,
            key: Key = "question") -> ChainPrior:
        """Every training question that has gold relation paths (`(question, paths)` pairs, each
        question keyed as `key` says: as written, or its `question_shape`), and its paths."""
        if key not in KEYS:
            raise ValueError(f"a chain prior is keyed by one of {KEYS}, not {key!r}")
        questions, chains = [], []
        for question, paths in labeled:
            paths = list(dict.fromkeys(tuple(p) for p in paths if p))
            if paths and len(questions) < _MAX_QUESTIONS:
                questions.append(str(question))
                chains.append(paths)
        return cls(questions, chains, neighbours, key)

    @classmethod
    def fit_best(cls, labeled: Iterable[tuple[str, Sequence[str], Sequence[Sequence[str]]]], encode: Callable, *,
                 neighbours: int = NEIGHBOURS) -> ChainPrior:
        """Fitted on `(question, topic names, paths)` triples by the key and the `temperature` under
        which the training questions, each asked of the others, are answered best (`self_score`;
        equal: the first of `KEYS` and `TEMPERATURES`). Which key finds a question's neighbours
        depends on the data: on MetaQA, whose questions are templates around a bracketed name, the
        shape (0.89 of 300 dev questions get a chain that answers best against 0.39 as written); on
        CWQ-mini the name says what kind of thing is asked about (0.26 as written against 0.20;
        `bench.chain_prior`). A temperature lets the training questions of one template outvote
        those of a template worded almost alike. The prior keeps its `familiarity`."""
        labeled = list(labeled)
        priors = []
        for key in KEYS:
            keyed = cls.fit_keyed(labeled, key=key, neighbours=neighbours)
            keyed.warm(encode)
            familiar_at = keyed.familiarity()
            priors += [replace(keyed, temperature=temperature, familiar_at=familiar_at) for temperature in TEMPERATURES]
        return max(priors, key=lambda prior: prior.self_score(encode))

    @classmethod
    def fit_keyed(cls, labeled: Iterable[tuple[str, Sequence[str], Sequence[Sequence[str]]]], *, key: Key,
                  neighbours: int = NEIGHBOURS) -> ChainPrior:
        """Fitted on `(question, topic names, paths)` triples, each question keyed by `key`."""
        return cls.fit(((_keyed(question, topics, key), paths) for question, topics, paths in labeled), neighbours=neighbours,
                       key=key)

    def ask(self, question: str, topics: Sequence[str], encode: Callable) -> Votes:
        """The weights for `question` about the topic entities named `topics`, keyed as the training
        questions were."""
        return self.votes(_keyed(question, topics, self.key), encode)

    def votes(self, question: str, encode: Callable) -> Votes:
        """The weights the `neighbours` training questions most like `question` (keyed as they are) give chains."""
        if not self.trained:
            return Votes()
        self.warm(encode)
        return self._votes(self._vectors @ encode([question])[0])

    def self_score(self, encode: Callable) -> float:
        """The share of the training questions whose heaviest chain, voted by the others alone, is one
        of their own: how well this prior's key finds neighbours that answer alike."""
        if not self.trained:
            return 0.0
        self.warm(encode)
        similarities = self._among_themselves()
        hits = sum(self._votes(similarities[i]).sure(0.0) in self.chains[i] for i in range(len(self.questions)))
        return hits / len(self.questions)

    def familiarity(self) -> float | None:
        """The similarity to its nearest other that all but `FAMILIAR` of the training questions reach
        (the prior warmed); None with fewer than two questions, where nothing says what is unlike them.
        At most 1: two questions keyed alike are 1 apart, give or take a rounding."""
        if len(self.questions) < 2 or self._vectors is None:
            return None
        return min(float(np.quantile(self._among_themselves().max(axis=1), FAMILIAR)), 1.0)

    def _among_themselves(self) -> np.ndarray:
        """The training questions' similarities to each other, none to itself (a question has no vote on itself)."""
        similarities = np.array(self._vectors @ self._vectors.T, dtype=float)
        np.fill_diagonal(similarities, -1.0)
        return similarities

    def _votes(self, similarities) -> Votes:
        if self.familiar_at is not None and float(np.max(similarities)) < self.familiar_at - _ROUNDING:
            return Votes()  # unlike every question the prior was fitted on
        nearest = sorted(range(len(self.questions)), key=lambda i: -similarities[i])[: self.neighbours]
        voters = [(i, float(similarities[i])) for i in nearest if similarities[i] >= MIN_SIMILARITY]
        if voters and self.temperature is not None:
            voters = [(i, math.exp((similarity - voters[0][1]) / self.temperature)) for i, similarity in voters]
        total = sum(weight for _, weight in voters)
        if not total:
            return Votes()
        chains: dict[Chain, float] = defaultdict(float)
        prefixes: dict[Chain, float] = defaultdict(float)
        for i, weight in voters:
            for chain in self.chains[i]:
                chains[chain] += weight / total
            for prefix in {chain[:n] for chain in self.chains[i] for n in range(1, len(chain) + 1)}:
                prefixes[prefix] += weight / total
        return Votes({c: min(w, 1.0) for c, w in chains.items()}, {p: min(w, 1.0) for p, w in prefixes.items()})

    def warm(self, encode: Callable) -> None:
        """Encode the training questions now (once), not on the first question asked: about 10 s for
        1,500 of them on 2 cores, which a server pays at start-up instead of on its first request."""
        if self.trained and self._vectors is None:
            self._vectors = encode(self.questions)

    def to_dict(self) -> dict:
        return {"version": 2, "key": self.key, "temperature": self.temperature, "familiar_at": self.familiar_at,
                "neighbours": self.neighbours,
                "questions": self.questions, "chains": [[list(chain) for chain in chains] for chains in self.chains]}

    @classmethod
    def from_dict(cls, state: object) -> ChainPrior:
        """A saved prior, its shape checked (a tampered file is a clear error). Version 1 (before
        priors were keyed by shape) kept questions as written; one saved without a temperature weighs
        neighbours by their similarity, and one saved without `familiar_at` votes on any question."""
        if not isinstance(state, dict) or state.get("version") not in (1, 2):
            raise ValueError("not a kgqa chain prior (version 1 or 2)")
        questions, chains, neighbours = state.get("questions"), state.get("chains"), state.get("neighbours")
        key = state.get("key", "question") if state["version"] == 2 else "question"
        if key not in KEYS:
            raise ValueError(f"key must be one of {KEYS}, not {key!r}")
        if not isinstance(neighbours, int) or neighbours < 1:
            raise ValueError("neighbours must be a positive integer")
        temperature = state.get("temperature")
        if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0):
            raise ValueError(f"temperature must be a positive number or null, not {temperature!r}")
        familiar_at = state.get("familiar_at")
        if familiar_at is not None and (isinstance(familiar_at, bool) or not isinstance(familiar_at, (int, float))
                                        or not -1.0 <= familiar_at <= 1.0):
            raise ValueError(f"familiar_at must be a similarity (-1 to 1) or null, not {familiar_at!r}")
        if not isinstance(questions, list) or not all(isinstance(q, str) for q in questions):
            raise ValueError("questions must be a list of strings")
        if not isinstance(chains, list) or len(chains) != len(questions) or not all(
            isinstance(paths, list) and all(isinstance(p, list) and p and all(isinstance(r, str) for r in p) for p in paths)
            for paths in chains
        ):
            raise ValueError("chains must hold, for each question, a list of relation lists")
        return cls(list(questions), [[tuple(p) for p in paths] for paths in chains], neighbours, key,
                   None if temperature is None else float(temperature), None if familiar_at is None else float(familiar_at))


def _keyed(question: str, topics: Sequence[str], key: Key) -> str:
    """`question` as a prior keyed by `key` holds it: as written, or its shape."""
    return question_shape(question, topics) if key == "shape" else question
