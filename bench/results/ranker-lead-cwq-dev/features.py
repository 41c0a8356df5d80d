"""Analysis runner (not part of the package), run from the repository root: each candidate answer a walk
ranks (the first 60), with its features and whether it is a gold answer, written as JSON.

    # the recorded walks of a bench.accuracy run, replayed without the LLM
    .venv/bin/python bench/results/ranker-lead-cwq-dev/features.py replay RECORDS PROGRAM SPLIT SEED OUT.json
    # N training questions from START, walked by the gold-path teacher as a compile walks them
    .venv/bin/python bench/results/ranker-lead-cwq-dev/features.py teacher PROGRAM N START OUT.json
"""
import json
import sys
from collections import Counter

sys.path.insert(0, ".")  # the repository root
import kgqa.programs.kgqa as K  # noqa: E402
from bench.replay import (  # noqa: E402
    CWQ_MINI,
    ConstrainedJSONAdapter,
    Path,
    RecordedDecisions,
    cwq_bench,
    dspy,
    gold_among,
    load_program,
    read_records,
    replayable,
)
from kgqa.optimizers.labels import labeled_teacher  # noqa: E402
from kgqa.programs import render  # noqa: E402

RANKED = 60  # candidates described per question


def candidate_rows(program, state, example, candidates, shown=()):
    """The first RANKED candidates: rank, structure, chain prior, and similarities of the chain, the
    last relation and the name to the question and to the plan's answer kind."""
    ranked = candidates[:RANKED]
    chains = [K._chain(c.trail) for c in ranked]
    per_chain = Counter(K._chain(c.trail) for c in candidates)
    kind = (state.trace.raw_plan or {}).get("answer_kind") or ""
    words = [K._chain_words(chain) for chain in chains]
    last = [render.relation_phrase(chain[-1]) if len(chain) > 1 else "" for chain in chains]
    similar = program.embedder.similarities
    qc = similar(example.question, words)
    kc, kl = (similar(kind, texts) if kind else [0] * len(ranked) for texts in (words, last))
    qp = similar(example.question, [f"{w} : {c.label}" for w, c in zip(words, ranked)])
    kn = similar(kind, [c.label for c in ranked]) if kind else [0] * len(ranked)
    return [dict(label=c.label, i=i, shown=c.label in shown, gold=bool(gold_among(example, [c.label])), topics=c.topics,
                 meets=c.meets, steps=c.trail.steps, score=round(c.trail.score, 3),
                 prior=round(state.votes.chain(K._relations(c.trail)), 3), chain_n=per_chain[chain],
                 literal=bool(c.trail.end.literal), path=c.path, named=K._on_named_chain(c.trail, state),
                 qc=qc[i], kc=kc[i], kl=kl[i], qp=qp[i], kn=kn[i])
            for i, (c, chain) in enumerate(zip(ranked, chains))]


def replayed(records_path, program_path, split, seed):
    bench = cwq_bench(100, 1500, seed, CWQ_MINI, split=split)
    program = load_program(Path(program_path), bench.kg)
    records = read_records(Path(records_path), repair=False)
    decisions, out = RecordedDecisions(), []
    with dspy.context(lm=decisions.lm(), adapter=ConstrainedJSONAdapter()):
        for example in [ex for sample in bench.test.values() for ex in sample]:
            record = records.get(example.id)
            if not replayable(record):
                continue
            decisions.use(record)
            state = program._new_state(example.question)
            candidates = program._retrieve(state, list(example.topic_entities) or None)
            shown = program._answer_choices(state, candidates)
            out.append(dict(id=example.id, q=example.question, ntopics=len({t.label for t in state.topics}),
                            plan=record["trace"]["raw_plan"], depth=state.depth, answers=record["answers"][:3],
                            right=record["scores"]["hits1"], f1=record["scores"].get("f1"),
                            settled=program._settled_answer(state, shown) if shown else None,
                            ctype=getattr(example, "compositionality_type", None), ncands=len(candidates),
                            cands=candidate_rows(program, state, example, candidates, {c.label for c in shown}),
                            conds=list(state.conditions)))
    return out


def taught(program_path, n, start):
    bench = cwq_bench(100, 1500, 0, CWQ_MINI, split="dev")
    program = load_program(Path(program_path), bench.kg)
    train = bench.train[start:][:n]
    out = []
    with dspy.context(lm=labeled_teacher(train, kg=bench.kg), adapter=ConstrainedJSONAdapter()):
        for example in train:
            state = program._new_state(example.question)
            candidates = program._retrieve(state, list(example.topic_entities) or None)
            if candidates:
                out.append(dict(id=example.id, q=example.question, ntopics=len({t.label for t in state.topics}),
                                depth=state.depth, cands=candidate_rows(program, state, example, candidates)))
    return out


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "replay":
        rows = replayed(args[0], args[1], args[2], int(args[3]))
    elif mode == "teacher":
        rows = taught(args[0], int(args[1]), int(args[2]))
    else:
        sys.exit(f"mode is replay or teacher, not {mode!r}")
    Path(args[-1]).write_text(json.dumps(rows, indent=1))
    print(len(rows), "questions;", sum(d["cands"][0]["gold"] for d in rows if d["cands"]), "with a gold answer first")
