from __future__ import annotations

import pytest

from kgqa.data.demo import DEMO_KG
from kgqa.data.examples import DatasetError
from kgqa.data.kb import build_store, guess_format, store_stats
from kgqa.kg import EmbeddedStore, KGError, KnowledgeGraph


def test_a_store_on_disk_reopens_with_its_profile(tmp_path):
    store, profile, reports = build_store([DEMO_KG], path=tmp_path / "store")
    assert profile == "freebase" and reports[0].triples == reports[0].total == len(store) > 500
    del store
    reopened = EmbeddedStore.open(tmp_path / "store")
    meta = reopened.read_meta()
    assert meta["profile"] == "freebase" and meta["sources"][0]["format"] == "ntriples"
    kg = KnowledgeGraph(reopened, profile=meta["profile"])
    stats = store_stats(kg)
    assert stats["triples"] == reports[0].triples
    assert 250 <= stats["entities"] <= 400 and 20 <= stats["relations"] <= 30


def test_a_load_ends_compacted_so_compacting_again_rewrites_no_file(tmp_path):
    lines = DEMO_KG.read_bytes().splitlines(keepends=True)
    halves = tmp_path / "first.nt", tmp_path / "second.nt"  # each bulk load writes files of its own (9 here, 5 compacted)
    halves[0].write_bytes(b"".join(lines[:500]))
    halves[1].write_bytes(b"".join(lines[500:]))
    store, _, _ = build_store(list(halves), path=tmp_path / "store")
    assert store.read_meta()["compact_seconds"] >= 0

    def files() -> set[str]:
        store.store.flush()
        return {path.name for path in (tmp_path / "store").glob("*.sst")}

    loaded = files()
    store.compact()
    assert files() == loaded  # a store the bulk loader left as it wrote it has files a compaction merges
    memory, _, _ = build_store([DEMO_KG])
    assert memory.compact() == 0.0 and memory.read_meta() == {}


def test_formats_and_errors(tmp_path):
    assert guess_format("kb.txt") == "metaqa" and guess_format("x.nt") == "ntriples" and guess_format("g.parquet") == "rog"
    with pytest.raises(DatasetError, match="cannot tell the format"):
        guess_format("graph.xyz")
    with pytest.raises(DatasetError, match="no such file"):
        build_store([tmp_path / "missing.nt"])
    bad = tmp_path / "bad.nt"
    bad.write_text("<http://a> <http://b> .\n")
    with pytest.raises(KGError, match="cannot load"):
        build_store([bad])
    with pytest.raises(KGError, match="no kgqa store"):
        EmbeddedStore.open(tmp_path / "nothing")


def test_metaqa_kb_becomes_a_metaqa_store(shared_data, tmp_path):
    store, profile, _ = build_store([shared_data / "metaqa" / "kb.txt"], path=tmp_path / "m")
    assert profile == "metaqa"
    stats = store_stats(KnowledgeGraph(store, profile=profile))
    assert stats["relations"] == 9 and stats["entities"] > 40_000


def test_a_gzipped_source_streams_into_the_same_store_and_a_bad_triple_names_its_line(tmp_path):
    import gzip
    import io

    from kgqa.progress import Progress

    plain = DEMO_KG.read_bytes()
    packed = tmp_path / "demo.nt.gz"
    packed.write_bytes(gzip.compress(plain))
    assert guess_format(packed) == "ntriples" and guess_format("kb.txt.gz") == "metaqa"
    bars = io.StringIO()
    store, profile, reports = build_store([packed], path=tmp_path / "store", progress=Progress(bars))
    assert profile == "freebase" and reports[0].triples == len(build_store([DEMO_KG])[0])
    assert "demo.nt.gz: 100%" in bars.getvalue()  # the bar of the file's bytes read
    lines = plain.decode().splitlines()
    broken = tmp_path / "broken.nt.gz"
    broken.write_bytes(gzip.compress("\n".join([*lines[:40], "<http://a/x> <http://a/p> oops .", *lines[40:]]).encode()))
    with pytest.raises(KGError, match=r"cannot load .*broken\.nt\.gz: .*line 41"):
        build_store([broken], path=tmp_path / "broken")
    with pytest.raises(KGError, match="was still loading .*broken.nt.gz when the load stopped: run the same"):
        EmbeddedStore.open(tmp_path / "broken", read_only=True)  # half a source is not a store to answer from
    cut = tmp_path / "cut.nt.gz"
    cut.write_bytes(gzip.compress(plain)[:2000])
    with pytest.raises(KGError, match="cannot load .*cut.nt.gz"):
        build_store([cut])


def test_a_store_whose_load_was_killed_refuses_to_open_until_the_same_load_runs_again(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    big = tmp_path / "big.nt"
    with big.open("w") as out:  # enough triples that the load is still running when it is killed
        for n in range(150_000):
            out.write(f'<http://x/e{n}> <http://x/p{n % 13}> <http://x/e{(n * 7919) % 150_000}> .\n<http://x/e{n}> <http://x/name> "e {n}" .\n')
    store = tmp_path / "store"
    command = [sys.executable, "-m", "kgqa", "kg", "load", str(big), "--store", str(store)]
    loading = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (store / "kgqa-store.json").exists():
        time.sleep(0.01)
    assert loading.poll() is None, "the load ended before it could be killed"
    os.kill(loading.pid, signal.SIGKILL)  # its metadata, written first, says it is loading
    loading.wait(timeout=30)
    with pytest.raises(KGError, match=f"the store at {store} was still loading {big} when the load stopped"):
        EmbeddedStore.open(store, read_only=True)
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert len(EmbeddedStore.open(store, read_only=True)) == 300_000  # each triple once


def test_two_sources_are_indexed_once_after_the_last_with_the_relations_of_both(tmp_path):
    first, second = tmp_path / "first.nt", tmp_path / "second.txt"
    first.write_text("<http://kgqa.local/metaqa/entity/Heathers> <http://kgqa.local/metaqa/relation/written_by> "
                     "<http://kgqa.local/metaqa/entity/Daniel%20Waters> .\n")
    second.write_text("Heathers|directed_by|Michael Lehmann\n")
    store, profile, reports = build_store([first, second], path=tmp_path / "store")
    assert profile == "metaqa" and reports[0].triples == 1 and reports[1].triples >= 1
    kg = KnowledgeGraph(store, profile="metaqa")
    assert {edge.relation for edge in kg.relations(["Heathers"])["Heathers"]} == {"written_by", "directed_by"}
    assert store.read_meta()["sources"][1]["format"] == "metaqa" and "loading" not in store.read_meta()


def test_a_new_store_of_n_triples_is_indexed_as_read_and_a_mixed_one_by_reading_back(tmp_path, read_backs):
    import gzip

    packed = tmp_path / "demo.nt.gz"
    packed.write_bytes(gzip.compress(DEMO_KG.read_bytes()))
    store, _, _ = build_store([packed], path=tmp_path / "store")
    assert read_backs == []  # gathered from the bytes the loader read
    kg = KnowledgeGraph(store, profile="freebase")
    gathered = kg.relations(["m.0dm001"])
    assert gathered["m.0dm001"]
    store.index_relations()
    assert read_backs == [1] and KnowledgeGraph(store, profile="freebase").relations(["m.0dm001"]) == gathered
    kb = tmp_path / "kb.txt"
    kb.write_text("Heathers|directed_by|Michael Lehmann\n")
    build_store([DEMO_KG, kb], path=tmp_path / "mixed")  # MetaQA's triples are made in Python, not read as N-Triples
    assert read_backs == [1, 1]
