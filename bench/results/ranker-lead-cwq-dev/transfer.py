"""Analysis runner: a logistic ranker fitted on the teacher walks' candidates (TRAIN.json), scored on the
recorded dev walks' (DEV.json): how often a gold answer comes first, and among the first ten. Both files
are features.py's.
    .venv/bin/python bench/results/ranker-lead-cwq-dev/transfer.py TRAIN.json DEV.json
"""
import json
import math
import sys

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

STRUCTURE = ["log_rank", "most_topics", "meets", "steps", "prior", "log_chain_n", "literal"]
SETS = {
    "struct": STRUCTURE,
    "struct+sim": STRUCTURE + ["qc", "qp"],
    "struct+sim+kind": STRUCTURE + ["qc", "qp", "kc", "kl", "kn"],
    "all": ["log_rank", "rank0", "most_topics", "meets", "steps", "pruned", "prior", "log_chain_n", "literal", "named",
            "at_depth", "qc", "kc", "kl", "qp", "kn"],
}


def described(question):
    """Each candidate's features by name."""
    most = max(c["topics"] for c in question["cands"])
    return [dict(log_rank=math.log1p(c["i"]), rank0=c["i"] == 0, most_topics=c["topics"] == most, meets=c["meets"],
                 steps=c["steps"], pruned=c["score"] >= 1.0, prior=c["prior"], log_chain_n=math.log1p(c["chain_n"]),
                 literal=c["literal"], named=c["named"], at_depth=c["steps"] == question["depth"], qc=c["qc"], kc=c["kc"],
                 kl=c["kl"], qp=c["qp"], kn=c["kn"]) for c in question["cands"]]


def loaded(path):
    questions = [q for q in json.load(open(path)) if q["cands"]]
    return questions, [described(q) for q in questions]


train, train_features = loaded(sys.argv[1])
dev, dev_features = loaded(sys.argv[2])
now = (sum(q["cands"][0]["gold"] for q in dev), sum(any(c["gold"] for c in q["cands"][:10]) for q in dev))
for name, keys in SETS.items():
    for C in (0.1, 1.0):
        X = np.array([[f[k] for k in keys] for features in train_features for f in features], float)
        y = [c["gold"] for q in train for c in q["cands"]]
        scaler = StandardScaler().fit(X)
        model = LogisticRegression(C=C, max_iter=5000).fit(scaler.transform(X), y)
        first = in_ten = 0
        for q, features in zip(dev, dev_features):
            order = np.argsort(-model.decision_function(scaler.transform(np.array([[f[k] for k in keys] for f in features], float))))
            first += q["cands"][order[0]]["gold"]
            in_ten += any(q["cands"][j]["gold"] for j in order[:10])
        print(f"{name:16s} C={C}: dev gold@1 {first} gold@10 {in_ten}  (walk ranking: {now[0]} / {now[1]})")
