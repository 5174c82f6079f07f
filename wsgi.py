"""WSGI entry point: ``gunicorn -c gunicorn.conf.py wsgi:app``.

Settings come from the PROMPTSVC_* environment variables (promptsvc.config.Settings).
"""

from __future__ import annotations

from promptsvc.app import create_app

app = create_app()
