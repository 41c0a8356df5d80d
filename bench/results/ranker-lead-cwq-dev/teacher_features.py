"""Analysis runner (not part of the package), run from the repository root: the same features for the
candidates of N training questions walked by the gold-path teacher, as a compile walks them.
    .venv/bin/python bench/results/ranker-lead-cwq-dev/teacher_features.py PROGRAM N OUT.json [START]
"""
import sys, json
sys.path.insert(0, '.')  # the repository root
from bench.replay import (CWQ_MINI, ConstrainedJSONAdapter, Path, cwq_bench, dspy, gold_among, load_program, read_records,
                          RecordedDecisions)
import kgqa.programs.kgqa as K
from kgqa.programs import render
from kgqa.optimizers.labels import labeled_teacher
from collections import Counter
progpath, N, outp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
bench = cwq_bench(100, 1500, 0, CWQ_MINI, split='dev')
program = load_program(Path(progpath), bench.kg)
train = bench.train[int(sys.argv[4]) if len(sys.argv)>4 else 0:][:N]
teacher = labeled_teacher(train, kg=bench.kg)
out=[]
with dspy.context(lm=teacher, adapter=ConstrainedJSONAdapter()):
    for ex in train:
        state = program._new_state(ex.question)
        try:
            cands = program._retrieve(state, list(ex.topic_entities) or None)
        except Exception as e:
            continue
        if not cands: continue
        chain_n = Counter(K._chain(c.trail) for c in cands)
        kind=(state.trace.raw_plan or {}).get('answer_kind') or ''
        sub=cands[:60]
        cw=[K._chain_words(K._chain(c.trail)) for c in sub]
        last=[render.relation_phrase(K._chain(c.trail)[-1]) if len(K._chain(c.trail))>1 else '' for c in sub]
        s_qc=program.embedder.similarities(ex.question,cw); s_kc=program.embedder.similarities(kind,cw) if kind else [0]*len(sub); s_kl=program.embedder.similarities(kind,last) if kind else [0]*len(sub)
        s_qp=program.embedder.similarities(ex.question,[f'{w} : {c.label}' for w,c in zip(cw,sub)])
        s_kn=program.embedder.similarities(kind,[c.label for c in sub]) if kind else [0]*len(sub)
        rows=[]
        for i,c in enumerate(sub):
            t=c.trail
            rows.append(dict(label=c.label,i=i,gold=bool(gold_among(ex,[c.label])),topics=c.topics,meets=c.meets,steps=t.steps,score=round(t.score,3),
              prior=round(state.votes.chain(K._relations(t)),3),chain_n=chain_n[K._chain(t)],literal=bool(t.end.literal),named=K._on_named_chain(t,state),
              qc=s_qc[i],kc=s_kc[i],kl=s_kl[i],qp=s_qp[i],kn=s_kn[i],shown=False,path=''))
        out.append(dict(id=ex.id,q=ex.question,ntopics=len({x.label for x in state.topics}),depth=state.depth,cands=rows))
json.dump(out,open(outp,'w'))
print(len(out), sum(any(c['gold'] for c in d['cands']) for d in out), sum(d['cands'][0]['gold'] for d in out))
