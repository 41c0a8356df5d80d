"""Linking a question without ids: what compiling learns, what the trace keeps, what is saved."""

from __future__ import annotations

import json
import math

import dspy
import pyoxigraph as ox
import pytest

from kgqa.data.demo import split_path
from kgqa.data.jsonl import load_jsonl
from kgqa.kg import EmbeddedStore, KnowledgeGraph
from kgqa.kg.names import LabelVectors, Mention, NameIndex
from kgqa.optimizers.gold_paths import compile_program
from kgqa.optimizers.teleprompters import Budget
from kgqa.programs import KGQA, linking
from kgqa.programs.linking import LinkCandidate, Linker, Linking
from kgqa.programs.saving import LINKING_FILE, ProgramFileError, load_program, save_program
from tests.programs.oracle import gold_oracle, oracle

PEOPLE = ["Anna Kowalski", "Bruno Almeida", "Carla Mendes", "Dmitri Orlov", "Elena Rossi", "Farid Haddad",
          "Greta Lindqvist", "Hugo Moreau", "Ines Duarte", "Jonas Berg", "Kenji Mori", "Lucia Ferreira",
          "Marek Novak", "Nadia Petrova", "Oskar Holm", "Paula Vidal", "Quentin Fabre", "Rosa Lima",
          "Stefan Braun", "Tomas Weber", "Zed Novak"]
COMMON = {"m.loc": "Location", "m.composer": "Composer", "m.city": "City"}
NAMES = [(f"m.p{i}", name) for i, name in enumerate(PEOPLE)] + list(COMMON.items()) + [("m.ww2", "World War II")]
IDS = {name: entity for entity, name in NAMES}


@pytest.fixture(scope="module")
def index() -> NameIndex:
    return NameIndex(NAMES)


@pytest.fixture(scope="module")
def trained(index) -> Linker:
    """Questions in which "location", "composer" and "city" are never the topic, and "ww2" is World War II."""
    rows = []
    for name in PEOPLE[:-1]:  # Zed Novak stays unseen
        rows.append(example(f"In what location was the composer {name} born?", [IDS[name]]))
        rows.append(example(f"Which city did {name} move to?", [IDS[name]]))
    for name in PEOPLE[:8]:
        rows.append(example(f"what did {name.lower()} do in ww2", [IDS[name], "m.ww2"]))
    return Linker.fit(rows, index, seed=0)


def example(question: str, topics: list[str]) -> dspy.Example:
    return dspy.Example(question=question, topic_entities=topics).with_inputs("question", "topic_entities")


def linked(linker: Linker, index: NameIndex, question: str) -> set[str]:
    return {c.entity for c in linker.link(question, index).linked}


def test_compiling_learns_which_common_words_are_not_topics(trained, index):
    question = "In what location was the composer Zed Novak born?"
    assert linked(trained, index, question) == {IDS["Zed Novak"]}
    candidates = {c.entity: c for c in trained.link(question, index).candidates}
    assert {"m.loc", "m.composer"} <= set(candidates)  # offered, then scored below their threshold
    assert all(candidates[common].score < trained.threshold_for(candidates[common]) for common in ("m.loc", "m.composer"))
    assert candidates[IDS["Zed Novak"]].score > trained.threshold
    assert linked(trained, index, "Which city did Zed Novak move to?") == {IDS["Zed Novak"]}


def test_compiling_learns_words_that_stand_for_an_unnamed_topic(trained, index):
    assert ("m.ww2", 1.0) in trained.stats.lexicon["ww2"]
    question = "what did zed novak do in ww2"
    assert linked(trained, index, question) == {IDS["Zed Novak"], "m.ww2"}
    assert linked(Linker(), index, question) == {IDS["Zed Novak"]}  # uncompiled: names only


def test_a_linker_compiled_without_name_vectors_never_asks_for_them(trained):
    assert trained.trained and not trained.uses_vectors
    assert "how_embedding" not in trained.weights


def test_an_uncompiled_linker_links_the_closest_names(index):
    linking = Linker().link("where was marek novak born", index)
    assert [c.entity for c in linking.linked] == [IDS["Marek Novak"]]
    assert "marek novak" in {m.text for m in linking.mentions}
    # "novak" alone is a partial name of two people: offered, not linked
    assert IDS["Zed Novak"] in {c.entity for c in linking.candidates}


def test_something_is_linked_whenever_anything_is_named(trained, index):
    assert linked(trained, index, "tell me about the location") == {"m.loc"}
    assert linked(trained, index, "what is love") == set()


def test_the_state_round_trips_through_json_and_a_bad_one_is_named(trained, index):
    copy = Linker.from_dict(json.loads(json.dumps(trained.to_dict())))
    for question in ("In what location was the composer Zed Novak born?", "what did zed novak do in ww2"):
        assert [c.to_dict() for c in copy.link(question, index).candidates] == [
            c.to_dict() for c in trained.link(question, index).candidates
        ]
    state = trained.to_dict()
    with pytest.raises(ValueError, match="must hold exactly"):
        Linker.from_dict({**state, "extra": 1})
    with pytest.raises(ValueError, match="weights must map known features"):
        Linker.from_dict({**state, "weights": {"os.system": 1.0}})
    with pytest.raises(ValueError, match="span_gold must map text to counts"):
        Linker.from_dict({**state, "stats": {**state["stats"], "span_gold": {"x": "many"}}})
    with pytest.raises(ValueError, match="common_threshold must be a number or null"):
        Linker.from_dict({**state, "common_threshold": "high"})


def test_a_linker_state_of_another_shape_is_a_clear_error_and_a_logistic_one_links_as_that_model(trained, index):
    """A model with no hidden units (one weight per feature) scores as logistic regression:
    sigmoid(bias + weight * standardised feature); a state missing a part, as earlier kgqa saved
    them, is an error (the program it belongs to says to recompile)."""
    state = {**trained.to_dict(), "weights": {"similarity": 2.0, "capitalised": 1.0}, "hidden_bias": [], "output": [],
             "means": {"similarity": 0.5, "capitalised": 0.5}, "scales": {"similarity": 0.25, "capitalised": 0.5}, "bias": -1.0}
    logistic = Linker.from_dict(json.loads(json.dumps(state)))
    assert logistic.trained and not logistic.hidden_bias
    z = -1.0 + 2.0 * (1.0 - 0.5) / 0.25 + 1.0 * (0.0 - 0.5) / 0.5
    assert logistic._score({"similarity": 1.0, "capitalised": 0.0}) == pytest.approx(1 / (1 + math.exp(-z)))
    assert linked(logistic, index, "Where was Zed Novak born?") == {IDS["Zed Novak"]}
    for part in ("common_threshold", "hidden_bias", "output"):
        with pytest.raises(ValueError, match="linking state must hold exactly"):
            Linker.from_dict({k: v for k, v in trained.to_dict().items() if k != part})
    with pytest.raises(ValueError, match="hidden_bias and output must be lists of numbers, one per hidden unit"):
        Linker.from_dict({**state, "output": [1.0]})
    units = len(trained.hidden_bias)
    with pytest.raises(ValueError, match=f"a list of {units}, one per hidden unit"):
        Linker.from_dict({**trained.to_dict(), "weights": {"similarity": [1.0] * (units + 1)}})


def test_the_model_weighs_a_feature_by_another():
    """Candidates that are topics where exactly one of two features is set (XOR): no weighting of
    each feature alone tells them apart, a hidden layer does."""
    def question(a: float, b: float) -> tuple[set[str], list[LinkCandidate]]:
        name = f"a{a}b{b}"
        return ({name} if a != b else set()), [LinkCandidate(name, name, None, {"similarity": a, "capitalised": b})]
    questions = [question(a, b) for a in (0.0, 1.0) for b in (0.0, 1.0)] * 20
    model = Linker._fitted(["similarity", "capitalised"], questions, seed=0)
    score = {(a, b): model._score({"similarity": a, "capitalised": b}) for a in (0.0, 1.0) for b in (0.0, 1.0)}
    assert min(score[0.0, 1.0], score[1.0, 0.0]) > 0.5 > max(score[0.0, 0.0], score[1.0, 1.0])


def candidate(name: str, how: str, span: tuple[int, int], score: float) -> LinkCandidate:
    mention = Mention(*span, text=name.lower(), entity=f"m.{name}", name=name, how=how, similarity=1.0)
    return LinkCandidate(mention.entity, name, mention, {}, score)


def test_a_common_word_is_linked_beside_a_name_only_above_its_own_threshold():
    """ "Who has Brad Pitt dated?": "dated", one word written lower case in a question that
    capitalises its names, needs the common words' threshold; a name scored the same needs the
    names'; in a question written all in lower case, case tells nothing and it counts as a name."""
    linker = Linker(weights={"similarity": 1.0}, threshold=0.3, common_threshold=0.6)
    pitt = candidate("Brad Pitt", "exact", (2, 4), 0.95)
    dated = candidate("Dated", "exact", (4, 5), 0.45)
    dated.features = {"span_words": 1, "capitalised": 0.0, "lower_case_question": 0.0}
    assert linker._choose([pitt, dated]) == [pitt]
    dated.score = 0.65
    assert linker._choose([pitt, dated]) == [pitt, dated]
    dated.score = 0.45
    name = candidate("Jennifer Aniston", "exact", (6, 8), 0.4)  # below "dated", above the names' threshold
    assert linker._choose([pitt, dated, name]) == [pitt, name]
    dated.features["lower_case_question"] = 1.0
    assert linker._choose([pitt, dated, name]) == [pitt, dated, name]


def test_a_common_word_is_a_plausible_topic_only_at_half_its_own_threshold():
    """What the topic choice is offered beside the linked: names down to half the names' threshold,
    common words ("dated") down to half theirs."""
    linker = Linker(weights={"similarity": 1.0}, threshold=0.3, common_threshold=0.6)
    pitt, name = candidate("Brad Pitt", "exact", (2, 4), 0.95), candidate("Jennifer Aniston", "exact", (6, 8), 0.2)
    dated = candidate("Dated", "exact", (4, 5), 0.2)
    dated.features = {"span_words": 1, "capitalised": 0.0, "lower_case_question": 0.0}
    linking = Linking(mentions=[], candidates=[pitt, dated, name], linked=[pitt])
    assert linker.plausible(linking) == [pitt, name]  # 0.2: above half the names' 0.3, below half the common words' 0.6
    dated.score = 0.35
    assert linker.plausible(linking) == [pitt, dated, name]


def test_a_name_written_out_wins_over_a_looser_match_it_overlaps():
    """ "the Afghan Afghani": the currency written out (exact, above the threshold) wins over
    Afghanistan, found by the vector of "the afghan", which scores higher; not below the threshold,
    and not over a longer span."""
    linker = Linker(weights={"similarity": 1.0}, threshold=0.3)
    country, currency = candidate("Afghanistan", "embedding", (4, 6), 0.62), candidate("Afghan afghani", "exact", (5, 7), 0.36)
    other = candidate("Religion", "exact", (1, 2), 0.9)
    assert linker._choose([other, country, currency]) == [other, currency]
    currency.score = 0.2
    assert linker._choose([other, country, currency]) == [other, country]
    currency.score = 0.36
    longer = candidate("Afghanistan", "embedding", (3, 6), 0.62)  # "use the afghan" is longer than "afghan afghani"
    assert linker._choose([other, longer, currency]) == [other, longer]


EDITIONS = NameIndex([(f"m.{name}", name) for name in (
    "AFC Championship Game", "2012 AFC Championship Game", "2013 AFC Championship Game", "Super Bowl",
    "World Series", "2010 World Series", "2010 Major League Baseball season")])


def scored(question: str, scores: dict[str, float]) -> list[LinkCandidate]:
    """The question's candidates in EDITIONS, scored by name (0 for the others), best first."""
    found = Linker().candidates(question, EDITIONS.mentions(question), EDITIONS)
    for c in found:
        c.score = scores.get(c.name, 0.0)
    return sorted(found, key=lambda c: -c.score)


def test_a_year_written_apart_names_the_edition_of_a_yearly_event():
    """ "the AFC Championship Game in 2013" is the 2013 AFC Championship Game, scored low as a partial
    match; without a year, with a year no edition has, the year of a date or a bound ("after 2013"),
    it is the event."""
    linker = Linker(weights={"similarity": 1.0}, threshold=0.3)
    scores = {"Super Bowl": 0.9, "AFC Championship Game": 0.8,
              "2013 AFC Championship Game": 0.03, "2012 AFC Championship Game": 0.03}

    def linked_names(question: str) -> list[str]:
        return [c.name for c in linker._choose(scored(question, scores))]

    assert linked_names("Which Super Bowl was won by the team that won the AFC Championship Game in 2013?") == [
        "Super Bowl", "2013 AFC Championship Game"]
    assert linked_names("Which Super Bowl was won by the team that won the AFC Championship Game?") == [
        "Super Bowl", "AFC Championship Game"]
    assert linked_names("Which Super Bowl was won by the team that won the AFC Championship Game in 1999?") == [
        "Super Bowl", "AFC Championship Game"]
    date = "Which Super Bowl was won by the team that won the AFC Championship Game on 20 January 2013?"
    assert linked_names(date) == ["Super Bowl", "AFC Championship Game"]
    for bound in ("after 2013", "prior to 2013"):
        question = f"Which Super Bowl was won by the team that won the AFC Championship Game {bound}?"
        assert linked_names(question) == ["Super Bowl", "AFC Championship Game"]


def test_a_year_inside_a_name_already_linked_is_not_an_edition():
    """ "the 2010 Major League Baseball season World Series": 2010 belongs to the season, written out
    and linked first, so World Series stays the event."""
    linker = Linker(weights={"similarity": 1.0}, threshold=0.3)
    question = "Who won the 2010 Major League Baseball season World Series?"
    chosen = linker._choose(scored(question, {"2010 Major League Baseball season": 0.9, "World Series": 0.6}))
    assert [c.name for c in chosen] == ["2010 Major League Baseball season", "World Series"]


def test_compiling_learns_that_a_name_after_another_qualifies_it():
    """ "a college in Greeley, Colorado" is about Greeley; "in Greeley or Colorado" about both. The
    state's words and name are the same in both; only where its name stands (right after a town's,
    past a comma) tells them apart."""
    towns, states = TOWNS[:12], ["Ostland", "Westmark", "Nordia", "Suden"]
    index = NameIndex([(f"m.{name}", name) for name in towns + states])
    rows = []
    for i, town in enumerate(towns[:-1]):  # the last town stays unseen
        state = states[i % len(states)]
        rows.append(example(f"Which college is in {town}, {state}?", [f"m.{town}"]))
        rows.append(example(f"Which college is in {state}?", [f"m.{state}"]))
        rows.append(example(f"Which college is in {town} or {state}?", [f"m.{town}", f"m.{state}"]))
    linker = Linker.fit(rows, index, seed=0)
    assert linked(linker, index, f"Which college is in {towns[-1]}, Nordia?") == {f"m.{towns[-1]}"}
    assert linked(linker, index, f"Which college is in {towns[-1]} or Nordia?") == {f"m.{towns[-1]}", "m.Nordia"}
    (state,) = [c for c in linker.link(f"Which college is in {towns[-1]}, Nordia?", index).candidates if c.name == "Nordia"]
    assert state.features["after_name"] == state.features["after_name_comma"] == 1.0


# -- what the graph says about candidates ----------------------------------------------------------

TOWNS = ["Alder", "Birchwood", "Cedar Falls", "Dunmore", "Elmhurst", "Fairhaven", "Glenrock", "Hollis",
         "Ivydale", "Juniper", "Kestrel", "Larkspur", "Milford", "Norwood", "Oakridge", "Pinecrest"]
EX = "http://example.org/"


def twins(kinds: tuple[str, str], relations) -> KnowledgeGraph:
    """Every name of TOWNS labels one node of each kind (`town3`, `band3`), told apart only by the
    triples `relations(i)` gives, each `(subject, relation, object)` local names under `EX`."""
    label = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
    triples = []
    for i, name in enumerate(TOWNS):
        triples += [ox.Triple(ox.NamedNode(f"{EX}{kind}{i}"), label, ox.Literal(name, language="en")) for kind in kinds]
        triples += [ox.Triple(*(ox.NamedNode(EX + part) for part in triple)) for triple in relations(i)]
    store = EmbeddedStore()
    store.add_triples(triples)
    return KnowledgeGraph(store, profile="generic")


@pytest.fixture(scope="module")
def homonyms() -> KnowledgeGraph:
    """Every name is a town (in a county) and a band (with albums): the same words, told apart only
    by their relations."""
    return twins(("town", "band"), lambda i: [(f"town{i}", "location.county", f"county{i}"),
                                               (f"band{i}", "music.artist.album", f"album{i}")])


def homonym_rows(names: list[str]) -> list[dspy.Example]:
    return [example(question, [f"{EX}{kind}{TOWNS.index(name)}"])
            for name in names
            for question, kind in ((f"what county is {name} in", "town"), (f"which albums did {name} record", "band"))]


def test_compiling_with_the_graph_tells_homonyms_apart_by_their_relations(homonyms):
    index = homonyms.name_index()
    train, unseen = homonym_rows(TOWNS[:-2]), homonym_rows(TOWNS[-2:])
    with_graph, without = Linker.fit(train, index, graph=homonyms), Linker.fit(train, index)
    assert with_graph.uses_graph and not without.uses_graph
    for row in unseen:
        found = with_graph.link(row.question, index, graph=homonyms).linked
        assert [c.entity for c in found] == row.topic_entities, row.question
    # by its words alone the town and the band look the same: one name, one link, for both questions
    blind = [{c.entity for c in without.link(row.question, index, graph=homonyms).linked} for row in unseen[:2]]
    assert blind[0] == blind[1] and len(blind[0]) == 1
    # asked without the graph, a linker compiled with it counts the graph's features as average
    scores = {c.score for c in with_graph.link(unseen[0].question, index).candidates}
    assert len(scores) == 1


def test_only_the_best_candidates_by_their_mentions_have_their_relations_asked(homonyms, monkeypatch):
    """A question naming many things (a number found in two thousand names, at Freebase size) asks the
    relations of its best `GRAPH_CANDIDATES` by what their mentions say; the rest count as average."""
    index = homonyms.name_index()
    linker = Linker.fit(homonym_rows(TOWNS[:-2]), index, graph=homonyms)
    question = f"what county are {', '.join(TOWNS)} in"  # every town and band: 32 candidates
    asked, relations = [], homonyms.relations
    monkeypatch.setattr(homonyms, "relations", lambda entities, **options: asked.append(list(entities)) or relations(entities, **options))
    monkeypatch.setattr(linking, "GRAPH_CANDIDATES", 4)
    found = linker.link(question, index, graph=homonyms)
    assert len(found.candidates) == 2 * len(TOWNS) and [len(entities) for entities in asked] == [4]
    assert {c.entity for c in found.candidates if "graph_relations" in c.features} == set(asked[0])
    by_mentions = linker._scored(linker.candidates(question, index.mentions(question), index))
    assert set(asked[0]) == {c.entity for c in by_mentions[:4]}
    monkeypatch.setattr(linking, "GRAPH_CANDIDATES", 64)
    everyone = linker.link(question, index, graph=homonyms).candidates
    assert all("graph_relations" in c.features for c in everyone) and len(asked[-1]) == 2 * len(TOWNS)


@pytest.fixture(scope="module")
def values() -> KnowledgeGraph:
    """Every name is a town (in a county) and a value some record holds (a code, as RoG graphs keep
    ISO codes): one relation each, with the same words; only the town has a relation of its own."""
    return twins(("town", "value"), lambda i: [(f"town{i}", "location.county", f"county{i}"),
                                                (f"record{i}", "location.county.code", f"value{i}")])


def test_compiling_with_the_graph_tells_a_value_from_an_entity_by_the_relations_it_has_of_its_own(values):
    index = values.name_index()
    rows = [example(f"what county is {name} in", [f"{EX}town{i}"]) for i, name in enumerate(TOWNS)]
    linker = Linker.fit(rows[:-2], index, graph=values)
    for row in rows[-2:]:
        found = linker.link(row.question, index, graph=values)
        (town, value) = sorted(found.candidates, key=lambda c: c.entity)
        assert town.features["graph_out_relations"] > value.features["graph_out_relations"] == 0.0
        assert town.features["graph_relations"] == value.features["graph_relations"]
        assert town.score > value.score and [c.entity for c in found.linked] == [town.entity]


class CountingIndex:
    """A name index that counts the questions it is asked about."""

    def __init__(self, index: NameIndex) -> None:
        self.index, self.asked = index, []

    def mentions(self, question: str):
        self.asked.append(question)
        return self.index.mentions(question)

    def resolve(self, entity_or_name: str):
        return self.index.resolve(entity_or_name)


def test_compiling_finds_each_questions_names_once_and_keeps_counts_over_all_of_them(index):
    rows = [example(f"Which city did {name} move to?", [IDS[name]]) for name in PEOPLE[:-1]]
    counting = CountingIndex(index)
    linker = Linker.fit(rows, counting, seed=0)
    assert sorted(counting.asked) == sorted(row.question for row in rows)  # spans' vectors are the slow part
    # the kept counts hold every question
    assert linker.stats.questions == len(rows)
    assert all(linker.stats.entity_gold.get(name, 0) == 0 for name in PEOPLE)  # each seen once: not kept
    assert linker.stats.question_share["which city did"] == len(rows)


def test_the_threshold_is_tuned_on_every_question_scored_by_a_model_that_never_saw_it(index, monkeypatch):
    rows = [example(f"In what location was the composer {name} born?", [IDS[name]]) for name in PEOPLE[:-1]]
    tuned_on = []

    def exact_rate(self, tuned, threshold, common_threshold):
        tuned_on.append(tuned)
        return 1.0 if (threshold, common_threshold) == (0.2, 0.7) else 0.5

    monkeypatch.setattr(Linker, "_exact_rate", exact_rate)
    linker = Linker.fit(rows, index, seed=0)
    assert (linker.threshold, linker.common_threshold) == (0.2, 0.7)  # the best rate there, for names and for common words
    questions = tuned_on[0]
    assert len(questions) == len(rows) and all(tuned == questions for tuned in tuned_on)
    golds = sorted(next(iter(gold)) for gold, _ in questions)
    assert golds == sorted(IDS[name] for name in PEOPLE[:-1])  # each question once
    assert all(0 < c.score < 1 for _, candidates in questions for c in candidates)  # each scored by a fold's model


def test_fitting_needs_enough_questions_with_topics(index):
    with pytest.raises(ValueError, match="at least 10 training questions"):
        Linker.fit([example("Who is Zed Novak?", ["m.p20"])] * 3, index)


# -- in the program ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kg(demo_store) -> KnowledgeGraph:
    return KnowledgeGraph(demo_store, profile="freebase")


@pytest.fixture(scope="module")
def train():
    return list(load_jsonl(split_path("train")))


def test_the_trace_keeps_mentions_candidates_and_linked_entities(kg):
    with dspy.context(lm=oracle(["film.film.directed_by"])):
        pred = KGQA(kg)(question="who directed parasite")
    linking = pred.trace.linking
    assert "parasite" in linking["mentions"]
    assert [c["name"] for c in linking["linked"]] == ["Parasite"]
    assert linking["linked"][0]["entity"] == pred.trace.topic_entities[0]
    assert pred.answers == ["Bong Joon-ho"]
    parasite = kg.link(["Parasite"])["Parasite"]
    with dspy.context(lm=oracle(["film.film.directed_by"])):
        given = KGQA(kg)(question="who directed parasite", topic_entities=parasite)
    assert given.trace.linking == {} and given.answers == ["Bong Joon-ho"]  # given topics are never re-linked


def test_compiling_fits_the_linker_and_saving_keeps_it(kg, train, tmp_path):
    with dspy.context(lm=gold_oracle(train)):
        compiled = compile_program(KGQA(kg), "labeled", trainset=train, budget=Budget(demos=2))
    assert compiled.linker.trained
    assert compiled.linker.uses_vectors  # compiled with the names' sentence vectors: linking asks for them
    save_program(compiled, tmp_path / "p", settings={"kg": "demo"})
    loaded = load_program(tmp_path / "p", kg)
    assert loaded.linker.to_dict() == compiled.linker.to_dict()
    assert isinstance(loaded.names(kg), LabelVectors)
    assert isinstance(KGQA(kg).names(kg), NameIndex)  # an uncompiled linker finds names by their letters alone
    save_program(KGQA(kg), tmp_path / "p", settings={"kg": "demo"})  # uncompiled: no stale linker left
    assert not (tmp_path / "p" / LINKING_FILE).exists()


def test_a_tampered_linking_file_is_a_clear_error(kg, train, tmp_path):
    program = KGQA(kg)
    program.linker = Linker.fit(train, kg.name_index())
    save_program(program, tmp_path / "p", settings={"kg": "demo"})
    path = tmp_path / "p" / LINKING_FILE
    state = json.loads(path.read_text())
    state["weights"]["__import__"] = 1.0
    path.write_text(json.dumps(state))
    with pytest.raises(ProgramFileError, match="linking.json: linking weights must map known features"):
        load_program(tmp_path / "p", kg)
    path.write_text("[1, 2")
    with pytest.raises(ProgramFileError, match="linking.json"):
        load_program(tmp_path / "p", kg)
