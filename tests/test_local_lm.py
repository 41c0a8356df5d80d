"""The default local LM on a tiny prompt, when its packages are installed (CI installs them)."""

from __future__ import annotations

import dspy
import pytest

from kgqa.lm import local, model
from tests.conftest import IN_CI, require_local_lm


@pytest.fixture(scope="module")
def lm():
    require_local_lm()
    return local.local_lm(max_tokens=64)


def test_the_assembled_model_is_the_recorded_file():
    try:
        path = model.model_path()
    except model.LocalModelError as exc:
        if IN_CI:
            raise
        pytest.skip(str(exc))
    assert path.stat().st_size == model.GGUF_SIZE
    assert path.read_bytes()[:4] == b"GGUF"


def test_a_signature_through_the_engine(lm):
    class Capital(dspy.Signature):
        """Name the capital city of the country."""

        country: str = dspy.InputField()
        capital: str = dspy.OutputField()

    with dspy.context(lm=lm, track_usage=True):
        prediction = dspy.Predict(Capital)(country="France")
    assert "paris" in prediction.capital.lower()
    usage = prediction.get_lm_usage()[lm.model]
    assert usage["prompt_tokens"] > 50 and usage["completion_tokens"] > 0


def test_repeated_prefixes_are_not_processed_again(lm):
    class Echo(dspy.Signature):
        """Repeat the word exactly, in lower case, and nothing else. This instruction is long on purpose so
        that the shared prefix of every call is a good part of the prompt: system message, field
        descriptions and the rules of the output format all come before the one word that changes."""

        word: str = dspy.InputField()
        repeated: str = dspy.OutputField()

    with dspy.context(lm=lm):
        for word in ("apple", "river", "stone"):
            dspy.Predict(Echo)(word=word)
    first, *later = lm.local_engine.stats.calls[-3:]
    assert all(c["prompt_tokens"] > 150 for c in (first, *later))
    # after the first call, the instructions' KV state comes from the prefix cache
    assert all(c["processed_tokens"] < c["prompt_tokens"] // 3 for c in later), lm.local_engine.stats.calls[-3:]


class Pick(dspy.Signature):
    """Pick the candidate that is a colour."""

    candidates: list[str] = dspy.InputField()
    picked: list[str] = dspy.OutputField()


def pick_one(lm, offered: list[str]) -> list[str]:
    """The constrained choice of one of `offered`, as the program's steps make it."""
    from kgqa.lm.adapter import ConstrainedJSONAdapter, choices

    signature = Pick.with_updated_fields("picked", type_=choices(offered, at_most=1))
    with dspy.context(lm=lm, adapter=ConstrainedJSONAdapter()):
        return dspy.Predict(signature)(candidates=offered).picked


def test_a_json_schema_constrains_the_local_model_to_the_candidates(lm):
    assert pick_one(lm, ["table", "crimson", "seven"]) == ["crimson"]
    assert lm.local_engine.stats.calls[-1]["completion_tokens"] < 20  # '{"picked": ["crimson"]}' and no more


def test_a_candidate_with_quotes_and_a_backslash_is_offered_without_aborting_the_engine(lm):
    # llama-cpp-python's grammar of these literals once failed to parse and llama.cpp aborted the process
    picked = pick_one(lm, ['a table called "Winter"', 'the colour "crimson"', "AC\\DC"])
    assert picked == ["the colour 'crimson'"]  # respelled for the grammar; the program snaps it back


def test_the_compact_adapter_keeps_the_answer_short(lm):
    from kgqa.lm.adapter import CompactChatAdapter

    class Colours(dspy.Signature):
        """List the colours of the flag of the country."""

        country: str = dspy.InputField()
        colours: list[str] = dspy.OutputField()

    with dspy.context(lm=lm, adapter=CompactChatAdapter()):
        prediction = dspy.Predict(Colours)(country="France")
    assert {c.lower() for c in prediction.colours} >= {"blue", "white", "red"}
    completion = lm.history[-1]["outputs"][0] if lm.history else ""
    assert "# note" not in str(completion)
