"""Analysis runner: a logistic ranker fitted on the teacher walks' candidates (TRAIN.json), scored on the
recorded dev walks' (DEV.json): how often a gold answer comes first, and among the first ten.
    .venv/bin/python bench/results/ranker-lead-cwq-dev/transfer.py TRAIN.json DEV.json
"""
import json,sys,math,numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
T=[d for d in json.load(open(sys.argv[1])) if d['cands']]; D=[d for d in json.load(open(sys.argv[2])) if d['cands']]
SETS={'struct':['log_rank','most_topics','meets','steps','prior','log_chain_n','literal'],
      'struct+sim':['log_rank','most_topics','meets','steps','prior','log_chain_n','literal','qc','qp'],
      'struct+sim+kind':['log_rank','most_topics','meets','steps','prior','log_chain_n','literal','qc','qp','kc','kl','kn'],
      'all':['log_rank','rank0','most_topics','meets','steps','pruned','prior','log_chain_n','literal','named','at_depth','qc','kc','kl','qp','kn']}
def f(d,c):
    mt=max(x['topics'] for x in d['cands'])
    return dict(log_rank=math.log1p(c['i']),rank0=c['i']==0,most_topics=c['topics']==mt,meets=c['meets'],steps=c['steps'],pruned=c['score']>=1.0,prior=c['prior'],
        log_chain_n=math.log1p(c['chain_n']),literal=c['literal'],named=c['named'],at_depth=c['steps']==d['depth'],qc=c['qc'],kc=c['kc'],kl=c['kl'],qp=c['qp'],kn=c['kn'])
for name,keys in SETS.items():
  for C in (0.1,1.0):
    X=np.array([[f(d,c)[k] for k in keys] for d in T for c in d['cands']],float); y=[c['gold'] for d in T for c in d['cands']]
    sc=StandardScaler().fit(X); m=LogisticRegression(C=C,max_iter=5000).fit(sc.transform(X),y)
    g1=g10=0
    for d in D:
        s=m.decision_function(sc.transform(np.array([[f(d,c)[k] for k in keys] for c in d['cands']],float))); o=np.argsort(-s)
        g1+=d['cands'][o[0]]['gold']; g10+=any(d['cands'][j]['gold'] for j in o[:10])
    print(f'{name:16s} C={C}: dev gold@1 {g1} gold@10 {g10}  (walk ranking: {sum(d["cands"][0]["gold"] for d in D)} / {sum(any(c["gold"] for c in d["cands"][:10]) for d in D)})')
