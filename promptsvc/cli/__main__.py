"""``python -m promptsvc.cli``: the ``promptsvc`` command."""

from __future__ import annotations

import sys

from promptsvc.cli import main

sys.exit(main())
