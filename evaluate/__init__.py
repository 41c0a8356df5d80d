"""Evaluating programs: the resumable runner (one JSONL record per question), the answer and walk
metrics, and the records' summaries. Teleprompters use the metrics; they live in `optimizers`."""

from kgqa.evaluate.metrics import example_scores, score_answers, walk_metric
from kgqa.evaluate.runner import Summary, evaluate, read_records, summarize

__all__ = ["Summary", "evaluate", "example_scores", "read_records", "score_answers", "summarize", "walk_metric"]
