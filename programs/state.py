"""What one question's walk holds, in three parts, each with its one writer:

- `Asking`: the question as every step reads it (its words, the graph, the settings, the topic
  entities, the plan, the chain prior's votes). Frozen: the walk makes a new one as more of it is
  known (`knowing` the topics, then `planned`), and no step can change it.
- `Ledger`: what the question spends and what is recorded of it (the trace, the deadline, the
  LLM-call budget, the model's dropped selections). Written by `LMCalls` (calls, tokens, failures)
  and `Step.run` (each step's outcome), and by the program's own bookkeeping; read by no step's logic.
- `WalkState`: the walk's own data (depth, each hop's `Reach`, what it reached, the relations
  fetched, the ranked candidates, the facts and notes kept, the answers). Only the program writes
  it; each step is handed one typed input made from it, and the trace's account of the walk is
  written from it once, at the end (`KGQA._trace`), never read back to steer the walk.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kgqa.kg import KnowledgeGraph, Node
from kgqa.programs.chains import Votes
from kgqa.programs.config import WalkConfig
from kgqa.programs.deadline import Deadline
from kgqa.programs.question import Question, hop_relation
from kgqa.programs.trace import StopReason, Trace
from kgqa.programs.trails import Trail

if TYPE_CHECKING:
    from kgqa.programs.linking import Linking
    from kgqa.programs.ranking import Ranked

log = logging.getLogger(__name__)

__all__ = ["Asking", "Ledger", "Reach", "WalkState"]


@dataclass(frozen=True)
class Asking:
    """A question as the steps read it. `analysis` (its words read once: comparisons, values named)
    and `topics` are known once the topic entities are (`knowing`); `hop_targets`, `conditions`
    and the chain prior's `votes` once it is planned (`planned`)."""

    question: str
    kg: KnowledgeGraph
    config: WalkConfig
    topics: tuple[Node, ...] = ()
    analysis: Question | None = None
    hop_targets: tuple[str, ...] = ()  # the plan: what each hop reaches
    hop_relations: tuple[str, ...] = ()  # the relation words each hop's target names ("movie (written by)": "written by")
    conditions: tuple[str, ...] = ()  # the plan: what the answer must satisfy
    votes: Votes = field(default_factory=Votes)  # what the nearest training questions say of relation chains

    def knowing(self, topics: list[Node]) -> Asking:
        """The question with its topic entities, its words read once."""
        return replace(self, topics=tuple(topics), analysis=Question(self.question, tuple(t.label for t in topics)))

    def planned(self, hop_targets: list[str], conditions: list[str], *, votes: Votes | None = None) -> Asking:
        """The question with its plan (each hop's relation words read once), and the chain prior's
        `votes` for it where there are any."""
        return replace(self, hop_targets=tuple(hop_targets), hop_relations=tuple(hop_relation(t) for t in hop_targets),
                       conditions=tuple(conditions), votes=votes or Votes())

    @property
    def topic_ids(self) -> set[str]:
        return {t.id for t in self.topics}

    @property
    def topic_names(self) -> list[str]:
        """The topic entities' names, each once."""
        return list(dict.fromkeys(t.label for t in self.topics))

    @property
    def query(self) -> str:
        """The question with the plan's conditions: what the facts and entities kept should be like."""
        return f"{self.question} {' '.join(self.conditions)}"

    def hop_target(self, depth: int) -> str:
        """What the plan says hop `depth` reaches ('one hop further' past a plan found short)."""
        return self.hop_targets[depth - 1] if depth <= len(self.hop_targets) else "one hop further"

    def hop_relation(self, depth: int) -> str:
        """The relation words hop `depth`'s target names (its kind where it spells none)."""
        return self.hop_relations[depth - 1] if depth <= len(self.hop_relations) else self.hop_target(depth)


@dataclass
class Ledger:
    """What a question spends and what is recorded of it: the trace (counters, each step's outcome,
    the per-hop log, the stop), the deadline checked before every LLM call, whether the call budget
    ran out, the selections dropped as invalid, and whether no model decided the answers."""

    trace: Trace = field(default_factory=Trace)
    deadline: Deadline | None = None
    dropped: list[str] = field(default_factory=list)
    budget_hit: bool = False
    unanswered: bool = False  # the LM did not answer or the run was cut: no model decided the answers


@dataclass(frozen=True)
class Reach:
    """One hop: the trails it went from (`frontier`) and what it reached, by relation label ('a -> b'
    through nameless nodes). Once the relation prune and the beam chose: the prune's own choice
    (`pruned`), every label the walk goes on by (`chosen`) and each trail scored by that choice
    (`scored`); once the walk went on, the ends the entity prune ruled out (`ruled_out`, None before).
    `ranked`: the labels most like the relation the target names first; `named`: the one it clearly
    names, if one does (the relation prune takes it, and at the plan's last hop the candidates by it
    answer without a call)."""

    depth: int
    target: str  # what the plan says this hop reaches
    last: bool  # the plan's last hop: extraction chooses among its ends, nothing is pruned
    frontier: tuple[Trail, ...]
    by_label: Mapping[str, list[Trail]]
    ranked: tuple[str, ...] = ()
    named: str | None = None
    pruned: tuple[str, ...] = ()
    chosen: tuple[str, ...] = ()
    scored: Mapping[str, list[Trail]] = field(default_factory=dict)
    ruled_out: frozenset[str] | None = None

    @property
    def labels(self) -> list[str]:
        return sorted(self.by_label)

    @property
    def trails(self) -> list[Trail]:
        return [t for trails in self.by_label.values() for t in trails]

    @property
    def ahead(self) -> list[Trail]:
        """The trails by the labels the walk goes on by, scored by the choice: what the entity prune reads."""
        return [t for label in self.chosen for t in self.scored[label]]


@dataclass
class WalkState:
    """One question's walk: what it is asking (`asking`, replaced as more is known), what it spent
    (`ledger`), and what it has reached so far."""

    asking: Asking
    ledger: Ledger = field(default_factory=Ledger)
    linking: Linking | None = None  # a question without ids: what linking saw and chose
    depth: int = 0  # the hops walked
    extensions: int = 0  # hops added past the plan, as sufficiency asked
    reflections: int = 0  # dead ends the walk resumed from (or tried to), with reflection
    hops: list[Reach] = field(default_factory=list)  # each hop, as far as it went
    seen: dict[str, Trail] = field(default_factory=dict)  # entity id -> the first trail that reached it
    reached: list[Trail] = field(default_factory=list)  # every trail the walk reached, at every depth: the candidates
    relations: dict = field(default_factory=dict)  # entity id -> the edges around it, as fetched so far
    named: set = field(default_factory=set)  # chains by the relation the plan's last hop names, if one clearly
    ranked: Ranked | None = None  # the candidates ranked, and what that settles
    scorer_used: bool = False  # the compiled path scorer ordered candidates or the beam
    facts: list[str] = field(default_factory=list)  # the fact filter's kept facts
    memory: list[str] = field(default_factory=list)  # memory update's notes
    final: list[Trail] = field(default_factory=list)

    @property
    def trace(self) -> Trace:
        return self.ledger.trace

    def stop(self, reason: StopReason, error: str | None = None) -> None:
        trace = self.ledger.trace
        trace.stop_reason = StopReason.LLM_BUDGET if self.ledger.budget_hit and not self.final else reason
        trace.error = error
        log.info("%r stopped: %s after %d hops, %d LLM calls%s", self.asking.question, trace.stop_reason.value, self.depth,
                 trace.llm_calls, f" ({error})" if error else "")
