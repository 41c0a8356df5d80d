"""The `kgqa` command line. Parsing and printing live here; the work lives in the packages."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

from kgqa.data.kb import FORMATS  # noqa: E402
from kgqa.errors import USER_ERRORS, user_paths  # noqa: E402
from kgqa.kg.profiles import PROFILES  # noqa: E402
from kgqa.optimizers.teleprompters import TELEPROMPTERS, Budget  # noqa: E402
from kgqa.programs import SWITCHES  # noqa: E402
from kgqa.programs.config import WalkConfig  # noqa: E402
from kgqa.server import ServeLimits  # noqa: E402


def _kg_load(args: argparse.Namespace) -> int:
    from kgqa.data.kb import build_store
    from kgqa.progress import Progress

    store, profile, reports = build_store(args.sources, path=args.store, format=args.format, profile=args.profile,
                                          progress=Progress(sys.stderr))
    for r in reports:
        print(f"loaded {r.source} ({r.format}): {r.triples:,} triples in {r.seconds:.2f} s")
    print(f"compacted in {store.read_meta()['compact_seconds']:.2f} s")
    print(f"store {args.store}: {reports[-1].total:,} triples, profile {profile}")
    return 0


def _kg_compact(args: argparse.Namespace) -> int:
    from kgqa.kg import EmbeddedStore

    store = EmbeddedStore.open(args.store)
    seconds = store.compact()
    store.write_meta(compact_seconds=round(seconds, 3))
    print(f"store {args.store}: compacted in {seconds:.2f} s")
    return 0


def _kg_stats(args: argparse.Namespace) -> int:
    from kgqa.data.kb import store_stats
    from kgqa.kg import EmbeddedStore, KnowledgeGraph

    store = EmbeddedStore.open(args.store, read_only=True)
    meta = store.read_meta()
    kg = KnowledgeGraph(store, profile=args.profile or meta.get("profile", "generic"))
    stats = {"store": str(args.store), "profile": kg.profile.name, **store_stats(kg)}
    stats["load_seconds"], stats["compact_seconds"] = meta.get("load_seconds"), meta.get("compact_seconds")
    stats["relation_index"] = store.relation_table is not None  # absent: made before it, or changed since; load again
    if args.json:
        print(json.dumps(stats))
    else:
        for key, value in stats.items():
            print(f"{key:>14}: {value:,}" if type(value) is int else f"{key:>14}: {value}")
    return 0


def _configure_lm(spec: str, args: argparse.Namespace):
    import dspy

    from kgqa.lm.adapter import ConstrainedJSONAdapter
    from kgqa.specs import make_lm
    from kgqa.workflow import check_lm

    lm = make_lm(spec, api_base=getattr(args, "api_base", None))
    check_lm(lm, spec)
    dspy.configure(lm=lm, adapter=ConstrainedJSONAdapter())
    return lm


def _walk_config(args: argparse.Namespace, base: dict | None = None):

    knobs = dict(base or {})
    for name in ("depth", "beam_width", "max_llm_calls", "scorer_sure"):
        if getattr(args, name, None) is not None:
            knobs[name] = getattr(args, name)
    if getattr(args, "topic_choice", False):
        knobs["topic_choice"] = True
    for step in getattr(args, "off", None) or ():
        knobs[step] = False
    return WalkConfig(**knobs)


def _compile(args: argparse.Namespace) -> int:
    from kgqa.programs.saving import read_settings
    from kgqa.specs import load_data, make_lm, open_kg
    from kgqa.workflow import compile_to_dir

    trainset = load_data(args.train)
    devset = load_data(args.dev) if args.dev else None
    kg = open_kg(args.kg, profile=args.profile)
    _configure_lm(args.lm, args)
    teacher = make_lm(args.teacher_lm, api_base=args.api_base) if args.teacher_lm else None
    reflection = make_lm(args.reflection_lm, api_base=args.api_base) if args.reflection_lm else None
    settings = {"kg": args.kg, "profile": kg.profile.name, "lm": args.lm, "teacher_lm": args.teacher_lm,
                "train": args.train, "dev": args.dev}
    summaries = compile_to_dir(
        kg=kg, trainset=trainset, devset=devset, optimizer=args.optimizer, out=args.out, settings=settings,
        walk=_walk_config(args),
        budget=Budget(demos=args.demos, step_demos=args.step_demos, sufficiency_demos=args.sufficiency_demos,
                      scorer_questions=args.scorer_questions,
                      candidates=args.candidates, trials=args.trials, seed=args.seed, threads=args.threads),
        teacher=teacher, reflection=reflection, tracking_uri=args.tracking_uri, experiment=args.experiment,
        threads=args.threads, progress=not args.quiet, register=args.register,
    )
    for name, summary in summaries.items():
        print(summary.table(f"dev, {name} compiling ({args.optimizer})"))
    saved = read_settings(Path(args.out))
    labels = saved.get("path_labels")
    if labels:
        print(f"gold paths for {labels['given'] + labels['found']} of {sum(labels.values())} training questions: "
              f"{labels['given']} given by the data and holding in the graph, {labels['found']} found there from the answers")
    print(f"compiled in {saved.get('compile_seconds')} s; saved {args.out}/program.json and {args.out}/config.json")
    return 0


def _load(args: argparse.Namespace):
    """The saved program, on the graph and LM its settings name unless flags say otherwise."""
    from kgqa.programs.saving import load_program, read_settings
    from kgqa.serving import program_dir
    from kgqa.specs import open_kg

    directory = program_dir(args.program, tracking_uri=args.tracking_uri)
    saved = read_settings(directory)
    kg = open_kg(args.kg or saved.get("kg", "demo"), profile=args.profile or (None if args.kg else saved.get("profile")))
    lm_spec = args.lm or saved.get("lm", "local")
    _configure_lm(lm_spec, args)
    program = load_program(directory, kg, settings={**saved, "walk": _walk_config(args, saved.get("walk")).to_dict()})
    return program, saved, lm_spec


def _evaluate(args: argparse.Namespace) -> int:
    from kgqa.specs import load_data
    from kgqa.workflow import evaluate_program

    program, saved, lm_spec = _load(args)
    examples = load_data(args.data)[: args.limit] if args.limit else load_data(args.data)
    settings = {"program": str(args.program), "data": args.data, "kg": args.kg or saved.get("kg"), "lm": lm_spec,
                "optimizer": saved.get("optimizer")}
    summary = evaluate_program(
        program, examples, out=args.out, settings=settings, tracking_uri=args.tracking_uri,
        experiment=args.experiment, threads=args.threads, progress=not args.quiet,
    )
    print(summary.table(f"{args.data} ({len(examples)} questions) -> {args.out}"))
    if summary.lm_errors:  # unfinished work is not a finished run
        print(f"kgqa: {summary.lm_errors} questions got no answer because the LM did not answer; run the same command "
              "again to resume them", file=sys.stderr)
        return 1
    return 0


def _ask(args: argparse.Namespace) -> int:
    program, _, _ = _load(args)
    prediction = program(question=args.question, topic_entities=args.topic or None)
    trace = prediction.trace
    failed = trace.error is not None  # the KG or the LM was down, no topic entity, a bad question: no answer to give
    if args.html:
        from kgqa.picture import walk_page

        args.html.write_text(walk_page(args.question, prediction.answers, prediction.paths, trace), encoding="utf-8",
                             errors="backslashreplace")
    if args.json:
        print(json.dumps({"answers": prediction.answers, "paths": prediction.paths, "trace": trace.to_dict()}, ensure_ascii=False))
        return 1 if failed else 0
    if failed:
        print(f"kgqa: no answer ({trace.stop_reason.value}): {trace.error}", file=sys.stderr)
        return 1
    print("answers: " + (", ".join(prediction.answers) or "(none)"))
    for path in prediction.paths:
        print(path)
    print(f"({trace.stop_reason.value}; {trace.llm_calls} LLM calls, {trace.sparql_queries} SPARQL queries)")
    return 0


def _demo(args: argparse.Namespace) -> int:
    """The main job on embedded defaults: demo KG, compile with bootstrap, evaluate, answer one question."""
    from kgqa.programs.saving import load_program
    from kgqa.specs import load_data, open_kg
    from kgqa.workflow import compile_to_dir, evaluate_program

    kg = open_kg("demo")
    _configure_lm(args.lm, args)
    train, test = f"demo:train[0:{args.train_size}]", f"demo:test[0:{args.test_size}]"
    settings = {"kg": "demo", "profile": kg.profile.name, "lm": args.lm, "train": train, "dev": None}
    print(f"compiling with bootstrap on {train} (LM: {args.lm}) ...")
    compile_to_dir(
        kg=kg, trainset=load_data(train), devset=None, optimizer="bootstrap", out=args.out, settings=settings,
        walk=_walk_config(args), budget=Budget(demos=2), tracking_uri=args.tracking_uri, experiment=args.experiment,
        progress=not args.quiet,
    )
    program = load_program(args.out, kg)
    summary = evaluate_program(
        program, load_data(test), out=Path(args.out) / "test_predictions.jsonl", settings={**settings, "data": test},
        tracking_uri=args.tracking_uri, experiment=args.experiment, progress=not args.quiet,
    )
    print(summary.table(f"demo test ({test}), compiled program in {args.out}"))
    question = "Who directed Parasite?"
    prediction = program(question=question)
    print(f"Q: {question}\nA: {', '.join(prediction.answers) or '(none)'}")
    for path in prediction.paths[:3]:
        print(path)
    return 0


def _serve(args: argparse.Namespace) -> int:
    """The program over HTTP (kgqa.server) in this process, until SIGTERM or SIGINT."""
    from kgqa.lm.adapter import ConstrainedJSONAdapter
    from kgqa.programs.saving import load_program, read_settings
    from kgqa.server import Answering, App, ServeLimits, serve
    from kgqa.serving import program_dir, serve_settings
    from kgqa.specs import make_lm, open_kg

    limits = ServeLimits(max_body_bytes=args.max_body, max_questions=args.max_questions, timeout=args.timeout,
                         stop_grace=args.stop_grace, question_chars=args.max_question_chars,
                         topic_entities=args.max_topic_entities)
    directory = program_dir(args.program, tracking_uri=args.tracking_uri)
    saved = read_settings(directory)
    kg_spec, lm_spec, api_base = serve_settings(saved)
    kg_spec, lm_spec, api_base = args.kg or kg_spec, args.lm or lm_spec, args.api_base or api_base
    kg = open_kg(kg_spec, profile=args.profile or (None if args.kg else saved.get("profile")))
    lm = make_lm(lm_spec, api_base=api_base)  # not checked here: /health says whether it answers
    answering = Answering(load_program(directory, kg, settings=saved), lm=lm, adapter=ConstrainedJSONAdapter(), kg=kg)
    answering.warm_up()
    app = App(answering, limits=limits, workers=args.workers, lm_name=lm_spec, kg_name=kg_spec)
    url = f"http://{args.host}:{args.port}"
    serve(app, host=args.host, port=args.port,
          on_ready=lambda: print(f"serving {args.program} on {url}/invocations (health: {url}/health); PID {os.getpid()}: "
                                 "SIGTERM or Ctrl-C stops it", flush=True))
    print("stopped", flush=True)
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from functools import partial

    from kgqa import doctor

    checks = tuple(partial(doctor.check_engine, threads=args.threads) if c is doctor.check_engine else c for c in doctor.CHECKS)
    results = doctor.run_checks(checks, on_check=(lambda check: None) if args.json else (lambda check: print(check.line(), flush=True)))
    if args.json:
        print(json.dumps(doctor.summary(results)))
    return 1 if doctor.failed(results) else 0


def _common(parser: argparse.ArgumentParser, *, lm_default: str | None = "local") -> None:
    parser.add_argument("--lm", default=lm_default, help="local (default), a LiteLLM model such as openai/gpt-4o-mini, or py:MODULE:FACTORY")
    parser.add_argument("--api-base", help="base URL for --lm (vLLM, Ollama, ...); keys come from the environment")
    parser.add_argument("--tracking-uri", help="MLflow tracking URI (default: sqlite:///.kgqa/mlflow.db)")
    parser.add_argument("--experiment", default="kgqa", help="MLflow experiment name")
    parser.add_argument("--threads", type=int, default=1, help="questions in parallel (the local LM serializes its calls)")
    parser.add_argument("--depth", type=int, help=f"walk depth (default {WalkConfig.depth})")
    parser.add_argument("--beam-width", type=int, help=f"relation chains gone on from per hop (default {WalkConfig.beam_width})")
    parser.add_argument("--off", action="append", choices=SWITCHES, metavar="STEP",
                        help=f"switch a step off (repeatable): {', '.join(SWITCHES)}")
    parser.add_argument("--max-llm-calls", type=int, help=f"LLM calls per question at most (default {WalkConfig.max_llm_calls})")
    parser.add_argument("--scorer-sure", type=float, metavar="SHARE",
                        help="the path scorer's first candidate answers without the extraction call where the scorer gives it "
                             "at least this share of its softmax (1.0: extraction decides; default: the share the compile "
                             "measured on held-out training walks, none for a scorer fitted on too few)")
    parser.add_argument("--topic-choice", action="store_true",
                        help="for questions without ids, let the model choose among plausible topic entities (off by default)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--verbose", "-v", action="count", default=0, help="log what kgqa does (-v: steps, -vv: every decision)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kgqa", description="Knowledge-graph question answering as a compiled DSPy program.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    commands = parser.add_subparsers(dest="command", required=True)
    profiles = tuple(PROFILES)

    demo = commands.add_parser("demo", help="the main job on embedded defaults: demo KG, compile, evaluate, ask")
    demo.add_argument("--out", default=".kgqa/demo", help="where the compiled program goes (default .kgqa/demo)")
    demo.add_argument("--train-size", type=int, default=4, help="demo training questions to compile on")
    demo.add_argument("--test-size", type=int, default=6, help="demo test questions to evaluate")
    _common(demo)
    demo.set_defaults(command_handler=_demo)

    comp = commands.add_parser("compile", help="compile the program's prompts on training questions")
    comp.add_argument("--train", required=True, help="data spec, e.g. metaqa:PATH?kb_exact=true[0:20]")
    comp.add_argument("--dev", help="data spec measured before and after compiling")
    comp.add_argument("--kg", required=True, help="demo, embedded:DIR, metaqa:PATH/kb.txt, ntriples:PATH or an endpoint URL")
    comp.add_argument("--profile", choices=profiles)
    comp.add_argument("--optimizer", default="bootstrap", choices=TELEPROMPTERS, help="teleprompter (default bootstrap)")
    comp.add_argument("--teacher-lm", help="LM that bootstraps demos / proposes instructions (default: --lm)")
    comp.add_argument("--reflection-lm", help="LM for GEPA's reflection")
    comp.add_argument("--demos", type=int, default=Budget.demos, help="bootstrapped demos per predictor")
    comp.add_argument("--step-demos", type=int, default=Budget.step_demos, metavar="N",
                      help="where the trainset has gold paths, a pool of up to N of the gold-path teacher's decisions per intermediate "
                           "step (relation and entity prune, fact filter, memory update); default 0: measured on CWQ-mini "
                           "dev, it changed no answer for the better")
    comp.add_argument("--sufficiency-demos", type=int, default=Budget.sufficiency_demos, metavar="N",
                      help="where the trainset has gold paths, answer sufficiency's demo pool: up to N demos in pairs of one question, "
                           "its best paths reaching a gold answer (sufficient) and the same paths cut back a hop (short); 0: none")
    comp.add_argument("--scorer-questions", type=int, default=Budget.scorer_questions, metavar="N",
                      help="where the trainset has gold paths, fine-tune the path scorer on the gold-path teacher's walks of up to N "
                           "training questions (path_scorer.safetensors); 0: no scorer, the hand-set order")
    comp.add_argument("--candidates", type=int, default=Budget.candidates, help="candidate programs (bootstrap-rs), instruction candidates (mipro)")
    comp.add_argument("--trials", type=int, default=Budget.trials, help="trials of --optimizer mipro (the presets set their own)")
    comp.add_argument("--seed", type=int, default=Budget.seed)
    comp.add_argument("--out", required=True, type=Path, help="directory for program.json and config.json")
    comp.add_argument("--register", metavar="NAME", help="also register the program in MLflow's model registry as NAME")
    _common(comp)
    comp.set_defaults(command_handler=_compile)

    ev = commands.add_parser("evaluate", help="evaluate a saved program; resumable")
    ev.add_argument("--program", required=True, help="directory made by `kgqa compile`, or models:/NAME/VERSION, models:/NAME@ALIAS, runs:/RUN/kgqa")
    ev.add_argument("--data", required=True, help="data spec")
    ev.add_argument("--kg", help="graph spec (default: the program's)")
    ev.add_argument("--profile", choices=profiles)
    ev.add_argument("--out", required=True, type=Path, help="predictions JSONL; rerunning resumes it")
    ev.add_argument("--limit", type=int, help="first N questions only")
    _common(ev, lm_default=None)
    ev.set_defaults(command_handler=_evaluate)

    ask = commands.add_parser("ask", help="answer one question with a saved program")
    ask.add_argument("question")
    ask.add_argument("--program", required=True, help="directory made by `kgqa compile`, or an MLflow model URI (models:/NAME/VERSION, ...)")
    ask.add_argument("--kg", help="graph spec (default: the program's)")
    ask.add_argument("--profile", choices=profiles)
    ask.add_argument("--topic", action="append", help="topic entity id or name (repeatable); default: found in the question")
    ask.add_argument("--json", action="store_true", help="print answers, paths and trace as JSON")
    ask.add_argument("--html", type=Path, metavar="FILE", help="also write a picture of the walk to FILE (one offline HTML page)")
    _common(ask, lm_default=None)
    ask.set_defaults(command_handler=_ask)

    serve = commands.add_parser("serve", help="serve a compiled program over HTTP: POST /invocations, GET /health")
    serve.add_argument("--program", required=True, help="directory made by `kgqa compile`, or an MLflow model URI")
    serve.add_argument("--kg", help="graph spec (default: the program's, or $KGQA_SERVE_KG)")
    serve.add_argument("--profile", choices=profiles)
    serve.add_argument("--lm", help="LM spec (default: the program's, or $KGQA_SERVE_LM)")
    serve.add_argument("--api-base", help="base URL for --lm (default: $KGQA_SERVE_API_BASE)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=5000)
    serve.add_argument("--workers", type=int, default=1,
                       help="questions answered at once (default 1: the local LM is one engine; more for a served LM with slots)")
    serve.add_argument("--timeout", type=float, default=ServeLimits.timeout,
                       help=f"seconds a request may take from arrival, queueing included (default {ServeLimits.timeout:g}): "
                            "past it the answer is 504 and its unstarted questions are never started")
    serve.add_argument("--max-questions", type=int, default=ServeLimits.max_questions,
                       help=f"questions in one request at most (default {ServeLimits.max_questions})")
    serve.add_argument("--max-question-chars", type=int, default=ServeLimits.question_chars,
                       help=f"characters in one question at most (default {ServeLimits.question_chars:,})")
    serve.add_argument("--max-topic-entities", type=int, default=ServeLimits.topic_entities,
                       help=f"topic entities of one question at most (default {ServeLimits.topic_entities})")
    serve.add_argument("--max-body", type=int, default=ServeLimits.max_body_bytes, metavar="BYTES",
                       help=f"request body size at most (default {ServeLimits.max_body_bytes:,})")
    serve.add_argument("--stop-grace", type=float, default=ServeLimits.stop_grace,
                       help=f"seconds a stop waits for running questions to be cut (default {ServeLimits.stop_grace:g})")
    serve.add_argument("--tracking-uri", help="MLflow tracking URI that resolves models:/ URIs (default: kgqa's)")
    serve.add_argument("--verbose", "-v", action="count", default=0, help="log each request (-v)")
    serve.set_defaults(command_handler=_serve)

    doctor = commands.add_parser("doctor", help="check that this machine runs kgqa: packages, model, engine speed, KG, MLflow")
    doctor.add_argument("--json", action="store_true", help="print one JSON object (engine_ok, prompt/generated tokens per s, checks)")
    doctor.add_argument("--threads", type=int, help="llama.cpp threads for the engine check (default: all cores)")
    doctor.set_defaults(command_handler=_doctor)

    kg = commands.add_parser("kg", help="build and inspect embedded KG stores")
    kg_commands = kg.add_subparsers(dest="kg_command", required=True)
    load = kg_commands.add_parser("load", help="load RDF, MetaQA kb.txt or RoG graphs into a store directory")
    load.add_argument("sources", nargs="+", help="files to load (RoG: a local file or a hub dataset name)")
    load.add_argument("--store", required=True, type=Path, help="store directory (created if missing)")
    load.add_argument("--format", choices=FORMATS, help="default: from the suffix")
    load.add_argument("--profile", choices=profiles, help="default: guessed")
    load.set_defaults(command_handler=_kg_load)
    stats = kg_commands.add_parser("stats", help="triples, entities, relations and load time of a store")
    stats.add_argument("--store", required=True, type=Path)
    stats.add_argument("--profile", choices=profiles, help="default: the store's")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    stats.set_defaults(command_handler=_kg_stats)
    compact = kg_commands.add_parser("compact", help="compact a store's files (a store loaded before loads ended compacted)")
    compact.add_argument("--store", required=True, type=Path)
    compact.set_defaults(command_handler=_kg_compact)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command: Callable[[argparse.Namespace], int] = args.command_handler
    if getattr(args, "verbose", 0):
        logging.basicConfig(format="%(asctime)s %(name)s %(levelname)s %(message)s",
                            level=logging.DEBUG if args.verbose > 1 else logging.INFO)
        logging.getLogger("kgqa").setLevel(logging.DEBUG if args.verbose > 1 else logging.INFO)
    try:
        with user_paths():
            return command(args)
    except BrokenPipeError:  # the reader went away (| head): nothing left to say
        sys.stderr.close()
        return 0
    except USER_ERRORS as exc:
        if args.debug:
            raise
        print(f"kgqa: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
