"""promptsvc: self-hosted prompt versioning service.

``create_app`` is imported lazily so that ``promptsvc.client`` (the SDK) loads without
Flask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from promptsvc.version import VERSION

__version__ = VERSION

if TYPE_CHECKING:
    from promptsvc.app import create_app

__all__ = ["__version__", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from promptsvc.app import create_app

        return create_app
    raise AttributeError(name)
