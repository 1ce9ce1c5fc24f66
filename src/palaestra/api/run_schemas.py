"""Request and response bodies of the runs API and the async completion callback."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from palaestra.engine.runs import RunDetail
from palaestra.engine.runs.reading import RunRead, TaskRead, shown_report
from palaestra.engine.runs.service import MAX_GOAL_CHARS, SIZE_LIMITS, phase_summary
from palaestra.rules.runs.prompts import LAUNCHPADS
from palaestra.rules.runs.report import task_href
from palaestra.store.models import Candidate, Run, Task

__all__ = [
    "Accepted",
    "CandidateOut",
    "NewRun",
    "PhaseOut",
    "RunCreated",
    "RunDetailOut",
    "RunOut",
    "RunSizesIn",
    "TaskDetailOut",
    "TaskOut",
]


def _json_integer(value: Any) -> int:
    """A JSON integer as JSON Schema has it: a number with no fraction (``3.0`` is one), and
    never a boolean or a string."""
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole:
        raise PydanticCustomError("json_integer", "Input should be an integer")
    return int(value)


#: A size: a JSON integer (``true`` is not one, as lax validation would take it).
JsonInteger = Annotated[int, PlainValidator(_json_integer), WithJsonSchema({"type": "integer"})]


def _bounds(size: str) -> dict[str, Any]:
    """A size's range (the run service's ``SIZE_LIMITS``), stated in the schema; the run
    service checks it and says which."""
    low, high = SIZE_LIMITS[size]
    return {"minimum": low, "maximum": high}


class RunSizesIn(BaseModel):
    """Optional overrides of the launchpad's sizes; a size is a JSON integer (``true`` is
    not one). ``shortlist`` must not exceed ``scouts`` (the launchpad's, when not given):
    a 400 otherwise."""

    # Strict: a JSON boolean is never taken for an integer.
    model_config = ConfigDict(extra="forbid", strict=True)

    scouts: JsonInteger | None = Field(
        default=None, json_schema_extra=_bounds("scouts"), description="SCOUT slots."
    )
    shortlist: JsonInteger | None = Field(
        default=None,
        json_schema_extra=_bounds("shortlist"),
        description="Candidates kept; at most the scouts (sizes.scouts, or the "
        "launchpad's when not given): a larger one is refused with 400.",
    )
    builds: JsonInteger | None = Field(
        default=None, json_schema_extra=_bounds("builds"), description="BUILD slots a candidate."
    )
    verifies: JsonInteger | None = Field(
        default=None, json_schema_extra=_bounds("verifies"), description="VERIFY slots a candidate."
    )
    critiques: JsonInteger | None = Field(
        default=None,
        json_schema_extra=_bounds("critiques"),
        description="CRITIQUE slots a candidate.",
    )

    def given(self) -> dict[str, int]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class NewRun(BaseModel):
    """A run to start: a goal for the launchpad's scouts, and optionally its sizes."""

    model_config = ConfigDict(extra="forbid", strict=True)

    goal: str = Field(min_length=1, max_length=MAX_GOAL_CHARS, json_schema_extra={"pattern": r"\S"})
    launchpad: str = Field(default="make-money", json_schema_extra={"enum": list(LAUNCHPADS)})
    sizes: RunSizesIn | None = None


class RunCreated(BaseModel):
    run_id: str


class Accepted(BaseModel):
    accepted: bool = True


class RunOut(RunRead):
    @classmethod
    def of(cls, run: Run | RunRead) -> RunOut:
        return cls.model_validate(run)


class PhaseOut(BaseModel):
    phase: str
    status: str
    slots: int
    done: int
    running: int
    failed: int
    rerouted: int


class TaskOut(TaskRead):
    href: str

    @classmethod
    def of(cls, task: Task) -> TaskOut:
        return cls(**dict(TaskRead.model_validate(task)), href=task_href(task.run_id, task.id))


class TaskDetailOut(TaskOut):
    """A task with what was sent (the signed payload, prompts included) and what came back."""

    payload: dict[str, Any] | None
    request_headers: dict[str, str] | None = Field(
        default=None,
        description="The signed headers the POST carried, by name, as the arena's signer "
        "made them (x-edgearena-signature, x-edgearena-timestamp, x-edgearena-task-id; "
        "never the key); null for a task not sent to an agent, sent before the arena kept "
        "them, or archived by history retention",
    )
    output: dict[str, Any] | None
    archived: str | None = Field(
        default=None,
        description="Set when history retention archived the payload, the signed headers and "
        "the output (all then null): 'archived on <date>, in <file>', the Parquet file under "
        "the archive folder",
    )

    @classmethod
    def of(cls, task: Task, archived: str | None = None) -> TaskDetailOut:
        return cls(
            **dict(TaskOut.of(task)),
            payload=task.payload,
            request_headers=task.request_headers,
            output=task.output,
            archived=archived,
        )


class CandidateOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    candidate_id: str = Field(validation_alias=AliasChoices("candidate_id", "id"))
    title: str
    status: str
    phase: str | None
    shortlist_score: float | None
    final_score: float | None
    rank: int | None
    source_task_id: str | None

    @classmethod
    def of(cls, candidate: Candidate) -> CandidateOut:
        return cls.model_validate(candidate)


class RunDetailOut(RunOut):
    config: dict[str, Any]
    phases: list[PhaseOut]
    tasks: list[TaskOut]
    candidates: list[CandidateOut]
    report: dict[str, Any] | None

    @classmethod
    def of_detail(cls, detail: RunDetail) -> RunDetailOut:
        run = detail.run
        return cls(
            **dict(RunOut.of(run)),
            config=run.config,
            phases=[PhaseOut(**row) for row in phase_summary(detail)],
            tasks=[TaskOut.of(t) for t in detail.tasks],
            candidates=[CandidateOut.of(c) for c in detail.candidates],
            report=shown_report(run),
        )
