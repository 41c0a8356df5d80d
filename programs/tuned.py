"""The walk's hand-set constants, in one place, each with what set it. A user's settings are
`WalkConfig`'s; these are the program's own, changed only by a measurement (`bench/`), and the
learned parts' settings live with them (`programs.scorer`, `programs.linking`, `programs.chains`)."""

# The ranking (`programs.ranking`)
SCORED = 60  # candidates the path scorer orders (the hand-set order's first), the rest after them: the teacher
# walks it is fitted on hold a gold answer among their first 60 about as often as among all (7b949f6)
PAIRS_PER_CHAIN = 30  # ends of one relation chain scored with their names (a bound on the embedding calls, hand-set)
PRIOR_WEIGHT = 0.5  # times the compiled chain prior's weight (0..1), added to a candidate's similarity (0..1)
# and to a relation's when the beam fills without the path scorer (dc5eab9, hand-set)
PRIOR_SURE = 0.6  # a chain the prior weighs at least this takes the walk a hop further where the walk stopped on
# its way (`programs.steps.sufficiency`): on dev questions outside the compile sample (bench.chain_prior, found
# labels, 366fc0a), the heaviest chain weighs this much on 0.860 of MetaQA's, of the answer's length on 0.973 of
# those; on 0.120 of CWQ-mini's, 0.778 (hand-set)
PLANNED_BONUS = 0.3  # added to the similarity (0..1) of a candidate on the plan's chosen chain at its depth:
# 0.15 -> 0.3 took MetaQA 3-hop seed 1 from Hits@1 0.900 to 0.967, the same compiled program (ddf3d29)
# kept with the path scorer on: at 0 it lost 3 of 90 MetaQA seed-0 answers, gained none (docs/results.md)

# The hop (`programs.kgqa`)
NOT_GONE_ON = 0.25  # the score factor of a relation neither the prune (1.0) nor the beam (0.5) chose; its ends
# stay candidates (3bab738, hand-set)
BEAM_TRAILS = 3  # trails of one relation the path scorer reads when it fills the beam (9bf7b2a, hand-set)

# The relation prune (`programs.steps.relation_prune`)
CLEAR_MARGIN = 0.08  # a relation at least `WalkConfig.clear_similarity` like the hop's target and this far ahead
# of the next is taken without asking the model ("actor" -> starred_actors; c49d3f4, hand-set)

# A model's choice (`programs.selection`)
SNAP_CUTOFF = 0.85  # how close (0..1, difflib ratio) a selection must be to a candidate to snap to it (4ebdd2b, hand-set)

# What a step is shown (`programs.steps`): bounds on a prompt's length, hand-set
RELATIONS_SHOWN = 4  # relations shown with each candidate topic entity (the topic choice)
VALUES_PER_FACT = 3  # values of one (candidate, relation) shown in one fact (the fact filter)
CONDITIONS = 3  # conditions on the answer kept from a plan
NOTE_CHARS = 300  # a memory note's length
VALUED_ANSWERS = 30  # answers whose values a comparison reads (the value check)
