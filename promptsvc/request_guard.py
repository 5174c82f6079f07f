"""What no request brings in, whatever the backend: NUL bytes anywhere, and numbers in
a path that no 64-bit column holds (docs/api.md section 9).

PostgreSQL cannot store a NUL in text at all and the other backends would store it
where no name or id may hold one, so none reaches storage:

* a path: the URL map's converters (:func:`init_app` installs them before any route is
  added) match no segment holding a NUL, nor an ``<int:...>`` segment above
  :data:`storage.ids.MAX_NUMBER`, so such a path routes nowhere: 404 from whichever part
  owns the prefix, in its shape (the read endpoints route with the same map);
* a query or a form: promptsvc.http.ApiRequest, the request of every Flask view (the
  API, the realms, the console), raises identity.responses.NulCharacter (400, answered
  in each part's shape) when it parses one holding a NUL; the read endpoints, answered
  in front of Flask, call :func:`check_query` themselves;
* a JSON body: the API's parser (promptsvc.api.common) answers 400 naming the fields,
  and so does the sdk-token endpoint (identity.sdk_token) for its three.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote_to_bytes

from flask import Flask
from werkzeug.routing import IntegerConverter, Map, PathConverter, UnicodeConverter, ValidationError

from identity.responses import NulCharacter
from storage.ids import MAX_NUMBER

NUL = "\x00"


class SegmentConverter(UnicodeConverter):
    """The default converter (``<name>``, ``<string:name>``), minus segments with a NUL."""

    def __init__(self, map: Map, *args: Any, **kwargs: Any) -> None:
        super().__init__(map, *args, **kwargs)
        self.regex = self.regex.replace("[^/]", "[^/\\x00]")


class NulFreePathConverter(PathConverter):
    """``<path:name>`` minus paths with a NUL."""

    regex = "[^/\\x00][^\\x00]*?"


class Int64Converter(IntegerConverter):
    """``<int:name>``: ASCII digits (``\\d`` would take any script's) up to MAX_NUMBER."""

    regex = f"[0-9]{{1,{len(str(MAX_NUMBER))}}}"

    def to_python(self, value: str) -> Any:
        number = super().to_python(value)
        if number > MAX_NUMBER:
            raise ValidationError()
        return number


def has_nul(value: Any) -> bool:
    """Whether ``value`` (a string, or JSON: lists and objects, keys too) holds a NUL."""
    if isinstance(value, str):
        return NUL in value
    if isinstance(value, dict):
        return any(has_nul(key) or has_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(has_nul(item) for item in value)
    return False


def nul_fields(pairs: Iterable[tuple[str, Any]]) -> list[str]:
    """The names, in order and once each, of the (name, value) pairs that hold a NUL."""
    found = [name for name, value in pairs if has_nul(name) or has_nul(value)]
    # Echoed in the answer: shown, not sent back as they came.
    return list(dict.fromkeys(repr(name[:40])[1:-1] for name in found))


def check_query(query_string: bytes | str) -> None:
    """BadRequest when a raw query string holds a NUL, percent-encoded or not (for the
    read endpoints, which parse no query: Flask's requests check theirs as they parse
    it, promptsvc.http.ApiRequest)."""
    raw = query_string.encode("latin-1") if isinstance(query_string, str) else query_string
    if b"\x00" in unquote_to_bytes(raw):
        raise NulCharacter(nul_message("the query string"))


def nul_message(where: str, names: list[str] | None = None) -> str:
    named = f" ({', '.join(names)})" if names else ""
    return f"{where}{named} has a NUL character, which no value may hold"


def init_app(app: Flask) -> None:
    """Install the converters; call it before any route is added."""
    app.url_map.converters.update(
        default=SegmentConverter,
        string=SegmentConverter,
        path=NulFreePathConverter,
        int=Int64Converter,
    )
