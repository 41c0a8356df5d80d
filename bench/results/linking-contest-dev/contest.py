"""The topic choice confined to one linked mention's rivals, tried on dev (this directory's README).

For each question of a dev split's held-out third, the compiled linker links it; a linked candidate
is contested when other candidates were found by words overlapping its own and score at least
half their own threshold (`Linker.plausible`). `oracle` counts what a perfect choice among each
contest would give; `lm` asks the local LM (the program's `choose_topics`, compiled with one demo per training
contest whose group holds one gold topic) to choose one of each contest, and prints each call.

    .venv/bin/python bench/results/linking-contest-dev/contest.py oracle 0,1,2    # ~2 min a split, no LLM
    .venv/bin/python bench/results/linking-contest-dev/contest.py lm 0            # ~11 s a call at 90 prompt tok/s
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "linking-common-words"))

import dspy  # noqa: E402
from dev import Remembered  # noqa: E402  (each question's mentions found once)

from bench.linking import SHARED, as_named, as_rows, cwq_rows, cwq_split, knowledge_graph  # noqa: E402
from kgqa.kg.profiles import ROG  # noqa: E402
from kgqa.programs import KGQA, WalkConfig, linking  # noqa: E402
from kgqa.programs.embedder import Embedder  # noqa: E402
from kgqa.programs.linking import _overlap, is_topic  # noqa: E402

DEMOS = 100


def contests(linker, found) -> list[list]:
    """Each linked candidate with its rivals (at most three), where it has any: the plausible
    candidates (`Linker.plausible`: at least half their own threshold) whose spans overlap it."""
    plausible = linker.plausible(found, at_most=len(found.candidates))
    groups = []
    for linked in found.linked:
        rivals = [c for c in plausible if c not in found.linked and c.entity != linked.entity and _overlap(c, linked)]
        if rivals:
            groups.append([linked, *rivals[:3]])
    return groups


def main(mode: str, splits: list[int]) -> None:
    dev, test, triples = cwq_rows(SHARED / "cwq_mini")
    kg, _ = knowledge_graph("embedded", triples, ROG, Path("."))
    index = Remembered(kg.name_index(encode=Embedder().encode))
    if mode == "lm":
        from kgqa.lm.adapter import ConstrainedJSONAdapter
        from kgqa.specs import make_lm

        dspy.configure(lm=make_lm("local"), adapter=ConstrainedJSONAdapter())
    for split in splits:
        train, samples = cwq_split(dev, test, split="dev", size=0, seed=split)
        linker = linking.Linker.fit(train, index, graph=kg, seed=0)
        program = KGQA(kg, config=WalkConfig(topic_choice=True))
        program.linker, program.names = linker, (lambda _kg: index)
        if mode == "lm":
            program.choose_topics.demos = contest_demos(program, linker, index, kg, train)
            print("demos", len(program.choose_topics.demos), flush=True)
        held = samples["dev held out"]
        exact = chosen = oracle = contested = calls = 0
        start = time.time()
        for ex, (_, question, gold_names) in zip(held, as_rows(held)):
            gold, named = {*(ex.get("topic_entities") or ()), *(ex.get("topic_names") or ())}, set(gold_names)
            found = linker.link(question, index, graph=kg)
            groups = contests(linker, found)
            contested += bool(groups)
            exact += set(as_named(found.linked, named)) == named
            best, linked = list(found.linked), list(found.linked)
            for group in groups:
                right = next((c for c in group if is_topic(c, gold)), None)
                if right is not None:
                    best[best.index(group[0])] = right
                if mode == "lm":
                    calls += 1
                    state = program._new_state(question)
                    labels = program.topic_labels(state, group)
                    kept = program._checked_choice(state, program.choose_topics, chosen="entities_meant", candidates=labels,
                                                   limit=1, at_least=1, question=question, candidate_entities=labels)
                    if kept:
                        linked[linked.index(group[0])] = group[labels.index(kept[0])]
                    print("CALL", calls, round(time.time() - start), question, "|", [c.name for c in group], "->",
                          kept and kept[0].split(" (")[0], "| gold", sorted(named), flush=True)
            oracle += set(as_named(best, named)) == named
            chosen += set(as_named(linked, named)) == named
        n = len(held)
        print(f"split {split}: {n} questions, {contested} contested; exact {exact / n:.4f}, with the LM's choice "
              f"{chosen / n:.4f}, with a perfect choice {oracle / n:.4f}; {calls} calls, {time.time() - start:.0f} s", flush=True)


def contest_demos(program, linker, index, kg, train) -> list[dspy.Example]:
    demos = []
    for ex in train:
        gold = {*(ex.get("topic_entities") or ()), *(ex.get("topic_names") or ())}
        for group in contests(linker, linker.link(ex.question, index, graph=kg)):
            meant = [c for c in group if is_topic(c, gold)]
            if len(meant) == 1 and len(demos) < DEMOS:
                labels = program.topic_labels(program._new_state(ex.question), group)
                demos.append(dspy.Example(question=ex.question, candidate_entities=labels,
                                          entities_meant=[labels[group.index(meant[0])]]).with_inputs("question", "candidate_entities"))
    return demos


if __name__ == "__main__":
    main(sys.argv[1], [int(s) for s in sys.argv[2].split(",")])
