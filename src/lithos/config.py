"""Settings: defaults < ``config.yaml`` < ``LITHOS_`` environment variables.

The YAML file is ``<data_dir>/config.yaml`` unless a path is given. Nested keys come from the
environment as ``LITHOS_SEARCH__SEMANTIC_THRESHOLD=0.4``; the common ones also have flat names:
``LITHOS_DATA_DIR``, ``LITHOS_HOST``, ``LITHOS_PORT``, ``LITHOS_TRANSPORT``.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from lithos.domain.edges import DEFAULT_COHERENCE_STRENGTH, EdgeType, Provenance
from lithos.domain.memory import DEFAULT_SALIENCE_FLOOR, DEFAULT_SALIENCE_HALF_LIFE_DAYS
from lithos.domain.metadata import NoteType
from lithos.errors import ConfigError

FLAT_ENV = {
    "LITHOS_DATA_DIR": ("storage", "data_dir"),
    "LITHOS_HOST": ("server", "host"),
    "LITHOS_PORT": ("server", "port"),
    "LITHOS_TRANSPORT": ("server", "transport"),
}


class _Section(BaseModel):
    model_config = {"extra": "forbid"}


class ServerConfig(_Section):
    transport: Literal["stdio", "http", "sse"] = "http"
    # Loopback by default: Lithos has no authentication, so listening on every interface
    # would hand the knowledge base to the whole network. Containers set 0.0.0.0 explicitly.
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)
    watch_files: bool = True
    # DNS-rebinding protection: HTTP requests whose Host or Origin header names another site
    # are refused. These extend the values derived from the bind address (loopback names and
    # the bound host, on server.port); a host may name its port ("lithos:8080") or any port
    # ("lithos:*"), an origin too ("http://localhost:*"); "*" turns a check off.
    allowed_hosts: list[str] = []
    allowed_origins: list[str] = []
    # Streamable HTTP answers each POST with one JSON body instead of a one-event SSE stream:
    # about 1 ms less server CPU per call (bench/RESULTS.md). Lithos tools send no progress
    # notifications mid-call, so nothing needs the stream; /sse is unaffected.
    json_response: bool = True

    def trusted_hosts(self) -> list[str]:
        """Host header values served: loopback names, the bound host, ``allowed_hosts``."""
        return _unique([*_local_names(self.host), *self.allowed_hosts])

    def trusted_origins(self) -> list[str]:
        """Origin header values served: ``http://<local name>:<port>``, ``allowed_origins``."""
        local = [f"http://{name}:{self.port}" for name in _local_names(self.host)]
        return _unique([*local, *self.allowed_origins])


class StorageConfig(_Section):
    data_dir: Path = Path("./data")
    knowledge_subdir: str = "knowledge"
    max_content_bytes: int = Field(default=1_000_000, ge=1)
    # People's files are theirs: a file without an ``id`` keeps its identity in .lithos/
    # and is never written to unless an agent updates it, `lithos adopt` is run, or this is on.
    adopt_files: bool = False
    # How a new note's file is named: after its title ("Event Loop.md": Obsidian shows the
    # title and resolves [[Event Loop]] to it) or its slug ("event-loop.md").
    file_names: Literal["title", "slug"] = "title"


class SearchConfig(_Section):
    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_threads: int = Field(default=1, ge=1, le=64)
    # Threads numpy's BLAS (OpenBLAS) splits one matrix product over; 0 leaves its default
    # (every core). Requests and scouts already run in threads of their own: one was many
    # times faster on a busy 2-core machine (docs/concurrency.md).
    blas_threads: int = Field(default=1, ge=0, le=64)
    # Texts per model run (and chunks per embedding round): batch 1 was the fastest measured
    # on the 2-core machine (docs/embeddings.md).
    embedding_batch_size: int = Field(default=1, ge=1, le=256)
    # After a model change: "lazy" re-embeds old chunks in the background, after new text;
    # "batch" leaves them to `lithos reembed` (searched in the old space until then).
    space_migration: Literal["lazy", "batch"] = "lazy"
    # Hold search vectors as int8 (a quarter of the memory) and re-score the best candidates
    # from the float32 vectors on disk: the same results (docs/embeddings.md).
    compact_vectors: bool = True
    # With compact vectors, a search first shortlists the chunks whose vectors' sign bits are
    # nearest the query's and scores only those: at least this many (more in a large index);
    # 0 scores every chunk (docs/embeddings.md, "Shortlist").
    vector_shortlist: int = Field(default=1000, ge=0)
    semantic_threshold: float = Field(default=0.3, ge=0.0, le=1.0)
    max_results: int = Field(default=50, ge=1, le=1000)
    chunk_size: int = Field(default=500, ge=50)
    chunk_max: int = Field(default=1000, ge=100)
    hybrid_fusion: Literal["convex", "rrf"] = "convex"
    hybrid_alpha: float = Field(default=0.5, ge=0.0, le=1.0)
    rrf_k: int = Field(default=60, ge=1)

    @model_validator(mode="after")
    def _chunk_bounds(self) -> SearchConfig:
        if self.chunk_max < self.chunk_size:
            raise ValueError("search.chunk_max must be >= search.chunk_size")
        return self


class CoordinationConfig(_Section):
    claim_default_ttl_minutes: int = Field(default=60, ge=1)
    claim_max_ttl_minutes: int = Field(default=480, ge=1)


class IndexConfig(_Section):
    rebuild_on_start: bool = False
    # lithos serve answers while the start-up index check runs beside it (unless the catalog
    # must be rebuilt first); false: the check ends before the first call is answered.
    check_in_background: bool = True
    watch_debounce_ms: int = Field(default=500, ge=0, le=60_000)
    # Writes are searchable at once; the full-text index is committed (fsynced) in the
    # background this long after the first uncommitted write, or at once when this many notes wait.
    commit_interval_ms: int = Field(default=500, ge=0, le=60_000)
    commit_max_pending: int = Field(default=256, ge=1, le=100_000)


DEFAULT_HALF_LIFE_DAYS: dict[str, float] = {
    "related_to": 30,
    "analogy_to": 60,
    "supports": 180,
    "is_example_of": 180,
    "depends_on": 180,
    "refines": 180,
    "contradicts": 365,
}
DEFAULT_FLOOR: dict[str, float] = {
    "related_to": 0.05,
    "analogy_to": 0.05,
    "supports": 0.2,
    "is_example_of": 0.2,
    "depends_on": 0.2,
    "refines": 0.2,
    "contradicts": 0.3,
}


class EdgesConfig(_Section):
    """Typed edges (``.lithos/edges.db``): how weights start, grow and decay."""

    initial_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    reinforce_step: float = Field(default=0.1, ge=0.0, le=1.0)
    human_weight: float = Field(default=0.9, ge=0.0, le=1.0)
    link_strength: float = Field(default=0.5, ge=0.0, le=1.0)
    half_life_days: dict[EdgeType, Annotated[float, Field(gt=0)]] = {}
    floor: dict[EdgeType, Annotated[float, Field(ge=0.0, le=1.0)]] = {}
    removed_grace_days: int = Field(default=30, ge=0)

    @model_validator(mode="after")
    def _fill_defaults(self) -> EdgesConfig:
        # A config file naming one type keeps the defaults of the others.
        self.half_life_days = {**DEFAULT_HALF_LIFE_DAYS, **self.half_life_days}  # type: ignore[dict-item]
        self.floor = {**DEFAULT_FLOOR, **self.floor}  # type: ignore[dict-item]
        return self


class ConsolidationConfig(_Section):
    """Working memory -> long-term memory and the scheduled memory sweep (docs/memory.md)."""

    enabled: bool = True  # false: no background consolidation, decay sweep or concept formation
    interval_minutes: float = Field(default=60.0, gt=0.0)
    min_activations: int = Field(default=2, ge=1)
    max_items: int = Field(default=12, ge=2, le=100)
    stale_after_hours: float = Field(default=24.0, gt=0.0)
    promotion_salience_boost: float = Field(default=0.05, ge=0.0, le=1.0)
    ledger_days: float = Field(default=30.0, gt=0.0)
    decay_batch: int = Field(default=200, ge=1, le=10_000)


class DecayConfig(_Section):
    """How an unused note's salience falls back toward its type's floor."""

    salience_half_life_days: dict[NoteType, Annotated[float, Field(gt=0)]] = {}
    salience_floor: dict[NoteType, Annotated[float, Field(ge=0.0, le=1.0)]] = {}

    @model_validator(mode="after")
    def _fill_defaults(self) -> DecayConfig:
        self.salience_half_life_days = {
            **DEFAULT_SALIENCE_HALF_LIFE_DAYS,
            **self.salience_half_life_days,
        }
        self.salience_floor = {**DEFAULT_SALIENCE_FLOOR, **self.salience_floor}
        return self


class ConceptsConfig(_Section):
    """Concept notes formed from notes used together, and their damping (docs/memory.md)."""

    # Off by default: on SciFact no formation rule's concepts raised nDCG@10 and each cost
    # some on train (docs/memory.md, "Measured").
    enabled: bool = False
    folder: str = Field(default="concepts", min_length=1, max_length=200)
    min_size: int = Field(default=3, ge=2)
    max_size: int = Field(default=12, ge=2, le=100)
    min_coactivation: int = Field(default=3, ge=1)
    min_density: float = Field(default=0.6, ge=0.0, le=1.0)
    salience_cap: float = Field(default=0.85, ge=0.0, le=1.0)
    repeat_penalty: float = Field(default=0.05, ge=0.0, le=1.0)
    max_repeat_penalty: float = Field(default=0.4, ge=0.0, le=1.0)
    repeat_window_hours: float = Field(default=24.0, gt=0.0)
    gateway: bool = True


class ExplorationConfig(_Section):
    """What a hot query adds (docs/retrieval.md, "Temperature and exploration")."""

    # Off by default: on SciFact (before and after feedback) and LongMemEval-S it changed no
    # score (docs/retrieval.md, "Exploration, analogy, concepts and the graph scout").
    enabled: bool = False
    # Temperature above which a query is hot: the exploration scouts run.
    threshold: float = Field(default=0.6, ge=0.0, le=1.0)
    novelty_k: int = Field(default=6, ge=0, le=100)
    random_k: int = Field(default=2, ge=0, le=100)
    # Places of the final results kept for the best exploration picks when hot (0: they only
    # compete on score; a kept place cost nDCG@10 on SciFact, bench/RESULTS.md).
    slots: int = Field(default=0, ge=0, le=100)
    seed: int = 0
    # Feedback learns scout_novelty's and scout_random's weights apart, per query class,
    # starting from lcma.scout_weights (docs/retrieval.md, "Learned exploration weights").
    learn: bool = True
    weight_floor: float = Field(default=0.01, ge=0.0, le=1.0)
    weight_ceiling: float = Field(default=0.3, ge=0.0, le=1.0)
    cited_step: float = Field(default=0.01, ge=0.0, le=1.0)
    ignored_step: float = Field(default=0.002, ge=0.0, le=1.0)
    misleading_step: float = Field(default=0.02, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _weight_bounds(self) -> ExplorationConfig:
        if self.weight_ceiling < self.weight_floor:
            raise ValueError(
                "lcma.exploration.weight_ceiling must be >= lcma.exploration.weight_floor"
            )
        return self


class LlmConfig(_Section):
    """Terrace 2: an optional interpretive pass by a language model behind an
    OpenAI-compatible chat completions endpoint (docs/retrieval.md, "Terrace 2")."""

    enabled: bool = False
    base_url: str = Field(default="http://127.0.0.1:8080/v1", min_length=1)
    model: str = ""
    # Name of the environment variable holding the API key (never the key itself).
    api_key_env: str = "OPENAI_API_KEY"
    max_tokens: int = Field(default=400, ge=16, le=32_000)
    prompt_token_budget: int = Field(default=2000, ge=100, le=200_000)
    timeout_seconds: float = Field(default=10.0, gt=0.0, le=300.0)
    candidates: int = Field(default=10, ge=1, le=100)
    # A design question goes to the model above this temperature, any query above
    # hot_threshold (unset: lcma.exploration.threshold).
    class_threshold: float = Field(default=0.25, ge=0.0, le=1.0)
    hot_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    # Below this confidence, a hot query's follow-up queries (at most followup_queries; 0:
    # never) are run and the model asked once more.
    followup_confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    followup_queries: int = Field(default=2, ge=0, le=3)

    @model_validator(mode="after")
    def _model_named(self) -> LlmConfig:
        if self.enabled and not self.model.strip():
            raise ValueError("lcma.llm.model must name a model when lcma.llm.enabled is true")
        return self


DEFAULT_GRAPH_PROVENANCE_WEIGHTS: dict[Provenance, float] = {"rule": 0.0}


class LcmaConfig(_Section):
    """Cognitive retrieval (``lithos_retrieve``); every weight is documented in
    docs/retrieval.md. Defaults were tuned on SciFact's train queries (bench/eval.py)."""

    enabled: bool = True
    edges: EdgesConfig = EdgesConfig()
    consolidation: ConsolidationConfig = ConsolidationConfig()
    decay: DecayConfig = DecayConfig()
    concepts: ConceptsConfig = ConceptsConfig()
    # How many notes each Phase A scout returns before merging.
    scout_depth: int = Field(default=100, ge=1, le=1000)
    # Phase B: how many notes each expansion scout adds per call.
    expansion_depth: int = Field(default=20, ge=0, le=1000)
    scout_weights: dict[str, float] = {
        "scout_vector": 0.5,
        "scout_lexical": 0.5,
        "scout_exact_alias": 0.5,
        "scout_tags_recency": 0.1,
        "scout_freshness": 0.1,
        "scout_task_context": 0.15,
        "scout_provenance": 0.2,
        "scout_graph": 0.2,
        "scout_coactivation": 0.2,
        "scout_source_url": 0.15,
        "scout_analogy": 0.15,
        "scout_novelty": 0.1,
        "scout_random": 0.01,
        "scout_followup": 0.3,
    }
    # Calibration: cosine similarity mapped linearly from [floor, ceiling] to [0, 1]; BM25
    # saturates as score / (score + lexical_saturation).
    vector_floor: float = Field(default=0.1, ge=0.0, le=1.0)
    vector_ceiling: float = Field(default=0.7, ge=0.0, le=1.0)
    lexical_saturation: float = Field(default=20.0, gt=0.0)
    # The vector and lexical scouts' score: adaptive_share * min-max over this query's
    # candidates + (1 - adaptive_share) * the absolute calibration above.
    adaptive_share: float = Field(default=0.5, ge=0.0, le=1.0)
    # The vector scout adds this times the cosine of the whole note (mean chunk vector) to
    # the cosine of its best chunk.
    vector_note_weight: float = Field(default=0.5, ge=0.0, le=2.0)
    # Focus (Terrace 1): each candidate gains focus_weight * min-max(cosine to the centroid
    # of the focus_seeds best candidates by evidence); 0 turns it off.
    focus_seeds: int = Field(default=2, ge=1, le=20)
    focus_weight: float = Field(default=0.2, ge=0.0, le=1.0)
    note_type_priors: dict[str, float] = {
        "summary": 0.03,
        "concept": 0.03,
        "agent_finding": 0.02,
        "observation": 0.0,
        "task_record": -0.02,
        "hypothesis": -0.03,
    }
    note_type_weight: float = Field(default=1.0, ge=0.0)
    salience_weight: float = Field(default=0.1, ge=0.0)
    usage_weight: float = Field(default=0.02, ge=0.0)
    query_class_weight: float = Field(default=0.3, ge=0.0)
    ignored_weight: float = Field(default=0.01, ge=0.0)
    misleading_weight: float = Field(default=0.05, ge=0.0)
    mmr_lambda: float = Field(default=0.7, ge=0.0, le=1.0)
    mmr_similarity_floor: float = Field(default=0.9, ge=0.0, le=1.0)
    mmr_window: int = Field(default=30, ge=1, le=1000)
    temperature_top_k: int = Field(default=10, ge=2, le=100)
    temperature_link_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    # How much an edge of each type binds two notes for coherence; contradicts counts against.
    temperature_edge_strength: dict[EdgeType, Annotated[float, Field(ge=0.0, le=1.0)]] = {}
    # How much scout_graph trusts a typed edge by who made it (0: not followed); a provenance
    # not named counts fully. Edges rules wrote (feedback's co-citations, consolidation) are
    # not followed: they cost nDCG on SciFact and scout_coactivation already reads the same
    # co-citations (docs/retrieval.md, "Exploration, analogy and the graph scout").
    graph_provenance_weights: dict[Provenance, Annotated[float, Field(ge=0.0, le=1.0)]] = {}
    exploration: ExplorationConfig = ExplorationConfig()
    llm: LlmConfig = LlmConfig()
    recency_half_life_days: float = Field(default=30.0, gt=0.0)
    salience_default: float = Field(default=0.5, ge=0.0, le=1.0)
    salience_floor: float = Field(default=0.1, ge=0.0, le=1.0)
    salience_ceiling: float = Field(default=0.9, ge=0.0, le=1.0)
    cited_salience_boost: float = Field(default=0.02, ge=0.0, le=1.0)
    cited_class_boost: float = Field(default=0.03, ge=0.0, le=1.0)
    ignored_class_penalty: float = Field(default=0.03, ge=0.0, le=1.0)
    chronic_ignored_after: int = Field(default=5, ge=0)
    chronic_ignored_salience_penalty: float = Field(default=0.02, ge=0.0, le=1.0)
    misleading_class_penalty: float = Field(default=0.08, ge=0.0, le=1.0)
    misleading_salience_penalty: float = Field(default=0.05, ge=0.0, le=1.0)
    quarantine_after_misleading: int = Field(default=3, ge=1)
    prior_bound: float = Field(default=0.5, ge=0.0, le=1.0)
    # Feedback into the typed-edge graph: related_to edges among the first cited_edge_notes
    # cited notes of a receipt (at most n(n-1)/2 edges per completion).
    cited_edge_notes: int = Field(default=5, ge=0, le=20)
    cited_edge_weight: float = Field(default=0.3, ge=0.0, le=1.0)
    cited_edge_step: float = Field(default=0.03, ge=0.0, le=1.0)
    misleading_edge_penalty: float = Field(default=0.05, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _bounds(self) -> LcmaConfig:
        self.temperature_edge_strength = {
            **DEFAULT_COHERENCE_STRENGTH,
            **self.temperature_edge_strength,
        }
        # A file naming some provenances keeps the defaults of the others.
        self.graph_provenance_weights = {
            **DEFAULT_GRAPH_PROVENANCE_WEIGHTS,
            **self.graph_provenance_weights,
        }
        if self.vector_ceiling <= self.vector_floor:
            raise ValueError("lcma.vector_ceiling must be above lcma.vector_floor")
        if self.salience_ceiling < self.salience_floor:
            raise ValueError("lcma.salience_ceiling must be >= lcma.salience_floor")
        if not self.salience_floor <= self.salience_default <= self.salience_ceiling:
            raise ValueError("lcma.salience_default must lie between the floor and ceiling")
        return self


class LithosConfig(BaseSettings):
    """Every setting of Lithos. Build it with :func:`load_config`."""

    model_config = SettingsConfigDict(
        env_prefix="LITHOS_", env_nested_delimiter="__", extra="forbid"
    )

    server: ServerConfig = ServerConfig()
    storage: StorageConfig = StorageConfig()
    search: SearchConfig = SearchConfig()
    coordination: CoordinationConfig = CoordinationConfig()
    index: IndexConfig = IndexConfig()
    lcma: LcmaConfig = LcmaConfig()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # First source wins: CLI flags, nested env, flat env, YAML file, then defaults.
        yaml_values = _YAML_VALUES.get() or {}
        return (
            init_settings,
            env_settings,
            InitSettingsSource(settings_cls, _flat_env_values()),
            InitSettingsSource(settings_cls, yaml_values),
        )

    @property
    def data_dir(self) -> Path:
        return self.storage.data_dir

    @property
    def knowledge_dir(self) -> Path:
        return self.storage.data_dir / self.storage.knowledge_subdir


_YAML_VALUES: ContextVar[dict[str, Any] | None] = ContextVar("lithos_yaml_values", default=None)


def load_config(
    data_dir: Path | None = None,
    config_file: Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> LithosConfig:
    """Resolve settings; ``overrides`` (``{"server.port": 9000}`` from CLI flags) win over all.

    Raises ConfigError with a readable message for a missing, malformed or invalid config.
    """
    base_dir = data_dir or _env_data_dir() or StorageConfig().data_dir
    path = config_file or base_dir / "config.yaml"
    init: dict[str, Any] = {}
    if data_dir is not None:
        init["storage"] = {"data_dir": str(data_dir)}
    for dotted, value in (overrides or {}).items():
        section, key = dotted.split(".")
        init.setdefault(section, {})[key] = value
    yaml_values = _read_yaml(path, required=config_file is not None)
    token = _YAML_VALUES.set(yaml_values)
    try:
        config = LithosConfig(**init)
    except ValidationError as exc:
        sources = _Sources(init, yaml_values, path)
        raise ConfigError(f"invalid configuration: {_describe(exc, sources)}") from exc
    finally:
        _YAML_VALUES.reset(token)
    config.storage.data_dir = config.storage.data_dir.expanduser().resolve()
    return config


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def _local_names(host: str) -> list[str]:
    """Loopback names plus the bind address unless it is a wildcard (0.0.0.0, ::)."""
    names = list(LOOPBACK_NAMES)
    if host not in ("", "0.0.0.0", "::", "[::]"):
        names.append(f"[{host}]" if ":" in host and not host.startswith("[") else host)
    return names


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _flat_env_values() -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, (section, key) in FLAT_ENV.items():
        if name in os.environ:
            values.setdefault(section, {})[key] = os.environ[name]
    return values


def _env_data_dir() -> Path | None:
    raw = os.environ.get("LITHOS_STORAGE__DATA_DIR") or os.environ.get("LITHOS_DATA_DIR")
    return Path(raw) if raw else None


def _read_yaml(path: Path, required: bool) -> dict[str, Any]:
    if not path.exists():
        if required:
            raise ConfigError(f"config file not found: {path}")
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {path} must hold a mapping of sections")
    return loaded


class _Sources:
    """Names where a setting came from, so an error points at the flag, variable or file."""

    def __init__(self, flags: dict[str, Any], yaml_values: dict[str, Any], path: Path) -> None:
        self.flags = flags
        self.yaml_values = yaml_values
        self.path = path

    def of(self, section: str, key: str | None) -> str:
        if key is None:
            return self._section(section)
        if key in self.flags.get(section, {}):
            return "from the command line"
        nested = f"LITHOS_{section}__{key}".upper()
        if nested in _upper_environ():
            return f"from environment variable {nested}"
        for name, where in FLAT_ENV.items():
            if where == (section, key) and name in os.environ:
                return f"from environment variable {name}"
        section_values = self.yaml_values.get(section)
        if isinstance(section_values, dict) and key in section_values:
            return f"in {self.path}"
        return "default"

    def _section(self, section: str) -> str:
        if section in self.yaml_values:
            return f"in {self.path}"
        prefix = f"LITHOS_{section}_".upper()
        names = sorted(n for n in _upper_environ() if n.startswith(prefix))
        return f"from environment variable {names[0]}" if names else "default"


def _upper_environ() -> set[str]:
    return {name.upper() for name in os.environ}


def _describe(exc: ValidationError, sources: _Sources) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        loc = [str(p) for p in error["loc"]]
        where = ".".join(loc)
        origin = sources.of(loc[0], loc[1] if len(loc) > 1 else None) if loc else "default"
        parts.append(f"{where}: {error['msg']} ({origin})")
    return "; ".join(parts)
