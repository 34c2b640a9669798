"""The lock files against pyproject.toml: what `make run`, `make test` and CI install
(requirements.txt, requirements-dev.txt) satisfies every requirement, and each runtime
dependency's lower bound is the version `make test-lowest` runs the suite on
(requirements-lowest.txt). A dependency added without `make lock` fails here."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
RUNTIME = [Requirement(spec) for spec in PROJECT["dependencies"]]
DEV = [Requirement(spec) for spec in PROJECT["optional-dependencies"]["dev"]]


def pins(name: str) -> dict[NormalizedName, Version]:
    """A lock file's pins that apply on this machine (their markers hold here)."""
    found: dict[NormalizedName, Version] = {}
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        if not line or line.startswith((" ", "#")):
            continue
        pin = Requirement(line)
        if pin.marker is None or pin.marker.evaluate():
            [version] = (spec.version for spec in pin.specifier)
            found[canonicalize_name(pin.name)] = Version(version)
    return found


@pytest.mark.parametrize(
    ("lock", "requirements"),
    [("requirements.txt", RUNTIME), ("requirements-dev.txt", RUNTIME + DEV)],
)
def test_the_lock_files_satisfy_pyproject(lock: str, requirements: list[Requirement]) -> None:
    pinned = pins(lock)
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{lock} lacks {name}: run `make lock`"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"{lock} pins {name} {pinned[name]}, outside {requirement}: run `make lock`"
        )


def test_make_run_and_make_test_install_the_same_versions() -> None:
    """requirements.txt is a part of requirements-dev.txt, so one venv serves both."""
    dev = pins("requirements-dev.txt")
    run = pins("requirements.txt")
    assert {name: dev.get(name) for name in run} == run


def test_every_runtime_dependency_has_a_tested_lower_bound() -> None:
    lowest = pins("requirements-lowest.txt")
    for requirement in RUNTIME:
        name = canonicalize_name(requirement.name)
        bounds = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
        assert bounds, f"{name} has no lower bound in pyproject.toml"
        assert lowest[name] == max(bounds), (
            f"`make test-lowest` runs {name} {lowest[name]}, not its bound {max(bounds)}: "
            "raise the bound to a version it can run (or run `make lock`)"
        )
