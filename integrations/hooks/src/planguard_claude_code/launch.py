"""What settings written by earlier versions run for every hook call:
``python -S …/planguard_claude_code/launch.py [--dialect CLI] [--config FILE] …``. It runs the hook client
of :mod:`planguard_hooks` exactly as that package's own ``launch.py`` does (same options, same daemon)."""

import os
import sys

if __name__ == "__main__":
    _hooks = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "planguard_hooks")
    sys.path.insert(0, _hooks)
    _client = __import__("client")  # planguard_hooks/client.py (imports nothing but the standard library)
    del sys.modules["client"], sys.path[0]
    sys.exit(_client.cli())
