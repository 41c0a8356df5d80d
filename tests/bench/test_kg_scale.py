"""The scale bench: graphs grown around real questions keep their facts, reach the size asked and
grow hubs; the command loads each size into each backend, walks the questions, and says which
answers are those of the smallest graph (CI runs the 10^5 size only)."""

from __future__ import annotations

import gzip
import itertools
import json

import pytest

from bench.kg_scale import TimedBackend, base_graph, grow, inverse_pairs, main, protected, questions, write_graph
from kgqa.kg.graph import MIRRORS_FILE

WALKED = 3  # questions the commands walk: a walk embeds each hop's names, minutes a dozen questions on a slow CPU


@pytest.fixture(scope="module")
def examples(shared_data):
    return questions(12)


def test_a_grown_graph_keeps_the_questions_facts_reaches_its_size_and_grows_hubs(examples, tmp_path):
    base, keep = base_graph(examples), protected(examples)
    facts, growth = grow(base, keep, 20_000, seed=3)
    path = tmp_path / "g.nt.gz"
    assert write_graph(path, facts, 20_000) == 20_000
    lines = gzip.open(path, "rt", encoding="utf-8").read().splitlines()
    assert len(lines) == 20_000 and len(set(lines)) > 19_000  # a grown fact now and then drawn twice
    facts_again, _ = grow(base, keep, 20_000, seed=3)
    write_graph(tmp_path / "again.nt.gz", facts_again, 20_000)
    assert gzip.open(tmp_path / "again.nt.gz", "rt", encoding="utf-8").read().splitlines() == lines  # seeded
    assert len(growth.hubs) == 4 and not set(growth.hubs) & keep
    sizes = list(growth.hubs.values())
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 1_000  # past the walk's cap
    grown = [line for line in lines if "/entity/grown%20" in line or "/entity/m.0grown" in line]
    touched = {name for name in keep for line in grown if f"/entity/{name.replace(' ', '%20')}>" in line}
    assert grown and not touched  # nothing grown touches a topic entity or an answer


def test_grown_facts_of_the_bases_inverse_pairs_are_stated_both_ways_round_as_in_freebase(examples):
    base = base_graph(examples)
    mirror = inverse_pairs(base)
    assert mirror["film.film.starring"] == "film.performance.film" and mirror["film.performance.film"] == "film.film.starring"
    assert all(mirror[q] == p for p, q in mirror.items())
    facts, growth = grow(base, protected(examples), 20_000, seed=3)
    grown = list(itertools.islice(facts, len(base) + 30_000))[len(base):]
    assert growth.inverses == len(mirror) // 2
    stated = set(grown)
    paired = [(h, r, t) for h, r, t in grown if r in mirror]
    assert len(paired) > 1_000 and all((t, mirror[r], h) in stated for h, r, t in paired[:-1])  # the last may be cut
    assert any(r not in mirror for _, r, _ in grown)  # the others one way only


def test_the_command_loads_walks_and_compares_each_size_on_both_backends(examples, tmp_path, virtuoso_installed):
    out = tmp_path / "out"
    assert main(["--sizes", "6e4,1e5", "--questions", str(WALKED), "--systems", "similarity,linking",
                 "--work", str(tmp_path / "work"), "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    walks = {(line["size"], line["backend"]): line for line in manifest["lines"] if line["system"] == "similarity"}
    links = {(line["size"], line["backend"]): line for line in manifest["lines"] if line["system"] == "linking"}
    assert set(walks) == set(links) == {(60_000, "embedded"), (60_000, "virtuoso"), (100_000, "embedded"), (100_000, "virtuoso")}
    for (size, _), line in walks.items():
        assert line["load"]["triples"] == size and line["load"]["seconds"] > 0 and line["walk_peak_mb"] > 0
        assert line["questions"] == WALKED and line["errors"] == 0 and line["queries"] > 0 and line["rows"] > 0
        assert line["exact"] is None
    for line in links.values():  # the uncompiled linker finds some questions' topic entities exactly, from the names alone
        assert line["questions"] == WALKED and line["errors"] == 0 and 0 < line["exact"] <= WALKED and line["kg_seconds"] > 0
    assert all(lines[60_000, b]["same"] == WALKED for lines in (walks, links) for b in ("embedded", "virtuoso"))  # the smallest is its own reference
    for backend in ("embedded", "virtuoso"):
        records = [json.loads(r) for r in gzip.open(out / "records" / f"100000-{backend}.jsonl.gz", "rt")]
        assert [r["setup"] for r in records[:2]] == [True, "linking"] and records[1]["names"] == "NameIndex"
        assert len(records) == 2 + 2 * WALKED
    table = (out / "table.md").read_text()
    assert table.count("| similarity |") == table.count("| linking |") == 4 and (out / "cost.png").stat().st_size > 0


def test_a_run_resumes_what_it_made_and_walked_and_reloads_nothing_it_has(examples, tmp_path):
    work, out = tmp_path / "work", tmp_path / "out"

    def walked(sizes: str) -> list[str]:
        return ["--sizes", sizes, "--backends", "embedded", "--questions", str(WALKED), "--systems", "similarity", "--work", str(work)]

    options = walked("6e4,7e4")
    assert main([*options, "--out", str(out)]) == 0
    graph, store, records = work / "graph-60000.nt.gz", work / "store-60000", out / "records" / "60000-embedded.jsonl.gz"
    mirrors = store / MIRRORS_FILE  # kept beside the store by the walk's client
    larger = work / "store-70000" / "CURRENT"
    made = {path: path.stat().st_mtime_ns for path in (graph, store / "CURRENT", records, mirrors, larger)}
    assert not (work / "graph-70000.nt.gz").exists()  # a larger size's graph is removed once walked
    first = json.loads((out / "manifest.json").read_text())
    assert main([*options, "--out", str(out)]) == 0  # walked before: nothing made or walked again
    assert {path: path.stat().st_mtime_ns for path in made} == made and not (work / "graph-70000.nt.gz").exists()
    assert json.loads((out / "manifest.json").read_text())["lines"] == first["lines"]
    elsewhere = tmp_path / "elsewhere"
    assert main([*options, "--out", str(elsewhere)]) == 0  # the graphs and stores reused (the larger graph written again), the walks made again
    assert graph.stat().st_mtime_ns == made[graph] and (store / "CURRENT").stat().st_mtime_ns == made[store / "CURRENT"]
    assert larger.stat().st_mtime_ns == made[larger]
    again = json.loads((elsewhere / "manifest.json").read_text())["lines"][0]
    assert again["load"] == first["lines"][0]["load"] and again["same"] == again["questions"] == WALKED
    assert mirrors.stat().st_mtime_ns != made[mirrors]  # what the first client kept beside the store: removed, paid again
    # one size is enough here: a walk is a process of its own
    assert main([*walked("6e4"), "--seed", "1", "--out", str(elsewhere)]) == 0  # another graph: written, loaded and walked
    assert graph.stat().st_mtime_ns != made[graph] and (store / "CURRENT").stat().st_mtime_ns != made[store / "CURRENT"]


def test_bad_options_are_one_line(capsys):
    with pytest.raises(SystemExit, match="--sizes takes numbers"):
        main(["--sizes", "big"])
    with pytest.raises(SystemExit, match="--backends takes some of embedded, virtuoso"):
        main(["--backends", "neo4j"])
    with pytest.raises(SystemExit, match="need --program"):
        main(["--systems", "program"])


def test_a_timed_store_stamps_what_is_kept_beside_it_by_its_size():
    from kgqa.kg import EmbeddedStore, KnowledgeGraph

    store = EmbeddedStore()
    timed = TimedBackend(store)
    assert len(timed) == len(store) == 0
    assert KnowledgeGraph(timed, profile="rog")._stamp() == "rog:0"  # not "rog:None", which any store would match
