"""The benches' baselines: bare Flask endpoints, no auth, nothing of promptsvc's.

``gunicorn -c gunicorn.conf.py bench.http_bare:app``, with

* ``BENCH_HTTP_BODY`` naming a JSON file: ``GET /api/v1/prompts/<name>/production``
  returns it via ``jsonify`` (bench.http writes the production response of promptsvc
  there, so both apps answer the same JSON);
* ``BENCH_WRITE_URL`` naming a SQL storage URL: ``POST /bare/write`` inserts one row
  (the request's body) into a table of its own in one transaction
  (bench/sqldb.py ``bare_write``), on an engine made
  as promptsvc makes its own (storage/sql/engine.py: the same pragmas, the same
  ``BEGIN IMMEDIATE`` on SQLite, the same commit durability), and answers 201 with the
  row's id as JSON (bench.http_writes).

Either may be left out; its endpoint is then absent. ``GET /healthz`` answers 200.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from flask import Flask, Response, jsonify, request

from bench.sqldb import bare_write, make_bare_writes
from storage.sql.engine import make_engine

app = Flask(__name__)


@app.get("/healthz")
def healthz() -> str:
    return "ok"


if "BENCH_HTTP_BODY" in os.environ:
    BODY = json.loads(Path(os.environ["BENCH_HTTP_BODY"]).read_text())

    @app.get("/api/v1/prompts/<name>/production")
    def production(name: str) -> Response:
        return jsonify(BODY)


if "BENCH_WRITE_URL" in os.environ:
    engine = make_engine(os.environ["BENCH_WRITE_URL"])
    make_bare_writes(engine)

    @app.post("/bare/write")
    def write() -> tuple[Response, int]:
        return jsonify({"id": bare_write(engine, request.get_data(as_text=True))}), 201
