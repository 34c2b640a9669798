"""The built-in web page: a chat with the default assistant beside a live view of the runs.

Static files only (`app/web/`, no build step); the page talks to the public HTTP API like
any other client. None of these routes are part of the published wire contract, so they
stay out of the OpenAPI schema.
"""

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from app.errors import NotFound

WEB_DIR = Path(__file__).resolve().parent.parent / "web"
# Explicit types: the platform's mimetypes table may not know `.js` as JavaScript, and a
# module script served as text/plain is refused by browsers.
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
}
# `no-cache` revalidates on every load, so a new version of the page is never mixed with
# cached modules of the old one.
HEADERS = {"Cache-Control": "no-cache"}

router = APIRouter(include_in_schema=False)


@router.get("/")
async def index() -> FileResponse:
    """The page itself."""
    return FileResponse(WEB_DIR / "index.html", media_type=MEDIA_TYPES[".html"], headers=HEADERS)


# The page's files, by their path under WEB_DIR: a request names one of them or none,
# and never reaches the file system with a name of its own (`..`, NUL, a 5,000-character
# name the system refuses).
ASSETS = {
    file.relative_to(WEB_DIR).as_posix(): file for file in WEB_DIR.rglob("*") if file.is_file()
}


@router.get("/web/{path:path}")
async def asset(path: str) -> FileResponse:
    """A file of the page. A route rather than a mounted StaticFiles app: an APIRouter does
    not carry mounts into the app that includes it."""
    file = ASSETS.get(path)
    if file is None:
        raise NotFound(f"No such file: /web/{path[:200]}")
    media_type = MEDIA_TYPES.get(file.suffix, "application/octet-stream")
    return FileResponse(file, media_type=media_type, headers=HEADERS)
