"""The relation table's keys and rows: a term's key is the same wherever the term stands in a chunk
(and as a lookup computes it), and rows of many entities are found one by one."""

from __future__ import annotations

import numpy as np
import pytest

from kgqa.kg.relation_table import RelationTable, TermHasher, term_keys

TERMS = ["<http://example.org/a>", "<http://example.org/b>", "_:b0", "<http://example.org/Zürich>", "<x>", "<http://example.org/aa>"]


def test_a_terms_key_is_the_same_wherever_it_stands_in_a_chunk_and_as_a_lookup_computes_it():
    text = "".join(f"{'#' * shift}{term} " for shift, term in enumerate(TERMS)).encode()
    starts = np.array([text.index(term.encode()) for term in TERMS])
    ends = starts + [len(term.encode()) for term in TERMS]
    chunk = TermHasher().keys(np.frombuffer(text, np.uint8), starts, ends).tolist()
    assert chunk == term_keys(TERMS).tolist()
    assert len(set(chunk)) == len(TERMS)  # "<x>" and its prefix-sharing neighbours differ too
    assert term_keys(["<http://example.org/a>"]) != term_keys(["<http://example.org/a> "])  # a term's length is part of it


@pytest.mark.parametrize("on_disk", [True, False])
def test_many_entities_are_found_one_by_one_and_the_absent_are_not(tmp_path, on_disk):
    terms = [f"<http://example.org/e{i}>" for i in range(323)]
    keys = term_keys(terms)
    tokens = [">http://example.org/p", ">http://example.org/q", "<http://example.org/p"]
    pairs = sorted((key, i % 3) for i, key in enumerate(keys.tolist())) + sorted((key, 2) for key in keys[::7].tolist())
    pairs = sorted(set(pairs))
    arrays = np.array([k for k, _ in pairs], np.int64), np.array([t for _, t in pairs], np.uint32)
    half = int(np.searchsorted(arrays[0], 0))  # written as two key ranges, as the runs' merge hands them
    table = RelationTable.write([(arrays[0][:half], arrays[1][:half]), (arrays[0][half:], arrays[1][half:])], tokens, ["http://example.org/p"],
                                directory=tmp_path if on_disk else None, stamp="s")
    expected = {}
    for key, token in pairs:
        expected.setdefault(key, []).append(tokens[token])
    found = table.relations([*terms, "<http://example.org/none>"])
    assert found == {term: " ".join(expected[key]) for term, key in zip(terms, keys.tolist())}
    assert table.entities() == {key: set(values) for key, values in expected.items()}
    assert table.edge_relations() == ["http://example.org/p"]
    if on_disk:
        assert RelationTable.open(tmp_path, stamp="s").relations(terms[:2]) == {t: found[t] for t in terms[:2]}
        (tmp_path / "relations.sqlite.numbers").write_bytes(b"")  # a write killed between its files
        assert RelationTable.open(tmp_path, stamp="s") is None
