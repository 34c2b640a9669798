"""LangGraph's older and smaller import paths have engine twins: a program that imports
from them ports by changing `langgraph` to `engine`, and gets the same names."""

import importlib
import sys
from importlib.metadata import version

import pytest

from engine.channels import BaseChannel

# Each LangGraph path, with the names of it the engine offers too.
TWINS: dict[str, tuple[str, ...]] = {
    "langgraph.managed.is_last_step": ("IsLastStep", "RemainingSteps"),
    "langgraph.version": ("__version__",),
    "langgraph.constants": ("Send", "Interrupt"),
    "langgraph.pregel.protocol": ("PregelProtocol",),
    "langgraph.utils.config": ("get_config", "get_store"),
    "langgraph.utils.runnable": ("RunnableCallable",),
    "langgraph.channels": ("BaseChannel",),
    "langgraph.channels.base": ("BaseChannel",),
    "langgraph.checkpoint.base": (
        "EmptyChannelError",
        "WRITES_IDX_MAP",
        "copy_checkpoint",
        "create_checkpoint",
        "empty_checkpoint",
        "get_checkpoint_id",
        "get_checkpoint_metadata",
        "get_serializable_checkpoint_metadata",
        "writes_sort_key",
    ),
    "langgraph.runtime": ("BaseUser", "ServerInfo", "Runtime"),
    "langgraph.checkpoint.serde.base": (
        "SerializerProtocol",
        "UntypedSerializerProtocol",
        "SerializerCompat",
        "maybe_add_typed_methods",
    ),
    "langgraph.store.base": ("Embeddings",),
    "langgraph.store.base.embed": (
        "AEmbeddingsFunc",
        "EmbeddingsFunc",
        "EmbeddingsLambda",
        "ensure_embeddings",
        "get_text_at_path",
        "tokenize_path",
    ),
    "langgraph.store.postgres": ("PostgresStore", "AsyncPostgresStore", "PoolConfig"),
    "langgraph.store.postgres.base": ("PostgresStore", "PoolConfig"),
    "langgraph.store.postgres.aio": ("AsyncPostgresStore",),
    "langgraph.checkpoint.serde.types": (
        "ERROR",
        "INTERRUPT",
        "RESUME",
        "SCHEDULED",
        "TASKS",
        "ChannelProtocol",
        "SendProtocol",
    ),
}


# LangGraph paths whose every exported name (`__all__`) the engine offers, but these
# (private to LangGraph's runtime, or of its low-level API).
EVERY_NAME_BUT: dict[str, frozenset[str]] = {
    "langgraph.warnings": frozenset(),
    "langgraph.pregel.remote": frozenset(),
    "langgraph.errors": frozenset(),
    "langgraph.types": frozenset({"PregelExecutableTask", "ensure_valid_checkpointer"}),
    "langgraph.pregel.types": frozenset({"PregelExecutableTask"}),
    "langgraph.callbacks": frozenset(
        {
            "get_async_graph_callback_manager_for_config",
            "get_sync_graph_callback_manager_for_config",
        }
    ),
}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("path", sorted({*TWINS, *EVERY_NAME_BUT}))
def test_each_path_has_an_engine_twin_with_its_names(path: str) -> None:
    ours = importlib.import_module("engine" + path.removeprefix("langgraph"))
    theirs = importlib.import_module(path)
    names = TWINS.get(path) or set(theirs.__all__) - EVERY_NAME_BUT[path]
    for name in names:
        assert hasattr(theirs, name), f"{path} has no {name}: the list is wrong"
        assert hasattr(ours, name), f"engine twin of {path} lacks {name}"


def test_the_old_managed_path_gives_the_same_values() -> None:
    from engine.managed import IsLastStep, RemainingSteps, is_last_step

    assert is_last_step.IsLastStep is IsLastStep
    assert is_last_step.RemainingSteps is RemainingSteps


def test_version_is_the_installed_distributions() -> None:
    from engine.version import __version__

    assert __version__ == version("threadline")


def test_deprecation_warnings_read_as_langgraphs() -> None:
    import langgraph.warnings as theirs

    import engine.warnings as ours

    for name in ("LangGraphDeprecatedSinceV05", "LangGraphDeprecatedSinceV10"):
        mine, oracle = getattr(ours, name)("Old thing."), getattr(theirs, name)("Old thing.")
        assert isinstance(mine, DeprecationWarning)
        assert isinstance(mine, ours.LangGraphDeprecationWarning)
        assert str(mine) == str(oracle)
        assert (mine.message, mine.since, mine.expected_removal) == (
            oracle.message,
            oracle.since,
            oracle.expected_removal,
        )
    latest = ours.LangGraphDeprecatedSinceV11("Gone soon")
    assert (latest.since, latest.expected_removal) == ((1, 1), (3, 0))
    assert str(latest) == "Gone soon. Deprecated in LangGraph V1.1 to be removed in V3.0."
    custom = ours.LangGraphDeprecationWarning("x", since=(2, 3))
    assert custom.expected_removal == (3, 0)


def test_importing_the_old_pregel_types_path_warns() -> None:
    from engine.warnings import LangGraphDeprecatedSinceV10

    sys.modules.pop("engine.pregel.types", None)
    with pytest.warns(LangGraphDeprecatedSinceV10, match="use 'from engine.types import"):
        importlib.import_module("engine.pregel.types")


def test_a_base_channel_is_written_as_for_langgraph() -> None:
    with pytest.raises(TypeError):
        BaseChannel(int)  # type: ignore[abstract]
    with pytest.raises(TypeError, match="defines 'value'"):

        class Slotted(BaseChannel[int, int, int]):
            __slots__ = ("value",)

    class Stores(BaseChannel[int, int, int]):
        def get(self) -> int:
            return 1

        def update(self, values: object) -> bool:
            self.value = 2
            return True

        def from_checkpoint(self, checkpoint: object) -> "Stores":
            return self

    channel = Stores(int, "n")
    assert (channel.typ, channel.key, channel.value) == (int, "n", 1)
    with pytest.raises(AttributeError, match="under another name"):
        channel.update([2])
