"""Topic entities for a question without ids: which of the names it mentions is it about?

`NameIndex.mentions` finds every span that names some entity (exact, a variant, part of a name, a
near spelling). `Linker.link` scores each candidate entity by what its best mention looks like
(how close, how long, capitalised, inside a longer name) and by what compiling learned from training
questions and their gold topic entities (`Linker.fit`):
- how often a span is a common word of questions ("location", "city", "composer") rather than a name,
- how often a span that names something was a gold topic, and how often each entity was,
- words that stand for a topic entity the question never names ("WW2" -> World War II,
  "brother" -> Male): a lexicon kept where it held on several training questions.
The model is a small neural network (one hidden layer of ReLU units over the standardised features),
so what one feature says can depend on the others; logistic regression, before it, weighed each
feature the same whatever the rest said. It keeps the best candidates whose spans do not
overlap, down to a threshold tuned on the training questions, each scored by a model fitted without
it, and always at least one when there is any; a common word (one word written lower case in a
question that capitalises its names: "dated", "governor") has a threshold of its own. A dated name
whose year the question writes apart ("the AFC Championship Game in 2013") stands for the event it
overlaps. An uncompiled linker ranks by match quality alone.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kgqa.kg.names import STOPWORDS, TOKEN, LabelVectors, Mention, NameIndex, fold, plain, tokens
from kgqa.kg.terms import Direction
from kgqa.programs.question import YEAR, standalone_years

if TYPE_CHECKING:
    from kgqa.kg.graph import KnowledgeGraph

HOWS = ("exact", "variant", "partial", "fuzzy", "embedding", "lexicon")
_WRITTEN_OUT = frozenset({"exact", "variant"})  # matches of a name as written, not of a prefix, a spelling or a vector
# What the graph says about a candidate (one query for all of a question's candidates): how many
# relations it has (a country, a person and a film have many; a tag, a value or a schema node few),
# how many of them leave it (none for a value that records hold, as RoG graphs keep an ISO code or a
# year: a condition of the question, "the ISO code CHN", not its topic), and how much of the rest of
# the question its relations' words cover ("county" beside location.us_county.*: the city, not the
# band named Houston).
GRAPH_FEATURES = ("graph_relations", "graph_out_relations", "question_in_relations")
MENTION_FEATURES = (  # what the mention looks like and what the training questions said of it
    "similarity", "span_words", "name_words", "coverage", "capitalised", "lower_case_question",
    "capitalised_in_cased_question", "question_share", "log_question_share", "link_prior", "entity_prior",
    "same_case", "stopword_span", "numeric_span", "inside_exact", "inside_any", "exact_capitalised", *(f"how_{h}" for h in HOWS),
    "after_name", "after_name_comma",
)
FEATURES = (*MENTION_FEATURES, *GRAPH_FEATURES)
# A question's candidates whose relations are asked (`GRAPH_FEATURES`): the best by what their mentions
# say. A question naming a number ("7", "1919-02-26") finds every name holding it, two thousand on a
# graph of 5 x 10^7 triples; the relations of them all took 0.5 s, and those below the best few are
# not linked whatever their relations say.
GRAPH_CANDIDATES = 64
LEXICON_MIN_QUESTIONS = 3
LEXICON_MIN_PRECISION = 0.5
KEPT_SHARE_MIN = 2  # n-grams seen in fewer training questions than this are not kept
# Compiling counts, for each training question's candidates, only the other questions: a question's own
# gold topics would vouch for its spans and entities (`link_prior`, `entity_prior`, the lexicon), and
# the model would learn to trust those counts more than a new question can. The same folds score each
# question for tuning the thresholds with a model fitted on the others. (Each choice here was measured:
# docs/linking.md.)
FOLDS = 10
HIDDEN_UNITS = 16  # the model: one hidden layer, so a feature's weight may depend on the others
L2 = 0.01  # the network's weight penalty (sklearn's alpha)
# The thresholds tried, for names and for common words apart: one threshold for both had to admit
# common words the training questions count as topics only some of the time to keep the names the
# model scores low.
THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
UNTRAINED_THRESHOLD = 0.9  # an uncompiled linker's, for every candidate: beside the best, near-perfect matches only
# A year as a word of its own, the edition of a yearly event ("the AFC Championship Game in 2013"),
# not part of a date ("28 October 1981", "11-1-2010") nor a bound ("won it after 2013").


@dataclass
class LinkCandidate:
    entity: str
    name: str
    mention: Mention | None  # None for a lexicon entry
    features: dict[str, float]
    score: float = 0.0
    # Where the question writes the year of this dated name apart from the words it was found by, every
    # other word of the name in the question too ("2013 AFC Championship Game" for "the AFC
    # Championship Game in 2013"); None for any other name.
    year_at: int | None = None

    @property
    def span(self) -> tuple[int, int] | None:
        return (self.mention.start, self.mention.end) if self.mention else None

    def to_dict(self) -> dict:
        return {"entity": self.entity, "name": self.name, "score": round(self.score, 3),
                "span": self.mention.text if self.mention else None,
                "how": self.mention.how if self.mention else "lexicon"}


@dataclass
class Linking:
    """What linking saw and chose, as the trace keeps it."""

    mentions: list[Mention]
    candidates: list[LinkCandidate]
    linked: list[LinkCandidate]

    def to_dict(self, *, shown: int = 10) -> dict:
        return {
            "mentions": sorted({m.text for m in self.mentions}),
            "candidates": [c.to_dict() for c in self.candidates[:shown]],
            "linked": [c.to_dict() for c in self.linked],
        }


@dataclass
class LinkStats:
    """Counts from training questions (by folded span text or entity name)."""

    questions: int = 0
    question_share: dict[str, int] = field(default_factory=dict)  # n-gram -> training questions holding it
    span_matched: dict[str, int] = field(default_factory=dict)  # span -> questions where it named something
    span_gold: dict[str, int] = field(default_factory=dict)  # ... and named a gold topic
    entity_seen: dict[str, int] = field(default_factory=dict)  # entity name -> questions it was a candidate in
    entity_gold: dict[str, int] = field(default_factory=dict)  # ... and a gold topic
    lexicon: dict[str, list[tuple[str, float]]] = field(default_factory=dict)  # n-gram -> [(entity id or name, precision)]


@dataclass
class Linker:
    """Scores candidates with a model over `FEATURES` (a network with one hidden layer; linkers saved
    before it, logistic regression); untrained, by match quality alone."""

    stats: LinkStats = field(default_factory=LinkStats)
    # feature -> its weight into each hidden unit, from the standardised feature (a linker saved before
    # hidden layers: one number, its weight into the score)
    weights: dict[str, list[float] | float] = field(default_factory=dict)
    means: dict[str, float] = field(default_factory=dict)
    scales: dict[str, float] = field(default_factory=dict)
    bias: float = 0.0  # the score's
    threshold: float = 0.5
    common_threshold: float | None = None  # a common word's (`is_common_word`); None: `threshold` (linkers saved before)
    hidden_bias: list[float] = field(default_factory=list)  # one per hidden unit; none: no hidden layer
    output: list[float] = field(default_factory=list)  # each hidden unit's weight into the score

    @property
    def trained(self) -> bool:
        return bool(self.weights)

    # -- linking ----------------------------------------------------------------------------------

    def link(self, question: str, index: NameIndex | LabelVectors, *, graph: KnowledgeGraph | None = None) -> Linking:
        """The question's topic entities. With `graph`, and a linker compiled with one, the candidates'
        relations (one query) are features too; without one, those features count as average."""
        mentions = index.mentions(question)
        candidates = self._ranked(question, mentions, index, graph=graph if self.uses_graph else None)
        return Linking(mentions, candidates, self._choose(candidates))

    def _ranked(
        self, question: str, mentions: Sequence[Mention], index: NameIndex | LabelVectors, *, graph: KnowledgeGraph | None
    ) -> list[LinkCandidate]:
        """The candidates of `mentions`, scored, best first; with `graph`, the best `GRAPH_CANDIDATES` with
        what their relations say (one query)."""
        candidates = self.candidates(question, mentions, index)
        if graph is not None and candidates:
            if len(candidates) > GRAPH_CANDIDATES:  # the best by what their mentions say, the graph's features average
                candidates = self._scored(candidates)
            _add_graph_features(candidates[:GRAPH_CANDIDATES], tokens(question), graph)
        return self._scored(candidates)

    def _scored(self, candidates: list[LinkCandidate]) -> list[LinkCandidate]:
        """`candidates` scored, best first."""
        for candidate, score in zip(candidates, self._scores([c.features for c in candidates])):
            candidate.score = score
        return sorted(candidates, key=lambda c: (-c.score, c.entity))

    def candidates(
        self, question: str, mentions: Sequence[Mention], index: NameIndex | LabelVectors, *, graph: KnowledgeGraph | None = None
    ) -> list[LinkCandidate]:
        """One candidate per entity, by its best mention, plus lexicon entries the question triggers;
        with `graph`, each with what its relations say (`GRAPH_FEATURES`)."""
        words, cased = tokens(question), _cased_tokens(question)
        capitals = [w[:1].isupper() for w in cased] if len(cased) == len(words) else None
        lower = float(question[1:] == question[1:].lower())
        stats = self.stats
        best: dict[str, LinkCandidate] = {}
        for mention in mentions:
            candidate = LinkCandidate(mention.entity, mention.name, mention, self._mention_features(question, mention, capitals, lower))
            if mention.entity not in best or _quality(candidate) > _quality(best[mention.entity]):
                best[mention.entity] = candidate
        _add_span_features(question, list(best.values()))
        years = standalone_years(words)
        for candidate in best.values():
            candidate.year_at = _year_apart(candidate, words, years)
        for gram in sorted(_ngrams(words)):  # a fixed order: the first gram to name an entity sets its features
            for topic, precision in stats.lexicon.get(gram, ()):
                for entity, name in index.resolve(topic):
                    if entity not in best:
                        best[entity] = LinkCandidate(entity, name, None, _lexicon_features(precision, name, lower, stats))
        if graph is not None and best:
            _add_graph_features(list(best.values()), words, graph)
        return list(best.values())

    def _mention_features(self, question: str, mention: Mention, capitals: list[bool] | None, lower: float) -> dict[str, float]:
        """What one mention says of its entity: how it matched, its words' case, how often the
        training questions wrote it and linked it."""
        stats = self.stats
        capitalised = sum(capitals[mention.start : mention.end]) / (mention.end - mention.start) if capitals else 0.5
        share = stats.question_share.get(mention.text, 0) / max(stats.questions, 1)
        features = {
            "similarity": mention.similarity,
            "span_words": mention.end - mention.start,
            "name_words": len(tokens(mention.name)),
            "capitalised": capitalised,
            "lower_case_question": lower,
            "capitalised_in_cased_question": capitalised * (1 - lower),
            "question_share": share,
            "log_question_share": math.log(share + 1e-4),
            "link_prior": _smoothed(stats.span_gold.get(mention.text, 0), stats.span_matched.get(mention.text, 0)),
            "entity_prior": _smoothed(stats.entity_gold.get(mention.name, 0), stats.entity_seen.get(mention.name, 0)),
            "same_case": float(mention.name in question),  # "Sniper" the film, "sniper" the tag
            "stopword_span": float(all(t in STOPWORDS for t in mention.text.split())),
            "numeric_span": float(all(t.isdigit() for t in mention.text.split())),  # a value, rarely a topic
            "exact_capitalised": float(mention.how == "exact") * capitalised,
            **{f"how_{h}": float(mention.how == h) for h in HOWS},
        }
        features["coverage"] = features["span_words"] / max(features["name_words"], 1)
        return features

    def _score(self, features: dict[str, float]) -> float:
        return self._scores([features])[0]

    def _scores(self, features: Sequence[dict[str, float]]) -> list[float]:
        """Each candidate's score from its features, all in one product (a question naming a number
        may find two thousand candidates)."""
        if not self.trained:
            return [_quality_of(f) for f in features]
        import numpy as np

        names = list(self.weights)
        means = np.array([self.means[name] for name in names])
        x = np.array([[f.get(name, self.means[name]) for name in names] for f in features], dtype=float).reshape(len(features), len(names))
        x = (x - means) / np.array([self.scales[name] for name in names])  # a feature not measured (no graph given) counts as average
        weights = np.array([self.weights[name] for name in names], dtype=float)
        if self.hidden_bias:
            z = self.bias + np.maximum(x @ weights + np.array(self.hidden_bias), 0.0) @ np.array(self.output)
        else:
            z = self.bias + x @ weights
        return (1 / (1 + np.exp(-np.clip(z, -50, 50)))).tolist()

    def threshold_for(self, candidate: LinkCandidate) -> float:
        """The score `candidate` needs to be linked beside a better one: a common word's threshold, or
        the names'; an uncompiled linker's `UNTRAINED_THRESHOLD`."""
        if not self.trained:
            return UNTRAINED_THRESHOLD
        if self.common_threshold is not None and is_common_word(candidate):
            return self.common_threshold
        return self.threshold

    def plausible(self, linking: Linking, *, at_most: int = 6) -> list[LinkCandidate]:
        """The candidates a choice is between: the linked ones, then the others that score at least
        half their own linking threshold (a common word's or the names', `threshold_for`), best first."""
        others = [c for c in linking.candidates if c not in linking.linked and c.score >= self.threshold_for(c) / 2]
        return [*linking.linked, *others][: max(at_most, len(linking.linked))]

    def _choose(self, candidates: list[LinkCandidate]) -> list[LinkCandidate]:
        """The best candidates down to their thresholds (`threshold_for`), spans not overlapping;
        always the best one. Where a name matched by its letters (`exact`, `variant`) over at least as
        many words, and scoring above its threshold, overlaps a candidate found otherwise, the name
        written out wins: "Afghan Afghani" over Afghanistan for "the Afghan Afghani". A dated name whose year the question writes apart (`year_at`)
        stands for a name it overlaps that it contains, or one found by a looser match: "the AFC
        Championship Game in 2013" is the 2013 AFC Championship Game."""
        chosen: list[LinkCandidate] = []
        needed = [self.threshold_for(c) for c in candidates]  # once each: the written-out check reads them all
        for candidate, threshold in zip(candidates, needed):
            if chosen and candidate.score < threshold:
                continue
            candidate = next((c for c, its in zip(candidates, needed) if _written_out_over(c, candidate, its)), candidate)
            candidate = next((c for c in candidates if _edition_of(c, candidate, chosen)), candidate)
            if candidate in chosen or any(_overlap(candidate, c) for c in chosen):
                continue
            chosen.append(candidate)
        return chosen

    # -- compiling --------------------------------------------------------------------------------

    @classmethod
    def fit(
        cls, examples: Iterable, index: NameIndex | LabelVectors, *, graph: KnowledgeGraph | None = None, seed: int = 0,
    ) -> Linker:
        """Learn from training questions and their gold topic entities (`example.topic_entities`, ids or
        names). Each question's candidates get the features a new question would: the counts behind
        them taken over the other folds (`FOLDS`). The thresholds, for names and for common words
        (`THRESHOLDS` each), are the pair that links the exact gold set most often where each fold is
        scored by a model fitted on the other folds; the model kept is then fitted on every question,
        and the counts and lexicon it links with are taken over all of them. With `graph`, the model
        weighs what the graph says about candidates as well (`GRAPH_FEATURES`, one query a question);
        without, it leaves them out.
        Needs scikit-learn (a dependency of sentence-transformers)."""
        rows = [(e.question, set(e.topic_entities)) for e in examples if getattr(e, "topic_entities", None)]
        if len(rows) < 10:
            raise ValueError(f"linking needs at least 10 training questions with topic entities, got {len(rows)}")
        random.Random(seed).shuffle(rows)
        found = {question: index.mentions(question) for question, _ in rows}  # once: spans' vectors are the slow part
        features = [  # what cannot vary is left out: the graph's features without a graph, embedding matches without vectors
            name for name in (FEATURES if graph is not None else MENTION_FEATURES)
            if name != "how_embedding" or isinstance(index, LabelVectors)
        ]
        folds: list[list[tuple[set[str], list[LinkCandidate]]]] = []  # per fold: (gold, candidates) of its questions
        for part in range(FOLDS):
            counted = cls(stats=_count([r for i, r in enumerate(rows) if i % FOLDS != part], found))
            folds.append([(gold, counted.candidates(question, found[question], index, graph=graph))
                          for question, gold in rows[part::FOLDS]])
        linker = cls._fitted(features, [q for part in folds for q in part], seed=seed)
        if linker is None:
            raise ValueError("linking needs training questions whose topic entities are both found and not found among the candidates")
        tuned = cls._held_out(features, folds, seed=seed)
        if tuned:
            linker.threshold, linker.common_threshold = max(
                ((t, c) for t in THRESHOLDS for c in THRESHOLDS),
                key=lambda pair: (linker._exact_rate(tuned, *pair), -abs(pair[0] - 0.5) - abs(pair[1] - 0.5)),
            )
        linker.stats = _count(rows, found)
        return linker

    @classmethod
    def _held_out(cls, features: list[str], folds: list[list[tuple[set[str], list[LinkCandidate]]]], *,
                  seed: int) -> list[tuple[set[str], list[LinkCandidate]]]:
        """Each fold's questions, their candidates scored by a model fitted on the other folds (one
        that never saw them, as a user's question will be), best first."""
        tuned = []
        for held in range(FOLDS):
            scorer = cls._fitted(features, [q for i, part in enumerate(folds) if i != held for q in part], seed=seed)
            if scorer is None:  # (a handful of training questions) nothing to fit without this fold
                continue
            tuned.extend((gold, scorer._scored(candidates)) for gold, candidates in folds[held])
        return tuned

    @classmethod
    def _fitted(cls, features: list[str], questions: list[tuple[set[str], list[LinkCandidate]]], *, seed: int) -> Linker | None:
        """A linker whose model (`HIDDEN_UNITS` ReLU units on the standardised `features`, then the
        score) is fitted on the candidates of `questions`, labeled by their gold topics; no counts,
        default threshold. None when the candidates are all gold or all not: nothing to tell apart."""
        import warnings

        import numpy as np
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPClassifier

        y = np.array([is_topic(c, gold) for gold, candidates in questions for c in candidates])
        if len(set(y.tolist())) < 2:
            return None
        x = np.array([[c.features.get(name, 0.0) for name in features] for _, candidates in questions for c in candidates])
        means, scales = x.mean(axis=0), x.std(axis=0)
        scales[scales == 0] = 1.0
        model = MLPClassifier((HIDDEN_UNITS,), alpha=L2, max_iter=2000, random_state=seed)
        with warnings.catch_warnings():  # a network short of the tolerance after max_iter still ranks
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit((x - means) / scales, y)
        hidden, output = model.coefs_
        return cls(weights={name: list(map(float, row)) for name, row in zip(features, hidden)},
                   means=dict(zip(features, map(float, means))), scales=dict(zip(features, map(float, scales))),
                   bias=float(model.intercepts_[1][0]), hidden_bias=list(map(float, model.intercepts_[0])),
                   output=list(map(float, output[:, 0])))

    @property
    def uses_vectors(self) -> bool:
        """Whether compiling saw names found by their sentence vectors (an index with `LabelVectors`):
        then linking asks for them too."""
        return "how_embedding" in self.weights

    @property
    def uses_graph(self) -> bool:
        """Whether compiling weighed what the graph says about candidates."""
        return any(name in self.weights for name in GRAPH_FEATURES)

    def _exact_rate(self, tuned: list[tuple[set[str], list[LinkCandidate]]], threshold: float, common_threshold: float) -> float:
        """The share of questions (gold topics, scored candidates best first) linked exactly at these
        thresholds, for names and for common words."""
        saved = self.threshold, self.common_threshold
        self.threshold, self.common_threshold = threshold, common_threshold
        try:
            hits = 0
            for gold, candidates in tuned:
                linked = self._choose(candidates)
                hits += {c.entity for c in linked} == gold or {c.name for c in linked} == gold
            return hits / len(tuned)
        finally:
            self.threshold, self.common_threshold = saved

    # -- saved with the program -------------------------------------------------------------------

    def to_dict(self) -> dict:
        return {"stats": self.stats.__dict__, "weights": self.weights, "means": self.means, "scales": self.scales,
                "bias": self.bias, "threshold": self.threshold, "common_threshold": self.common_threshold,
                "hidden_bias": self.hidden_bias, "output": self.output}

    @classmethod
    def from_dict(cls, data: dict) -> Linker:
        """A linker from `to_dict`'s JSON; a malformed one is a ValueError naming the part."""
        keys = {"stats", "weights", "means", "scales", "bias", "threshold", "common_threshold", "hidden_bias", "output"}
        if not isinstance(data, dict) or set(data) != keys:
            raise ValueError(f"linking state must hold exactly {', '.join(sorted(keys))}")
        common = data["common_threshold"]
        if common is not None and not _is_number(common):
            raise ValueError("linking common_threshold must be a number or null")
        stats = data["stats"]
        if not isinstance(stats, dict) or set(stats) != set(LinkStats().__dict__):
            raise ValueError("linking stats do not match this kgqa")
        hidden_bias, output = data["hidden_bias"], data["output"]
        units = len(hidden_bias) if isinstance(hidden_bias, list) else -1
        if not (_numbers(hidden_bias, units) and _numbers(output, units)):
            raise ValueError("linking hidden_bias and output must be lists of numbers, one per hidden unit")
        for part in ("weights", "means", "scales"):
            values = data[part]
            layered = part == "weights" and units > 0  # each feature's weights into the hidden units
            if not isinstance(values, dict) or not set(values) <= set(FEATURES) or not all(
                _numbers(v, units) if layered else _is_number(v) for v in values.values()
            ):
                raise ValueError(f"linking {part} must map known features to numbers"
                                 + (f" (weights: a list of {units}, one per hidden unit)" if layered else ""))
        if set(data["weights"]) - set(data["means"]) or set(data["weights"]) - set(data["scales"]):
            raise ValueError("every weighted linking feature needs a mean and a scale")
        for name in ("question_share", "span_matched", "span_gold", "entity_seen", "entity_gold"):
            if not isinstance(stats[name], dict) or not all(isinstance(v, int) for v in stats[name].values()):
                raise ValueError(f"linking stats {name} must map text to counts")
        lexicon = {gram: [(str(name), float(p)) for name, p in entries] for gram, entries in stats["lexicon"].items()}
        return cls(
            stats=LinkStats(**{**stats, "lexicon": lexicon}), weights=data["weights"], means=data["means"],
            scales=data["scales"], bias=float(data["bias"]), threshold=float(data["threshold"]),
            common_threshold=None if common is None else float(common),
            hidden_bias=[float(b) for b in hidden_bias], output=[float(w) for w in output],
        )


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float))


def _numbers(value: object, count: int) -> bool:
    """`value` is a list of `count` numbers."""
    return isinstance(value, list) and len(value) == count and all(map(_is_number, value))


def _count(rows: list[tuple[str, set[str]]], mentions_of: dict[str, list[Mention]]) -> LinkStats:
    """What `rows` (question, gold topics) say of spans, entities and words, each question's mentions given."""
    share, matched, gold_spans, seen, gold_entities, triggers = Counter(), Counter(), Counter(), Counter(), Counter(), Counter()
    for question, gold in rows:
        grams = _ngrams(tokens(question))
        share.update(grams)
        mentions = mentions_of[question]
        by_span: dict[str, set[str]] = {}
        for mention in mentions:
            by_span.setdefault(mention.text, set()).update((mention.entity, mention.name))
        for span, named in by_span.items():
            matched[span] += 1
            gold_spans[span] += bool(named & gold)
        names = {m.name for m in mentions if is_topic(m, gold)}
        for name in {m.name for m in mentions}:
            seen[name] += 1
            gold_entities[name] += name in names
        found = {m.entity for m in mentions} | {m.name for m in mentions}
        for entity in gold - found:
            triggers.update((gram, entity) for gram in grams if not all(t in STOPWORDS for t in gram.split()))
    lexicon: dict[str, list[tuple[str, float]]] = {}
    for (gram, entity), count in sorted(triggers.items()):
        precision = count / share[gram]
        if count >= LEXICON_MIN_QUESTIONS and precision >= LEXICON_MIN_PRECISION:
            lexicon.setdefault(gram, []).append((entity, round(precision, 3)))
    return LinkStats(
        questions=len(rows),
        question_share={g: n for g, n in share.items() if n >= KEPT_SHARE_MIN},
        span_matched=dict(matched), span_gold={s: n for s, n in gold_spans.items() if n},
        entity_seen={e: n for e, n in seen.items() if n >= KEPT_SHARE_MIN},
        entity_gold={e: n for e, n in gold_entities.items() if n and seen[e] >= KEPT_SHARE_MIN},
        lexicon=lexicon,
    )


def _lexicon_features(precision: float, name: str, lower: float, stats: LinkStats) -> dict[str, float]:
    features = dict.fromkeys(MENTION_FEATURES, 0.0)
    features.update({
        "similarity": precision, "name_words": len(tokens(name)), "lower_case_question": lower,
        "log_question_share": math.log(1e-4), "link_prior": precision, "how_lexicon": 1.0,
        "entity_prior": _smoothed(stats.entity_gold.get(name, 0), stats.entity_seen.get(name, 0)),
    })
    return features


def _add_graph_features(candidates: list[LinkCandidate], words: Sequence[str], graph: KnowledgeGraph) -> None:
    """`GRAPH_FEATURES` for every candidate, from one query for the relations around all of them."""
    around = graph.relations([c.entity for c in candidates])
    for candidate in candidates:
        edges = around[candidate.entity]
        relation_words = {w for edge in edges for w in re.split(r"[._/#:]+", edge.relation.lower()) if len(w) > 2}
        prefixes = {w[:5] for w in relation_words}
        span = set(range(*candidate.span)) if candidate.span else set()
        rest = [w for i, w in enumerate(words) if i not in span and w not in STOPWORDS and len(w) > 2]
        candidate.features["graph_relations"] = math.log1p(len({e.relation for e in edges}))
        candidate.features["graph_out_relations"] = math.log1p(len({e.relation for e in edges if e.direction is Direction.OUT}))
        candidate.features["question_in_relations"] = sum(w[:5] in prefixes for w in rest) / len(rest) if rest else 0.0


def _written_out_over(name: LinkCandidate, other: LinkCandidate, threshold: float) -> bool:
    """`name` is a name the question writes out (an exact or variant match, scoring at least
    `threshold`) over at least as many words as `other`, a candidate found by a looser match (a
    prefix, a near spelling, a sentence vector) whose span overlaps it."""
    if name is other or name.mention is None or other.mention is None or name.score < threshold:
        return False
    (start, end), (other_start, other_end) = name.span, other.span
    return (name.mention.how in _WRITTEN_OUT and other.mention.how not in _WRITTEN_OUT
            and _overlap(name, other) and end - start >= other_end - other_start)


def _overlap(one: LinkCandidate, other: LinkCandidate) -> bool:
    """Both were found by spans of the question, and the spans share a word."""
    return bool(one.span and other.span and one.span[0] < other.span[1] and other.span[0] < one.span[1])


def _add_span_features(question: str, candidates: list[LinkCandidate]) -> None:
    """What each candidate's span says beside the others': inside another's (written out, or any),
    right after a written-out name (with a comma between: "Greeley, Colorado", "Rome, Italy")."""
    hows: dict[tuple[int, int], set[str]] = {}  # each span's ways of being found (a question has few spans, many names)
    for c in candidates:
        hows.setdefault(c.span, set()).add(c.mention.how)
    written_ends = {span[1] for span, found in hows.items() if found & _WRITTEN_OUT}
    commas = _comma_after(question)
    inside_of = {span: {how for other, found in hows.items() if other != span and other[0] <= span[0] and span[1] <= other[1]
                        for how in found} for span in hows}
    for candidate in candidates:
        inside = inside_of[candidate.span]
        candidate.features["inside_exact"] = float(bool(inside & _WRITTEN_OUT))
        candidate.features["inside_any"] = float(bool(inside))
        start = candidate.span[0]
        candidate.features["after_name"] = float(start in written_ends)
        candidate.features["after_name_comma"] = float(start in written_ends and start - 1 in commas)


def _year_apart(candidate: LinkCandidate, words: Sequence[str], years: dict[int, str]) -> int | None:
    """Where the question writes `candidate`'s year outside the words it was found by, when its name
    holds one year and the question every other word of the name; else None."""
    if candidate.mention is None or not years:
        return None
    named = tokens(candidate.name)
    held = [w for w in named if YEAR.fullmatch(w)]
    rest = [w for w in named if w not in STOPWORDS and w not in held]
    if len(held) != 1 or not rest or any(w not in words for w in rest):
        return None
    start, end = candidate.span
    return next((i for i, w in years.items() if w == held[0] and not start <= i < end), None)


def _edition_of(dated: LinkCandidate, other: LinkCandidate, chosen: Sequence[LinkCandidate]) -> bool:
    """`dated` (a name whose year the question writes apart) stands for `other`, a candidate whose
    span overlaps it and whose name it contains, or which was found by a looser match than a name
    written out ("2012 Laughlin International Film Festival" by its letters for "the Berlin International
    Film Festival in 2004"), unless a name already chosen holds that year in its span ("the 2010 Major
    League Baseball season World Series": the season, and not the 2010 World Series)."""
    if dated.year_at is None or dated is other or not _overlap(dated, other):
        return False
    if any(c.span and c.span[0] <= dated.year_at < c.span[1] for c in chosen):
        return False
    other_words = set(tokens(other.name)) - STOPWORDS
    return other_words <= set(tokens(dated.name)) or other.mention.how not in _WRITTEN_OUT


def is_common_word(candidate: LinkCandidate) -> bool:
    """`candidate` was found by one word written lower case in a question that capitalises its names
    ("who has Brad Pitt dated"): a common word that is a topic only some of the time. In a question
    written all in lower case, case tells nothing, and every candidate counts as a name."""
    features = candidate.features
    return (candidate.mention is not None and features.get("span_words") == 1
            and features.get("capitalised") == 0 and features.get("lower_case_question") == 0)


def is_topic(found: LinkCandidate | Mention, topics: set[str]) -> bool:
    """`found` (a candidate or a mention) names one of `topics`, given by id or by name."""
    return found.entity in topics or found.name in topics


def _smoothed(gold: int, seen: int) -> float:
    return (gold + 0.5) / (seen + 1)


def _quality_of(features: dict[str, float]) -> float:
    """Match quality alone (an untrained linker): how close and how long, a capitalised or exact span
    ahead of a common word, never a span inside a longer exact name."""
    if features.get("how_lexicon"):
        return 0.0
    score = features["similarity"] * (0.6 + 0.1 * min(features["span_words"], 4))
    score *= 0.5 + 0.5 * max(features["capitalised"], features["how_exact"] * features["lower_case_question"])
    return score * (0.3 if features.get("inside_exact") else 1.0) * (0.2 if features["stopword_span"] else 1.0)


def _quality(candidate: LinkCandidate) -> tuple[float, float]:
    """Which mention of an entity stands for it: the closest, then the longest."""
    return candidate.features["similarity"], candidate.features["span_words"]


def _ngrams(words: Sequence[str], longest: int = 3) -> set[str]:
    return {" ".join(words[i : i + n]) for n in range(1, longest + 1) for i in range(len(words) - n + 1)}


def _comma_after(text: str) -> set[int]:
    """The positions (in `tokens(text)`) of the tokens a comma follows."""
    folded = fold(text)
    return {i for i, match in enumerate(TOKEN.finditer(folded)) if folded[match.end() : match.end() + 1] == ","}


def _cased_tokens(text: str) -> list[str]:
    """`tokens` with the question's case kept, to see which words were capitalised."""
    return re.findall(r"[A-Za-z0-9]+", plain(text))
