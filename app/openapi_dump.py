"""Write (or, with --check, compare) openapi/openapi.json from the app itself."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from app.main import create_app
from app.settings import Settings

TARGET = Path(__file__).resolve().parent.parent / "openapi" / "openapi.json"


def render() -> str:
    # A fixed, key-less settings object: the schema must not depend on the environment.
    app = create_app(Settings(_env_file=None, environment="development"))
    return json.dumps(app.openapi(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = TARGET.read_text() if TARGET.exists() else ""
        if current != text:
            print("openapi/openapi.json is out of date: run `python3 dev.py openapi`")
            return 1
        print("openapi/openapi.json is up to date")
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(text)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
