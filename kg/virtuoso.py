"""A throwaway local Virtuoso (Debian's `virtuoso-opensource`) for tests and benchmarks.

Binds to 127.0.0.1 on free ports inside a temporary directory, bulk-loads N-Triples with
`ld_dir` + `rdf_loader_run()` (`*.nt`, `*.nt.gz`), builds the relation index (`index_script`: in
Virtuoso, in bounded memory), and is stopped by its PID.

    with LocalVirtuoso.start(workdir, ["data/demo/demo.nt"]) as virtuoso:
        SparqlEndpoint(virtuoso.url)
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kgqa.kg import queries
from kgqa.kg.errors import KGError
from kgqa.kg.processes import dies_with_parent

GRAPH = "http://kgqa.local/graph"
BUFFERS = 170_000  # 8 KB pages held in memory (1.3 GB): enough for graphs of a few million triples

_INI = """\
[Database]
DatabaseFile = {dir}/virtuoso.db
ErrorLogFile = {dir}/virtuoso.log
LockFile = {dir}/virtuoso.lck
TransactionFile = {dir}/virtuoso.trx
xa_persistent_file = {dir}/virtuoso.pxa
ErrorLogLevel = 7
FileExtend = 200
MaxCheckpointRemap = 2000
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = {dir}/virtuoso-temp.db
TransactionFile = {dir}/virtuoso-temp.trx
MaxCheckpointRemap = 2000
Striping = 0

[Parameters]
ServerPort = 127.0.0.1:{sql_port}
NumberOfBuffers = {buffers}
MaxDirtyBuffers = {dirty}
CheckpointInterval = 60
DirsAllowed = ., {dir}, {data}
ThreadsPerQuery = 2
MaxQueryMem = 1G

[HTTPServer]
ServerPort = 127.0.0.1:{http_port}
ServerRoot = {dir}
ServerThreads = 4
MaxClientConnections = 4
KeepAliveTimeout = 10

[SPARQL]
ResultSetMaxRows = 1000000
MaxQueryCostEstimationTime = 0
MaxQueryExecutionTime = 120
DefaultGraph = {graph}
"""


# The relation index (`kg.queries.RELATION_INDEX`: one literal an entity, its relations) built inside
# Virtuoso in bounded memory. The nodes are taken `ids` IRI ids at a time; a range's relations are read
# from the distinct (subject, relation) and (object, relation) pairs Virtuoso keeps indexed
# (RDF_QUAD_SP, RDF_QUAD_OP), gathered by node in a dictionary and inserted in one batch
# (`RDF_INSERT_TRIPLES`; one insert a literal took 0.3 ms). `kg.queries.index_relations`, one SPARQL
# GROUP BY over every fact, held every node's group at once: at 5 x 10^7 triples the server grew past
# 22 GB of 24 and was killed.
INDEX_RANGE_IDS = 500_000
_INDEX_PROCEDURES = """\
create procedure DB.DBA.KGQA_NEXT_NODE (in from_id any)
{
  -- the first node id at or after from_id, of a subject or of an IRI object (literals sort past every id)
  declare s, o any;
  s := (select top 1 S from DB.DBA.RDF_QUAD table option (index RDF_QUAD_SP) where S >= from_id order by S);
  o := (select top 1 O from DB.DBA.RDF_QUAD table option (index RDF_QUAD_OP)
        where O >= from_id and O < iri_id_from_num (9223372036854775807) and isiri_id (O) order by O);
  if (s is null or (o is not null and o < s))
    return o;
  return s;
}
;
create procedure DB.DBA.KGQA_INDEX_RELATIONS (in index_graph varchar, in relations_of varchar, in ids integer)
{
  declare g, rel, lo, hi, d, pairs, triples any;
  declare i, entities integer;
  g := iri_to_id (index_graph);
  rel := iri_to_id (relations_of);
  entities := 0;
  lo := DB.DBA.KGQA_NEXT_NODE (iri_id_from_num (0));
  while (lo is not null)  -- a batch: the nodes of ids lo .. hi - 1, their relations out, then in
    {
      hi := iri_id_from_num (iri_id_num (lo) + ids);
      d := dict_new (ids / 4);
      for (select distinct S as e, P as p from DB.DBA.RDF_QUAD where S >= lo and S < hi) do
        dict_put (d, e, concat (coalesce (dict_get (d, e, null), ''), ' >', id_to_iri (p)));
      for (select distinct O as e, P as p from DB.DBA.RDF_QUAD where O >= lo and O < hi and isiri_id (O)) do
        dict_put (d, e, concat (coalesce (dict_get (d, e, null), ''), ' <', id_to_iri (p)));
      pairs := dict_to_vector (d, 1);
      triples := make_array (length (pairs) / 2, 'any');
      for (i := 0; i < length (pairs); i := i + 2)
        triples[i / 2] := vector (pairs[i], rel, ltrim (pairs[i + 1], ' '));
      DB.DBA.RDF_INSERT_TRIPLES (g, triples);
      entities := entities + length (triples);
      commit work;
      lo := DB.DBA.KGQA_NEXT_NODE (hi);
    }
  return entities;
}
;
"""


def index_script(*, ids: int = INDEX_RANGE_IDS) -> str:
    """The isql script that (re)builds the relation index of a Virtuoso in bounded memory, `ids` IRI
    ids a batch; for a server kgqa did not start: `isql-vt PORT dba PASSWORD FILE` (docs/scale.md)."""
    edges = " ".join(queries.index_edge_relations().split())
    return (f"{_INDEX_PROCEDURES}log_enable(2,1);\nSPARQL CLEAR SILENT GRAPH <{queries.RELATION_INDEX}>;\n"
            f"SELECT DB.DBA.KGQA_INDEX_RELATIONS('{queries.RELATION_INDEX}', '{queries.RELATIONS_OF}', {int(ids)});\n"
            f"SPARQL {edges};\ncheckpoint;\n")


def available() -> bool:
    return shutil.which("virtuoso-t") is not None and shutil.which("isql-vt") is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LocalVirtuoso:
    workdir: Path
    sql_port: int
    http_port: int
    process: subprocess.Popen

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/sparql"

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    def start(cls, workdir: str | Path, ntriples: Iterable[str | Path] = (), *, timeout: float = 60.0,
              buffers: int = BUFFERS) -> LocalVirtuoso:
        """Start a server in `workdir` and bulk-load `ntriples` into it. `buffers`: the 8 KB pages Virtuoso
        keeps in memory (`NumberOfBuffers`; its own guide: about two thirds of the free memory, for a
        database larger than that)."""
        if not available():
            raise KGError("virtuoso-t / isql-vt not found (apt-get install virtuoso-opensource)")
        workdir = Path(workdir).resolve()
        data = workdir / "load"
        data.mkdir(parents=True, exist_ok=True)
        for n, path in enumerate(ntriples):
            os.symlink(Path(path).resolve(), data / f"{n:03d}-{Path(path).name}")
        sql_port, http_port = free_port(), free_port()
        (workdir / "virtuoso.ini").write_text(
            _INI.format(dir=workdir, data=data, sql_port=sql_port, http_port=http_port, graph=GRAPH,
                        buffers=buffers, dirty=buffers * 3 // 4)
        )
        log = open(workdir / "stdout.log", "wb")
        process = subprocess.Popen(
            ["virtuoso-t", "+foreground", "+configfile", str(workdir / "virtuoso.ini")],
            cwd=workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=dies_with_parent(),  # a killed owner leaves no server behind
        )
        server = cls(workdir, sql_port, http_port, process)
        try:
            server._wait_ready(timeout)
            if any(data.iterdir()):
                # names are found by their words too (bif:contains): every literal goes into the text index
                server.isql(f"DB.DBA.RDF_OBJ_FT_RULE_ADD(null, null, 'kgqa'); ld_dir('{data}', '*.nt', '{GRAPH}'); "
                            f"ld_dir('{data}', '*.nt.gz', '{GRAPH}'); rdf_loader_run(); "
                            "DB.DBA.VT_INC_INDEX_DB_DBA_RDF_OBJ(); checkpoint;", timeout=timeout)
                server._check_loaded()
                server.index_relations(timeout=timeout)
        except BaseException:
            server.stop()
            raise
        return server

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        probe = self.url + "?query=" + urllib.request.quote("ASK { ?s ?p ?o }")
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise KGError(f"virtuoso-t exited with {self.process.returncode}; see {self.workdir}/virtuoso.log")
            try:
                with urllib.request.urlopen(probe, timeout=2):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise KGError(f"virtuoso did not answer on {self.url} within {timeout:.0f} s")

    def isql(self, sql: str, *, timeout: float = 600) -> str:
        """Run `sql` (statements ending in `;`) in isql; a KGError says what failed."""
        return self._isql(f"exec={sql}", timeout=timeout)

    def isql_script(self, script: str, *, name: str, timeout: float = 600) -> str:
        """Run an isql script (procedures may hold `;`), kept in the work folder as `name`."""
        path = self.workdir / name
        path.write_text(script)
        return self._isql(str(path), timeout=timeout)

    def _isql(self, what: str, *, timeout: float) -> str:
        result = subprocess.run(
            ["isql-vt", f"127.0.0.1:{self.sql_port}", "dba", "dba", what],
            capture_output=True, text=True, timeout=max(timeout, 600),
        )
        if result.returncode != 0 or "*** Error" in result.stdout + result.stderr:
            raise KGError(f"isql failed: {(result.stdout + result.stderr).strip()[-500:]}")
        return result.stdout

    def index_relations(self, *, ids: int = INDEX_RANGE_IDS, timeout: float = 600) -> None:
        """(Re)build the relation index (`index_script`, `ids` node ids a batch): the relations around a
        frontier, and around what a hop reaches, are then one literal an entity, not a scan of its
        edges (a hub's million). Without the transaction log, as a bulk load runs."""
        self.isql_script(index_script(ids=ids), name="kgqa-relation-index.sql", timeout=timeout)

    def _check_loaded(self) -> None:
        """The bulk loader logs a file it cannot read rather than failing: say so, with its error."""
        failed = _result_lines(self.isql("SELECT ll_file, ll_error FROM DB.DBA.load_list WHERE ll_error IS NOT NULL;"))
        if failed:
            raise KGError("Virtuoso could not load " + "; ".join(" ".join(line.split()) for line in failed)[:800])
        if _result_lines(self.isql("SELECT COUNT(*) FROM DB.DBA.load_list WHERE ll_state = 2;")) == ["0"]:
            raise KGError(f"Virtuoso loaded no file from {self.workdir / 'load'} (it reads *.nt and *.nt.gz)")

    def stop(self) -> None:
        """SIGTERM by PID, then SIGKILL if it lingers."""
        if self.process.poll() is not None:
            return
        os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)

    def __enter__(self) -> LocalVirtuoso:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _result_lines(output: str) -> list[str]:
    """The rows isql printed: the lines between the header's underline and "N Rows."."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("____")), len(lines))
    return [line.strip() for line in lines[start + 1 :] if line.strip() and not re.match(r"\d+ Rows\.", line)]

