"""Short specs for data, graphs and language models, as the command line takes them.

Data:  KIND:SOURCE[?FIELD=VALUE&...][[START:STOP]]
    demo:train                          the shipped demo split (train, dev, test)
    metaqa:PATH                         MetaQA, original format or JSONL
    metaqa:qa/metaqa_2hop_dev.jsonl?kb_exact=true[0:40]
    tog:PATH                            ToG/PoG JSON (cwq.json, WebQSP.json, grailqa.json, ...)
    rog:rmanluo/RoG-webqsp:test         RoG by hub name and split (online), or rog:PATH.parquet
    jsonl:PATH                          kgqa's JSONL
  Filters keep rows whose field equals the value; the slice applies after filtering.

Graph (--kg):
    demo                                the demo KG, in memory (profile freebase)
    embedded:DIR                        a store made by `kgqa kg load` (its profile comes with it)
    metaqa:PATH/kb.txt                  MetaQA's KB, loaded into memory
    ntriples:PATH | turtle:PATH         an RDF file, loaded into memory
    http(s)://HOST/sparql               a SPARQL endpoint (give --profile; Freebase: freebase)

LM (--lm):
    local                               Qwen2.5-Coder-1.5B-Instruct, in process (the default)
    PROVIDER/MODEL                      any LiteLLM model: openai/gpt-4o-mini, hosted_vllm/..., ollama_chat/...
    openai/MODEL --api-base URL         an OpenAI-compatible server you run (llama.cpp, vLLM, SGLang), reached
                                        directly so that every call carries its JSON schema (kgqa.lm.served)
    py:MODULE:FACTORY                   a Python factory returning a dspy.LM (scripted LMs in tests)
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import dspy

from kgqa.data.examples import DatasetError
from kgqa.errors import KGQAError

_DATA = re.compile(r"^(?P<kind>[a-z]+):(?P<source>[^?\[]+)(?:\?(?P<filters>[^\[]*))?(?:\[(?P<start>\d*):(?P<stop>\d*)\])?$")
DATA_KINDS = ("demo", "metaqa", "tog", "rog", "jsonl")


class SpecError(KGQAError, ValueError):
    """A data, graph or LM spec that cannot be understood."""


def _coerce(value: str) -> object:
    lowered = value.lower()
    if lowered in {"true", "false"}:
        return lowered == "true"
    return int(value) if value.isdigit() else value


def load_data(spec: str) -> list[dspy.Example]:
    match = _DATA.match(spec.strip())
    if not match or match["kind"] not in DATA_KINDS:
        raise SpecError(f"bad data spec {spec!r}: expected KIND:SOURCE with KIND one of {', '.join(DATA_KINDS)}")
    kind, source = match["kind"], match["source"]
    if kind == "demo":
        from kgqa.data.demo import split_path
        from kgqa.data.jsonl import load_jsonl

        try:
            examples = list(load_jsonl(split_path(source)))
        except ValueError as exc:
            raise SpecError(str(exc)) from None
    elif kind == "metaqa":
        from kgqa.data.metaqa import load_questions

        examples = list(load_questions(_existing(source)))
    elif kind == "tog":
        from kgqa.data.tog import load_tog

        examples = list(load_tog(_existing(source)))
    elif kind == "rog":
        from kgqa.data.rog import load_rog

        name, _, split = source.partition(":") if not Path(source).suffix else (source, "", "")
        examples = list(load_rog(name, split=split or "test"))
    else:
        from kgqa.data.jsonl import load_jsonl

        examples = list(load_jsonl(_existing(source)))
    for pair in filter(None, (match["filters"] or "").split("&")):
        field, _, value = pair.partition("=")
        examples = [ex for ex in examples if getattr(ex, field, None) == _coerce(value)]
    start, stop = match["start"], match["stop"]
    if start or stop:
        examples = examples[int(start or 0) : int(stop) if stop else None]
    if not examples:
        raise SpecError(f"data spec {spec!r} selects no question")
    return examples


def _existing(path: str) -> Path:
    if not Path(path).exists():
        raise DatasetError(f"no such file: {path}")
    return Path(path)


def open_kg(spec: str, *, profile: str | None = None):
    """A KnowledgeGraph for a graph spec."""
    from kgqa.kg import EmbeddedStore, KnowledgeGraph, SparqlEndpoint

    if spec.startswith(("http://", "https://")):
        return KnowledgeGraph(SparqlEndpoint(spec), profile=profile or "freebase")
    if spec == "demo":
        from kgqa.data.demo import DEMO_KG, DEMO_PROFILE

        store = EmbeddedStore()
        store.load_file(DEMO_KG, format="ntriples")
        return KnowledgeGraph(store, profile=profile or DEMO_PROFILE)
    kind, sep, source = spec.partition(":")
    if not sep:
        raise SpecError(f"bad KG spec {spec!r}: expected demo, embedded:DIR, metaqa:PATH, ntriples:PATH or an http(s) URL")
    if kind == "embedded":
        store = EmbeddedStore.open(source, read_only=True)
        return KnowledgeGraph(store, profile=profile or store.read_meta().get("profile", "generic"))
    if kind in {"metaqa", "ntriples", "turtle"}:
        from kgqa.data.kb import build_store

        store, guessed, _ = build_store([source], format=kind, profile=profile)
        return KnowledgeGraph(store, profile=guessed)
    raise SpecError(f"bad KG spec {spec!r}: unknown kind {kind!r}")


def make_lm(spec: str, *, api_base: str | None = None, temperature: float | None = None, max_tokens: int | None = None) -> dspy.LM:
    """A dspy.LM for an LM spec. API keys come from the environment (LiteLLM reads them) and are never stored."""
    if spec == "local":
        from kgqa.lm.local import local_lm

        return local_lm()
    if spec.startswith("py:"):
        module_name, _, factory = spec[3:].partition(":")
        try:
            made = getattr(importlib.import_module(module_name), factory)()
        except (ImportError, AttributeError) as exc:
            raise SpecError(f"bad LM spec {spec!r}: {exc}") from None
        if not isinstance(made, dspy.BaseLM):
            raise SpecError(f"bad LM spec {spec!r}: the factory returned {type(made).__name__}, not a dspy.LM")
        return made
    if "/" not in spec:
        raise SpecError(f"bad LM spec {spec!r}: use local, PROVIDER/MODEL (LiteLLM) or py:MODULE:FACTORY")
    if spec.startswith("openai/") and api_base:
        from kgqa.lm.served import served_lm

        return served_lm(spec, api_base=api_base, temperature=temperature, max_tokens=max_tokens)
    options = {k: v for k, v in {"api_base": api_base, "temperature": temperature, "max_tokens": max_tokens}.items() if v is not None}
    return dspy.LM(spec, **options)
