"""The committed openapi.json must be exactly what the app generates."""

from pathlib import Path

from app.openapi import render

OPENAPI_PATH = Path(__file__).resolve().parents[2] / "openapi.json"


def test_committed_openapi_matches_app() -> None:
    committed = OPENAPI_PATH.read_text(encoding="utf-8") if OPENAPI_PATH.exists() else ""
    assert committed == render(), "openapi.json is out of date: run `make openapi`"
