"""``python -m planguard_langchain.demo``: the same as ``planguard demo``."""

import sys

from .agent import main

sys.exit(main())
