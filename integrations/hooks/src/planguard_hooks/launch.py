"""What ``planguard install claude-code`` has Claude Code run: ``python -S .../launch.py [options]``.

Python compiles a script on every run but a module only once (its ``.pyc`` is cached), so this script is
a few lines and runs :mod:`planguard_hooks.client` imported as a module: from this folder, which is
taken off ``sys.path`` again at once so that its modules shadow nothing later.
"""

import os
import sys

if __name__ == "__main__":
    _here = os.path.dirname(os.path.realpath(__file__))
    if not sys.path or os.path.realpath(sys.path[0] or ".") != _here:
        sys.path.insert(0, _here)
    _client = __import__("client")  # this folder's client.py (imports nothing but the standard library)
    del sys.modules["client"], sys.path[0]
    sys.exit(_client.cli())
