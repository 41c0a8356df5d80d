"""Analysis runner (not part of the package), run from the repository root: the candidates of the recorded
CWQ-mini dev walks (replayed without the LLM), each with its features and whether it is a gold answer.
    .venv/bin/python bench/results/ranker-lead-cwq-dev/dev_features.py RECORDS PROGRAM dev 0 OUT.json
"""
import sys, json
sys.path.insert(0, '.')  # the repository root
from bench.replay import (CWQ_MINI, ConstrainedJSONAdapter, Path, cwq_bench, dspy, gold_among, load_program, read_records,
                          RecordedDecisions)
from kgqa.programs import render
import kgqa.programs.kgqa as K
recpath, progpath, split, seed, outp = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
bench = cwq_bench(100, 1500, seed, CWQ_MINI, split=split)
program = load_program(Path(progpath), bench.kg)
records = read_records(Path(recpath), repair=False)
examples = [ex for s in bench.test.values() for ex in s]
d = RecordedDecisions(); out=[]
with dspy.context(lm=d.lm(), adapter=ConstrainedJSONAdapter()):
    for ex in examples:
        r = records.get(ex.id)
        if not r or r.get('error') or not r['trace'].get('raw_plan'): continue
        d.use(r)
        state = program._new_state(ex.question)
        cands = program._retrieve(state, list(ex.topic_entities) or None)
        shown = program._answer_choices(state, cands)
        settled = program._settled_answer(state, shown) if shown else None
        sl=[c.label for c in shown]
        # per-chain stats
        from collections import Counter
        chain_n = Counter(K._chain(c.trail) for c in cands)
        rows=[]
        kind=(r['trace']['raw_plan'] or {}).get('answer_kind') or ''
        sub=cands[:60]
        cw=[K._chain_words(K._chain(c.trail)) for c in sub]
        last=[K.render.relation_phrase(K._chain(c.trail)[-1]) if len(K._chain(c.trail))>1 else '' for c in sub]
        s_qc=program.embedder.similarities(ex.question,cw); s_kc=program.embedder.similarities(kind,cw) if kind else [0]*len(sub); s_kl=program.embedder.similarities(kind,last) if kind else [0]*len(sub)
        s_qp=program.embedder.similarities(ex.question,[f'{w} : {c.label}' for w,c in zip(cw,sub)])
        s_kn=program.embedder.similarities(kind,[c.label for c in sub]) if kind else [0]*len(sub)
        for i,c in enumerate(cands[:60]):
            t=c.trail
            rows.append(dict(label=c.label, i=i, shown=c.label in sl, gold=bool(gold_among(ex,[c.label])), topics=c.topics, meets=c.meets,
                 steps=t.steps, score=round(t.score,3), prior=round(state.votes.chain(K._relations(t)),3),
                 chain_n=chain_n[K._chain(t)], literal=bool(t.end.literal), path=c.path, named=K._on_named_chain(t,state), qc=s_qc[i], kc=s_kc[i], kl=s_kl[i], qp=s_qp[i], kn=s_kn[i]))
        out.append(dict(id=ex.id, q=ex.question, ntopics=len({x.label for x in state.topics}), plan=r['trace']['raw_plan'], depth=state.depth,
             answers=r['answers'][:3], right=r['scores']['hits1'], f1=r['scores'].get('f1'), settled=settled, ctype=getattr(ex,'compositionality_type',None),
             ncands=len(cands), cands=rows, conds=list(state.conditions)))
json.dump(out, open(outp,'w'), indent=1)
print(len(out))
