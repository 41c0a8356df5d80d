"""The packaged sentence encoder as the walk reads it: a text's vector, and so every similarity and
every order made of them, does not depend on which texts were encoded with it or before it."""

from __future__ import annotations

import numpy as np

from kgqa.programs.embedder import Embedder

TEXTS = ["founded before", "sports team location", "location country currency used", "film director film",
         "the football club founded in the city of Malaga in Spain before the civil war and its stadium"]


def test_a_text_s_vector_does_not_depend_on_what_it_was_encoded_beside():
    alone = np.stack([Embedder(shared=False).encode([text])[0] for text in TEXTS])  # a fresh cache each: encoded alone
    together = Embedder(shared=False).encode(TEXTS)  # one batch, padded to the longest
    assert together.dtype == np.float32
    assert (alone == together).all()  # bit for bit: single precision differed by about 1e-7


def test_similarities_are_the_same_whatever_was_asked_before():
    warm = Embedder(shared=False)
    warm.similarities("a question about currencies", TEXTS[2:])  # some texts cached beside others
    cold = Embedder(shared=False)
    query = "what currency is used where the team founded before 1920 plays"
    assert warm.similarities(query, TEXTS) == cold.similarities(query, TEXTS)
    assert warm.rank(query, TEXTS) == cold.rank(query, TEXTS)


def test_embedders_of_one_model_share_what_they_encoded_and_a_private_one_keeps_its_own():
    first, second, private = Embedder(), Embedder(), Embedder(shared=False)
    query = "which river flows through the capital"
    scores = first.similarities(query, TEXTS)
    assert second._cache.keys() >= {query, *TEXTS} and not private._cache  # asked once, known to every shared one
    assert second.similarities(query, TEXTS) == private.similarities(query, TEXTS) == scores
    assert first.model is second.model is private.model  # the weights read once a process
