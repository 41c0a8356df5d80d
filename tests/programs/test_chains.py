"""The chain prior: training questions vote for the relation chains questions like them went by."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from kgqa.programs.chains import ChainPrior
from kgqa.programs.embedder import Embedder
from kgqa.programs.question import question_shape

ACTED = ("film.actor.film", "film.performance.film")
BORN = ("people.person.place_of_birth",)
DIRECTED = ("film.film.directed_by",)

TRAIN = [
    ("What movies did Tom Hanks star in?", [list(ACTED)]),
    ("Which films has Miley Cyrus acted in?", [list(ACTED)]),
    ("What films did Ron Howard appear in?", [list(ACTED), list(DIRECTED)]),
    ("Where was Barack Obama born?", [list(BORN)]),
    ("What city was Lauren Conrad born in?", [list(BORN)]),
    ("What is the capital of France?", []),  # no gold path: not kept
]


@pytest.fixture(scope="module")
def embedder():
    return Embedder()


def test_fit_keeps_the_questions_with_gold_paths_each_path_once():
    prior = ChainPrior.fit([*TRAIN, ("Where was Obama born?", [list(BORN), list(BORN)])])
    assert prior.trained
    assert "What is the capital of France?" not in prior.questions
    assert prior.chains[-1] == [BORN]
    assert not ChainPrior().trained


def test_the_nearest_questions_vote_for_their_chains_and_prefixes(embedder):
    prior = ChainPrior.fit(TRAIN, neighbours=3)
    votes = prior.votes("Which movies did Julia Roberts star in?", embedder.encode)
    assert votes.chain(ACTED) > 0.9  # all three film questions went by it
    assert 0 < votes.chain(DIRECTED) < votes.chain(ACTED)
    assert votes.chain(BORN) == 0.0  # not among the three nearest
    assert votes.prefix(ACTED[:1]) == pytest.approx(votes.chain(ACTED))
    assert votes.chain(ACTED[:1]) == 0.0  # a prefix is no whole chain
    born = prior.votes("In which town was Abraham Lincoln born?", embedder.encode)
    assert max(born.chains, key=born.chains.get) == BORN


def test_an_untrained_prior_or_an_unlike_question_has_no_votes(embedder):
    assert ChainPrior().votes("Which movies did Julia Roberts star in?", embedder.encode).chains == {}
    prior = ChainPrior.fit(TRAIN)
    assert prior.votes("zxq vrrp 9931 kk", embedder.encode).chains == {}  # nothing similar enough to vote


def test_it_round_trips_through_json_and_rejects_a_tampered_file(embedder):
    prior = ChainPrior.fit(TRAIN, neighbours=4)
    copy = ChainPrior.from_dict(json.loads(json.dumps(prior.to_dict())))
    assert copy == prior
    hot = ChainPrior.fit(TRAIN, neighbours=4)
    hot.temperature = 0.02
    assert ChainPrior.from_dict(json.loads(json.dumps(hot.to_dict()))).temperature == 0.02
    question = "Where was Lauren Conrad born?"
    assert copy.votes(question, embedder.encode) == prior.votes(question, embedder.encode)
    state = prior.to_dict()
    for bad, message in [({**state, "version": 3}, "version 1 or 2"), ({**state, "neighbours": 0}, "neighbours"),
                         ({**state, "key": "words"}, "key must be one of"), ({**state, "temperature": 0}, "temperature"),
                         ({**state, "temperature": "hot"}, "temperature"),
                         ({**state, "questions": state["questions"][:-1]}, "chains must hold"),
                         ({**state, "chains": [[["ok"], []]] * len(state["questions"])}, "chains must hold"),
                         ({**state, "questions": [1] * len(state["questions"])}, "questions must be")]:
        with pytest.raises(ValueError, match=message):
            ChainPrior.from_dict(bad)


def test_warming_encodes_the_training_questions_once_before_the_first_question(embedder):
    asked: list[list[str]] = []

    def encode(texts):
        asked.append(list(texts))
        return embedder.encode(texts)

    prior = ChainPrior.fit(TRAIN, neighbours=3)
    prior.warm(encode)
    prior.warm(encode)
    assert asked == [prior.questions]
    votes = prior.votes("Which movies did Meg Ryan star in?", encode)
    assert asked[1:] == [["Which movies did Meg Ryan star in?"]]  # the question alone, the training questions not again
    assert votes.chain(ACTED) > 0.5
    ChainPrior().warm(encode)  # an untrained prior has nothing to encode
    assert len(asked) == 2


def test_a_prior_keyed_by_shape_is_asked_by_shape_and_a_version_1_file_was_keyed_as_written(embedder):
    # as written, "Who starred in Heat?" shares its film with "Who directed Heat?"; by shape it is
    # "Who starred in X?", what the training questions about other films' stars were
    written = [("Who directed Heat?", [list(DIRECTED)]), ("Who starred in Alien?", [list(ACTED)]),
               ("Who starred in Jaws?", [list(ACTED)])]
    prior = ChainPrior.fit([(question_shape(q, [q.split()[-1][:-1]]), paths) for q, paths in written], neighbours=1, key="shape")
    assert prior.questions == ["Who directed X?", "Who starred in X?", "Who starred in X?"]
    votes = prior.ask("Who starred in Heat?", ["Heat"], embedder.encode)
    assert votes.chains == {ACTED: pytest.approx(1.0)}
    assert ChainPrior.from_dict(json.loads(json.dumps(prior.to_dict()))).key == "shape"
    old = {**ChainPrior.fit(written).to_dict(), "version": 1}
    old.pop("key")
    assert ChainPrior.from_dict(old).key == "question"
    with pytest.raises(ValueError, match="keyed by one of"):
        ChainPrior.fit(written, key="words")


def test_the_key_that_answers_the_training_questions_best_is_chosen(embedder):
    # each film asked two ways: as written a question's nearest other is about the same film, by
    # shape it is the same question about another film
    films = ("Heat", "Alien", "Jaws", "Up", "Ran")
    labeled = [(f"Who directed {film}?", [film], [list(DIRECTED)]) for film in films]
    labeled += [(f"Who starred in {film}?", [film], [list(ACTED)]) for film in films]
    by_shape = ChainPrior.fit(((question_shape(q, t), paths) for q, t, paths in labeled), neighbours=1, key="shape")
    written = ChainPrior.fit(((q, paths) for q, _, paths in labeled), neighbours=1)
    assert by_shape.self_score(embedder.encode) == 1.0  # every neighbour asks the same about another film
    chosen = ChainPrior.fit_best(labeled, embedder.encode, neighbours=1)
    assert chosen.key == ("shape" if by_shape.self_score(embedder.encode) > written.self_score(embedder.encode) else "question")
    assert chosen.ask("Who starred in Taxi Driver?", ["Taxi Driver"], embedder.encode).sure(0.5) == ACTED
    assert ChainPrior().self_score(embedder.encode) == 0.0


WRITERS_FILMS_STARS = ("written_by", "written_by", "starred_actors")
STARS_FILMS_WRITERS = ("starred_actors", "written_by")


def test_with_a_temperature_questions_asked_just_alike_outvote_the_merely_alike_and_compiling_chooses_it(embedder):
    # MetaQA's "the films written by the writer of [X] starred who" goes by three relations; the
    # template worded almost alike, "who are the writers of the films starred by [X]", by two
    labeled = [(f"the films written by the writer of [{film}] starred who", [film], [list(WRITERS_FILMS_STARS)])
               for film in ("Heat", "Alien")]
    labeled += [(f"who are the writers of the films starred by [{actor}]", [actor], [list(STARS_FILMS_WRITERS)])
                for actor in ("Tom Hanks", "Meg Ryan", "Al Pacino")]
    question, topics = "the films written by the writer of [Red Beard] starred who", ["Red Beard"]
    linear = ChainPrior.fit_keyed(labeled, key="shape", neighbours=5)
    votes = linear.ask(question, topics, embedder.encode)
    assert votes.chain(STARS_FILMS_WRITERS) > votes.chain(WRITERS_FILMS_STARS)  # three alike outvote two the same
    sharp = ChainPrior.fit_keyed(labeled, key="shape", neighbours=5)
    sharp.temperature = 0.01
    assert sharp.ask(question, topics, embedder.encode).sure(0.9) == WRITERS_FILMS_STARS
    assert sharp.self_score(embedder.encode) > linear.self_score(embedder.encode)
    chosen = ChainPrior.fit_best(labeled, embedder.encode, neighbours=5)
    assert chosen.temperature is not None and chosen.ask(question, topics, embedder.encode).sure(0.6) == WRITERS_FILMS_STARS


WRITERS_WRITERS = ("written_by", "written_by")


def test_a_question_unlike_every_training_question_gets_no_votes_and_a_prior_saved_before_votes_on_any(embedder):
    # fitted on 2- and 3-hop questions alone, the nearest template to the 1-hop "who is the writer of
    # [X]" is "who is the writer of the films written by [X]": the prior would be sure of its chain
    films = ("Heat", "Alien", "Jaws", "Up", "Ran")
    labeled = [(f"who is the writer of the films written by [{film}]", [film], [list(WRITERS_WRITERS)]) for film in films]
    labeled += [(f"the films written by the writer of [{film}] starred who", [film], [list(WRITERS_FILMS_STARS)])
                for film in films]
    prior = ChainPrior.fit_best(labeled, embedder.encode, neighbours=5)
    one_hop, topics = "who is the writer of [Red Beard]", ["Red Beard"]
    assert prior.familiar_at is not None and prior.ask(one_hop, topics, embedder.encode).chains == {}
    assert replace(prior, familiar_at=None).ask(one_hop, topics, embedder.encode).sure(0.9) == WRITERS_WRITERS
    for question, chain in (("who is the writer of the films written by [Red Beard]", WRITERS_WRITERS),
                            ("the films written by the writer of [Red Beard] starred who", WRITERS_FILMS_STARS)):
        assert prior.ask(question, topics, embedder.encode).sure(0.9) == chain  # questions asked alike still get votes
    copy = ChainPrior.from_dict(json.loads(json.dumps(prior.to_dict())))
    assert copy.familiar_at == prior.familiar_at and copy.ask(one_hop, topics, embedder.encode).chains == {}
    older = {k: v for k, v in prior.to_dict().items() if k != "familiar_at"}
    assert ChainPrior.from_dict(older).ask(one_hop, topics, embedder.encode).sure(0.9) == WRITERS_WRITERS
    with pytest.raises(ValueError, match="familiar_at"):
        ChainPrior.from_dict({**prior.to_dict(), "familiar_at": 2})
    assert ChainPrior.fit([("Who directed Heat?", [list(DIRECTED)])]).familiarity() is None  # one question: no measure
    same = ChainPrior.fit_best([(f"who directed [{film}]", [film], [list(DIRECTED)]) for film in ("Heat", "Alien", "Up")],
                               embedder.encode)  # every question keyed alike: 1 apart, give or take a rounding
    assert ChainPrior.from_dict(json.loads(json.dumps(same.to_dict()))).familiar_at == same.familiar_at <= 1.0
