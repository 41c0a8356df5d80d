"""A picture of one walk: a self-contained HTML page (inline CSS and SVG, no script, no CDN).

Columns are depths: the topic entities, then what each hop reached. Each hop's header gives the
plan's target and the relations offered, the chosen ones in bold. Entities the entity prune
dropped are grey; the answers and the edges of the returned reasoning paths are highlighted; the
trace (calls, tokens, stop reason) is printed under the question; for a question asked without
topic entities, the linking (the mentions found, the candidates and their scores, the linked ones
in bold) comes next. Built from the trace alone
(`Trace.walk`), so a record on disk can be drawn again later (`Trace.from_dict(record["trace"])`).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from kgqa.kg.profiles import FREEBASE_ID
from kgqa.programs.trace import Trace

_COLUMN, _ROW, _TOP, _LEFT, _BOX = 320, 30, 20, 10, 230
_SHOWN = 30  # entities drawn per column; the rest are counted

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.2em; } .meta { color: #555; } .hops { display: flex; gap: 1em; flex-wrap: wrap; }
.hop { border: 1px solid #ccc; border-radius: 6px; padding: .5em .8em; max-width: 30em; }
.hop li.chosen, .linking li.linked { font-weight: bold; color: #0a5; } .answers li { font-weight: bold; color: #b40; }
svg text { font-size: 12px; } rect.node { fill: #eef3ff; stroke: #57a; } rect.node.topic { fill: #dfd; stroke: #393; }
rect.node.pruned { fill: #f2f2f2; stroke: #bbb; } rect.node.answer { fill: #ffe3cc; stroke: #d60; stroke-width: 2; }
g.pruned text { fill: #999; } line.edge { stroke: #9ab; } line.edge.pruned { stroke: #ddd; }
line.edge.path { stroke: #d60; stroke-width: 2.5; } pre { background: #f7f7f7; padding: .6em; overflow-x: auto; }
"""


def walk_page(question: str, answers: Sequence[str], paths: Sequence[str], trace: Trace) -> str:
    """The page for one answered question (a prediction's answers, paths and trace)."""
    hops = trace.walk
    columns, kind = _columns(trace, set(answers))
    on_paths = _path_edges(paths)
    position = {(d, label): (_LEFT + d * _COLUMN, _TOP + i * _ROW) for d, col in enumerate(columns) for i, label in enumerate(col[:_SHOWN])}
    lines = []
    for hop in hops:
        depth = hop["depth"]
        for source, relation, target, kept in hop["edges"]:
            a, b = position.get((depth - 1, source)), position.get((depth, target))
            if a and b:
                classes = "edge" + ("" if kept else " pruned") + (" path" if (source, relation, target) in on_paths else "")
                lines.append(
                    f'<line class="{classes}" data-from="{escape(source)}" data-to="{escape(target)}" '
                    f'data-relation="{escape(relation)}" x1="{a[0] + _BOX}" y1="{a[1] + 10}" x2="{b[0]}" y2="{b[1] + 10}">'
                    f"<title>{escape(source)} -&gt; {escape(relation)} -&gt; {escape(target)}</title></line>"
                )
    boxes = []
    for (depth, label), (x, y) in position.items():
        classes = kind.get((depth, label), "node")
        boxes.append(
            f'<g class="{classes.replace("node", "entity")}"><rect class="{classes}" data-label="{escape(label)}" data-depth="{depth}" '
            f'x="{x}" y="{y}" width="{_BOX}" height="22" rx="4"/><text x="{x + 6}" y="{y + 15}">{escape(_short(label))}</text>'
            f"<title>{escape(label)}</title></g>"
        )
    more = [f'<text x="{_LEFT + d * _COLUMN}" y="{_TOP + _SHOWN * _ROW + 15}">... and {len(col) - _SHOWN} more</text>'
            for d, col in enumerate(columns) if len(col) > _SHOWN]
    height = _TOP + min(_SHOWN + 1, max(map(len, columns), default=1)) * _ROW + 20
    width = _LEFT + max(1, len(columns)) * _COLUMN
    svg = (f'<svg role="img" aria-label="the explored graph" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
           + "".join(lines + boxes + more) + "</svg>")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>kgqa: {escape(question)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(question)}</h1>",
        f'<p class="meta">{_meta(trace)}</p>',
        _linking_box(trace.linking),
        '<h2>Answers</h2><ol class="answers">' + "".join(f"<li>{escape(a)}</li>" for a in answers) + "</ol>"
        + ("" if answers else "<p>(none)</p>"),
        '<h2>Walk</h2><div class="hops">' + "".join(_hop_box(hop) for hop in hops) + "</div>",
        svg,
        "<h2>Reasoning paths</h2>" + "".join(f"<pre>{escape(p)}</pre>" for p in paths),
        "</body></html>",
    ])


def _columns(trace: Trace, answers: set[str]) -> tuple[list[list[str]], dict[tuple[int, str], str]]:
    """Entity labels per depth (topics first), and each drawn entity's classes."""
    hops = trace.walk
    topics = [str(t) for t in trace.topic_names] or list(
        dict.fromkeys(source for hop in hops if hop["depth"] == 1 for source, *_ in hop["edges"]))
    columns: list[list[str]] = [topics]
    kind = {(0, label): "node topic" for label in topics}
    for hop in hops:
        depth = hop["depth"]
        while len(columns) <= depth:
            columns.append([])
        for _, _, target, kept in hop["edges"]:
            if target not in columns[depth]:
                columns[depth].append(target)
            if kept:
                kind[(depth, target)] = "node answer" if target in answers else "node"  # answers come from any depth
            else:
                kind.setdefault((depth, target), "node pruned")
    for depth, column in enumerate(columns):  # kept entities first, pruned ones last
        column.sort(key=lambda label: kind.get((depth, label), "node") == "node pruned")
    return columns, kind


def _path_edges(paths: Sequence[str]) -> set[tuple[str, str, str]]:
    """The (entity, relation, entity) edges of the returned reasoning paths; through a nameless
    (CVT) node the edge skips it, its relation compound ('a -> b'), as the page draws it. The
    relation counts: several relations may join the same two entities (directed, wrote)."""
    edges = set()
    for path in paths:
        parts = next((ln for ln in path.splitlines() if " -> " in ln), "").split(" -> ")
        source, relations = parts[0], []
        for relation, entity in zip(parts[1::2], parts[2::2]):
            relations.append(relation)
            if not _nameless(entity):
                edges.add((source, " -> ".join(relations), entity))
                source, relations = entity, []
    return edges


def _nameless(label: str) -> bool:
    return bool(FREEBASE_ID.fullmatch(label))  # how a nameless (CVT) node is labelled


def _hop_box(hop: dict) -> str:
    chosen = set(hop.get("chosen") or [])
    offered = list(hop.get("offered") or []) + [c for c in chosen if c not in (hop.get("offered") or [])]
    items = "".join(f'<li class="{"chosen" if r in chosen else "offered"}">{escape(r)}</li>' for r in offered)
    return f'<div class="hop"><b>hop {hop["depth"]}: {escape(str(hop.get("target", "")))}</b><ul>{items}</ul></div>'


def _linking_box(linking: dict) -> str:
    """How the topic entities were found in the question, when they were not given."""
    if not linking:
        return ""
    linked = {c["entity"] for c in linking.get("linked", ())}
    shown = list(linking.get("candidates", ())) + [c for c in linking.get("linked", ()) if c not in linking.get("candidates", ())]
    items = "".join(
        f'<li class="{"linked" if c["entity"] in linked else "candidate"}" data-entity="{escape(c["entity"])}">'
        f'{escape(c["name"])} <span class="meta">({escape(str(c["how"]))} {escape(repr(c["span"]))}, score {c["score"]})</span></li>'
        for c in shown
    )
    mentions = ", ".join(escape(m) for m in linking.get("mentions", ()))
    return (f'<h2>Topic entities found in the question</h2><div class="linking"><p class="meta">mentions: {mentions or "(none)"}</p>'
            f"<ol>{items}</ol></div>")


def _meta(trace: Trace) -> str:
    parts = [f"stop: {trace.stop_reason.value if trace.stop_reason else '?'}", f"{trace.llm_calls} LLM calls",
             f"{trace.input_tokens} input / {trace.output_tokens} output tokens",
             f"{trace.sparql_queries} SPARQL queries", f"plan: {' / '.join(map(str, trace.plan))}"]
    if trace.error:
        parts.append(f"error: {trace.error}")
    return escape("; ".join(parts))


def _short(label: str, width: int = 34) -> str:
    return label if len(label) <= width else label[: width - 1] + "\u2026"
