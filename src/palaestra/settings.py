"""One settings object. Environment variables prefixed ``PALAESTRA_``; a ``.env`` file is honoured.

Components receive a :class:`Settings`; nothing else reads the environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from palaestra.egress.policy import EgressPolicy
from palaestra.errors import ConfigurationError
from palaestra.files import private_dir, secret_file
from palaestra.retention_settings import RetentionSettings

__all__ = ["Settings"]

_SECRET_FILE = "secret.key"  # noqa: S105 (a file name, not a secret)
_STRONG_TOKEN = 32  # characters in an admin token short of which start-up warns


class Settings(RetentionSettings):
    """Palaestra's configuration; every field has a safe default (retention's: see
    :class:`~palaestra.retention_settings.RetentionSettings`)."""

    model_config = SettingsConfigDict(
        env_prefix="PALAESTRA_", env_file=".env", extra="ignore", validate_default=True
    )

    data_dir: Path = Field(
        default=Path("./data"),
        description="Folder for the SQLite database and the generated secret key.",
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy async URL; default: SQLite at <data_dir>/palaestra.db. "
        "For production: postgresql+asyncpg://user@host/db.",
    )
    broker_url: str | None = Field(
        default=None,
        description="Job broker (redis://...) for scale-out: `palaestra worker` processes run "
        "the jobs; default: jobs run in-process.",
    )
    broker_queue: str = Field(
        default="palaestra",
        min_length=1,
        max_length=64,
        description="Name of the job stream in Redis, and prefix of the scheduler's keys; "
        "give each installation that shares one Redis its own.",
    )
    broker_redelivery_s: float = Field(
        default=30.0,
        ge=0.5,
        description="A job its worker has not acknowledged for this long (the worker died) is "
        "delivered again to another worker; live workers keep their jobs' claim fresh.",
    )
    serve_jobs: bool = Field(
        default=True,
        description="Run the arena's work inside `palaestra serve`: its own loops, or with a "
        "broker an in-process worker. `serve --no-workers` turns it off for API-only "
        "processes.",
    )
    worker_concurrency: int = Field(
        default=64, ge=1, description="Jobs one `palaestra worker` process runs at once."
    )
    schedule_tick_s: float = Field(
        default=1.0,
        gt=0,
        description="How often the cluster looks for due health pings (once across the "
        "cluster, however many workers run).",
    )
    sweep_interval_s: float = Field(
        default=5.0,
        gt=0,
        description="How often the sweeper moves on work left by dead workers: tasks past "
        "their deadline, runs with nothing in flight, turns whose lease ran out.",
    )
    rollup_interval_s: float = Field(
        default=60.0,
        gt=0,
        description="How often the roll-up job closes the hours whose grace has passed (once "
        "across the cluster; embedded, inside `palaestra serve`).",
    )
    rollup_grace_s: float = Field(
        default=3600.0,
        ge=900,
        description="How long after its end an hour of history is rolled up. A row is written "
        "with its own time at most a deadline late: a task's (the longest phase, BUILD, 90 s), "
        "a cage turn's (at most 600 s); 15 minutes covers both, an hour leaves room. Hours "
        "with a run or match still open wait for it whatever the grace.",
    )
    host: str = Field(default="127.0.0.1", description="Address `palaestra serve` listens on.")
    port: int = Field(default=8000, ge=0, le=65535, description="Port `palaestra serve` uses.")
    public_url: str = Field(
        default="http://127.0.0.1:8000",
        description="The URL agents reach this platform at (async completion callbacks "
        "are signed over its host and path).",
    )
    secret_key: SecretStr | None = Field(
        default=None,
        description="Key that encrypts agent keys at rest (Fernet, urlsafe base64, 32 bytes). "
        "Generated into <data_dir>/secret.key (0600) when unset; a wider one is narrowed.",
    )
    admin_token: SecretStr | None = Field(
        default=None,
        description="The admin bearer token. When unset, one is generated and printed once "
        "at first start; only its hash is kept.",
    )
    owner_token_cache_s: float = Field(
        default=5.0,
        ge=0,
        le=3600,
        description="Seconds an API process remembers an owner's token once seen, so that its "
        "requests authenticate without a query. A token rotated or revoked stops working at "
        "once in the process that did it (and in the embedded server, whose API, pages and "
        "forms are that process); every other process (another API process scaled out, a "
        "server when the command line did it) stops accepting it within this time. "
        "0 = never remembered: each request looks its token up.",
    )
    web_session_s: float = Field(
        default=43_200.0,
        ge=60,
        le=30 * 86_400,
        description="Seconds a browser stays signed in after exchanging an owner's or the "
        "admin's token for a session on the sign-in page (12 hours by default); signing out, "
        "or rotating or revoking the owner's token, ends it sooner.",
    )
    egress_allow: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Address ranges (CIDR) the egress policy allows for development, "
        "e.g. 127.0.0.0/8; plain http is allowed only to these.",
    )
    runs_api_concurrency: int = Field(
        default=64,
        ge=1,
        description="Requests to the runs API (/api/runs) handled at once per process; a "
        "burst beyond it waits its turn (less memory than all at once); a turn is taken "
        "only once the caller is authenticated and the request's body has arrived.",
    )
    max_body_bytes: int = Field(
        default=1_048_576,
        ge=1024,
        description="Largest request body the API accepts; the agents' completion callback "
        "has a fixed cap of its own (1 MiB), above the protocol's limit on its output.",
    )
    request_read_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds a request has to arrive in full (head and body) from its "
        "connection's opening or previous response; a slower client is answered 408 and cut.",
    )
    max_connections: int = Field(
        default=2048,
        ge=1,
        description="Connections `palaestra serve` keeps open at once (keep it below ulimit -n); "
        "past it, a new connection is answered 503 with Retry-After and closed.",
    )
    health_jitter: float = Field(
        default=0.1,
        ge=0,
        le=0.5,
        description="Health pings are spread by up to this fraction of their interval.",
    )
    health_interval_scale: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="Multiplies the health ping cadence (1 = the protocol's 5 min / 1 min); "
        "smaller values are for demos and tests only.",
    )
    health_concurrency: int = Field(
        default=500, ge=1, description="Health pings in flight at once per process."
    )
    dispatch_in_flight: int = Field(
        default=1024,
        ge=1,
        description="Run tasks sent and awaiting their reply at once per process (each holds "
        "its body, prompts and connection, some 20 to 30 KB); at it, due runs wait until half "
        "of it is free, so memory stays bounded however many runs are started. Raise it for "
        "many slow synchronous agents.",
    )
    monitor_enabled: bool = Field(
        default=True, description="Run the health monitor inside `palaestra serve`."
    )
    wizard_require_signature_check: bool = Field(
        default=False,
        description="Refuse admission to an edgearena agent that accepts a forged signature. "
        "By default (as in the seed) that is a warning shown with the agent, not a refusal.",
    )
    public_runs: bool = Field(
        default=False,
        description="Show runs (goals, candidates, agents' outputs) on the public web pages. "
        "The API always shows a run only to its owner and the admin.",
    )
    guide_dir: Path = Field(
        default=Path("./site"),
        description="The built documentation site (`make docs`): when it holds an index.html, "
        "`palaestra serve` serves it at /guide and links it from the pages' footer.",
    )
    log_level: str = Field(default="INFO", description="Log level: DEBUG, INFO, WARNING, ERROR.")
    log_json: bool = Field(default=False, description="Write logs as JSON lines.")
    runs_enabled: bool = Field(
        default=True,
        description="Drive edgearena runs (dispatch, timeouts, reports) inside `palaestra serve`.",
    )
    dispatch_deadline_scale: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="Multiplies the per-phase dispatch deadlines of new runs (1 = the "
        "protocol's SCOUT/VERIFY/CRITIQUE 30 s, BUILD 90 s); smaller values are for demos "
        "and tests only.",
    )
    house_base_url: str | None = Field(
        default=None, description="OpenAI-compatible base URL of the house model."
    )
    house_model: str | None = Field(default=None, description="Model name of the house model.")
    house_api_key: SecretStr | None = Field(default=None, description="Key of the house model.")
    local_model_path: str | None = Field(
        default=None,
        description="GGUF file of the local model (the `local` extra); unset, the packaged "
        "Gemma 3 270M is used. The house uses the local model when no house model is set.",
    )
    local_model_enabled: bool = Field(
        default=True,
        description="Let the house and `model: local` entrants use the local model when the "
        "`local` extra is installed; false keeps the offline baseline.",
    )
    fighter_classes: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["rogue", "corporate", "academic", "independent"],
        description="Class labels fighters may carry.",
    )
    cage_turn_deadline_ms: int = Field(
        default=60_000,
        ge=100,
        le=600_000,
        description="Per-turn deadline of cage.v1 matches (cage.v1 says 60,000 ms); "
        "shorter values are for demos and tests only.",
    )
    referee_enabled: bool = Field(
        default=True, description="Play cage.v1 matches inside `palaestra serve`."
    )
    referee_concurrency: int = Field(
        default=200,
        ge=1,
        description="cage.v1 matches played at once per process; their turns are claimed and "
        "recorded in shared transactions, so many cost little more than one.",
    )

    ratings_enabled: bool = Field(
        default=True,
        description="Keep the live ratings and the published leaderboards current inside "
        "`palaestra serve`.",
    )
    ratings_interval_s: float = Field(
        default=5.0,
        gt=0,
        description="Seconds between applying newly scored matches to the live ratings.",
    )
    leaderboard_interval_s: float = Field(
        default=900.0,
        ge=0,
        description="Republish a leaderboard when its latest snapshot is older than this "
        "many seconds; 0 publishes only on demand.",
    )
    leaderboard_resamples: int = Field(
        default=1000,
        ge=10,
        le=100_000,
        description="Bootstrap resamples behind the published leaderboard's 95% intervals.",
    )
    matchmaking_enabled: bool = Field(
        default=False,
        description="Schedule cage.v1 matches among eligible fighters inside `palaestra "
        "serve` (off by default: turn it on for a live arena); pause and resume at runtime "
        "with `POST /api/matchmaking/pause` and `/resume` or `palaestra matchmaking "
        "--pause` and `--resume`.",
    )
    matchmaking_interval_s: float = Field(
        default=15.0, gt=0, description="Seconds between two matchmaking rounds."
    )
    matchmaking_max_per_fighter: int = Field(
        default=2,
        ge=2,
        description="cage.v1 matches a fighter may be in at once; a pairing takes two "
        "(both seat orders).",
    )
    matchmaking_max_matches: int = Field(
        default=50, ge=2, description="cage.v1 matches pending or running at once, arena-wide."
    )

    auth_throttle_failures: int = Field(
        default=10,
        ge=0,
        description="Failed authentications (wrong bearer tokens, agent keys, claim codes, "
        "token forms) one client address may make per window before it is answered 429 "
        "with Retry-After; 0 = unlimited.",
    )
    auth_throttle_target_failures: int = Field(
        default=30,
        ge=0,
        description="Failed attempts at one fighter's claim code or one agent's key, from "
        "all addresses together, per window before that target is answered 429; 0 = "
        "unlimited.",
    )
    auth_throttle_window_s: int = Field(
        default=60, ge=1, description="The guessing throttle's moving window, in seconds."
    )
    auth_throttle_url: str | None = Field(
        default=None,
        description="Where the guessing throttle counts (redis://host:6379/0) so that the "
        "limit holds across API processes; default: the broker's Redis when scaled out, "
        "else this process's memory.",
    )
    forwarded_allow_ips: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Reverse proxies (addresses or CIDR ranges) whose X-Forwarded-For "
        "names the client the throttle counts; from anyone else the header is ignored.",
    )
    owner_runs_in_flight: int = Field(
        default=5,
        ge=0,
        description="Runs one owner may have RUNNING at once (the admin is exempt); 0 = unlimited.",
    )
    owner_runs_per_hour: int = Field(
        default=30,
        ge=0,
        description="Runs one owner may start in an hour (the admin is exempt); 0 = unlimited.",
    )
    owner_matches_in_flight: int = Field(
        default=10,
        ge=0,
        description="Matches one owner may have pending or running at once (the admin and "
        "the matchmaker are exempt); 0 = unlimited.",
    )
    owner_matches_per_hour: int = Field(
        default=60,
        ge=0,
        description="Matches one owner may start in an hour (the admin and the matchmaker "
        "are exempt); 0 = unlimited.",
    )
    owner_rated_matches: bool = Field(
        default=False,
        description="Let owners start rated matches (by default a match an owner starts is a "
        "friendly; the matchmaker's and the admin's are rated), against other owners' "
        "fighters that accept rated challenges, within the per-pair cap.",
    )
    owner_rated_per_pair_per_day: int = Field(
        default=3,
        ge=1,
        description="Rated matches owners may start between the same two owners in 24 hours "
        "(either side starting, either seat order), when owner-rated matches are enabled.",
    )

    @field_validator("egress_allow", "fighter_classes", "forwarded_allow_ips", mode="before")
    @classmethod
    def _split_commas(cls, value: Any) -> Any:
        if isinstance(value, str):  # comma-separated in the environment
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite+aiosqlite:///{self.data_dir / 'palaestra.db'}"

    @property
    def effective_archive_dir(self) -> Path:
        return self.archive_dir or self.data_dir / "archive"

    @property
    def egress_policy(self) -> EgressPolicy:
        try:
            return EgressPolicy.allowing(self.egress_allow)
        except Exception as exc:
            raise ConfigurationError(f"PALAESTRA_EGRESS_ALLOW: {exc}") from exc

    def ensure_secret_key(self) -> str:
        """The encryption key: configured, or read from (or generated into) the data folder."""
        if self.secret_key is not None:
            return self.secret_key.get_secret_value()
        from cryptography.fernet import Fernet

        private_dir(self.data_dir)
        return secret_file(self.data_dir / _SECRET_FILE, lambda: Fernet.generate_key().decode())

    def startup_warnings(self) -> list[str]:
        """What an operator should hear about at start (never a secret itself)."""
        warnings = []
        token = self.admin_token.get_secret_value() if self.admin_token else None
        if token is not None and len(token) < _STRONG_TOKEN:
            warnings.append(
                f"PALAESTRA_ADMIN_TOKEN is {len(token)} characters long; use at least "
                f"{_STRONG_TOKEN} random characters (e.g. `openssl rand -hex 32`)"
            )
        return warnings
