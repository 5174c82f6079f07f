"""The read API's body for a version, memoized.

A record's JSON is its ``to_json()`` (storage/base.py); this module only keeps the
encoded body and its ETag for each version object, since building them costs more than
the rest of a read.
"""

from __future__ import annotations

from promptsvc.http import etag_of, json_body
from storage.base import PromptVersion
from storage.memo import Memo

# id(version) -> (version, body, ETag). The version is kept with its body so that its id
# cannot be reused by another object while the entry lives.
_BODIES: Memo[int, tuple[PromptVersion, bytes, str]] = Memo()


def version_body(v: PromptVersion) -> tuple[bytes, str]:
    """The read API's JSON body for ``v`` and its strong ETag (unquoted).

    Memoized per version object (storage/memo.py): storage hands out the same object
    for the same stored version (memory keeps its records; Redis memoizes decoding on
    every stored field), and a record never changes, so a hit is always the right body.
    """
    hit = _BODIES.get(id(v))
    if hit is not None and hit[0] is v:
        return hit[1], hit[2]
    body = json_body(v.to_json())
    etag = etag_of(body)
    _BODIES.put(id(v), (v, body, etag), len(body))
    return body, etag
