"""LangGraph projects start as they are (issue 23, item 3): the sample project in
tests/langgraph_project is ported with the command of docs/langgraph-projects.md and
served by `threadline serve` in its folder (its graphs, a graph factory among them, its
`.env` and its `http.cors`); then what the project file decides, piece by piece."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from app.config import Settings
from app.graphs import DEFAULT_GRAPHS, GraphConfigError, GraphRegistry, graph_source
from app.main import cors_options, create_app
from app.project import Project, ProjectError, find
from engine import InMemorySaver
from tests.helpers import said

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "langgraph_project"
HOW_TO = ROOT / "docs" / "langgraph-projects.md"
THREADLINE = ROOT / ".venv" / "bin" / "threadline"


def port_command() -> str:
    """Step 2 of the how-to, as it is written there."""
    [command] = [line for line in HOW_TO.read_text().splitlines() if line.startswith("grep -rlE")]
    return command


@pytest.fixture
def ported(tmp_path: Path) -> Path:
    """A copy of the sample project with its imports ported."""
    folder = tmp_path / "project"
    shutil.copytree(SAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["bash", "-c", port_command()], cwd=folder, check=True)
    return folder


def test_the_port_changes_the_import_lines_only(ported: Path) -> None:
    graph = (ported / "weather_bot" / "graph.py").read_text()
    original = (SAMPLE / "weather_bot" / "graph.py").read_text()
    assert "from engine.graph import START, MessagesState, StateGraph" in graph
    assert "from engine.runtime import Runtime" in graph
    assert not re.search(r"^\s*(from|import) langgraph", graph, re.MULTILINE)
    assert graph.replace("engine", "langgraph") == original


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served(ported: Path, tmp_path: Path) -> Iterator[str]:
    """`threadline serve` in the ported project's folder; its URL."""
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("THREADLINE_GRAPHS", "THREADLINE_CONFIG", "THREADLINE_CORS_ORIGINS")
        and key != "GREETING"
    }
    env["THREADLINE_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}"
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(
        [str(THREADLINE), "serve", "--port", str(port)],
        cwd=ported,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError((tmp_path / "serve.log").read_text()[-3000:])
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()


async def test_threadline_serve_serves_the_ported_project(served: str) -> None:
    client = get_client(url=served)
    assistants = {a["graph_id"]: a for a in await client.assistants.search()}
    assert sorted(assistants) == ["agent", "shouter"]
    # A graph's description is its system assistant's (and its MCP tool's), as there.
    assert assistants["shouter"]["description"] == (
        "The same bot, made per run: configurable.shout makes it shout."
    )
    assert assistants["agent"]["description"] is None
    thread_id = (await client.threads.create())["thread_id"]

    values = await client.runs.wait(thread_id, "agent", input=said("hi"), context={"city": "Oslo"})

    # The context reached the graph, the .env the process, the store the server's store.
    assert values["messages"][-1]["content"] == "Howdy! The weather in Oslo is cold and clear."
    items = (await client.store.search_items(["cities"]))["items"]
    assert [(item["key"], item["value"]) for item in items] == [("Oslo", {"asked": True})]

    # The factory makes each run's graph from the run's config.
    loud = await client.assistants.create("shouter", config={"configurable": {"shout": True}})
    shouted = await client.runs.wait(None, loud["assistant_id"], input=said("hi"))
    assert shouted["messages"][-1]["content"] == "HOWDY! THE WEATHER IN PARIS IS MILD AND CLOUDY."
    calm = await client.runs.wait(None, "shouter", input=said("hi"))
    assert calm["messages"][-1]["content"] == "Howdy! The weather in Paris is mild and cloudy."

    # The project's CORS settings.
    preflight = {"Access-Control-Request-Method": "POST"}
    async with httpx.AsyncClient(base_url=served) as http:
        allowed = await http.options(
            "/threads", headers={"Origin": "https://chat.example", **preflight}
        )
        refused = await http.options(
            "/threads", headers={"Origin": "https://elsewhere.example", **preflight}
        )
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "https://chat.example"
    assert allowed.headers["access-control-allow-credentials"] == "true"
    assert refused.status_code == 400


def write_project(folder: Path, config: dict[str, object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


def test_threadline_graphs_wins_over_the_project(tmp_path: Path) -> None:
    path = write_project(tmp_path, {"graphs": {"bot": "./bot.py:graph"}})
    project = Settings(config_file=str(path))
    assert graph_source(project) == ({"bot": "./bot.py:graph"}, tmp_path)
    ours = Settings(config_file=str(path), graphs=json.dumps({"echo": "app.agents.echo:graph"}))
    assert graph_source(ours) == ({"echo": "app.agents.echo:graph"}, Path.cwd())
    assert graph_source(Settings()) == (DEFAULT_GRAPHS, Path.cwd())


def test_the_project_is_found_here_or_where_threadline_config_says(tmp_path: Path) -> None:
    assert find("", tmp_path) is None
    path = write_project(tmp_path / "app", {"graphs": {"a": "m:g"}})
    assert find("", path.parent) == path
    assert find("app/langgraph.json", tmp_path) == path


def test_the_env_file_fills_in_what_is_not_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text("TL_TEST_SET=from-file\nTL_TEST_NEW='quoted value'\n")
    path = write_project(tmp_path, {"graphs": {"a": "m:g"}, "env": ".env"})
    monkeypatch.setenv("TL_TEST_SET", "from-environment")
    monkeypatch.delenv("TL_TEST_NEW", raising=False)
    Project.read(path).apply_env()
    assert os.environ["TL_TEST_SET"] == "from-environment"
    assert os.environ["TL_TEST_NEW"] == "quoted value"
    inline = write_project(tmp_path / "inline", {"graphs": {"a": "m:g"}, "env": {"N": 1}})
    assert Project.read(inline).env == {"N": "1"}


def test_threadline_cors_origins_win_over_the_project(tmp_path: Path) -> None:
    cors = {"allow_origins": ["https://a.example"], "expose_headers": ["X-Mine"], "max_age": 60}
    path = write_project(tmp_path, {"graphs": {"a": "m:g"}, "http": {"cors": cors}})
    options = cors_options(Settings(config_file=str(path)))
    assert options["allow_origins"] == ["https://a.example"]
    assert options["max_age"] == 60
    assert options["expose_headers"][-1] == "X-Mine" and "Location" in options["expose_headers"]
    overridden = cors_options(Settings(config_file=str(path), cors_origins=("https://b.example",)))
    assert overridden["allow_origins"] == ["https://b.example"]
    assert cors_options(Settings())["allow_origins"] == ["*"]


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({}, '"graphs" must be an object'),
        ({"graphs": {"a": "no-colon"}}, "graph 'a' must be"),
        ({"graphs": {"a": "m:g"}, "env": "missing.env"}, "does not exist"),
        ({"graphs": {"a": "m:g"}, "http": {"cors": {"allow_everything": True}}}, "takes the"),
        ({"graphs": {"": "m:g"}}, "graph id '' is empty"),
        ({"graphs": {"a": {"path": "m:g", "description": 3}}}, '"description" must be text'),
    ],
)
def test_a_project_file_that_cannot_be_served_says_why(
    tmp_path: Path, config: dict[str, object], problem: str
) -> None:
    with pytest.raises(ProjectError, match=re.escape(problem)):
        Project.read(write_project(tmp_path, config))


@pytest.mark.parametrize("path", [Path("/dev/zero"), Path("/")])
def test_a_project_path_that_is_no_file_is_refused_unread(path: Path) -> None:
    """/dev/zero was read until the machine ran out of memory."""
    with pytest.raises(ProjectError, match="not a file of at most"):
        Project.read(path)


@pytest.mark.parametrize(
    ("config", "named"),
    [
        (
            {"store": {"index": {"embed": "openai:text-embedding-3-small", "dims": 1536}}},
            "store.index",
        ),
        ({"store": {"ttl": {"default_ttl": 60}}}, "store.ttl"),
        (
            {"checkpointer": {"ttl": {"strategy": "delete", "default_ttl": 43200}}},
            "checkpointer.ttl",
        ),
        ({"http": {"app": "./app.py:app"}}, "http.app"),
        ({"http": {"disable_store": True}}, "http.disable_store"),
        ({"http": {"mount_prefix": "/agents"}}, "http.mount_prefix"),
        ({"webhooks": {"url": {"allowed_domains": ["a.example"]}}}, "webhooks"),
        ({"ui": {"agent": "./ui.tsx"}}, "ui"),
    ],
)
def test_a_setting_the_server_would_ignore_stops_it(
    tmp_path: Path, config: dict[str, object], named: str
) -> None:
    path = write_project(tmp_path, {"graphs": {"a": "m:g"}, **config})
    with pytest.raises(ProjectError, match=rf'"{re.escape(named)}" asks for .* not serve'):
        Project.read(path)


def test_image_settings_and_settings_left_empty_are_no_obstacle(tmp_path: Path) -> None:
    config = {
        "$schema": "https://langgra.ph/schema.json",
        "dependencies": ["."],
        "python_version": "3.12",
        "image_distro": "wolfi",
        "dockerfile_lines": ["RUN true"],
        "graphs": {"a": "m:g"},
        "store": None,
        "checkpointer": {},
        "http": {"disable_store": False, "cors": {"allow_origins": ["https://a.example"]}},
    }
    project = Project.read(write_project(tmp_path, config))
    assert project.graphs == {"a": "m:g"} and project.auth is None


def test_a_project_with_its_own_auth_is_served_only_behind_threadline_auth(
    tmp_path: Path,
) -> None:
    path = write_project(tmp_path, {"graphs": {"a": "m:g"}, "auth": {"path": "./auth.py:auth"}})
    assert Project.read(path).auth == "./auth.py:auth"
    with pytest.raises(ProjectError, match=r"\./auth\.py:auth.*THREADLINE_AUTH"):
        create_app(Settings(config_file=str(path)))
    create_app(Settings(config_file=str(path), auth="api_key"))
    refused = subprocess.run(
        [str(THREADLINE), "serve", "--port", str(free_port())],
        cwd=tmp_path,
        env={**os.environ, "THREADLINE_AUTH": "none"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert "every caller would be let in" in refused.stderr


async def test_graph_files_factories_and_their_failures(tmp_path: Path) -> None:
    (tmp_path / "tl_sample_bots").mkdir()
    (tmp_path / "tl_sample_bots" / "bots.py").write_text(
        "from engine import START, MessagesState, StateGraph\n"
        "def echo(state): return {'messages': [('ai', 'echo')]}\n"
        "builder = StateGraph(MessagesState).add_node('echo', echo).add_edge(START, 'echo')\n"
        "async def make(config): return builder.compile()\n"
        "def broken(): raise RuntimeError('no model key')\n"
        "not_a_graph = 42\n"
        "import langgraph.graph as lg\n"
        "not_renamed = lg.StateGraph(MessagesState).add_node('echo', echo)"
        ".add_edge(lg.START, 'echo').compile()\n"
        "one_value = StateGraph(dict).add_node('echo', echo).add_edge(START, 'echo')\n"
    )
    saver = InMemorySaver()
    registry = await GraphRegistry.load(
        {"plain": "./tl_sample_bots/bots.py:builder", "made": "tl_sample_bots/bots.py:make"},
        saver,
        tmp_path,
    )
    assert set(registry.graphs) == {"plain", "made"} and set(registry.factories) == {"made"}
    run_config = {"configurable": {"thread_id": "t"}}
    made = await registry.for_run("made", run_config)
    assert made is not registry.graphs["made"] and made.checkpointer is saver
    assert await registry.for_run("plain", run_config) is registry.graphs["plain"]
    for spec, problem in [
        (
            "./tl_sample_bots/bots.py:broken",
            "Graph factory './tl_sample_bots/bots.py:broken' failed: RuntimeError",
        ),
        ("./tl_sample_bots/bots.py:not_a_graph", "is a int, not a StateGraph"),
        (
            "./tl_sample_bots/bots.py:not_renamed",
            "is a graph of LangGraph's (langgraph.graph.state.CompiledStateGraph): the "
            "server runs graphs built with the engine, so change `langgraph` to `engine`",
        ),
        ("./tl_sample_bots/nothing.py:graph", "no file"),
        ("./tl_sample_bots/bots.py:missing", "has no attribute 'missing'"),
        ("./tl_sample_bots/bots.py:one_value", "keeps its whole state as one value"),
    ]:
        with pytest.raises(GraphConfigError, match=re.escape(problem)):
            await GraphRegistry.load({"x": spec}, saver, tmp_path)
