"""The floor of a durable chat turn over HTTP on this stack: FastAPI on uvicorn (as
`threadline serve` runs), asyncpg, and per turn one statement, in autocommit, that appends
the user's message and the reply to a messages table. What a server that keeps chats
durably cannot skip; everything Threadline does besides (runs, checkpoints, streams) is
measured against it in bench/turns.py.

    .venv/bin/python bench/floor.py --port 8800 --database-url postgresql://...

It answers the requests bench/load.py sends: `POST /threads`, `POST
/threads/{id}/runs/wait` (the reply, "You said: <text>", as the new messages), `GET /ok`.
"""

from __future__ import annotations

import argparse
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import uvicorn
from fastapi import FastAPI, Request

SCHEMA = """
CREATE TABLE IF NOT EXISTS chat_threads (
    thread_id uuid PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS chat_messages (
    id bigserial PRIMARY KEY,
    thread_id uuid NOT NULL REFERENCES chat_threads,
    role text NOT NULL,
    content text NOT NULL
);
CREATE INDEX IF NOT EXISTS chat_messages_thread ON chat_messages (thread_id, id);
"""
NEW_THREAD = "INSERT INTO chat_threads (thread_id) VALUES ($1)"
TURN = (
    "INSERT INTO chat_messages (thread_id, role, content) VALUES ($1, 'human', $2), ($1, 'ai', $3)"
)


def create_app(database_url: str, pool_size: int) -> FastAPI:
    pool: list[asyncpg.Pool] = []

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        created = await asyncpg.create_pool(
            database_url, min_size=pool_size, max_size=pool_size, reset=_keep_as_is
        )
        async with created.acquire() as conn:
            await conn.execute(SCHEMA)
        pool.append(created)
        yield
        await created.close()

    app = FastAPI(lifespan=lifespan)

    @app.get("/ok")
    async def ok() -> dict[str, bool]:
        return {"ok": True}

    @app.post("/threads")
    async def new_thread() -> dict[str, str]:
        thread_id = uuid.uuid4()
        await pool[0].execute(NEW_THREAD, thread_id)
        return {"thread_id": str(thread_id)}

    @app.post("/threads/{thread_id}/runs/wait")
    async def turn(thread_id: uuid.UUID, request: Request) -> dict[str, Any]:
        body = await request.json()
        text = body["input"]["messages"][-1]["content"]
        reply = f"You said: {text}"
        await pool[0].execute(TURN, thread_id, text, reply)
        return {"messages": [{"type": "human", "content": text}, {"type": "ai", "content": reply}]}

    return app


async def _keep_as_is(conn: asyncpg.Connection) -> None:
    """A connection goes back to the pool as it is: a turn leaves no state on it (the
    default reset costs four statements a turn)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--port", type=int, required=True)
    # Threadline's default pool: 10 connections and 20 more on demand.
    parser.add_argument("--pool-size", type=int, default=30)
    args = parser.parse_args()
    app = create_app(args.database_url, args.pool_size)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
