"""Run pytest with every `langgraph.X` module answered by our `engine.X`.

LangGraph's own test files import `langgraph`. This finder comes first on the meta path
and hands out the engine's module itself (one module object under both names), so the
real `langgraph` installed as a dev oracle is never loaded: a module the engine lacks is
a clear import error, never a silent fallback to the original. Private LangGraph modules
have no twin in the engine; a test file may get a private name only through
PRIVATE_NAMES.

Run as `python -m langgraph_shim PYTEST_ARGS...` (the harness does, in a subprocess).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

# Private LangGraph modules that test files import, name by name: where the engine keeps
# the same thing, as "module" (the same name there) or "module:name". None stands for a
# name the engine has nothing like: the file imports, and the tests that use the name
# fail (and are listed). A private name not listed here fails to import.
PRIVATE_NAMES: dict[str, dict[str, str | None]] = {
    "langgraph._internal._constants": {
        "CONFIG_KEY_RUNTIME": "engine.pregel.runnable",
        "ERROR": "engine.constants",
        "INTERRUPT": "engine.constants",
        "NO_WRITES": "engine.constants",
        "NULL_TASK_ID": "engine.constants:NULL_TASK",
        "RESUME": "engine.constants",
        "RETURN": "engine.constants",
        "PULL": "engine.constants",
        "PUSH": "engine.constants",
        "CONFIG_KEY_NODE_FINISHED": "engine.constants",
        # The key of the dict form an Overwrite takes once it crossed JSON.
        "OVERWRITE": None,
    },
    # The engine's one loop runs a step's tasks itself: it stands for LangGraph's loops
    # and their runner where a test counts the live ones.
    "langgraph.pregel._loop": {
        "PregelLoop": "engine.pregel.loop:Loop",
        "SyncPregelLoop": "engine.pregel.loop:Loop",
        "AsyncPregelLoop": "engine.pregel.loop:Loop",
    },
    "langgraph.pregel._runner": {"PregelRunner": "engine.pregel.loop:Loop"},
    # The queue LangGraph's async loop waits on for finished tasks.
    "langgraph._internal._queue": {"AsyncQueue": None},
    # LangGraph's reader of a step's saved writes (the engine's is `task_statuses`, of
    # another shape).
    "langgraph.pregel._task_status": {"read_task_statuses": None},
    # LangGraph's pickled dict on disk for InMemorySaver(factory=...), which the engine
    # does not provide (docs/langgraph-differences.md); the test helpers import it.
    "langgraph.checkpoint.memory": {"PersistentDict": None},
    # A private name of a public module: added to the engine's module in the suite's
    # process only.
    "langgraph.callbacks": {"_GraphCallbackManager": None},
    "langgraph.graph.state": {
        "_get_node_name": None,
        "_is_field_channel": None,
        "_warn_invalid_state_schema": None,
        "_get_channel": None,
    },
    "langgraph._internal._runnable": {"RunnableCallable": "engine.pregel.runnable"},
    "langgraph._internal._typing": {"MISSING": "engine.channels.base"},
    # A DeltaChannel's saved snapshot: the engine saves the channel's value instead.
    "langgraph.checkpoint.serde.types": {"_DeltaSnapshot": None},
    # LangGraph's reader of an Overwrite in its dict forms (the engine's is its own).
    "langgraph.channels.binop": {"_get_overwrite": None},
    "langgraph.pregel._checkpoint": {"delta_channels_to_snapshot": None},
}


class Unsupported(str):
    """What a name the engine has nothing like (None in PRIVATE_NAMES) is imported as: a
    config key or a value no engine code reads, named so that a failure says what it is."""


def is_private(fullname: str) -> bool:
    return any(part.startswith("_") for part in fullname.split(".")[1:])


class EngineAlias(importlib.abc.Loader):
    """Loads `langgraph.X` as the module `engine.X`, imported (and run) under its own name."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        target = "engine" + spec.name.removeprefix("langgraph")
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as error:
            missing = error.name or ""
            if target != missing and not target.startswith(missing + "."):
                raise  # the engine module exists but something it imports does not
            raise ModuleNotFoundError(
                f"No module named {spec.name!r} (the shim maps it onto {target!r}, "
                f"which the engine does not have)",
                name=spec.name,
            ) from None
        lookup = private_lookup(spec.name, PRIVATE_NAMES.get(spec.name, {}))
        for name in PRIVATE_NAMES.get(spec.name, {}):
            if not hasattr(module, name):
                setattr(module, name, lookup(name))
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: create_module returned the engine module, already executed."""


class PrivateNames(importlib.abc.Loader):
    """Builds a private LangGraph module out of the names PRIVATE_NAMES lists for it."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        names = PRIVATE_NAMES.get(module.__name__)
        if names is not None:
            module.__getattr__ = private_lookup(module.__name__, names)  # type: ignore[method-assign]


def private_lookup(module_name: str, names: dict[str, str | None]) -> Callable[[str], Any]:
    """The module's `__getattr__`: each name is fetched from the engine on first use, so a
    test gets the names that exist even when another listed one is missing.

    It raises ImportError (which `from X import name` passes on as is) rather than
    AttributeError (which it replaces with a message that says nothing of the shim)."""

    def lookup(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in names:
            raise ImportError(
                f"{module_name}.{name} is private to LangGraph and not in the shim's "
                f"PRIVATE_NAMES table ({__file__})"
            )
        home = names[name]
        if home is None:
            return Unsupported(f"{module_name}.{name} (not in the engine)")
        module, _, attribute = home.partition(":")
        try:
            return getattr(importlib.import_module(module), attribute or name)
        except (ImportError, AttributeError) as error:
            raise ImportError(
                f"{module_name}.{name}: the shim maps it onto {module}.{attribute or name}, "
                f"which is missing ({error})"
            ) from None

    return lookup


class LanggraphFinder(importlib.abc.MetaPathFinder):
    """Claims every `langgraph` module, so none can come from the installed package."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "langgraph" and not fullname.startswith("langgraph."):
            return None
        if not is_private(fullname):
            return importlib.machinery.ModuleSpec(fullname, EngineAlias())
        if fullname in PRIVATE_NAMES:
            return importlib.machinery.ModuleSpec(fullname, PrivateNames())
        if any(listed.startswith(fullname + ".") for listed in PRIVATE_NAMES):
            return importlib.machinery.ModuleSpec(fullname, PrivateNames(), is_package=True)
        raise ModuleNotFoundError(
            f"No module named {fullname!r}: it is private to LangGraph and not in the "
            f"shim's PRIVATE_NAMES table ({__file__})",
            name=fullname,
        )


def main() -> None:
    loaded = sorted(name for name in sys.modules if name.split(".")[0] == "langgraph")
    if loaded:
        sys.exit(f"langgraph was imported before the shim was installed: {loaded}")
    sys.meta_path.insert(0, LanggraphFinder())
    import pytest  # after the finder, so that no plugin it loads sees the real langgraph

    sys.exit(pytest.main(sys.argv[1:]))


if __name__ == "__main__":
    main()
