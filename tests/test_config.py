"""Settings resolve as defaults < config.yaml < LITHOS_ environment < command-line flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from lithos.config import load_config
from lithos.errors import ConfigError


def test_defaults_serve_http_on_loopback_with_data_in_the_working_tree(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    config = load_config()
    assert (config.server.transport, config.server.host, config.server.port) == (
        "http",
        "127.0.0.1",
        8765,
    )
    assert config.data_dir == tmp_path / "data"
    assert config.knowledge_dir == tmp_path / "data" / "knowledge"


def test_yaml_in_the_data_dir_overrides_defaults(tmp_path: Path):
    (tmp_path / "config.yaml").write_text(
        "server:\n  port: 9001\nsearch:\n  semantic_threshold: 0.5\n"
    )
    config = load_config(data_dir=tmp_path)
    assert config.server.port == 9001 and config.search.semantic_threshold == 0.5


def test_environment_overrides_yaml_nested_and_flat(tmp_path: Path, monkeypatch):
    (tmp_path / "config.yaml").write_text("server:\n  port: 9001\n  host: 10.0.0.1\n")
    monkeypatch.setenv("LITHOS_PORT", "9002")
    monkeypatch.setenv("LITHOS_SERVER__HOST", "127.0.0.2")
    monkeypatch.setenv("LITHOS_COORDINATION__CLAIM_MAX_TTL_MINUTES", "30")
    config = load_config(data_dir=tmp_path)
    assert config.server.port == 9002
    assert config.server.host == "127.0.0.2"
    assert config.coordination.claim_max_ttl_minutes == 30


def test_flags_override_everything(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("LITHOS_PORT", "9002")
    config = load_config(data_dir=tmp_path, overrides={"server.port": 9100})
    assert config.server.port == 9100


def test_data_dir_from_environment_finds_its_config_file(tmp_path: Path, monkeypatch):
    (tmp_path / "config.yaml").write_text("index:\n  watch_debounce_ms: 50\n")
    monkeypatch.setenv("LITHOS_DATA_DIR", str(tmp_path))
    config = load_config()
    assert config.data_dir == tmp_path and config.index.watch_debounce_ms == 50


def test_explicit_config_file_must_exist(tmp_path: Path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(data_dir=tmp_path, config_file=tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    ("yaml_text", "fragment"),
    [
        ("server:\n  port: 99999\n", "server.port"),
        ("server:\n  transport: carrier-pigeon\n", "server.transport"),
        ("search:\n  semantic_threshold: 2\n", "search.semantic_threshold"),
        ("search:\n  chunk_size: 900\n  chunk_max: 500\n", "chunk_max"),
        ("nonsense:\n  key: 1\n", "nonsense"),
        ("server: [1, 2\n", "not valid YAML"),
        ("- just\n- a list\n", "mapping"),
    ],
)
def test_invalid_configuration_is_a_clear_startup_error(tmp_path: Path, yaml_text, fragment):
    (tmp_path / "config.yaml").write_text(yaml_text)
    with pytest.raises(ConfigError, match=fragment.replace(".", r"\.")):
        load_config(data_dir=tmp_path)


def test_invalid_environment_value_is_a_clear_error(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("LITHOS_PORT", "not-a-port")
    with pytest.raises(ConfigError, match="port"):
        load_config(data_dir=tmp_path)


def test_bad_environment_value_names_the_variable_not_a_missing_config_file(
    tmp_path: Path, monkeypatch
):
    monkeypatch.setenv("LITHOS_SERVER__PORT", "70000")
    with pytest.raises(ConfigError) as raised:
        load_config(data_dir=tmp_path)
    message = raised.value.message
    assert "server.port" in message and "environment variable LITHOS_SERVER__PORT" in message
    assert "config.yaml" not in message


def test_bad_yaml_value_names_the_file(tmp_path: Path):
    (tmp_path / "config.yaml").write_text("server:\n  port: 0\n")
    with pytest.raises(ConfigError, match=r"server\.port: .*config\.yaml"):
        load_config(data_dir=tmp_path)


def test_bad_flag_value_names_the_command_line(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"server\.port: .*command line"):
        load_config(data_dir=tmp_path, overrides={"server.port": 0})


def test_trusted_hosts_and_origins_come_from_the_bind_address_and_settings(tmp_path: Path):
    local = load_config(data_dir=tmp_path, overrides={"server.port": 9000}).server
    assert local.trusted_hosts() == ["127.0.0.1", "localhost", "[::1]"]
    assert "http://localhost:9000" in local.trusted_origins()
    wildcard = load_config(data_dir=tmp_path, overrides={"server.host": "0.0.0.0"}).server
    assert "0.0.0.0" not in wildcard.trusted_hosts()
    (tmp_path / "config.yaml").write_text(
        "server:\n  host: 10.0.0.5\n  allowed_hosts: [lithos.internal]\n"
        "  allowed_origins: ['https://app.example']\n"
    )
    bound = load_config(data_dir=tmp_path).server
    assert bound.trusted_hosts()[-2:] == ["10.0.0.5", "lithos.internal"]
    assert bound.trusted_origins()[-2:] == ["http://10.0.0.5:8765", "https://app.example"]


def test_a_file_naming_one_edge_provenance_keeps_the_others_defaults(tmp_path: Path):
    assert load_config(data_dir=tmp_path).lcma.graph_provenance_weights == {"rule": 0.0}
    (tmp_path / "config.yaml").write_text("lcma:\n  graph_provenance_weights:\n    agent: 0.5\n")
    weights = load_config(data_dir=tmp_path).lcma.graph_provenance_weights
    assert weights == {"rule": 0.0, "agent": 0.5}
