"""Where the app serves the web console, for every module that links to it.

The console's blueprint is mounted at :data:`CONSOLE_PATH` (promptsvc.console); ``/``
redirects to :data:`CONSOLE_HOME` (promptsvc.api.ops); the realm sends people back to
:data:`CONSOLE_CALLBACK` after sign-in and to :data:`CONSOLE_HOME` after sign-out
(promptsvc.app registers both, promptsvc.console.signin asks for them).
"""

from __future__ import annotations

CONSOLE_PATH = "/console"
CONSOLE_HOME = CONSOLE_PATH + "/"
CONSOLE_CALLBACK = CONSOLE_PATH + "/callback"
