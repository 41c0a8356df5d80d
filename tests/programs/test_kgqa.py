"""The program on the demo KG under a scripted model: behaviour, grounding and exact trace counts."""

from __future__ import annotations

import dspy
import pytest

from kgqa.kg import KnowledgeGraph
from kgqa.programs import KGQA, WalkConfig
from tests.programs.oracle import oracle


@pytest.fixture(scope="module")
def kg(demo_store) -> KnowledgeGraph:
    return KnowledgeGraph(demo_store, profile="freebase")


@pytest.fixture(scope="module")
def ids(kg):
    names = ["Pulp Fiction", "Titanic", "James Cameron", "Ang Lee", "Parasite", "Science Fiction"]
    return {name: kg.link([name])[name][0] for name in names}


def ask(kg, lm, question, topics=None, **config):
    program = KGQA(kg, config=WalkConfig(**config))
    with dspy.context(lm=lm):
        return program(question=question, topic_entities=topics)


def test_one_hop(kg, ids):
    lm = oracle(["film.film.directed_by"])
    pred = ask(kg, lm, "Who directed Pulp Fiction?", [ids["Pulp Fiction"]])
    assert pred.answers == ["Quentin Tarantino"]
    assert pred.paths == ["# Reasoning Path:\nPulp Fiction -> film.film.directed_by -> Quentin Tarantino\n# Answer:\nQuentin Tarantino"]
    trace = pred.trace
    assert trace.stop_reason == "plan_done" and trace.depth == 1 and trace.planned_hops == 1
    # plan, relation prune: one candidate entity and no conditions need no entity prune, the plan says stop
    assert [key for key, _ in lm.scripted.calls] == ["topic_kind", "relations_to_follow"]
    assert trace.llm_calls == 2
    assert trace.relation_path == [["film.film.directed_by", "out"]] and trace.hops_walked == 1
    assert trace.sparql_queries == 3  # topic names, topic relations, neighbours (+ their relations)
    assert trace.input_tokens > 0 and trace.output_tokens > 0
    assert trace.dropped_selections == 0 and trace.fallbacks == 0


def test_the_plan_decides_the_depth(kg, ids):
    lm = oracle(["film.film.directed_by", "people.person.place_of_birth"])
    pred = ask(kg, lm, "Where was the director of Parasite born?", [ids["Parasite"]])
    assert pred.answers == ["Daegu"] and pred.trace.depth == 2 and pred.trace.stop_reason == "plan_done"
    hops = [i["hop"] for key, i in lm.scripted.calls if key == "relations_to_follow"]
    assert hops == ["hop 1 of 2: hop 1", "hop 2 of 2: hop 2"]
    assert lm.scripted.count("reached_answer") == 0  # the plan decides; no judge unless asked for
    judged = ask(kg, oracle(["film.film.directed_by", "people.person.place_of_birth"]), "Where was the director of Parasite born?",
                 [ids["Parasite"]], judge=True)
    assert judged.answers == ["Daegu"] and judged.trace.llm_calls == 4  # plan, 2 relations, judged once at the end


def test_a_short_plan_is_extended_when_the_judge_finds_the_walk_a_hop_short(kg, ids):
    def reached(inputs):
        return "Daegu" in inputs["reached_entities"]

    lm = oracle(["film.film.directed_by", "people.person.place_of_birth"], hops=1, reached=reached)
    pred = ask(kg, lm, "Where was the director of Parasite born?", [ids["Parasite"]], judge=True)
    assert pred.answers == ["Daegu"]
    assert pred.trace.planned_hops == 1 and pred.trace.extended_hops == 1 and pred.trace.depth == 2
    assert pred.trace.llm_calls == 5  # plan, relation, judge (short), relation, judge


def test_a_plan_a_hop_too_long_answers_with_the_last_hop_reached(kg, ids):
    lm = oracle(["film.film.directed_by"], hops=2)  # hop 2 offers nothing the oracle wants
    pred = ask(kg, lm, "Who directed Parasite?", [ids["Parasite"]])
    assert pred.trace.stop_reason == "plan_shortened" and pred.answers == ["Bong Joon-ho"]


def test_two_hops_through_a_cvt_node_are_one_planned_hop(kg, ids):
    lm = oracle(["film.film.starring", "film.film.starring -> film.performance.actor"], hops=1)
    pred = ask(kg, lm, "Who starred in Titanic?", [ids["Titanic"]])
    assert sorted(pred.answers) == ["Kate Winslet", "Leonardo DiCaprio"]
    assert all(" -> film.film.starring -> m.0dmc" in p and "-> film.performance.actor ->" in p for p in pred.paths)
    # after following starring, the nameless performances were stepped through: one choice among the compound relations
    (compound,) = [i for key, i in lm.scripted.calls if key == "relations_to_follow" and "through" in i["hop"]]
    assert sorted(compound["candidate_relations"]) == [
        "film.film.starring -> film.performance.actor",
        "film.film.starring -> film.performance.character",
    ]
    assert pred.trace.hops_walked == 1 and len(pred.trace.relation_path) == 2
    assert pred.trace.llm_calls == 3 and pred.trace.sparql_queries == 4


def test_a_relation_walked_backwards(kg, ids):
    lm = oracle(["film.film.directed_by (reverse)"])
    pred = ask(kg, lm, "Which films did James Cameron direct?", [ids["James Cameron"]])
    assert sorted(pred.answers) == ["Avatar", "The Terminator", "Titanic"]
    assert "James Cameron -> film.film.directed_by (reverse) -> Avatar" in "\n".join(pred.paths)


def test_a_year_literal_answer(kg, ids):
    lm = oracle(["award.award_winner.awards_won", "award.award_winner.awards_won -> award.award_honor.year"], hops=1)
    pred = ask(kg, lm, "In what year did Ang Lee win an Academy Award?", [ids["Ang Lee"]])
    assert pred.answers[0] == "2013"
    assert lm.scripted.count("entities_to_keep") == 0  # no conditions: nothing to prune


def test_entities_are_pruned_only_against_the_answer_s_conditions(kg, ids):
    def before_2000(inputs):
        return [c for c in inputs["candidate_entities"] if c in {"Titanic", "The Terminator"}]

    lm = oracle(["film.film.directed_by (reverse)"], conditions=["released before 2000"], keep=before_2000)
    pred = ask(kg, lm, "Which films did James Cameron direct before 2000?", [ids["James Cameron"]])
    assert sorted(pred.answers) == ["The Terminator", "Titanic"]
    (prune,) = [i for key, i in lm.scripted.calls if key == "entities_to_keep"]
    assert prune["conditions"] == ["released before 2000"]


def test_depth_caps_the_plan(kg, ids):
    lm = oracle(["film.film.directed_by", "people.person.place_of_birth"])
    pred = ask(kg, lm, "Where was the director of Parasite born?", [ids["Parasite"]], depth=1)
    assert pred.trace.planned_hops == 1 and pred.trace.depth == 1
    assert pred.answers == ["Bong Joon-ho"]


def test_reflection_at_a_dead_end_resumes_from_entities_passed_a_hop_before(kg, ids):
    refused = []

    def relations(inputs):  # refuses the first time it stands on Bong Joon-ho: a dead end
        if "Bong Joon-ho" in inputs["entity"] and not refused:
            refused.append(inputs["entity"])
            return {"relations_to_follow": []}
        wanted = {"film.film.written_by", "people.person.place_of_birth"}
        return {"relations_to_follow": [r for r in inputs["candidate_relations"] if r in wanted]}

    def resume(inputs):
        return inputs["earlier_entities"][:1]

    lm = oracle([], hops=2, relations_to_follow=relations, backtrack=resume)
    # beam 1: Bong Joon-ho goes on, his co-writer Han Jin-won waits; Han offers no relation at all
    pred = ask(kg, lm, "Where was a writer of Parasite born?", [ids["Parasite"]], beam_width=1)
    resumed = [i["earlier_entities"] for key, i in lm.scripted.calls if key == "entities_to_resume"]
    assert resumed == [] and pred.trace.reflections == 2  # one candidate each time: no call needed
    assert pred.answers == ["Daegu"] and pred.trace.stop_reason == "plan_done"
    assert "Parasite -> film.film.written_by -> Bong Joon-ho -> people.person.place_of_birth -> Daegu" in pred.paths[0]


def test_a_dead_end_with_nothing_to_resume_from_stops_with_a_reason(kg, ids):
    lm = oracle(["no.such.relation"])
    pred = ask(kg, lm, "Who directed Parasite?", [ids["Parasite"]])
    assert pred.trace.stop_reason == "dead_end" and pred.answers == []


def garbage(inputs):
    return "I am not sure what you mean."


INVENTED = {
    "topic_kind": lambda i: {"topic_kind": "film", "answer_kind": "place", "hop_targets": ["the director", "the birthplace"], "answer_constraints": []},
    "relations_to_follow": lambda i: {"relations_to_follow": ["film.film.made_up_relation"]},
    "entities_to_keep": lambda i: {"entities_to_keep": ["Nobody Atall"]},
    "reached_answer": lambda i: {"reached_answer": True},
    "entities_to_resume": lambda i: {"entities_to_resume": ["Ghost"]},
}


@pytest.mark.parametrize("handlers,default", [({}, garbage), (INVENTED, None)], ids=["garbage", "invented"])
def test_a_model_that_answers_garbage_or_invents_follows_only_real_candidates(kg, ids, handlers, default):
    from kgqa.lm.scripted import scripted_lm

    lm = scripted_lm(handlers, default=default)
    pred = ask(kg, lm, "Where was the director of Parasite born?", [ids["Parasite"]], depth=2)
    trace = pred.trace
    assert trace.stop_reason == "plan_done" and trace.depth >= 1
    assert trace.dropped_selections > 0 and trace.fallbacks > 0
    assert pred.answers and not {"Invented Person", "Nobody Atall", "Ghost"} & set(pred.answers)
    for path in pred.paths:  # every hop of every reasoning path is a real edge of the KG
        entities_and_relations = path.split("\n")[1].split(" -> ")
        assert entities_and_relations[0] == "Parasite"
        for subject, relation, obj in zip(entities_and_relations[::2], entities_and_relations[1::2], entities_and_relations[2::2]):
            reverse = relation.endswith(" (reverse)")
            relation = relation.removesuffix(" (reverse)")
            head, tail = (obj, subject) if reverse else (subject, obj)
            assert labelled_edge(kg, head, relation, tail), (head, relation, tail)


def labelled_edge(kg, head: str, relation: str, tail: str) -> bool:
    heads = kg.link([head])[head] if not head.startswith("m.") else (head,)
    for h in heads:
        for node in kg.neighbours([h], relation, direction="out")[h]:
            if tail in (node.id, node.label):
                return True
    return False


def test_unknown_topic_entity_is_a_clear_stop(kg):
    lm = oracle([])
    pred = ask(kg, lm, "Who directed it?", ["m.0nothere"])
    assert pred.answers == [] and pred.paths == []
    assert pred.trace.stop_reason == "no_topic_entity"
    assert "m.0nothere" in pred.trace.error
    assert pred.trace.llm_calls == 0


def test_topics_are_linked_by_label_when_not_given(kg, ids):
    lm = oracle(["film.film.directed_by"])
    pred = ask(kg, lm, "Who directed Parasite?")
    assert pred.trace.topic_entities == [ids["Parasite"]]
    assert pred.answers == ["Bong Joon-ho"]
    bracketed = ask(kg, oracle(["film.film.directed_by"]), "who directed [Parasite]")
    assert bracketed.answers == ["Bong Joon-ho"]


def test_bad_questions_stop_with_a_reason(kg, ids):
    pred = ask(kg, oracle([]), "   ", [ids["Parasite"]])
    assert pred.trace.stop_reason == "bad_question" and pred.trace.llm_calls == 0
    pred = ask(kg, oracle([]), "why " * 2_000, [ids["Parasite"]])
    assert pred.trace.stop_reason == "bad_question" and "characters long" in pred.trace.error


def test_the_llm_call_cap_holds(kg, ids):
    lm = oracle(["film.film.directed_by", "people.person.place_of_birth"])
    pred = ask(kg, lm, "Where was the director of Parasite born?", [ids["Parasite"]], max_llm_calls=2)
    assert pred.trace.llm_calls == 2 == len(lm.scripted.calls)
    assert pred.answers  # the walk went on with similarity choices and still answered


def test_long_candidate_lists_are_cut_by_similarity_first(kg, ids):
    lm = oracle(["film.film.genre (reverse)"], conditions=["science fiction"])
    ask(kg, lm, "Which films are science fiction?", [ids["Science Fiction"]], max_candidates=2)
    (prune,) = [i for key, i in lm.scripted.calls if key == "entities_to_keep"]
    assert len(prune["candidate_entities"]) == 2  # five films, cut to two before the model saw them


def test_kg_errors_end_the_walk_with_a_record(ids):
    from kgqa.kg import SparqlEndpoint
    from kgqa.kg.virtuoso import free_port

    down = KnowledgeGraph(SparqlEndpoint(f"http://127.0.0.1:{free_port()}/sparql", retries=0), profile="freebase")
    pred = ask(down, oracle([]), "Who directed Parasite?", [ids["Parasite"]])
    assert pred.trace.stop_reason == "kg_error" and "failed after 1 attempts" in pred.trace.error
    assert pred.answers == []


def test_a_wide_frontier_shares_decisions(kg, ids):
    lm = oracle(["film.film.directed_by (reverse)", "film.film.genre"])
    pred = ask(kg, lm, "What genres are the films directed by James Cameron?", [ids["James Cameron"]])
    assert sorted(pred.answers) == ["Romance", "Science Fiction"]
    prunes = [i for key, i in lm.scripted.calls if key == "relations_to_follow"]
    # one decision per hop: Titanic offers a relation (an award) that Avatar and The Terminator do not; all are offered once
    assert [i["entity"] for i in prunes] == ["James Cameron", "Avatar, The Terminator, Titanic"]
    assert "award.award_honor.honored_for (reverse)" in prunes[1]["candidate_relations"]
    assert lm.scripted.count("entities_to_keep") == 0 and pred.trace.llm_calls == 3


def test_choices_go_to_a_constraining_lm_as_a_json_schema(kg, ids):
    from kgqa.lm.adapter import ConstrainedJSONAdapter

    lm = oracle(["film.film.directed_by"], constrained=True)
    program = KGQA(kg, config=WalkConfig(relations_per_entity=2))
    program.config = WalkConfig(relations_per_entity=2, judge=True)
    with dspy.context(lm=lm, adapter=ConstrainedJSONAdapter()):
        pred = program(question="Who directed Parasite?", topic_entities=[ids["Parasite"]])
    assert pred.answers == ["Bong Joon-ho"]
    by_key = dict(zip([key for key, _ in lm.scripted.calls], lm.scripted.formats))
    relation_schema = by_key["relations_to_follow"]["schema"]["properties"]["relations_to_follow"]
    (offered,) = [i["candidate_relations"] for key, i in lm.scripted.calls if key == "relations_to_follow"]
    assert relation_schema["items"]["enum"] == offered and relation_schema["maxItems"] == 2
    plan_schema = by_key["topic_kind"]["schema"]["properties"]["hop_targets"]
    assert plan_schema["maxItems"] == WalkConfig().depth and plan_schema["minItems"] == 1
    assert by_key["reached_answer"]["schema"]["properties"]["reached_answer"]["type"] == "boolean"


def test_an_lm_without_schemas_gets_the_same_prompt_and_its_near_misses_snap(kg, ids):
    from kgqa.lm.adapter import ConstrainedJSONAdapter

    lm = oracle([], relations_to_follow=lambda i: {"relations_to_follow": ["Film.Film.Directed_By "]})
    with dspy.context(lm=lm, adapter=ConstrainedJSONAdapter()):
        pred = KGQA(kg)(question="Who directed Parasite?", topic_entities=[ids["Parasite"]])
    assert lm.scripted.formats == [None] * len(lm.scripted.calls)  # no schema sent
    assert pred.answers == ["Bong Joon-ho"] and pred.trace.fallbacks == 0


@pytest.mark.parametrize("target,question,answer", [("genre", "What genre is Inception?", "Science Fiction"),
                                                    ("capital", "What is the capital of Austria?", "Vienna")])
def test_a_hop_whose_target_names_its_relation_needs_no_call(kg, target, question, answer):
    lm = oracle([], topic_kind=lambda i: {"topic_kind": "entity", "answer_kind": target, "hop_targets": [target], "answer_constraints": []})
    pred = ask(kg, lm, question)
    assert pred.answers == [answer]
    assert [key for key, _ in lm.scripted.calls] == ["topic_kind"]  # the plan, and nothing to decide after it


def test_a_target_close_to_two_relations_is_still_asked(kg):
    lm = oracle(["film.film.directed_by"], topic_kind=lambda i: {"topic_kind": "entity", "answer_kind": "director", "hop_targets": ["director"], "answer_constraints": []})
    pred = ask(kg, lm, "Who directed Parasite?")
    assert pred.answers == ["Bong Joon-ho"]
    (call,) = [i for key, i in lm.scripted.calls if key == "relations_to_follow"]
    assert set(call["candidate_relations"][:2]) == {"film.film.directed_by", "film.director.film (reverse)"}  # most similar first
    never = ask(kg, oracle(["film.film.genre"], topic_kind=lambda i: {"topic_kind": "entity", "answer_kind": "genre", "hop_targets": ["genre"], "answer_constraints": []}),
                "What genre is Inception?", clear_similarity=1.0)
    assert never.trace.llm_calls == 2  # clear_similarity 1.0: every choice goes to the model


@pytest.mark.parametrize("kind,targets,walked", [
    ("actor", ["actor", "movie"], ["actor"]),  # a hop after the answer: the plan ends at the answer
    ("movie", ["director", "movie"], ["director", "movie"]),  # the answer is the last hop: kept
    ("year", ["director", "movie"], ["director", "movie"]),  # no hop reaches the answer kind: kept
    ("Actors", ["actor", "movie", "actor", "genre"], ["actor", "movie", "actor"]),  # the last hop of that kind
])
def test_a_plan_ends_at_the_hop_that_reaches_the_answer_kind(kind, targets, walked):
    from kgqa.programs.kgqa import _end_at_answer

    assert _end_at_answer(targets, kind) == walked


@pytest.mark.parametrize("kind,targets,walked", [
    ("writer", ["writer", "movie", "director"], ["movie", "director"]),  # the topic counted as a hop
    ("movie", ["director", "movie", "genre"], ["director", "movie", "genre"]),  # the topic's kind later on: kept
    ("movie", ["movie"], ["movie"]),  # never an empty plan
])
def test_a_plan_starts_after_the_topic(kind, targets, walked):
    from kgqa.programs.kgqa import _start_after_topic

    assert _start_after_topic(targets, kind) == walked


def _metaqa_kg(tmp_path, *triples: tuple[str, str, str]) -> KnowledgeGraph:
    """A MetaQA-shaped graph from kb.txt lines (`subject|relation|object`), loaded as a user loads one."""
    from kgqa.data.kb import build_store

    kb = tmp_path / "kb.txt"
    kb.write_text("".join(f"{s}|{r}|{o}\n" for s, r, o in triples), encoding="utf-8")
    store, profile, _ = build_store([kb], format="metaqa")
    return KnowledgeGraph(store, profile=profile)


def test_an_entity_passed_earlier_can_be_the_answer(tmp_path):
    # who directed the films written by the writer of Burnt? The writer directed them himself.
    kg = _metaqa_kg(tmp_path, ("Burnt", "written_by", "Nikita"), ("Barber", "written_by", "Nikita"), ("Barber", "directed_by", "Nikita"),
                    ("Burnt", "directed_by", "Nikita"))
    lm = oracle(["written_by", "written_by (reverse)", "directed_by"])
    pred = ask(kg, lm, "who directed the films written by the writer of [Burnt]", None)
    assert pred.answers == ["Nikita"] and pred.trace.stop_reason == "plan_done" and pred.trace.hops_walked == 3
    assert pred.paths[0] == "# Reasoning Path:\nBurnt -> written_by -> Nikita -> written_by (reverse) -> Barber -> directed_by -> Nikita\n# Answer:\nNikita"
    # walking back the edge a trail came by never reaches the entity it left, nor the topic
    back = ask(kg, oracle(["written_by", "written_by (reverse)"]), "films written by the writer of [Burnt]", None)
    assert back.answers == ["Barber"]


def test_answers_rank_by_their_best_trail_before_their_number_of_trails(tmp_path):
    # the relations chosen first reach one film; the second choices reach another through five actors
    actors = ["Pacino", "De Niro", "Kilmer", "Voight", "Portman"]
    kg = _metaqa_kg(tmp_path, ("Heat", "directed_by", "Mann"), ("Thief", "directed_by", "Mann"),
                    *[("Heat", "starred_actors", a) for a in actors], *[("Ronin", "starred_actors", a) for a in actors])
    lm = oracle([], topic_kind=lambda i: {"topic_kind": "movie", "answer_kind": "movie", "hop_targets": ["person", "movie"],
                                          "answer_constraints": []},
                relations_to_follow=lambda i: {"relations_to_follow": [r for r in ("directed_by", "starred_actors", "directed_by (reverse)",
                                                                                     "starred_actors (reverse)") if r in i["candidate_relations"]]})
    pred = ask(kg, lm, "which films share a director with [Heat]")
    # Thief: one trail of the first choices (score 1 x 1); Ronin: five trails of the second (0.5 x 0.5 each)
    assert pred.answers[:2] == ["Thief", "Ronin"]


def test_a_large_demo_pool_shows_the_demos_nearest_the_question_s_shape(kg, ids):
    # by words, "Who directed Titanic?" is nearest the Titanic questions; by shape, the Parasite one
    def demo(question, topic, hops):
        return dspy.Example(question=question, topic=topic, topic_kind="movie", answer_kind=hops[-1], hop_targets=hops,
                            answer_constraints=[]).with_inputs("question", "topic")

    program = KGQA(kg, config=WalkConfig(demos_per_call=1))
    program.plan.demos = [demo("When was Titanic released?", "Titanic", ["year (release date)"]),
                          demo("Which actors starred in Titanic?", "Titanic", ["performance (starring)", "actor (actor)"]),
                          demo("Who directed Parasite?", "Parasite", ["director (directed by)"])]
    lm = oracle(["film.film.directed_by"])
    with dspy.context(lm=lm):
        pred = program(question="Who directed Titanic?", topic_entities=[ids["Titanic"]])
    assert pred.answers == ["James Cameron"]
    plan_demos = lm.scripted.shown[0]
    assert "Who directed Parasite?" in plan_demos and "Titanic" not in plan_demos


@pytest.mark.parametrize("question,topics,shape", [
    ("what films did [Ridley Scott] direct", ["Ridley Scott"], "what films did [X] direct"),
    ("Who directed titanic?", ["Titanic"], "Who directed X?"),
    ("where was the director of [Heat] born", [], "where was the director of [X] born"),
    ("What did Jo and Jo Jo record?", ["Jo", "Jo Jo"], "What did X and X record?"),  # the longer name first
    ("Where did Al Albertson live?", ["Al"], "Where did X Albertson live?"),  # whole words only
])
def test_a_question_s_shape_blanks_its_topic_entities(question, topics, shape):
    from kgqa.programs.kgqa import question_shape

    assert question_shape(question, topics) == shape


def test_answers_every_topic_entity_reaches_rank_first(tmp_path):
    # "which city is home to both Lala and Seymour": each reaches cities; only Brooklyn is reached from both
    kg = _metaqa_kg(tmp_path, ("Lala", "born_in", "New York"), ("Lala", "lived_in", "Brooklyn"),
                    ("Seymour", "born_in", "Chicago"), ("Seymour", "lived_in", "Brooklyn"))
    lm = oracle([], topic_kind=lambda i: {"topic_kind": "person", "answer_kind": "city", "hop_targets": ["city (home)"],
                                          "answer_constraints": []},
                relations_to_follow=lambda i: {"relations_to_follow": [r for r in ("born_in", "lived_in") if r in i["candidate_relations"]]})
    pred = ask(kg, lm, "which city is home to [Lala] and [Seymour]")
    # born_in was chosen first, so New York and Chicago have the better trails; Brooklyn meets both topics
    assert pred.answers == ["Brooklyn", "Chicago", "New York"]
    assert pred.paths[0].endswith("-> lived_in -> Brooklyn\n# Answer:\nBrooklyn")
