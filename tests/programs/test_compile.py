"""The program as teleprompters and users see it: predictors, state JSON, compiling."""

from __future__ import annotations

import copy
import json

import dspy
import pytest

from kgqa.data.demo import split_path
from kgqa.data.jsonl import load_jsonl
from kgqa.kg import KnowledgeGraph
from kgqa.lm.adapter import CompactChatAdapter, ConstrainedJSONAdapter
from kgqa.optimizers.gold_paths import compile_program
from kgqa.optimizers.teleprompters import Budget
from kgqa.programs import KGQA
from tests.programs.oracle import gold_oracle

STEPS = ("plan", "prune_relations", "prune_entities", "filter_facts", "update_memory", "check_sufficiency", "extract_answers",
         "reflect", "choose_topics")
PREDICTORS = {f"{step}.predict" for step in STEPS}  # each step module holds its one predictor


@pytest.fixture(scope="module")
def kg(demo_store):
    return KnowledgeGraph(demo_store, profile="freebase")


@pytest.fixture(scope="module")
def train():
    return list(load_jsonl(split_path("train")))


def hit(example, prediction, trace=None) -> bool:
    return bool(set(example.answers) & set(prediction.answers[:1]))


def test_every_step_is_a_named_predictor(kg):
    assert {name for name, _ in KGQA(kg).named_predictors()} == PREDICTORS


def test_copies_share_the_kg_client_and_the_embedder(kg):
    program = KGQA(kg)
    for clone in (program.deepcopy(), copy.deepcopy(program), program.reset_copy()):
        assert clone.kg is kg and clone.embedder is program.embedder
        assert clone.plan is not program.plan


def test_labeled_and_bootstrapped_demos_land_in_the_saved_json(kg, train, tmp_path):
    lm = gold_oracle(train)
    with dspy.context(lm=lm):
        labeled = dspy.LabeledFewShot(k=3).compile(KGQA(kg), trainset=train)
        bootstrap = dspy.BootstrapFewShot(metric=hit, max_bootstrapped_demos=2, max_labeled_demos=0, max_rounds=1)
        compiled = bootstrap.compile(KGQA(kg), trainset=train[:6])
    labeled.save(tmp_path / "labeled.json")
    compiled.save(tmp_path / "bootstrap.json")
    labeled_state = json.loads((tmp_path / "labeled.json").read_text())
    assert all(len(labeled_state[name]["demos"]) == 3 for name in PREDICTORS)
    state = json.loads((tmp_path / "bootstrap.json").read_text())
    demos = {step: state[f"{step}.predict"]["demos"] for step in STEPS}
    assert demos["plan"] and demos["prune_relations"]
    assert all(d.get("augmented") for d in demos["prune_relations"])
    assert all("relations_to_follow" in d and "candidate_relations" in d for d in demos["prune_relations"])


def test_save_and_load_round_trip_gives_identical_behaviour(kg, train, tmp_path):
    lm = gold_oracle(train)
    with dspy.context(lm=lm):
        compiled = dspy.BootstrapFewShot(metric=hit, max_bootstrapped_demos=2, max_labeled_demos=0).compile(
            KGQA(kg), trainset=train[:4]
        )
    path = tmp_path / "program.json"
    compiled.save(path)
    assert not path.read_bytes().startswith(b"\x80")  # JSON, not a pickle
    fresh = KGQA(kg)
    fresh.load(path)
    for name, predictor in compiled.named_predictors():
        assert [dict(d) for d in predictor.demos] == [dict(d) for d in dict(fresh.named_predictors())[name].demos]
    question = train[10]
    runs = []
    for program in (compiled, fresh, KGQA(kg)):
        lm = gold_oracle(train)
        with dspy.context(lm=lm):
            prediction = program(question=question.question, topic_entities=question.topic_entities)
        trace = {k: v for k, v in prediction.trace.to_dict().items() if k != "kg_seconds"}  # wall clock
        runs.append((prediction.answers, prediction.paths, trace, lm.scripted.calls))
    assert runs[0] == runs[1]
    assert runs[0][2]["input_tokens"] > runs[2][2]["input_tokens"]  # the loaded demos are in the prompts


def test_compiling_with_gold_paths_bootstraps_right_walks_and_plans_of_every_length(kg, train):
    from kgqa.optimizers.labels import planned_hops

    student = gold_oracle([])  # an LM that knows nothing: every demo must come from the labels
    with dspy.context(lm=student, adapter=ConstrainedJSONAdapter()):
        compiled = compile_program(KGQA(kg), "bootstrap", trainset=train, budget=Budget(demos=3, plan_demos=2))
    plans = compiled.plan.predict.demos
    assert [len(d["hop_targets"]) for d in plans] == [1, 2, 3, 1, 2, 3]  # gold plans of every length, alternating
    assert all(d["answer_kind"] == d["hop_targets"][-1] for d in plans)
    by_question = {ex.question: ex for ex in train}
    assert all(d["hop_targets"] == planned_hops(by_question[d["question"]], kg) for d in plans)
    titanic = planned_hops(by_question["Who starred in Titanic?"], kg)
    assert titanic == ["actor"]  # into the nameless performance and out of it: one hop
    relations = compiled.prune_relations.predict.demos  # none where the gold hop's target names its relation (no call to record)
    assert len(relations) <= 3 and all(d["relations_to_follow"] and d["augmented"] for d in relations)
    assert len({d["question"] for d in relations}) == len(relations)  # one per bootstrapped walk
    for demo in relations:  # the chosen relation is on the question's gold path
        gold = {r for r, _ in by_question[demo["question"]].path}
        assert {part.removesuffix(" (reverse)") for r in demo["relations_to_follow"] for part in r.split(" -> ")} <= gold
    answers = compiled.extract_answers.predict.demos  # a pool of gold choices among the candidates the teacher's walk shows
    assert answers and all(d["extracted_answers"][0] in by_question[d["question"]].answers for d in answers)
    assert all(d["extracted_answers"][0] in [p.rsplit(" -> ", 1)[-1] for p in d["candidate_paths"]] for d in answers)


def test_step_demos_give_the_intermediate_steps_pools_of_the_teachers_decisions_and_they_are_saved(kg, train, tmp_path):
    from kgqa.programs.saving import load_program, save_program

    student = gold_oracle([])
    with dspy.context(lm=student, adapter=ConstrainedJSONAdapter()):
        plain = compile_program(KGQA(kg), "bootstrap", trainset=train, budget=Budget(demos=1, plan_demos=1))
        pooled = compile_program(KGQA(kg), "bootstrap", trainset=train, budget=Budget(demos=1, plan_demos=1, step_demos=100))
    assert len(plain.prune_relations.predict.demos) <= 1 and plain.update_memory.predict.demos == []  # off by default
    relations = pooled.prune_relations.predict.demos
    assert len({d["question"] for d in relations}) >= 3 and all(d["relations_to_follow"] and d["topic"] for d in relations)
    save_program(pooled, tmp_path, settings={"kg": "demo"})
    loaded = load_program(tmp_path, kg)
    assert [dict(d) for d in loaded.prune_relations.predict.demos] == [dict(d) for d in relations]


def test_sufficiency_is_compiled_with_both_verdicts_by_the_gold_depth_and_they_are_saved(kg, train, tmp_path):
    from kgqa.programs.saving import load_program, save_program

    with dspy.context(lm=gold_oracle([]), adapter=ConstrainedJSONAdapter()):
        compiled = compile_program(KGQA(kg), "bootstrap", trainset=train, budget=Budget(demos=1, plan_demos=1))
        unpooled = compile_program(KGQA(kg), "bootstrap", trainset=train, budget=Budget(demos=1, plan_demos=1, sufficiency_demos=0))
    verdicts = [d["evidence_sufficient"] for d in compiled.check_sufficiency.predict.demos]
    assert verdicts.count(True) == verdicts.count(False) >= 2  # pairs: a question's paths reaching, and cut back
    assert all(d["topic"] and d["best_paths"] for d in compiled.check_sufficiency.predict.demos)
    assert unpooled.check_sufficiency.predict.demos == []  # bootstrapping alone leaves sufficiency without demos here
    save_program(compiled, tmp_path, settings={"kg": "demo"})
    loaded = load_program(tmp_path, kg)
    assert [dict(d) for d in loaded.check_sufficiency.predict.demos] == [dict(d) for d in compiled.check_sufficiency.predict.demos]


def test_the_topic_choice_is_compiled_with_the_gold_topic_entities(kg, train):
    student = gold_oracle([])
    with dspy.context(lm=student, adapter=ConstrainedJSONAdapter()):
        compiled = compile_program(KGQA(kg), "bootstrap", trainset=train, budget=Budget(demos=1, plan_demos=1))
    demos, by_question = compiled.choose_topics.predict.demos, {ex.question: ex for ex in train}
    assert demos  # demo questions whose names have plausible rivals ("Austria" / "Australia")
    for demo in demos:  # each a choice among 2 or more candidates shown with their relations, the gold topics chosen
        gold = by_question[demo["question"]].topic_names
        assert len(demo["candidate_entities"]) >= 2 and set(demo["entities_meant"]) <= set(demo["candidate_entities"])
        assert 1 <= len(demo["entities_meant"]) <= len(gold)
    assert compiled.choose_topics.predict.demos == demos and len(demos) <= Budget().topic_demos


def test_a_program_saved_in_another_format_says_to_recompile_in_one_line(kg, tmp_path):
    from kgqa.programs.saving import PROGRAM_FORMAT, ProgramFileError, load_program, read_settings, save_program

    save_program(KGQA(kg), tmp_path, settings={"kg": "demo"})
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["format"] == PROGRAM_FORMAT and load_program(tmp_path, kg).plan.predict.demos == []
    for stamp, said in ((None, "an earlier"), (PROGRAM_FORMAT - 1, "an earlier"), (PROGRAM_FORMAT + 1, "a newer")):
        (tmp_path / "config.json").write_text(json.dumps({**config, "format": stamp}))  # unstamped: saved before the stamp
        for load in (lambda: load_program(tmp_path, kg), lambda: read_settings(tmp_path)):  # the stamp is read first
            with pytest.raises(ProgramFileError, match=rf"saved by {said} kgqa \(program format {stamp or 1}, this kgqa reads "
                                                        rf"{PROGRAM_FORMAT}\): .*recompile it with `kgqa compile \.\.\. --out {tmp_path}`") as error:
                load()
            assert "\n" not in str(error.value)
    (tmp_path / "config.json").write_text(json.dumps({**config, "format": "5"}))
    with pytest.raises(ProgramFileError, match="the program format must be a number, not '5'"):
        read_settings(tmp_path)


def test_question_answer_pairs_compile_the_whole_program_from_paths_found_in_the_graph(kg, train):
    from kgqa.programs.scorer import ScorerSettings

    pairs = [ex.copy(path=None) for ex in train]  # questions, answers and topic entities: no path
    student = gold_oracle([])  # an LM that knows nothing: every demo must come from the labels
    budget = Budget(demos=3, plan_demos=2, scorer=ScorerSettings(layers=1, epochs=1))
    with dspy.context(lm=student, adapter=ConstrainedJSONAdapter()):
        compiled = compile_program(KGQA(kg), "bootstrap", trainset=pairs, budget=budget)
    assert compiled.path_labels == {"given": 0, "found": len(train), "none": 0}
    assert {1, 2} <= {len(d["hop_targets"]) for d in compiled.plan.predict.demos}  # gold plans of more than one length
    assert compiled.extract_answers.predict.demos and compiled.check_sufficiency.predict.demos
    assert compiled.path_scorer.trained and compiled.chain_prior.trained
    prior = compiled.chain_prior
    shapes = keyed(prior, train)
    assert sorted(prior.questions) == sorted(shapes)  # every question, by the key compiling chose
    gold = {shape: {tuple(r for r, _ in ex.path) for ex, s in zip(train, shapes) if s == shape} for shape in shapes}
    same = [q for q, chains in zip(prior.questions, prior.chains) if gold[q] & set(chains)]
    assert len(same) >= 0.8 * len(train)  # the chains found are mostly the demo's own gold paths (others: shorter ways)


def test_gold_paths_is_a_dspy_teleprompter_that_compiles_from_the_labels_alone_with_no_lm_call(kg, train):
    from kgqa.optimizers.gold_paths import GoldPaths
    from kgqa.programs.scorer import ScorerSettings

    pairs = [ex.copy(path=None) for ex in train]
    student_lm = gold_oracle([])
    budget = Budget(plan_demos=2, scorer=ScorerSettings(layers=1, epochs=1))
    with dspy.context(lm=student_lm, adapter=ConstrainedJSONAdapter()):
        compiled = GoldPaths(inner="gold-paths", budget=budget).compile(KGQA(kg), trainset=pairs)
    assert student_lm.scripted.calls == []  # the teacher that walks the gold paths is scripted from the labels
    assert compiled.path_labels == {"given": 0, "found": len(train), "none": 0}
    assert compiled.plan.predict.demos and compiled.extract_answers.predict.demos and compiled.check_sufficiency.predict.demos
    assert compiled.path_scorer.trained and compiled.chain_prior.trained
    assert compiled.prune_relations.predict.demos == []  # nothing bootstrapped: no LM ran a trace


def test_compiling_where_no_gold_path_is_found_uses_the_lm_as_teacher(kg, train):
    unlabeled = [ex.copy(path=None, answers=["Nobody In This Graph"]) for ex in train[:6]]
    lm = gold_oracle(train)
    with dspy.context(lm=lm, adapter=ConstrainedJSONAdapter()):
        compiled = compile_program(KGQA(kg), "bootstrap", trainset=unlabeled, budget=Budget(demos=2))
    assert compiled.path_labels == {"given": 0, "found": 0, "none": 6}
    assert len(compiled.plan.predict.demos) <= 2 and lm.scripted.count("topic_kind") >= 1


def test_mipro_on_an_explicit_budget_proposes_instructions_and_keeps_the_best(kg, train):
    lm = gold_oracle(train)
    proposals = iter(f"Proposed instruction {n}: follow the gold relations." for n in range(1000))
    lm.scripted.default = lambda inputs: {  # MIPROv2's proposer: dataset observations, then instructions
        "observations": "Questions about films, their people, places and awards.",
        "summary": "Film questions answered from a knowledge graph.",
        "proposed_instruction": next(proposals),
    }
    budget = Budget(demos=1, candidates=2, trials=3, seed=0)
    with dspy.context(lm=lm, adapter=CompactChatAdapter()):
        compiled = compile_program(KGQA(kg), "mipro", trainset=train[:6], valset=train[6:10], metric=hit, budget=budget)
        prediction = compiled(question=train[12].question, topic_entities=train[12].topic_entities)
    assert lm.scripted.count("proposed_instruction") >= len(PREDICTORS)  # a new candidate for every step
    original = {name: p.signature.instructions for name, p in KGQA(kg).named_predictors()}
    chosen = {name: p.signature.instructions for name, p in compiled.named_predictors()}
    assert set(chosen) == PREDICTORS
    assert all(text == original[name] or text.startswith("Proposed instruction") for name, text in chosen.items())
    assert set(prediction.answers) & set(train[12].answers)


@pytest.mark.parametrize("directory", ["first-walk", "path-choice", "plan-walk"])
def test_a_program_of_an_earlier_walk_says_to_recompile(kg, directory):
    from pathlib import Path

    from kgqa.programs.saving import ProgramFileError, load_program

    earlier = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "earlier-programs" / directory
    with pytest.raises(ProgramFileError, match=r"saved by an earlier kgqa \(program format 1.*recompile it with `kgqa compile"):
        load_program(earlier, kg)


def test_a_program_compiled_without_the_path_scorer_loads_without_one_and_says_so(kg, train, tmp_path, caplog):
    import logging

    from kgqa.programs.saving import load_program, save_program

    with dspy.context(lm=gold_oracle(train)):
        compiled = compile_program(KGQA(kg), "labeled", trainset=train, budget=Budget(demos=1, scorer_questions=0))
    directory = tmp_path / "without"
    save_program(compiled, directory, settings={"kg": "demo"})
    with caplog.at_level(logging.INFO, logger="kgqa.programs.saving"):
        loaded = load_program(directory, kg)
    assert not loaded.path_scorer.trained and loaded.config.path_scorer
    assert "has no path scorer" in caplog.text
    with dspy.context(lm=gold_oracle(train)):
        assert loaded(question=train[0].question).answers  # it answers, in the hand-set order


def test_a_given_path_that_does_not_hold_in_the_graph_is_replaced_by_the_one_found_there(kg, train):
    from collections import defaultdict

    titanic = next(ex for ex in train if ex.question == "Who starred in Titanic?")
    wrong = titanic.copy(path=[["film.film.directed_by", "out"]])  # leads to the director, not to a star
    trainset = [wrong if ex is titanic else ex for ex in train]
    with dspy.context(lm=gold_oracle(train)):
        compiled = compile_program(KGQA(kg), "labeled", trainset=trainset, budget=Budget(demos=2))
    prior = compiled.chain_prior
    assert compiled.path_labels == {"given": len(train) - 1, "found": 1, "none": 0}
    kept = defaultdict(list)  # the prior's chains by question, keyed as compiling chose (as written or by shape)
    for shape, chains in zip(prior.questions, prior.chains):
        kept[shape].append(chains)
    titanic_shape, other_shape = keyed(prior, [titanic, other := next(ex for ex in train if ex.question != titanic.question)])
    assert tuple(r for r, _ in titanic.path) in [chains[0] for chains in kept[titanic_shape]]  # found, not the wrong one
    assert ("film.film.directed_by",) not in {c for chains in kept[titanic_shape] for c in chains}
    assert [tuple(r for r, _ in other.path)] in kept[other_shape]  # the paths that hold: as given


def keyed(prior, examples) -> list[str]:
    """The examples' questions as the compiled `prior` keys them (as written, or by shape)."""
    from kgqa.optimizers.paths import question_shapes

    return question_shapes(examples) if prior.key == "shape" else [ex.question for ex in examples]


def assert_saved_beside(compiled, without, kg, directory, *, part: str, file: str, field: str, error: str) -> None:
    """A compiled part (the program's attribute `part`) saved beside the program (`file`) loads as it
    was; saving a program `without` it leaves no stale file; the file tampered at `field` is a clear
    error on loading."""
    from kgqa.programs.saving import ProgramFileError, load_program, save_program

    save_program(compiled, directory, settings={"kg": "demo"})
    assert getattr(load_program(directory, kg), part) == getattr(compiled, part)
    save_program(without, directory, settings={"kg": "demo"})
    assert not (directory / file).exists() and not getattr(load_program(directory, kg), part).trained
    save_program(compiled, directory, settings={"kg": "demo"})
    path = directory / file
    path.write_text(json.dumps({**json.loads(path.read_text()), field: "rm -rf"}))
    with pytest.raises(ProgramFileError, match=error):
        load_program(directory, kg)


def test_compiling_fits_the_path_scorer_on_teacher_walks_and_saving_keeps_it_beside_the_program(kg, train, tmp_path):
    from kgqa.programs.saving import ProgramFileError, load_program, save_program
    from kgqa.programs.scorer import LEAST_MEASURED, SETTINGS_FILE, WEIGHTS_FILE, ScorerSettings

    fast = ScorerSettings(layers=1, epochs=1)
    with dspy.context(lm=gold_oracle([]), adapter=ConstrainedJSONAdapter()):
        compiled = compile_program(KGQA(kg), "bootstrap", trainset=train, budget=Budget(demos=1, plan_demos=1, scorer=fast))
        unscored = compile_program(KGQA(kg), "bootstrap", trainset=train, budget=Budget(demos=1, plan_demos=1, scorer_questions=0))
        plain = compile_program(KGQA(kg), "none", trainset=train, budget=Budget(scorer=fast))
    scorer = compiled.path_scorer
    assert scorer.trained and 1 <= scorer.report.questions <= len(train) and scorer.settings == fast
    # too few walks to hold out enough to measure how far to trust it: extraction keeps deciding
    assert scorer.calibration.held_out < LEAST_MEASURED and scorer.sure_at is None
    assert not unscored.path_scorer.trained and not plain.path_scorer.trained
    directory = tmp_path / "p"
    save_program(compiled, directory, settings={"kg": "demo"})
    loaded = load_program(directory, kg).path_scorer
    question, paths = train[0].question, ["a -> film directed by -> b", "a -> film release year -> 1999"]
    assert loaded.scores(question, paths) == pytest.approx(scorer.scores(question, paths), abs=0.05)
    save_program(unscored, directory, settings={"kg": "demo"})  # no stale scorer left beside a program without one
    assert not (directory / WEIGHTS_FILE).exists() and not load_program(directory, kg).path_scorer.trained
    save_program(compiled, directory, settings={"kg": "demo"})
    (directory / SETTINGS_FILE).write_text(json.dumps({"version": 1, "settings": "rm -rf"}))
    with pytest.raises(ProgramFileError, match="path_scorer.json: bad settings"):
        load_program(directory, kg)


def test_compiling_fits_the_chain_prior_to_the_gold_paths_and_saving_keeps_it(kg, train, tmp_path):
    from kgqa.evaluate.metrics import gold_relation_paths
    from kgqa.programs.saving import CHAINS_FILE

    with dspy.context(lm=gold_oracle(train)):
        compiled = compile_program(KGQA(kg), "labeled", trainset=train, budget=Budget(demos=2))
    prior = compiled.chain_prior
    assert prior.trained and len(prior.questions) == sum(bool(gold_relation_paths(ex)) for ex in train)
    titanic = prior.questions.index(keyed(prior, [next(ex for ex in train if ex.question == "Who starred in Titanic?")])[0])
    assert prior.chains[titanic] == [tuple(r for r, _ in next(ex for ex in train if ex.question == "Who starred in Titanic?").path)]
    assert_saved_beside(compiled, KGQA(kg), kg, tmp_path / "p", part="chain_prior", file=CHAINS_FILE, field="chains",
                        error="chains.json: chains must hold")
