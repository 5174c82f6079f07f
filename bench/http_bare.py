"""The bench's baseline: a bare Flask endpoint returning a fixed JSON body via jsonify.

``gunicorn -c gunicorn.conf.py bench.http_bare:app`` with ``BENCH_HTTP_BODY`` naming a
JSON file (bench.http writes the production response of promptsvc there, so both apps
answer the same JSON). No auth, no storage: the floor promptsvc is compared with.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from flask import Flask, Response, jsonify

BODY = json.loads(Path(os.environ["BENCH_HTTP_BODY"]).read_text())

app = Flask(__name__)


@app.get("/api/v1/prompts/<name>/production")
def production(name: str) -> Response:
    return jsonify(BODY)
