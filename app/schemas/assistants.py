"""Wire models of assistants: a graph with its configuration, as clients create, search,
change and read them, and the drawings and JSON schemas of their graphs."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from app.db.models import AssistantRow, AssistantVersionRow
from app.limits import MAX_NAMES, MAX_VERSION, Filter, Key, Metadata, Offset, PageSize
from app.schemas.common import OnConflict, RequestModel, SortOrder, refusal

# Keys of a run's `configurable` where the engine keeps its own objects.
ENGINE_KEY_PREFIX = "__pregel_"

AssistantSortBy = Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"]
AssistantField = Literal[
    "assistant_id",
    "graph_id",
    "name",
    "description",
    "config",
    "context",
    "created_at",
    "updated_at",
    "metadata",
    "version",
]


class RunnableConfig(BaseModel):
    """The config runs of the assistant start with; the keys the server reads are checked
    here so that a bad value fails when it is saved, not in every later run."""

    model_config = ConfigDict(extra="allow")

    tags: list[str] | None = None
    recursion_limit: int | None = Field(default=None, ge=1)
    max_concurrency: int | None = Field(default=None, ge=1)
    configurable: dict[str, Any] | None = None
    metadata: Metadata | None = None
    run_name: Key | None = None

    @field_validator("configurable")
    @classmethod
    def _no_engine_keys(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return refuse_engine_keys(value)

    @model_validator(mode="after")
    def _no_loose_engine_keys(self) -> Self:
        """A key of the config's own goes into its configurable (as LangChain's config
        moves it): the engine's keys are refused there too, and the two that would have
        to be objects."""
        extra = self.model_extra or {}
        refuse_engine_keys(extra, "config")
        given = [k for k in ("callbacks", "run_id") if extra.get(k) is not None]
        if given:
            raise refusal(
                f"config {given}: callbacks and a run id of the graph's run are the server's "
                "own (a run's id is its `run_id`)"
            )
        return self


def refuse_engine_keys(
    configurable: dict[str, Any] | None, what: str = "configurable"
) -> dict[str, Any] | None:
    """`configurable` as given, or a ValueError naming its engine keys: the engine passes
    its own objects (the runtime, callbacks) under these; JSON cannot be one, and a run
    would fail on it or use it wrongly."""
    reserved = sorted(k for k in configurable or () if k.startswith(ENGINE_KEY_PREFIX))
    if reserved:
        raise ValueError(
            f"{what} keys starting with {ENGINE_KEY_PREFIX!r} are the engine's "
            f"own and cannot be set: {reserved}"
        )
    return configurable


# A run's, an assistant's or a cron's context: its keys reach the run's configurable too
# (as LangGraph's server copies them there), so the engine's are refused as there.
Context = Annotated[
    dict[str, Any], AfterValidator(lambda value: refuse_engine_keys(value, "context"))
]


class AssistantCreate(RequestModel):
    graph_id: Key = Field(description="A graph served here.")
    assistant_id: Key | None = Field(default=None, description="A UUID; one is made if unset.")
    config: RunnableConfig = Field(default_factory=RunnableConfig)
    context: Context = Field(default_factory=dict)
    metadata: Metadata = Field(default_factory=dict)
    if_exists: OnConflict = "raise"
    name: Key = "Untitled"
    description: str | None = None


class AssistantPatch(RequestModel):
    """Fields to change; `metadata` is merged into the old, the others replace it."""

    graph_id: Key | None = None
    config: RunnableConfig | None = None
    context: Context | None = None
    metadata: Metadata | None = None
    name: Key | None = None
    description: str | None = None


class AssistantFilter(RequestModel):
    metadata: Filter | None = Field(
        default=None, description="Assistants whose metadata contains this object."
    )
    graph_id: Key | None = None
    name: Key | None = Field(default=None, description="A case-insensitive part of the name.")


class AssistantSearch(AssistantFilter):
    limit: PageSize = 10
    offset: Offset = 0
    sort_by: AssistantSortBy = "created_at"
    sort_order: SortOrder = "desc"
    select: list[AssistantField] | None = Field(default=None, max_length=MAX_NAMES)


def mirrored(
    config: dict[str, Any] | None, context: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An assistant's config and context as LangGraph's server shows them, each kept up
    to date with the other: one given only a context shows it as its config's
    `configurable` too, one given only a `configurable` shows it as its context (a
    settings form reads either). Given both, each is as given."""
    config, context = dict(config or {}), dict(context or {})
    configurable = config.get("configurable") or {}
    if context and not configurable:
        config["configurable"] = dict(context)
    elif configurable and not context:
        context = dict(configurable)
    return config, context


class Assistant(BaseModel):
    assistant_id: str
    graph_id: str
    config: dict[str, Any]
    context: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, Any]
    version: int
    name: str
    description: str | None

    @classmethod
    def of(cls, row: AssistantRow) -> Assistant:
        config, context = mirrored(row.config, row.context)
        return cls(
            assistant_id=row.assistant_id,
            graph_id=row.graph_id,
            config=config,
            context=context,
            created_at=row.created_at,
            updated_at=row.updated_at,
            metadata=row.metadata_ or {},
            version=row.version,
            name=row.name,
            description=row.description,
        )


class AssistantVersionSearch(RequestModel):
    metadata: Filter | None = Field(
        default=None, description="Versions whose metadata contains this object."
    )
    limit: PageSize = 10
    offset: Offset = 0


class AssistantLatest(RequestModel):
    version: int = Field(
        ge=1, le=MAX_VERSION, description="The version the assistant goes back (or on) to."
    )


class AssistantVersion(BaseModel):
    """An assistant as it was at one version."""

    assistant_id: str
    version: int
    graph_id: str
    config: dict[str, Any]
    context: dict[str, Any]
    metadata: dict[str, Any]
    created_at: datetime
    name: str
    description: str | None

    @classmethod
    def of(cls, row: AssistantVersionRow) -> AssistantVersion:
        config, context = mirrored(row.config, row.context)
        return cls(
            assistant_id=row.assistant_id,
            version=row.version,
            graph_id=row.graph_id,
            config=config,
            context=context,
            metadata=row.metadata_ or {},
            created_at=row.created_at,
            name=row.name,
            description=row.description,
        )


class GraphNode(BaseModel):
    id: str
    type: str | None = Field(default=None, description="`runnable`; absent for the end.")
    data: dict[str, Any] | None = Field(default=None, description="`{name}`: its label.")
    metadata: dict[str, Any] | None = Field(
        default=None, description="The node's metadata; a ToolNode's `__tools` names its tools."
    )


class GraphEdge(BaseModel):
    source: str
    target: str
    conditional: bool = Field(description="True for an edge taken only on some condition.")
    data: Any = Field(default=None, description="The edge's label, if it has one.")


class GraphDrawing(BaseModel):
    """The graph's nodes and edges, as LangGraph's `get_graph().to_json()` gives them."""

    nodes: list[GraphNode]
    edges: list[GraphEdge]


class SubgraphSchemas(BaseModel):
    """JSON schemas of a graph's state, input, output and context; null when the graph
    declares none that can be written as JSON schema."""

    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    state_schema: dict[str, Any] | None
    config_schema: dict[str, Any] | None
    context_schema: dict[str, Any] | None


class GraphSchemas(SubgraphSchemas):
    """An assistant's graph's schemas, with the graph's id."""

    graph_id: str
