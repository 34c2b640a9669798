"""Run LangGraph's own test files against our engine, and judge the outcome.

The test files come from the source archives of the LangGraph releases we twin,
downloaded from the package index at test time and cached under `.cache/` (never
committed: that code is theirs). They run in a pytest subprocess where `langgraph_shim`
maps `langgraph.X` onto `engine.X` and `suite_plugin` stands in for their conftest. Each
test must pass or be listed, with a reason, in docs/langgraph-differences.md; a listed
test that passes is a stale entry, and fails the verdict too.

    python -m tests.langgraph_suite.harness                # every file in SUITE
    python -m tests.langgraph_suite.harness langgraph tests/test_pregel.py [-- -k name]
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CACHE = REPO / ".cache" / "langgraph-suite"
DIFFERENCES = REPO / "docs" / "langgraph-differences.md"
SECTION = "## LangGraph's own tests we do not pass"
TIMEOUT_S = 900
REPORT_KEY = pytest.StashKey[str]()


@dataclass(frozen=True)
class Archive:
    """A release whose sdist holds the tests; the hash pins the exact archive we run."""

    name: str
    version: str
    sha256: str
    asyncio_mode: str  # as the release's own pytest configuration sets it

    @property
    def sdist(self) -> str:
        return f"{re.sub(r'[-_.]+', '_', self.name)}-{self.version}.tar.gz"

    @property
    def root(self) -> Path:
        """Where its tests/ folder is extracted: the root of the pytest subprocess."""
        return CACHE / f"{self.name}-{self.version}"


ARCHIVES = {
    archive.name: archive
    for archive in [
        Archive(
            "langgraph",
            "1.2.24",
            "86b0dd611b7201cb393da2de0e064029c1bef520f11a5e6ee04be53c2a815bc7",
            asyncio_mode="strict",
        ),
        Archive(
            "langgraph-prebuilt",
            "1.1.3",
            "7ee72332e925000e3d24d2d491dd0ebb9d3a44dbffe650185943b730a832cf6d",
            asyncio_mode="auto",
        ),
    ]
}

# The test files `make test` runs, per archive. Add a file here to hold the engine to it.
SUITE: dict[str, list[str]] = {
    "langgraph": [
        "tests/test_messages_state.py",
        "tests/test_managed_values.py",
        "tests/test_runtime.py",
        "tests/test_type_checking.py",
        "tests/test_interruption.py",
        "tests/test_parent_command.py",
        "tests/test_parent_command_async.py",
        "tests/test_time_travel.py",
        "tests/test_time_travel_async.py",
        "tests/test_subgraph_persistence.py",
        "tests/test_subgraph_persistence_async.py",
        "tests/test_stream_namespaces.py",
        "tests/test_large_cases.py",
        "tests/test_large_cases_async.py",
        "tests/test_deprecation.py",
        "tests/test_pregel.py",
        "tests/test_pregel_async.py",
        "tests/test_interrupt_state.py",
        "tests/test_graph_callbacks.py",
        "tests/test_state.py",
        "tests/test_channels.py",
    ],
    "langgraph-prebuilt": [
        "tests/test_tool_node.py",
        "tests/test_react_agent.py",
        "tests/test_react_agent_graph.py",
        "tests/test_validation_node.py",
        "tests/test_injected_state_not_required.py",
        "tests/test_on_tool_call.py",
        "tests/test_tool_node_interceptor_unregistered.py",
        "tests/test_tool_node_validation_error_filtering.py",
        "tests/test_deprecation.py",
    ],
}


class IndexUnreachable(Exception):
    """The package index could not be reached and the archive is not cached."""


def index_url() -> str:
    return os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")


def download(archive: Archive, target: Path) -> None:
    """Fetch the sdist through the index's simple API (what pip reads), check its hash."""
    project = re.sub(r"[-_.]+", "-", archive.name).lower()
    page_url = f"{index_url()}/{project}/"
    shown = re.sub(r"//[^/@]*@", "//", page_url)  # no credentials in messages
    try:
        with httpx.Client(follow_redirects=True, timeout=60) as client:
            page = client.get(page_url, headers={"Accept": "text/html"})
            page.raise_for_status()
            links = [html.unescape(href) for href in re.findall(r'href="([^"]+)"', page.text)]
            found = [href for href in links if urlsplit(href).path.endswith("/" + archive.sdist)]
            if not found:
                raise LookupError(f"{archive.sdist} is not listed on {shown}")
            response = client.get(urljoin(str(page.url), found[0]))
            response.raise_for_status()
    except httpx.TransportError as error:
        raise IndexUnreachable(f"{shown}: {error!r}") from error
    digest = hashlib.sha256(response.content).hexdigest()
    if digest != archive.sha256:
        raise ValueError(f"{archive.sdist}: sha256 {digest}, expected {archive.sha256}")
    partial = target.with_suffix(".part")
    partial.write_bytes(response.content)
    partial.replace(target)


def prepare(archive: Archive) -> Path:
    """The archive's tests extracted under .cache/, downloaded first if need be.

    Their conftest.py files stay out: suite_plugin replaces them."""
    if archive.root.is_dir():
        return archive.root
    sdist = CACHE / "sdists" / archive.sdist
    sdist.parent.mkdir(parents=True, exist_ok=True)
    if not sdist.is_file():
        download(archive, sdist)
    staging = Path(tempfile.mkdtemp(dir=CACHE, prefix=".extract-"))
    try:
        with tarfile.open(sdist) as tar:
            members = []
            for member in tar.getmembers():
                parts = PurePosixPath(member.name).parts
                if len(parts) > 2 and parts[1] == "tests" and parts[-1] != "conftest.py":
                    member.name = str(PurePosixPath(*parts[1:]))
                    members.append(member)
            tar.extractall(staging, members=members, filter="data")
        staging.rename(archive.root)
    except OSError:
        if not archive.root.is_dir():  # another process may have extracted it meanwhile
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return archive.root


@dataclass
class Run:
    """What one pytest subprocess over one archive's files found."""

    archive: Archive
    files: list[str]
    log: Path  # the subprocess's output
    outcomes: dict[str, str] = field(default_factory=dict)  # test id -> passed/failed/skipped
    messages: dict[str, str] = field(default_factory=dict)  # test id -> why it did not pass
    problem: str = ""  # the run itself went wrong: timeout, crash, bad arguments

    def file_ids(self) -> list[str]:
        return [f"{self.archive.name}/{name}" for name in self.files]


def file_of(test_id: str) -> str:
    return test_id.split("::")[0]


def run_files(archive: Archive, files: Sequence[str], pytest_args: Sequence[str] = ()) -> Run:
    """Run the files in a pytest subprocess behind the shim, and fold its outcome log.

    A test id is `<archive>/<node id>`; a file that fails as a whole (it does not import,
    or is not in the archive) gets one outcome under its own path."""
    root = prepare(archive)
    # one log per process, so that runs side by side do not write over each other
    run = Run(archive, list(files), CACHE / "logs" / f"{archive.name}-{os.getpid()}.log")
    run.log.parent.mkdir(parents=True, exist_ok=True)
    present = [name for name in files if (root / name).is_file()]
    for name in sorted(set(files) - set(present)):
        run.outcomes[f"{archive.name}/{name}"] = "failed"
        run.messages[f"{archive.name}/{name}"] = f"no file {name} in {archive.sdist}"
    if not present:
        return run
    report = run.log.with_suffix(".jsonl")
    report.unlink(missing_ok=True)
    path = [str(root), str(HERE), str(REPO), os.environ.get("PYTHONPATH", "")]
    command = [
        sys.executable,
        "-m",
        "langgraph_shim",
        *("-c", os.devnull, "--rootdir", str(root)),  # no ini file of ours or theirs
        *("-p", "suite_plugin", "-p", "no:cacheprovider"),
        *("-o", f"asyncio_mode={archive.asyncio_mode}"),
        *("-o", "asyncio_default_fixture_loop_scope=function"),
        *("--continue-on-collection-errors", "--tb=short", "-q"),
        f"--suite-report={report}",
        *present,
        *pytest_args,
    ]
    with run.log.open("w") as log:
        try:
            code = subprocess.run(
                command,
                cwd=root,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, path))},
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=TIMEOUT_S,
            ).returncode
        except subprocess.TimeoutExpired:
            run.problem = f"timed out after {TIMEOUT_S} s"
        else:
            if code not in (0, 1, 5):  # 5: nothing collected, e.g. under -k
                run.problem = f"pytest exited with code {code}"
    if report.is_file():
        fold(run, report.read_text().splitlines())
    return run


def fold(run: Run, lines: Sequence[str]) -> None:
    """One outcome per test from its setup, call and teardown reports: failed if any
    failed, else skipped if any skipped, else passed once its call passed."""
    for line in lines:
        report = json.loads(line)
        test_id = f"{run.archive.name}/{report['nodeid']}"
        outcome = report["outcome"]
        if outcome == "failed" or (outcome == "skipped" and run.outcomes.get(test_id) != "failed"):
            run.outcomes[test_id] = outcome
            run.messages.setdefault(test_id, report["message"])
        elif report["when"] == "call":
            run.outcomes.setdefault(test_id, "passed")


def read_listed(text: str) -> tuple[dict[str, str], list[str]]:
    """The section's entries (test id -> reason) and what is wrong with its format.

    One bullet per line: `` - `langgraph-prebuilt/tests/test_x.py::test_y[param]`: why ``,
    or `...test_x.py::*` for every test of a file (and the file failing to import)."""
    entries: dict[str, str] = {}
    errors: list[str] = []
    lines = text.splitlines()
    if SECTION not in lines:
        return entries, [f"{DIFFERENCES.name} has no line {SECTION!r}"]
    for line in lines[lines.index(SECTION) + 1 :]:
        if line.startswith("## "):
            break
        if not line.startswith("- "):
            continue
        match = re.fullmatch(r"- `([^`]+::[^`]+)`: (\S.*)", line)
        if match is None:
            errors.append(f"not a `test id`: reason bullet: {line}")
        elif match[1] in entries:
            errors.append(f"listed twice: {match[1]}")
        else:
            entries[match[1]] = match[2]
    return entries, errors


def judge(runs: Sequence[Run], listed: dict[str, str], whole_suite: bool) -> list[str]:
    """Every reason the verdict fails: unlisted failures, stale entries, broken runs.

    With whole_suite, an entry for a file outside SUITE is stale too; otherwise (an ad
    hoc run) entries for files that did not run are left alone."""
    problems = [f"{run.archive.name}: {run.problem} (see {run.log})" for run in runs if run.problem]
    outcomes = {test_id: outcome for run in runs for test_id, outcome in run.outcomes.items()}
    for test_id, outcome in sorted(outcomes.items()):
        covered = test_id in listed or f"{file_of(test_id)}::*" in listed
        if outcome == "failed" and not covered:
            problems.append(f"fails and is not listed: {test_id}")
    files = {file_id for run in runs for file_id in run.file_ids()}
    for file_id in sorted(files):
        if not any(file_of(test_id) == file_id for test_id in outcomes):
            problems.append(f"no outcome was recorded for {file_id}")
    for entry in sorted(listed):
        file_id = file_of(entry)
        if file_id not in files:
            if whole_suite:
                problems.append(f"stale entry, its file is not in SUITE: {entry}")
            continue
        in_file = {i: o for i, o in outcomes.items() if file_of(i) == file_id}
        if entry.endswith("::*"):
            if "failed" not in in_file.values():
                problems.append(f"stale entry, nothing in its file fails: {entry}")
        elif entry in in_file:
            if in_file[entry] != "failed":
                problems.append(f"stale entry, the test {in_file[entry]}: {entry}")
        elif outcomes.get(file_id) != "failed":  # its file ran, and has no such test
            problems.append(f"stale entry, no such test: {entry}")
    return problems


def table(runs: Sequence[Run]) -> str:
    """Counts per file, then the most common reasons for failing."""
    rows = [("file", "passed", "failed", "skipped", "total", "")]
    for run in runs:
        for file_id in run.file_ids():
            found = Counter(o for i, o in run.outcomes.items() if file_of(i) == file_id)
            note = ""
            if file_id in run.outcomes:  # the file as a whole failed or was skipped
                whole = run.outcomes[file_id]
                note = f"{'not run' if whole == 'failed' else whole}: {run.messages[file_id]}"
                found[whole] -= 1
            counts = [found["passed"], found["failed"], found["skipped"]]
            rows.append((file_id, *map(str, counts), str(sum(counts)), note))
    width = max(len(row[0]) for row in rows)
    lines = [
        f"{row[0]:<{width}} {row[1]:>6} {row[2]:>6} {row[3]:>7} {row[4]:>5}  {row[5]}".rstrip()
        for row in rows
    ]
    causes = Counter(
        run.messages[test_id]
        for run in runs
        for test_id, outcome in run.outcomes.items()
        if outcome == "failed"
    )
    if causes:
        lines.append("most common reasons for failing (count, first line):")
        lines += [f"{count:>6}  {message}" for message, count in causes.most_common(15)]
    lines += [f"full output: {run.log}" for run in runs]
    return "\n".join(lines)


def verdict(runs: Sequence[Run], whole_suite: bool) -> list[str]:
    listed, errors = read_listed(DIFFERENCES.read_text() if DIFFERENCES.is_file() else "")
    return errors + judge(runs, listed, whole_suite)


def main(argv: Sequence[str]) -> int:
    """`[ARCHIVE [FILE...]] [-- PYTEST_ARGS...]`: an archive alone runs its SUITE files."""
    args = list(argv)
    pytest_args = args[args.index("--") + 1 :] if "--" in args else []
    args = args[: args.index("--")] if "--" in args else args
    if args and args[0] not in ARCHIVES:
        print(f"unknown archive {args[0]!r}; one of {sorted(ARCHIVES)}", file=sys.stderr)
        return 2
    chosen = {args[0]: args[1:] or SUITE[args[0]]} if args else SUITE
    try:
        runs = [run_files(ARCHIVES[name], files, pytest_args) for name, files in chosen.items()]
    except IndexUnreachable as error:
        print(f"package index unreachable and nothing cached: {error}", file=sys.stderr)
        return 2
    print(table(runs))
    if pytest_args:  # they may deselect listed tests, which would look like stale entries
        print("no verdict: pytest arguments were given")
        return 0
    problems = verdict(runs, whole_suite=chosen == SUITE)
    print("\n".join(problems) if problems else "verdict: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
