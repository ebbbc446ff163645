"""The demo moved into the LangChain integration (``planguard_langchain.demo``), so that it runs from a
plain install; this file stays as a pointer. ``planguard demo`` and ``python examples/demo/agent.py`` are the
same run."""

import sys

from planguard_langchain.demo import main

if __name__ == "__main__":
    sys.exit(main())
