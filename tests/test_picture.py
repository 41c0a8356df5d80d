"""The picture of a walk: nodes, edges and answers read back from the HTML page itself."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import dspy
import pytest

from kgqa.kg import KnowledgeGraph
from kgqa.picture import walk_page
from kgqa.programs import KGQA, WalkConfig
from kgqa.programs.trace import Trace
from tests.programs.oracle import oracle


class Page(HTMLParser):
    """The drawn entities (`rect.node`), edges (`line.edge`), listed answers and any external reference."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.nodes: dict[tuple[int, str], set[str]] = {}
        self.edges: list[tuple[str, str, str, set[str]]] = []
        self.answers: list[str] = []
        self.external: list[str] = []
        self.tags: set[str] = set()
        self.linking: dict[str, set[str]] = {}  # entity -> classes, in the linking list
        self._in_answers = self._in_li = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        classes = set((a.get("class") or "").split())
        self.external += [v for k, v in attrs if k in {"src", "href"} and v and "//" in v]
        if tag == "rect" and "node" in classes:
            self.nodes[(int(a["data-depth"]), a["data-label"])] = classes
        if tag == "line" and "edge" in classes:
            self.edges.append((a["data-from"], a["data-relation"], a["data-to"], classes))
        if tag == "li" and classes & {"linked", "candidate"}:
            self.linking[a["data-entity"]] = classes
        if tag == "ol" and "answers" in classes:
            self._in_answers = True
        self._in_li = tag == "li" and self._in_answers

    def handle_endtag(self, tag):
        if tag == "ol":
            self._in_answers = False

    def handle_data(self, data):
        if self._in_li:
            self.answers.append(data)
            self._in_li = False


@pytest.fixture(scope="module")
def kg(demo_store) -> KnowledgeGraph:
    return KnowledgeGraph(demo_store, profile="freebase")


def draw(kg, lm, question, **config):
    with dspy.context(lm=lm):
        pred = KGQA(kg, config=WalkConfig(**config))(question=question)
    trace = Trace.from_dict(json.loads(json.dumps(pred.trace.to_dict())))  # drawn from a trace as records keep it
    return pred, Page(walk_page(question, pred.answers, pred.paths, trace))


def test_the_page_shows_topic_answer_and_the_chosen_relation(kg):
    pred, page = draw(kg, oracle(["film.film.directed_by"]), "Who directed Parasite?")
    assert pred.answers == ["Bong Joon-ho"]
    assert page.nodes[(0, "Parasite")] == {"node", "topic"}
    assert page.nodes[(1, "Bong Joon-ho")] == {"node", "answer"}
    # every relation of Parasite is retrieved and drawn; the one on the returned reasoning path is highlighted
    assert [(s, r, t) for s, r, t, c in page.edges if "path" in c] == [("Parasite", "film.film.directed_by", "Bong Joon-ho")]
    assert page.answers == ["Bong Joon-ho"]
    assert page.external == [] and "script" not in page.tags  # offline: nothing fetched, nothing run


def test_the_page_shows_how_the_topic_was_found_when_it_was_not_given(kg):
    pred, page = draw(kg, oracle(["film.film.directed_by"]), "who directed parasite")
    parasite = kg.link(["Parasite"])["Parasite"][0]
    assert pred.trace.topic_entities == [parasite]
    assert page.linking[parasite] == {"linked"}
    assert all(classes == {"candidate"} for entity, classes in page.linking.items() if entity != parasite)
    with dspy.context(lm=oracle(["film.film.directed_by"])):
        given = KGQA(kg)(question="who directed parasite", topic_entities=[parasite])
    assert Page(walk_page("q", given.answers, given.paths, given.trace)).linking == {}  # given: nothing to show


def test_pruned_entities_are_grey_and_only_kept_ones_are_answers(kg):
    def before_2000(inputs):
        return [c for c in inputs["candidate_entities"] if c in {"Titanic", "The Terminator"}]

    lm = oracle(["film.film.directed_by (reverse)"], conditions=["released before 2000"], keep=before_2000)
    pred, page = draw(kg, lm, "Which films did James Cameron direct before 2000?", entities_per_relation=2)  # 3 films: prune
    assert sorted(pred.answers) == ["The Terminator", "Titanic"]
    assert page.nodes[(1, "Avatar")] == {"node", "pruned"}
    assert {label for (depth, label), c in page.nodes.items() if "answer" in c} == {"Titanic", "The Terminator"}
    (prune,) = [i for key, i in lm.scripted.calls if key == "entities_to_keep"]
    gone_on = set(pred.trace.walk[0]["chosen"])  # the relations the walk went on by; the others are grey as well
    pruned_edges = {t for _, r, t, c in page.edges if "pruned" in c and r in gone_on}
    assert "Avatar" in pruned_edges and pruned_edges == set(prune["candidate_entities"]) - {"Titanic", "The Terminator"}


def test_a_compound_relation_through_a_cvt_node_is_one_highlighted_edge(kg):
    lm = oracle(["film.film.starring", "film.film.starring -> film.performance.actor"], hops=1)
    pred, page = draw(kg, lm, "Who starred in Titanic?")
    assert sorted(pred.answers) == ["Kate Winslet", "Leonardo DiCaprio"]
    actors = [(t, c) for s, r, t, c in page.edges if r == "film.film.starring -> film.performance.actor"]
    assert sorted(t for t, _ in actors) == ["Kate Winslet", "Leonardo DiCaprio"]
    assert all("path" in c for _, c in actors)
    assert not any(label.startswith("m.") for _, label in page.nodes)  # the nameless performances are not drawn


def test_a_failed_walk_still_draws_its_reason(kg):
    pred, page = draw(kg, oracle([]), "Who directed Nonexistent Film Xyz?")
    assert pred.trace.stop_reason == "no_topic_entity" and page.nodes == {} and page.answers == []
    text = walk_page("Who directed Nonexistent Film Xyz?", pred.answers, pred.paths, pred.trace)
    assert "no_topic_entity" in text and "no entity of the question was found" in text


def test_evaluation_draws_the_first_wrong_walks(kg, tmp_path):
    from kgqa.evaluate.runner import evaluate
    from kgqa.workflow import draw_wrong_walks

    questions = [dspy.Example(id=f"q{i}", question=q, topic_entities=[], answers=a).with_inputs("question")
                 for i, (q, a) in enumerate([("Who directed Parasite?", ["Bong Joon-ho"]),
                                             ("Who wrote Parasite?", ["Han Jin-won"]),
                                             ("Who directed Titanic?", ["James Cameron"]),
                                             ("Who wrote Titanic?", ["James Cameron"])])]
    records = tmp_path / "preds.jsonl"
    with dspy.context(lm=oracle(["film.film.directed_by"])):  # follows directed_by whatever is asked
        evaluate(KGQA(kg), questions, out=records, progress=False)
    pages = draw_wrong_walks(records, [q.id for q in questions], pages=1)
    assert [p.name for p in pages] == ["q1.html"]  # the first wrong one only
    page = Page(pages[0].read_text())
    assert page.answers == ["Bong Joon-ho"] and ("Parasite", "film.film.directed_by", "Bong Joon-ho") in [e[:3] for e in page.edges]
