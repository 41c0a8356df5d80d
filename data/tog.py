"""Question files of Think-on-Graph / Plan-on-Graph style systems (Freebase, topic entities as {mid: name}).

Handles `cwq.json`, `WebQSP.json` (both the flat form and the original `Parses` form),
`grailqa.json`, `SimpleQA.json` and `WebQuestions.json`: the fields are told apart per row.
CWQ aliases come from PoG's `cwq_aname_dict.json` ({question: [answer, alias, ...]}) when given.
Topic keys that are not Freebase ids (WebQuestions' "UnknownMID") land in `unlinked_topics`;
a few CWQ and GrailQA rows have no topic entity at all and load with an empty list.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dspy

from kgqa.data.examples import DatasetError, make_example, read_json, read_json_list
from kgqa.kg.profiles import FREEBASE

_ID_FIELDS = ("ID", "QuestionId", "qid", "id")
_QUESTION_FIELDS = ("question", "RawQuestion", "ProcessedQuestion")


def _answer_text(answer: object, source: str) -> str:
    if isinstance(answer, str):
        return answer
    if isinstance(answer, (int, float)):
        return str(answer)
    if isinstance(answer, dict):  # GrailQA {entity_name, answer_argument}, WebQSP {EntityName, AnswerArgument}
        for key in ("entity_name", "EntityName", "answer_argument", "AnswerArgument"):
            if answer.get(key):
                return str(answer[key])
    raise DatasetError(f"{source}: cannot read an answer from {answer!r}"[:300])


def _topics_and_answers(row: dict, source: str) -> tuple[dict[str, str], list[str]]:
    if "Parses" in row:  # original WebQSP
        topics: dict[str, str] = {}
        answers: list[str] = []
        for parse in row["Parses"] or []:
            if parse.get("TopicEntityMid"):
                topics[parse["TopicEntityMid"]] = parse.get("TopicEntityName") or parse["TopicEntityMid"]
            answers += [_answer_text(a, source) for a in parse.get("Answers") or []]
        return topics, list(dict.fromkeys(answers))
    topic = row.get("topic_entity")
    if not isinstance(topic, dict):
        raise DatasetError(f"{source}: topic_entity must be an {{mid: name}} object, got {topic!r}"[:300])
    raw = row.get("answer", row.get("answers"))
    if raw is None:
        raise DatasetError(f"{source}: missing field 'answer'")
    # WebQSP marks unanswerable questions with [null]: they load with no gold answers.
    answers = [_answer_text(a, source) for a in (raw if isinstance(raw, list) else [raw]) if a is not None]
    return {str(k): str(v) for k, v in topic.items()}, list(dict.fromkeys(answers))


def load_tog(path: str | Path, *, aliases: str | Path | None = None) -> Iterator[dspy.Example]:
    """Examples from a ToG/PoG question file; `aliases` is an optional {question: [names]} file."""
    path = Path(path)
    alias_map: dict = {}
    if aliases is not None:
        loaded = read_json(aliases)
        if not isinstance(loaded, dict):
            raise DatasetError(f"{aliases}: expected an object {{question: [answer names]}}")
        alias_map = loaded
    for index, row in enumerate(read_json_list(path)):
        source = f"{path}:{index}"  # the index of the row in the JSON list
        if not isinstance(row, dict):
            raise DatasetError(f"{source}: expected a JSON object, got {type(row).__name__}")
        question = next((row[k] for k in _QUESTION_FIELDS if row.get(k)), None)
        topics, answers = _topics_and_answers(row, source)
        # ToG's WebQuestions marks unlinked topics as "UnknownMID": keep their names for label lookup.
        linked = {mid: name for mid, name in topics.items() if FREEBASE.entities.pattern.fullmatch(mid)}
        extra = {k: row[k] for k in ("compositionality_type", "relation", "level") if k in row}
        extra["unlinked_topics"] = [name for mid, name in topics.items() if mid not in linked]
        names = alias_map.get(question) or []
        yield make_example(
            source=source,
            id=next((str(row[k]) for k in _ID_FIELDS if row.get(k) is not None), f"{path.stem}-{index}"),
            question=question,
            topic_entities=list(linked),
            topic_names=list(linked.values()),
            answers=answers,
            aliases={a: others for a in answers if (others := [n for n in names if n != a])},
            **extra,
        )

