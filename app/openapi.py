"""Render the OpenAPI document: `python -m app.openapi [PATH]` writes it (default openapi.json).

The committed openapi.json is the published wire contract; a test fails when it drifts.
"""

import json
import sys
from pathlib import Path

from app.config import Settings
from app.main import create_app


def render() -> str:
    """The OpenAPI document as stable text (sorted keys), independent of the environment."""
    return json.dumps(create_app(Settings()).openapi(), sort_keys=True, indent=2) + "\n"


def main(argv: list[str]) -> None:
    """Write the document to the path in argv (default openapi.json in the current directory)."""
    path = Path(argv[0] if argv else "openapi.json")
    path.write_text(render(), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
