"""The rules of a prompt's template and of its variable contract, once for everything
that applies them: the placeholder grammar and rendering (:mod:`.template`), one prompt
included in another and the walk that checks includes (:mod:`.includes`), what a
contract may say, which values it accepts and what replacing it breaks (:mod:`.contract`).

The lowest layer: standard library only, so storage (the service's checks), the SDK,
the command line and the console all import it, and the SDK installs without the
server (tests/test_layers.py). The TypeScript SDK implements the same rules; the shared
tests/vectors hold both to them.
"""
