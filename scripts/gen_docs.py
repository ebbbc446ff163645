"""Write the generated references (docs/telemetry.md, docs/config.md); ``--check`` only reports stale ones.

python scripts/gen_docs.py          # regenerate
python scripts/gen_docs.py --check  # exit 1 when a file differs from what the code generates
"""

from __future__ import annotations

import sys
from pathlib import Path

from planguard.reference import render_config_reference, render_telemetry_reference

DOCS = Path(__file__).resolve().parent.parent / "docs"
GENERATED = {"telemetry.md": render_telemetry_reference, "config.md": render_config_reference}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name, render in GENERATED.items():
        path = DOCS / name
        text = render()
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(name)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if check and stale:
        print(f"stale: {', '.join(stale)} (run python scripts/gen_docs.py)", file=sys.stderr)
        return 1
    print("wrote " + ", ".join(stale) if stale else "up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
