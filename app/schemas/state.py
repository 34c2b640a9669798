"""Wire models of a thread's state: its versions (checkpoints) with values, due tasks and
interrupts; state updates; history; the conversation tree of its turns; and the bytes
its versions take."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, field_validator

from app.limits import Filter, Key, Names, PageSize, canonical_uuid
from app.schemas.common import Interrupt, RequestModel, refusal
from app.schemas.runs import CheckpointRef


def _checkpoint_id(value: str) -> str:
    """A checkpoint id in its canonical form: ids are UUIDs, so anything else names no
    version and is refused (422) rather than read as none given."""
    try:
        return canonical_uuid(value)
    except ValueError:
        raise refusal(f"{value!r} is not a checkpoint id (a UUID)") from None


CheckpointId = Annotated[Key, AfterValidator(_checkpoint_id)]


class Checkpoint(BaseModel):
    """Names one version of a thread (or of a subgraph's state inside it)."""

    thread_id: str
    checkpoint_ns: str = ""
    checkpoint_id: str | None = None
    checkpoint_map: dict[str, Any] | None = None


class SubgraphState(BaseModel):
    """Where a subgraph node's own state lives: its namespace in the thread (its latest
    version there), as LangGraph's server names it."""

    thread_id: str
    checkpoint_ns: str


class ThreadTask(BaseModel):
    """A node due at this version, with what it did if it ran."""

    id: str
    name: str
    path: list[Any]
    error: str | None = Field(description="The error it failed with, if it failed.")
    interrupts: list[Interrupt]
    checkpoint: SubgraphState | None = Field(
        description="For a subgraph node: where its own state lives."
    )
    state: ThreadState | None = Field(description="For a subgraph node, with `subgraphs`.")
    result: Any = Field(
        description="What it wrote, if it finished: an object, or the value of a graph "
        "whose state is no mapping."
    )


class ThreadState(BaseModel):
    values: Any
    next: list[str] = Field(description="Nodes due next; empty when the graph is done.")
    tasks: list[ThreadTask]
    interrupts: list[Interrupt]
    checkpoint: Checkpoint | None = Field(description="This version; null before the first.")
    parent_checkpoint: Checkpoint | None
    # LangGraph's server gives the two ids at the top too; older clients read them there.
    checkpoint_id: str | None = None
    parent_checkpoint_id: str | None = None
    metadata: dict[str, Any] | None = Field(
        description="source (input|loop|update|fork), step, parents, run_id, graph_id, ..."
    )
    created_at: str | None


class StateQuery(RequestModel):
    """Which version to read (`POST /threads/{id}/state/checkpoint`)."""

    checkpoint: CheckpointRef
    subgraphs: bool = False
    select: Names | None = Field(
        default=None, description="Fields to return; `values.<key>` returns one key."
    )


class StateUpdate(RequestModel):
    values: dict[str, Any] | list[Any] | None = None
    as_node: Key | None = Field(
        default=None, description="Apply the update as if this node wrote it."
    )
    checkpoint: CheckpointRef | None = Field(
        default=None,
        description="Update this version (a fork); the head when unset. With "
        "`checkpoint_ns`, a subgraph's state.",
    )
    checkpoint_id: Key | None = None


class StateUpdated(BaseModel):
    checkpoint: Checkpoint = Field(description="The version the update wrote.")
    # The same, as LangGraph's server also answers (the JS SDK reads `configurable`).
    checkpoint_id: str | None
    configurable: Checkpoint


class HistoryQuery(RequestModel):
    limit: PageSize = 10
    before: Key | dict[str, Any] | None = Field(
        default=None,
        description="Versions older than this: a checkpoint id, a checkpoint object or a "
        'config {"configurable": {"checkpoint_id": ...}}.',
    )
    metadata: Filter | None = Field(
        default=None, description="Versions whose metadata has these values."
    )
    checkpoint: CheckpointRef | None = Field(
        default=None, description="`checkpoint_ns` picks a subgraph's history."
    )
    select: Names | None = None

    @field_validator("before")
    @classmethod
    def _before_id(cls, before: str | dict[str, Any] | None) -> str | None:
        """The checkpoint id `before` names, however it is given, checked."""
        if isinstance(before, dict):
            conf = before.get("configurable", before)
            before = conf.get("checkpoint_id") if isinstance(conf, dict) else None
            if not isinstance(before, str):
                raise refusal("give a checkpoint id, a checkpoint or a config naming one")
        return None if before is None else _checkpoint_id(before)


TurnStatus = Literal["busy", "interrupted", "error", "cancelled", "done"]


class Turn(BaseModel):
    """One chat turn: a user's input and what the graph did with it, as a range of
    checkpoints. A turn forked from inside another (a regenerated reply, a state update
    on an older version) is a sibling of that turn: same parent, same input."""

    turn_id: str = Field(description="Stable id of the turn: its first checkpoint's id.")
    parent_turn_id: str | None = Field(description="The turn it follows; null for a first turn.")
    first_checkpoint_id: str
    last_checkpoint_id: str = Field(description="Where the turn ends (or stands, if busy).")
    parent_checkpoint_id: str | None = Field(
        description="The version it branched from: run from here to edit and resend."
    )
    run_ids: list[str] = Field(
        description="Runs that wrote its checkpoints, and runs that went on from them "
        "without writing one (an answer a subgraph followed with another question, a "
        "resume that failed), in order."
    )
    input: Any = Field(description="The run input that opened the turn, as sent.")
    user_message: dict[str, Any] | None = Field(
        description="The human message of the input (LangChain-shaped), if it has one."
    )
    reply: dict[str, Any] | None = Field(
        description="The last AI message of the run that wrote the turn's last checkpoint; "
        "null if there is none (or a state update wrote it)."
    )
    status: TurnStatus = Field(
        description="How its last run stands: busy (a run is writing it), interrupted "
        "(waits for an answer), error, cancelled or done."
    )
    sibling_index: int = Field(description="Its place among its siblings, oldest first.")
    sibling_count: int = Field(description="How many turns share its parent (itself too).")
    children: list[str] = Field(description="Turns that follow it, oldest first.")
    created_at: str | None = Field(description="When its first checkpoint was written.")


class ThreadTree(BaseModel):
    """A thread's turns as a tree: every branch ever made, and which one is current."""

    thread_id: str
    head_checkpoint_id: str | None = Field(description="The version the next run continues.")
    head_turn_id: str | None = Field(description="The turn that ends at the head.")
    head_path: list[str] = Field(description="Turn ids from the first turn to the head's.")
    turns: list[Turn] = Field(description="Every turn, oldest first.")


class StoragePart(BaseModel):
    count: int
    bytes: int


class ChannelStorage(BaseModel):
    versions: int
    bytes: int


class ChannelValuesStorage(StoragePart):
    by_channel: dict[str, ChannelStorage]


class ThreadStorage(BaseModel):
    """Bytes the thread's versions take in the checkpointer's tables, as stored. A save is
    one compressed row holding checkpoints, values and writes; each row's bytes are shared
    out between them in proportion to their uncompressed size."""

    thread_id: str
    total_bytes: int = Field(description="Sum of the three parts below: the rows' bytes.")
    checkpoints: StoragePart = Field(
        description="Checkpoints: ids, metadata and bookkeeping, and the thread's digests."
    )
    channel_values: ChannelValuesStorage = Field(
        description="Values of the channels, with the versions stored of each."
    )
    pending_writes: StoragePart = Field(description="Writes of the tasks of each step.")
