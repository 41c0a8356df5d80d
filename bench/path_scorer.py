"""The path scorer against the hand-set order, without the LLM: where the gold answer stands among
the candidates of CWQ-mini dev questions outside the compile sample.

Fits the scorer as compiling does (`optimizers.labels.gold_labels`: the gold-path teacher's walks of
the `--train` compile questions of `bench.accuracy`'s CWQ-mini dev split, seed `--seed`; `--fit-on
similarity` or `both`: their LLM-free walks instead or as well), once per
`--kinds` (cross-encoder, bi-encoder) and settings of `--variants`, and scores the candidates of
`--dev` dev questions walked two ways, neither with an LLM:
- teacher: the gold-path teacher's walk (the relations a right relation prune would choose);
- similarity: every choice by embedding similarity, 2 hops (`bench.accuracy`'s floor walk).
For each: the share of questions whose gold answer is first, among the first 3, among the first 10
and among the candidates at all, in the hand-set order and in each scorer's order; the fit's
seconds and the scoring seconds; and, paired with the first scorer fitted, how many questions each
other scorer puts a gold answer first on that it did not, and the other way round (a difference of
a few questions in 300 is noise). The walks are cached in the output folder (`walks-*.json`), so a
rerun fits and scores only. No number here is an answer rate: `bench.reproduce` measures those.

    .venv/bin/python -m bench.path_scorer --train 1500 --dev 300 --out runs/path-scorer
    .venv/bin/python -m bench.path_scorer --kinds bi --variants '[{"layers": 2}, {"layers": 4}]'
    .venv/bin/python -m bench.path_scorer --variants '[{}, {"siblings": false}]'
    .venv/bin/python -m bench.path_scorer --variants '[{}, {"kind": "cross", "learning_rate": 2e-4}]' --rerank 10
    .venv/bin/python -m bench.path_scorer --variants '[{}, {"layers": 6}]' --fit-seeds 0,1,2 --save
    .venv/bin/python -m bench.path_scorer --answers-alone --fit-seeds 0,1,2 --out runs/ps-answers
    .venv/bin/python -m bench.path_scorer --more 590 --variants '[{"questions": 750}, {"questions": 1500}, {}]' --fit-seeds 0,1,2 --save

A variant's `"siblings": false` fits on the walks without the other ends of a gold path's own
chain (`without_siblings`): negatives the path cannot tell from the gold. A variant may name its
`"kind"`. With `--rerank N`, each scorer after the first also orders the walks with the first
scorer: its first N re-ordered by this one (a re-ranker), and by the two scores summed, each
standardized within the walk. With `--fit-seeds 0,1,2` each variant is fitted once per seed, with a
row of their mean: the seed alone moves the gold first place by several points in 300 questions,
so a variant is judged by its mean over seeds, not by one fit against one other.

With `--base-mix 0.25,1`, the first scorer's scores also get the packaged encoder's own (unfitted)
scores added, times each weight: whether what plain sentence similarity knows helps where the
training says little.

By chain length: every row is given again for the dev questions whose first gold path found from
their answers has 1 relation, and 2 or 3 (`bench.reproduce.hops_of`). With `--fit-hops 2,3` the
scorer is fitted on the compile questions of 2 or 3 relations only, as the `cwq-transfer` row
compiles: how it orders the questions one relation answers. A variant's `"shorter": false` fits on
the walks without the candidates shorter than their gold path (`without_shorter`). `--dataset
metaqa` does the same on MetaQA (a third of `--dev` a hop; the LLM-free walk still goes 2 hops), as
the `metaqa-transfer` row compiles with `--fit-hops 2,3`.

    .venv/bin/python -m bench.path_scorer --answers-alone --fit-hops 2,3 --views similarity --variants '[{}, {"shorter": false}]' --fit-seeds 0,1,2

With `--lengths`, each order is given again with a length chosen for it: the candidates of the
gold paths' lengths first (`length`: as the path text shows it), or of the hand-set order's first
path's, each in the order's own order within. So a loss splits into choosing the length and
ordering within it.

    .venv/bin/python -m bench.path_scorer --answers-alone --fit-hops 2,3 --views similarity --lengths --fit-seeds 0,1,2

A learning curve: `--more N` also walks N other dev questions (outside the compile sample and the
scored ones) with the teacher and fits on them after the compile questions' walks; a variant's
`"questions": n` fits on the first n of those walks only.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from kgqa.env import stay_offline

stay_offline()

from bench.accuracy import CWQ_FLOOR_DEPTH, CWQ_MINI, METAQA, Bench, answers_alone, cwq_bench, metaqa_bench  # noqa: E402
from kgqa.evaluate.metrics import same_answer  # noqa: E402
from kgqa.optimizers.labels import gold_labels, labeled_teacher  # noqa: E402
from kgqa.optimizers.paths import label_trainset  # noqa: E402
from kgqa.programs import KGQA, WalkConfig  # noqa: E402
from kgqa.programs.baselines import SimilarityWalk  # noqa: E402
from kgqa.programs.inspection import before_extraction  # noqa: E402
from kgqa.programs.ranking import SCORED, scored_text  # noqa: E402
from kgqa.programs.scorer import SETTINGS_FILE, PathScorer, ScorerGroup, ScorerSettings  # noqa: E402

PLACES = {"first": 1, "top 3": 3, "top 10": 10, "any": SCORED}


def teacher_walks(program: KGQA, examples: list, kg) -> list[ScorerGroup]:
    """Each example walked by the gold-path teacher, its candidates in the hand-set order: what compiling fits on
    (the examples labeled as compiling labels them)."""
    examples, _ = label_trainset(examples, kg, encode=program.embedder.encode)
    return gold_labels(program, examples, teacher=labeled_teacher(examples, kg=kg), answers=0, sufficiency=0,
                       scorer=len(examples)).scorer


def similarity_walks(bench, examples: list) -> list[ScorerGroup]:
    """Each example walked with no LLM (every choice by similarity, 2 hops), its candidates in the hand-set order."""
    walker = SimilarityWalk(bench.kg, config=bench.walk(WalkConfig(depth=CWQ_FLOOR_DEPTH)))
    walks = []
    for ex in examples:
        ranked, _ = before_extraction(walker, ex.question, list(ex.topic_entities) or None)
        candidates = ranked.candidates[:SCORED] if ranked else []
        walks.append(ScorerGroup(ex.question, [scored_text(c) for c in candidates],
                                 [any(same_answer(c.label, a) for a in ex.answers) for c in candidates]))
    return walks


def plain(path: str) -> str:
    """A candidate's path as the scorer reads it without its note (`programs.ranking.scored_text`)."""
    return path.split(" ; reached from ")[0]


def by_part(view: str, walks: list[ScorerGroup], parts: dict[str, set[str]]) -> list[tuple[str, list[ScorerGroup]]]:
    """The view's walks whole, then those of each part's questions, each named as its table rows are ("similarity, 1 relation")."""
    return [(view, walks)] + [(f"{view}, {part}", [w for w in walks if w.question in questions]) for part, questions in parts.items()]


def without_siblings(walk: ScorerGroup) -> ScorerGroup:
    """The walk without the other ends of a gold path's own chain: candidates whose path is a gold
    path's but for its last name ("Lautner -> film -> Eclipse" beside "... -> New Moon"). The path
    cannot tell them apart, so as negatives they teach names, not chains."""
    def prefix(path: str) -> str:
        return plain(path).rsplit(" -> ", 1)[0]

    golds = {prefix(p) for p, g in zip(walk.paths, walk.gold) if g}
    kept = [(p, g) for p, g in zip(walk.paths, walk.gold) if g or prefix(p) not in golds]
    return ScorerGroup(walk.question, [p for p, _ in kept], [g for _, g in kept])


def length(path: str) -> int:
    """A candidate's path length as its text shows it: its relations and the names between."""
    return plain(path).count(" -> ")


def without_shorter(walk: ScorerGroup) -> ScorerGroup:
    """The walk without the candidates whose path is shorter than its shortest gold path (by
    `length`): negatives the gold is told apart from by its length as well as by what it says."""
    least = min((length(p) for p, g in zip(walk.paths, walk.gold) if g), default=0)
    kept = [(p, g) for p, g in zip(walk.paths, walk.gold) if g or length(p) >= least]
    return ScorerGroup(walk.question, [p for p, _ in kept], [g for _, g in kept])


def cached_hops(path: Path, bench, examples: list) -> dict[str, int]:
    """Each question's relations in its first gold path found from its answers alone (0: none found),
    as the transfer rows count them (`bench.reproduce.hops_of`); kept in `path`."""
    from bench.reproduce import hops_of

    if path.exists():
        return json.loads(path.read_text())
    hops = {ex.question: hops_of(ex, bench) for ex in examples}
    path.write_text(json.dumps(hops))
    return hops


def cached(path: Path, make) -> list[ScorerGroup]:
    if path.exists():
        return [ScorerGroup(**w) for w in json.loads(path.read_text())]
    walks = make()
    path.write_text(json.dumps([w.__dict__ for w in walks]))
    return walks


def places(walks: list[ScorerGroup], order=None) -> dict[str, float]:
    """The share of walks whose gold answer is among the first n candidates, for each n of `PLACES`."""
    counts = dict.fromkeys(PLACES, 0)
    for walk in walks:
        ranked = order(walk) if order else range(len(walk.paths))
        gold = [walk.gold[i] for i in ranked]
        for name, n in PLACES.items():
            counts[name] += any(gold[:n])
    return {name: round(count / max(len(walks), 1), 3) for name, count in counts.items()}


def scored(scorer: PathScorer, walks: list[ScorerGroup]) -> dict[str, list[float]]:
    """Each walk's scores by `scorer`, by question (a walk view asks each question once)."""
    return {walk.question: scorer.scores(walk.question, walk.paths) for walk in walks}


def reranked(base: dict[str, list[float]], other: dict[str, list[float]], top: int):
    """The order of `base`'s scores with its first `top` re-ordered by `other`'s (ties keep the base order)."""
    def order(walk: ScorerGroup) -> list[int]:
        first = sorted(range(len(walk.paths)), key=lambda i: (-base[walk.question][i], i))
        again = sorted(first[:top], key=lambda i: (-other[walk.question][i], first.index(i)))
        return again + first[top:]
    return order


def summed(base: dict[str, list[float]], other: dict[str, list[float]]):
    """The order of the two scorers' scores summed, each standardized within the walk."""
    def standard(scores: list[float]) -> list[float]:
        mean = sum(scores) / max(len(scores), 1)
        spread = (sum((s - mean) ** 2 for s in scores) / max(len(scores), 1)) ** 0.5 or 1.0
        return [(s - mean) / spread for s in scores]

    def order(walk: ScorerGroup) -> list[int]:
        total = [a + b for a, b in zip(standard(base[walk.question]), standard(other[walk.question]))]
        return sorted(range(len(walk.paths)), key=lambda i: (-total[i], i))
    return order


def as_given(walk: ScorerGroup) -> list[int]:
    """The walk's candidates in the order given: the hand-set order."""
    return list(range(len(walk.paths)))


def at_length(order, lengths):
    """`order` with the candidates of the lengths `lengths(walk)` gives first: how the order does
    once its length is chosen for it."""
    def chosen_first(walk: ScorerGroup) -> list[int]:
        chosen = lengths(walk)
        return sorted(order(walk), key=lambda i: length(walk.paths[i]) not in chosen)  # stable: the order kept within
    return chosen_first


def gold_lengths(walk: ScorerGroup) -> set[int]:
    """The lengths of the walk's gold paths: the length chosen right."""
    return {length(p) for p, g in zip(walk.paths, walk.gold) if g}


def hand_length(walk: ScorerGroup) -> set[int]:
    """The length of the hand-set order's first path: the length chosen by similarity."""
    return {length(walk.paths[0])} if walk.paths else set()


GOLD_LENGTH = "at the gold's length"
LENGTHS = {GOLD_LENGTH: gold_lengths, "at the hand-set first's length": hand_length}


def firsts(walks: list[ScorerGroup], order) -> list[bool]:
    """For each walk, whether its first candidate in `order` is a gold answer."""
    return [bool(walk.paths) and walk.gold[order(walk)[0]] for walk in walks]


def paired(base: list[bool], other: list[bool]) -> tuple[int, int]:
    """(gained, lost): the walks `other` gets right that `base` does not, and the other way round."""
    return sum(o and not b for b, o in zip(base, other)), sum(b and not o for b, o in zip(base, other))


def scorer_rows(view: str, walks: list[ScorerGroup], scorer: PathScorer, name: str, *, rerank: int, lengths: bool = False,
                base: dict[str, tuple[str, dict]], first: dict[str, list[bool]], parts: dict[str, set[str]]) -> list[tuple]:
    """One fitted scorer's table rows on one walk view: its own order, then (with `lengths`) that
    order at a length chosen for it (`LENGTHS`), then (with `rerank`) its combinations with the first
    scorer fitted (`base`: its name and scores, per view); each row's first places paired with the
    first scorer's (`first`, per view). The first scorer fills both. Each row again for each of
    `parts` (a name and its questions: "1 relation"), from the same scores."""
    started = time.perf_counter()
    scores = scored(scorer, walks)
    seconds = f"{time.perf_counter() - started:.0f}"
    orders = {name: reranked(scores, scores, SCORED)}  # its own order: by its scores alone
    if lengths:
        orders |= {f"{name}, {chosen}": at_length(orders[name], lengths_of) for chosen, lengths_of in LENGTHS.items()}
    if rerank and view in base:
        orders[f"{base[view][0]}, its first {rerank} by {name}"] = reranked(base[view][1], scores, rerank)
        orders[f"{base[view][0]} + {name}, standardized"] = summed(base[view][1], scores)
    base.setdefault(view, (name, scores))
    rows = []
    for shown, some in by_part(view, walks, parts):
        for label, order in orders.items():
            right = firsts(some, order)
            counts = paired(first[shown], right) if shown in first else None
            first.setdefault(shown, right)
            rows.append((shown, label, places(some, order), f"{scorer.report.seconds:.0f}", seconds, counts))
    return rows


def fit_or_load(walks: list[ScorerGroup], settings: ScorerSettings, saved: Path | None) -> PathScorer:
    """The scorer fitted on `walks`; with `saved`, kept there, or loaded from there when an earlier
    run saved one with the same settings (and, as the folder's name says, the same walks)."""
    if saved is not None and (saved / SETTINGS_FILE).exists():
        scorer = PathScorer.load(saved)
        if scorer.settings == settings:
            return scorer
    scorer = PathScorer.fit(walks, settings=settings)
    if saved is not None:
        scorer.save(saved)
    return scorer


def mean_row(view: str, name: str, rows: list[tuple]) -> tuple:
    """One variant's rows (one per seed) as one: the mean of each place, fit seconds and first-place counts."""
    found = {place: round(sum(row[2][place] for row in rows) / len(rows), 3) for place in PLACES}
    fit = f"{sum(float(row[3]) for row in rows) / len(rows):.0f}"
    counts = [row[5] for row in rows]
    mean = "" if None in counts else tuple(round(sum(c[i] for c in counts) / len(counts), 1) for i in (0, 1))
    return (view, name, found, fit, "", mean)


def versus(counts: tuple | str | None) -> str:
    """'+gained / -lost' against the base; the base itself; nothing for a mean that includes the base."""
    if isinstance(counts, str):
        return counts
    return "+{} / -{}".format(*counts) if counts is not None else "(the base)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=("cwq-mini", "metaqa"), default="cwq-mini")
    parser.add_argument("--train", type=int, default=1500)
    parser.add_argument("--dev", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", default="bi")
    parser.add_argument("--settings", default="{}", help="ScorerSettings fields as JSON, for every kind and variant")
    parser.add_argument("--variants", default="[{}]", help="a JSON list of ScorerSettings fields: one scorer fitted for each (and each kind)")
    parser.add_argument("--fit-on", choices=("teacher", "similarity", "both"), default="teacher",
                        help="the compile questions' walks fitted on: the gold-path teacher's (as compiling does), the LLM-free walk's, or both")
    parser.add_argument("--rerank", type=int, default=0, help="also order each walk by the first scorer with its first N "
                        "re-ordered by each other scorer, and by the two scorers' standardized scores summed")
    parser.add_argument("--fit-seeds", default="", help="comma-separated: each variant fitted once per ScorerSettings seed "
                        "(groups, shuffles, the head's start), with a row of their mean")
    parser.add_argument("--more", type=int, default=0, help="also fit on the teacher's walks of this many other dev questions "
                        "(outside the compile sample and the scored ones), after the compile questions'")
    parser.add_argument("--answers-alone", action="store_true", help="the questions' RoG ground_paths removed: the teacher "
                        "walks the paths found in the graph from the answers alone (`optimizers.paths`)")
    parser.add_argument("--base-mix", default="", help="comma-separated weights: the first scorer's scores plus the "
                        "unfitted encoder's times each weight, one row each")
    parser.add_argument("--fit-hops", default="", help="comma-separated: fit only on the compile questions whose first gold "
                        "path found from the answers has this many relations (a transfer: `2,3`)")
    parser.add_argument("--lengths", action="store_true", help="also each order with the candidates of one length first: "
                        "the gold path's (the length known) and the hand-set order's first path's")
    parser.add_argument("--views", default="teacher,similarity", help="comma-separated: the dev walks scored (teacher, similarity)")
    parser.add_argument("--out", type=Path, default=Path("runs/path-scorer"))
    parser.add_argument("--save", action="store_true", help="save each fitted scorer in the output folder (scorer-KIND-N-W[-seedS]/, "
                        "N the variant's place in --variants, W the walks fitted on), to be swapped into a compiled program; one "
                        "saved there with the same settings (and walks) is loaded, not fitted again")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)  # one folder per labeling: its walks are cached there
    if args.dataset == "metaqa":  # a third of --dev a hop, the compile questions from the rest (MetaQA has only dev questions)
        bench = metaqa_bench(args.dev // 3, args.train, args.seed, METAQA)
        bench = Bench(bench.dataset, bench.kg, {"dev": [ex for sample in bench.test.values() for ex in sample]}, bench.train)
    else:
        bench = cwq_bench(args.dev, args.train, args.seed, CWQ_MINI, split="dev", more=args.more)
    if args.answers_alone:  # every question's given paths removed, the scored ones' too (their teacher walks)
        bench = Bench(bench.dataset, bench.kg, {name: answers_alone(samples) for name, samples in bench.test.items()},
                      answers_alone(bench.train))
    program = KGQA(bench.kg, config=bench.walk(WalkConfig()))
    dev = bench.test["dev"]
    train = []
    if args.fit_on in ("teacher", "both"):  # what compiling fits on
        train += cached(args.out / f"walks-train-{args.train}-seed{args.seed}.json", lambda: teacher_walks(program, bench.train, bench.kg))
    if args.fit_on in ("similarity", "both"):  # the LLM-free walk's candidates of the same questions
        train += cached(args.out / f"walks-train-similarity-{args.train}-seed{args.seed}.json", lambda: similarity_walks(bench, bench.train))
    if args.more:  # more training questions, for a learning curve
        train += cached(args.out / f"walks-more-{args.more}-seed{args.seed}.json", lambda: teacher_walks(program, bench.test["more"], bench.kg))
    walkers = {"teacher": lambda: teacher_walks(program, dev, bench.kg), "similarity": lambda: similarity_walks(bench, dev)}
    views = {view: cached(args.out / f"walks-dev-{view}-{args.dev}-seed{args.seed}.json", walkers[view]) for view in args.views.split(",")}
    hops = cached_hops(args.out / f"hops-{args.train}-{args.dev}-seed{args.seed}.json", bench, [*bench.train, *dev])
    parts = {"1 relation": {q for q, n in hops.items() if n == 1}, "2-3 relations": {q for q, n in hops.items() if n in (2, 3)}}
    if args.fit_hops:
        fit_hops = {int(n) for n in args.fit_hops.split(",")}
        train = [walk for walk in train if hops.get(walk.question) in fit_hops]
    rows = []
    for view, walks in views.items():  # the hand-set order (with --lengths, also at the gold's length)
        hand = {"hand-set order": as_given} | ({f"hand-set order, {GOLD_LENGTH}": at_length(as_given, gold_lengths)}
                                               if args.lengths else {})
        rows += [(shown, label, places(some, order), "", "", "") for shown, some in by_part(view, walks, parts) for label, order in hand.items()]
    first: dict[str, list[bool]] = {}  # the first scorer's first places, per walk view
    base: dict[str, tuple[str, dict]] = {}  # the first scorer's name and scores, per walk view
    seeds = [int(seed) for seed in args.fit_seeds.split(",")] if args.fit_seeds else [None]
    for kind in args.kinds.split(","):
        for number, variant in enumerate(json.loads(args.variants)):
            fitted = dict(variant)
            siblings = fitted.pop("siblings", True)  # not ScorerSettings fields: what the groups are cut from
            shorter = fitted.pop("shorter", True)
            walks_fitted = train[: fitted.pop("questions", len(train))]
            walks_fitted = walks_fitted if siblings else [without_siblings(w) for w in walks_fitted]
            walks_fitted = walks_fitted if shorter else [without_shorter(w) for w in walks_fitted]
            label = f"{fitted.get('kind', kind)}-encoder" + (f" {json.dumps(variant)}" if variant else "")  # a variant may name its kind
            variant_rows = []
            for seed in seeds:
                settings = ScorerSettings(**{**json.loads(args.settings), "kind": kind, **fitted,
                                             **({"seed": seed} if seed is not None else {})})
                name = label + (f" seed {seed}" if seed is not None else "")
                saved = args.out / (f"scorer-{settings.kind}-{number}-{len(walks_fitted)}" + (f"-seed{seed}" if seed is not None else ""))
                scorer = fit_or_load(walks_fitted, settings, saved if args.save else None)
                print(f"{name}: fitted on {scorer.report.questions} walks, {scorer.report.groups} groups, "
                      f"{scorer.report.seconds:.0f} s, losses {scorer.report.losses}", flush=True)
                for view, walks in views.items():
                    own = scorer_rows(view, walks, scorer, name, rerank=args.rerank, lengths=args.lengths, base=base, first=first,
                                      parts=parts)
                    rows += own
                    variant_rows += [(row[1].removeprefix(name), row) for row in own if row[1].startswith(name)]
            if len(seeds) > 1:  # the variant's mean over its seeds, per walk view (and part) and order
                rows += [mean_row(view, f"{label}, mean of {len(seeds)} seeds{suffix}",
                                  [row for own, row in variant_rows if row[0] == view and own == suffix])
                         for view, suffix in dict.fromkeys((row[0], own) for own, row in variant_rows)]
    if args.base_mix:  # the first scorer beside the unfitted encoder's similarity, per weight
        unfitted = PathScorer(settings=ScorerSettings(**{**json.loads(args.settings), "kind": "bi"}))
        for view, walks in views.items():
            name, fitted_scores = base[view]
            plain = scored(unfitted, walks)
            for weight in (float(w) for w in args.base_mix.split(",")):
                mixed = {q: [f + weight * b for f, b in zip(fitted_scores[q], plain[q])] for q in fitted_scores}
                order = reranked(mixed, mixed, SCORED)
                rows.append((view, f"{name} + {weight} x the unfitted encoder", places(walks, order), "", "",
                             paired(first[view], firsts(walks, order))))
    lines = [f"{bench.dataset} dev, {len(dev)} questions outside the compile sample (seed {args.seed}); fitted on the {args.fit_on} walks "
             f"of {args.train} compile questions" + (f" and the teacher's of {args.more} more" if args.more else "")
             + f"; settings {args.settings}" + ("; labeled from the answers alone (ground_paths removed)" if args.answers_alone else ""), "",
             "| walk | order | gold first | in top 3 | in top 10 | among candidates | fit s | scoring s | first: gained / lost |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {view} | {order} | {' | '.join(f'{v:.3f}' for v in found.values())} | {fit} | {scoring} | {versus(counts)} |"
              for view, order, found, fit, scoring, counts in rows]
    (args.out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
