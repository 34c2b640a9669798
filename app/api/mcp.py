"""`/mcp`: the caller's assistants as an MCP server's tools (Streamable HTTP, stateless:
JSON-RPC over POST, no session, no server-sent stream), as LangGraph's server has it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response
from fastapi.responses import JSONResponse

from app.api.deps import CurrentUser, Mcp
from app.middleware import JsonOnlyRoute
from app.schemas.common import ERROR_RESPONSES, Error
from app.schemas.mcp import JsonRpcAnswer
from app.services.mcp import INVALID_REQUEST, error_answer

router = APIRouter(tags=["MCP"], responses=ERROR_RESPONSES, route_class=JsonOnlyRoute)
POST_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"model": JsonRpcAnswer, "description": "The answer to a request."},
    202: {"description": "A notification or a response was taken: nothing to answer."},
    400: {"model": Error, "description": "Not a JSON-RPC 2.0 message, or a bad Accept."},
}
NO_STREAM = "This server sends no stream of its own: every answer comes with its request."


def _refused(detail: str, status_code: int = 400, **headers: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status_code, headers=headers)


@router.post("/mcp", responses=POST_RESPONSES)
@router.post("/mcp/", responses=POST_RESPONSES, include_in_schema=False)
async def post_message(
    request: Request,
    message: Annotated[Any, Body(description="One JSON-RPC message.")],
    mcp: Mcp,
    user: CurrentUser,
) -> Response:
    """A JSON-RPC request (`initialize`, `ping`, `tools/list`, `tools/call`) gets its
    answer; a notification or a response, 202 and nothing."""
    accept = request.headers.get("accept", "")
    if "application/json" not in accept and "text/event-stream" not in accept:
        return _refused("The Accept header must include application/json or text/event-stream.")
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return _refused('A JSON-RPC 2.0 message (an object with jsonrpc: "2.0") is expected.')
    method, has_id = message.get("method"), message.get("id") is not None
    if "method" in message and not (isinstance(method, str) and method):
        invalid = error_answer(message, INVALID_REQUEST, "method must be a method's name (text).")
        return JSONResponse(invalid)
    if has_id and isinstance(method, str) and method:
        return JSONResponse(await mcp.answer(message, owner=user.user_id))
    if has_id or isinstance(method, str) and method:
        return Response(status_code=202)
    return _refused("A JSON-RPC message is a request, a notification or a response.")


GET_RESPONSES: dict[int | str, dict[str, Any]] = {
    405: {"model": Error, "description": NO_STREAM},
}


@router.get("/mcp", responses=GET_RESPONSES)
@router.get("/mcp/", responses=GET_RESPONSES, include_in_schema=False)
async def get_stream(user: CurrentUser) -> JSONResponse:
    """Always 405: no stream of server messages (MCP's transport allows a server none)."""
    return _refused(NO_STREAM, 405, Allow="POST, DELETE")


@router.delete("/mcp")
@router.delete("/mcp/", include_in_schema=False)
async def end_session(user: CurrentUser) -> JSONResponse:
    """Always 404: the server keeps no sessions to end."""
    return _refused("No MCP session: this server keeps none.", 404)
