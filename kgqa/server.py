"""`kgqa serve`: a compiled program over HTTP, with bounded requests, no orphan work and clean stops.

    POST /invocations   {"inputs": ["a question", {"question": "...", "topic_entities": ["m.0..."]}]}
                        (MLflow's scoring format; "dataframe_records" and "instances" too)
                        -> {"predictions": [{"answers", "paths", "trace"}, ...]}
    GET  /health        whether the LM and the KG answer (a one-token LM call, a one-row query),
                        and how many requests run and wait; 200 when both answer, else 503
    GET  /ping          the server is up

Every request is bounded (`ServeLimits`, each a `kgqa serve` flag): its body (413 beyond it, read
no further), its questions (413 naming the limit), and its time: one `Deadline` from arrival,
queueing included. Questions run one request at a time, in arrival order, on `workers` threads
(one by default: the local LM is one engine, a second thread would only wait for it). The program
checks the request's deadline before every LLM call, so when the deadline passes (504), the client
goes away, or the server is stopping, the question running is cut at its next step (its trace
says `cut` and why) and the request's questions not yet started are not started. A request past
its deadline is answered once its running question is cut (at most `stop_grace` seconds later).

SIGTERM or SIGINT stops the server: no new connection is taken, every running request is cut,
answered (503), and the process exits within `stop_grace` seconds with its port free.

Status codes: 200 answers; 400 a request that cannot be answered as sent; 413 over a limit; 503
the LM or the KG did not answer (the reason, and the predictions made before), the queue is full,
or the server is stopping; 504 the deadline passed. Error bodies are `{"error_code", "message"}`
and a few hundred bytes: nothing of the input is echoed back.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import queue
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import dspy

from kgqa.data.questions import QuestionLimits, few
from kgqa.kg import KnowledgeGraph
from kgqa.programs.deadline import Deadline
from kgqa.programs.trace import StopReason
from kgqa.serving import BadRequest, questions_of

log = logging.getLogger(__name__)
MAX_MESSAGE = 300  # characters of an error message at most
INPUT_KEYS = ("inputs", "dataframe_records", "instances")
CLIENT_GONE = "the client went away"


@dataclass(frozen=True)
class ServeLimits:
    """max_body_bytes: a request body larger than this is refused (413) unread.
    max_questions: questions in one request at most (413): at ~5-20 s a question on the local LM,
        16 fill the default deadline only on a slow machine.
    timeout: seconds a request may take from its arrival, waiting in the queue included (504).
    max_waiting: requests waiting for the worker at most; more are refused (503, Retry-After).
    stop_grace: seconds a stop waits for running questions to be cut and answered.
    health_timeout: seconds /health waits for the LM's and the KG's answers.
    question_chars, topic_entities, topic_chars: how long a question, and how many and how long its
        topic entities may be (400 past them; `kgqa.data.questions`)."""

    max_body_bytes: int = 1 << 20
    max_questions: int = 16
    timeout: float = 300.0
    max_waiting: int = 64
    stop_grace: float = 5.0
    health_timeout: float = 10.0
    question_chars: int = QuestionLimits.question_chars
    topic_entities: int = QuestionLimits.topic_entities
    topic_chars: int = QuestionLimits.topic_chars

    @property
    def questions(self) -> QuestionLimits:
        return QuestionLimits(question_chars=self.question_chars, topic_entities=self.topic_entities, topic_chars=self.topic_chars)

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not value > 0:
                raise ValueError(f"{name} must be > 0, got {value}")


class Refusal(Exception):
    """An answer other than 200: its status, error code and message, and the predictions made before."""

    def __init__(self, status: int, code: str, message: str, predictions: list[dict] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.predictions = status, code, predictions

    def body(self) -> dict:
        body = {"error_code": self.code, "message": str(self)[:MAX_MESSAGE]}
        return {**body, "predictions": self.predictions} if self.predictions is not None else body


# -- answering questions -------------------------------------------------------------------------


class Worker:
    """Jobs run on `threads` daemon threads in arrival order. Daemon: a stop never waits on a
    question past its grace (an LLM call in progress cannot be interrupted)."""

    def __init__(self, threads: int = 1) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self.waiting = self.running = 0
        for n in range(threads):
            threading.Thread(target=self._work, name=f"kgqa-worker-{n}", daemon=True).start()

    def submit(self, job: Callable[[], object]) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            self.waiting += 1
        self._jobs.put((job, future))
        return future

    def idle(self) -> bool:
        with self._lock:
            return not (self.waiting or self.running)

    def _work(self) -> None:
        while True:
            job, future = self._jobs.get()
            with self._lock:
                self.waiting, self.running = self.waiting - 1, self.running + 1
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(job())
                    except BaseException as exc:  # the request's handler reports it
                        future.set_exception(exc)
            finally:
                with self._lock:
                    self.running -= 1


class Answering:
    """One program, its LM and adapter: a request's questions answered in order, each under the
    request's deadline; the first that meets an outage (LM, KG) or the deadline ends the request."""

    def __init__(self, program, *, lm: dspy.BaseLM, adapter: dspy.Adapter, kg: KnowledgeGraph) -> None:
        self.program, self.lm, self.adapter, self.kg = program, lm, adapter, kg
        self.last_answer: float | None = None  # when a question last got an LLM answer (monotonic)

    def answer(self, pairs: list[tuple[str, list[str] | None]], deadline: Deadline, predictions: list[dict]) -> None:
        """Append each question's prediction to `predictions` (shared with the request's handler)."""
        for question, topics in pairs:
            if deadline.reason:  # cut before this question began: it is not started
                return
            with dspy.context(lm=self.lm, adapter=self.adapter):
                prediction = self.program(question=question, topic_entities=topics, deadline=deadline)
            trace = prediction.trace
            predictions.append({"answers": list(prediction.answers), "paths": list(prediction.paths), "trace": trace.to_dict()})
            if trace.stop_reason is StopReason.LM_ERROR:
                self.last_answer = None
            elif trace.llm_calls > trace.llm_failures:
                self.last_answer = time.monotonic()
            if trace.stop_reason in {StopReason.LM_ERROR, StopReason.KG_ERROR, StopReason.CUT}:
                return

    def warm_up(self) -> None:
        """Load what the first question would otherwise wait for: the embedding model, and the
        vectors of the chain prior's training questions."""
        embedder = getattr(self.program, "embedder", None)
        if embedder is not None:
            embedder.similarities("warm up", ["the embedding model"])
            prior = getattr(self.program, "chain_prior", None)
            if prior is not None:
                prior.warm(embedder.encode)

    def lm_health(self, *, busy: bool) -> dict:
        """Whether the LM answers: a one-token call; while questions run, their last LLM answer
        (a probe would only queue behind them on a one-engine LM)."""
        if busy and self.last_answer is not None and time.monotonic() - self.last_answer < 60:
            return {"ok": True, "detail": f"answering questions (last answer {time.monotonic() - self.last_answer:.0f} s ago)"}
        start = time.perf_counter()
        with dspy.context(lm=self.lm):
            reply = self.lm("Reply with the word OK.", max_tokens=2)
        return {"ok": bool(reply), "seconds": round(time.perf_counter() - start, 3)}

    def kg_health(self) -> dict:
        return {"ok": True, "seconds": round(self.kg.ping(), 4)}


# -- HTTP ------------------------------------------------------------------------------------


class App:
    """The ASGI application (Starlette routes) around one `Answering` and one `Worker`."""

    def __init__(self, answering: Answering, *, limits: ServeLimits = ServeLimits(), workers: int = 1,
                 lm_name: str = "", kg_name: str = "") -> None:
        from starlette.applications import Starlette
        from starlette.routing import Route

        self.answering, self.limits = answering, limits
        self.worker = Worker(workers)
        self.names = {"lm": lm_name, "kg": kg_name}
        self.deadlines: set[Deadline] = set()
        self.stopping = False
        self.asgi = Starlette(routes=[
            Route("/invocations", self.invocations, methods=["POST"]),
            Route("/health", self.health, methods=["GET"]),
            Route("/ping", self.ping, methods=["GET"]),
        ])

    def stop(self) -> None:
        """Cut every running request and refuse new ones (the server is stopping)."""
        self.stopping = True
        for deadline in list(self.deadlines):
            deadline.stop("the server is stopping")

    async def ping(self, request):
        from starlette.responses import Response

        return Response(status_code=200)

    async def invocations(self, request):
        from starlette.responses import JSONResponse

        deadline = Deadline(self.limits.timeout)
        self.deadlines.add(deadline)
        started, predictions = time.perf_counter(), []
        pairs: list = []
        try:
            pairs = self._questions(await self._body(request))
            if self.stopping:
                raise Refusal(503, "STOPPING", "the server is stopping")
            if self.worker.waiting >= self.limits.max_waiting:
                raise Refusal(503, "QUEUE_FULL", f"{self.worker.waiting} requests are waiting already (limit "
                                                 f"{self.limits.max_waiting}): try again later")
            job = self.worker.submit(lambda: self.answering.answer(pairs, deadline, predictions))
            watcher = asyncio.create_task(_watch_client(request, deadline))
            try:
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(job)), timeout=deadline.remaining())
            except asyncio.TimeoutError:
                # the running question is cut at its next step: wait that long (at most stop_grace) to answer with its trace
                deadline.stop(f"its {self.limits.timeout:g} s deadline passed")
                await asyncio.wait([asyncio.wrap_future(job)], timeout=self.limits.stop_grace)
            finally:
                watcher.cancel()
            outcome, status = self._outcome(pairs, predictions, deadline), 200
            response = JSONResponse({"predictions": predictions})
        except Refusal as refusal:
            outcome, status = refusal.code, refusal.status
            response = JSONResponse(refusal.body(), status_code=refusal.status,
                                    headers={"Retry-After": "5"} if refusal.code == "QUEUE_FULL" else None)
        except Exception as exc:  # a bug: the reason, not a traceback, goes back
            log.exception("request failed")
            outcome, status = "INTERNAL_ERROR", 500
            response = JSONResponse({"error_code": outcome, "message": f"{type(exc).__name__}: {exc}"[:MAX_MESSAGE]},
                                    status_code=500)
        finally:
            self.deadlines.discard(deadline)
        log.info("POST /invocations %d %s: %d questions, %d begun, %.2f s", status, outcome, len(pairs),
                 len(predictions), time.perf_counter() - started)
        return response

    def _outcome(self, pairs: list, predictions: list[dict], deadline: Deadline) -> str:
        """'OK', or a `Refusal` for a request its questions did not all finish."""
        last = predictions[-1]["trace"] if predictions else {}
        stop, error = last.get("stop_reason"), last.get("error") or ""
        if stop == StopReason.LM_ERROR.value:
            raise Refusal(503, "LM_UNAVAILABLE", error, predictions)
        if stop == StopReason.KG_ERROR.value:
            raise Refusal(503, "KG_UNAVAILABLE", error, predictions)
        if len(predictions) < len(pairs) or stop == StopReason.CUT.value:
            reason = deadline.reason or "cut"
            if self.stopping:
                status, code = 503, "STOPPING"
            elif reason == CLIENT_GONE:  # nobody reads this answer: the status is for the log (nginx's 499)
                status, code = 499, "CLIENT_GONE"
            else:
                status, code = 504, "DEADLINE_EXCEEDED"
            raise Refusal(status, code, f"the request was cut ({reason}): {len(predictions)} of {len(pairs)} questions "
                                        "were begun, the rest not started", predictions)
        return "OK"

    async def _body(self, request) -> bytes:
        limit = self.limits.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise Refusal(413, "BODY_TOO_LARGE", f"the body is {int(declared):,} bytes (limit {limit:,})")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise Refusal(413, "BODY_TOO_LARGE", f"the body is over the limit of {limit:,} bytes")
        return bytes(body)

    def _questions(self, body: bytes) -> list[tuple[str, list[str] | None]]:
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise Refusal(400, "BAD_REQUEST", f"the body is not JSON: {exc}") from None
        except RecursionError:
            raise Refusal(400, "BAD_REQUEST", "the body is JSON nested too deep") from None
        if not isinstance(data, dict) or sum(key in data for key in INPUT_KEYS) != 1:
            raise Refusal(400, "BAD_REQUEST", 'send one JSON object with "inputs": a list of questions, or of '
                                              '{"question", "topic_entities"}')
        unknown = sorted(k for k in data if k not in INPUT_KEYS)
        if unknown:
            raise Refusal(400, "BAD_REQUEST", f"unknown fields: {few(unknown)}")
        inputs = next(data[key] for key in INPUT_KEYS if key in data)
        count = len(inputs) if isinstance(inputs, list) else 1
        if count > self.limits.max_questions:
            raise Refusal(413, "TOO_MANY_QUESTIONS", f"{count} questions in one request (limit {self.limits.max_questions}): "
                                                     "send them in several requests")
        try:
            return questions_of(inputs, limits=self.limits.questions)
        except BadRequest as exc:
            raise Refusal(400, "BAD_REQUEST", str(exc)) from None

    async def health(self, request):
        from starlette.responses import JSONResponse

        busy = bool(self.worker.running)
        lm, kg = await asyncio.gather(self._probe(lambda: self.answering.lm_health(busy=busy)),
                                      self._probe(self.answering.kg_health))
        ok = lm["ok"] and kg["ok"] and not self.stopping
        body = {"status": "ok" if ok else ("stopping" if self.stopping else "unavailable"),
                "lm": {"name": self.names["lm"], **lm}, "kg": {"name": self.names["kg"], **kg},
                "requests": {"running": self.worker.running, "waiting": self.worker.waiting}}
        return JSONResponse(body, status_code=200 if ok else 503)

    async def _probe(self, check: Callable[[], dict]) -> dict:
        """`check()` on a daemon thread (a hung service must not hold a stop), bounded by health_timeout."""
        future: concurrent.futures.Future = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(check())
            except Exception as exc:  # the service did not answer: that is the health report
                future.set_exception(exc)

        threading.Thread(target=run, daemon=True, name="kgqa-health").start()
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout=self.limits.health_timeout)
        except asyncio.TimeoutError:
            return {"ok": False, "detail": f"no answer within {self.limits.health_timeout:g} s"}
        except Exception as exc:
            return {"ok": False, "detail": f"{type(exc).__name__}: {exc}"[:MAX_MESSAGE]}


async def _watch_client(request, deadline: Deadline) -> None:
    """Stop the request's deadline when its client goes away (uvicorn then says http.disconnect)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            deadline.stop(CLIENT_GONE)
            return


def serve(app: App, *, host: str, port: int, on_ready: Callable[[], None] | None = None) -> None:
    """Run uvicorn on `app` in this process until SIGTERM or SIGINT, then stop cleanly: running
    requests are cut and answered, and the process returns within `stop_grace` seconds."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame) -> None:
            app.stop()
            super().handle_exit(sig, frame)

        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            if on_ready and self.started:
                on_ready()

    config = uvicorn.Config(app.asgi, host=host, port=port, log_level="warning", lifespan="off",
                            timeout_graceful_shutdown=int(max(1, app.limits.stop_grace)))
    # uvicorn raises the stopping signal again once it is done; this process has stopped cleanly by then
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        Server(config).run()
        deadline = time.monotonic() + app.limits.stop_grace
        while not app.worker.idle() and time.monotonic() < deadline:  # the cut question's last LLM call
            time.sleep(0.05)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
