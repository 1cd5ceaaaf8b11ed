"""deploy/compose.yaml is a valid Compose file whose mounts, ports, names and passwords fit together."""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from importlib import resources
from typing import Any

import jsonschema
import pytest
import yaml

from tests.deploy.paths import COMPOSE, DEPLOY, ROOT, bind_mounts, host_path

SERVICES = {"gateway", "postgres", "prometheus", "grafana"}


def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def gateway_config() -> dict[str, Any]:
    mounts = bind_mounts(compose()["services"]["gateway"])
    path = host_path(compose()["services"]["gateway"]["environment"]["NL2SQL_CONFIG"], mounts)
    assert path is not None and path.is_file(), "NL2SQL_CONFIG must point at a mounted file"
    return tomllib.loads(path.read_text())


def test_compose_file_matches_the_compose_specification() -> None:
    schema_file = resources.files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
    jsonschema.validate(compose(), json.loads(schema_file.read_text()))


def test_the_schema_check_rejects_a_wrong_compose_file() -> None:
    schema_file = resources.files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
    broken = compose()
    broken["services"]["gateway"]["healthcheck"]["intervall"] = "10s"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, json.loads(schema_file.read_text()))


def test_every_service_is_there_with_a_healthcheck() -> None:
    services = compose()["services"]
    assert set(services) == SERVICES
    for name, service in services.items():
        test = service.get("healthcheck", {}).get("test")
        assert test and test[0] in {"CMD", "CMD-SHELL"}, f"{name} has no healthcheck"


def test_every_bind_mount_source_exists_in_the_repository() -> None:
    for name, service in compose()["services"].items():
        for target, source in bind_mounts(service).items():
            assert source.exists(), f"{name}: {source} (mounted at {target}) does not exist"
            assert ROOT in source.parents, f"{name}: {source} is outside the repository"
    named = set(compose().get("volumes", {}))
    for name, service in compose()["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith((".", "/")):
                assert source in named, f"{name}: named volume {source} is not declared"


def test_build_context_holds_the_dockerfile() -> None:
    build = compose()["services"]["gateway"]["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve().is_file()


def test_gateway_healthcheck_is_runnable_python_on_healthz() -> None:
    test = compose()["services"]["gateway"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    compile(test[3], "<healthcheck>", "exec")
    assert "/healthz" in test[3]


def test_gateway_reaches_postgres_as_the_roles_the_init_script_creates() -> None:
    from urllib.parse import urlsplit

    init = (DEPLOY / "postgres/initdb/10-nl2sql.sh").read_text()
    config = gateway_config()
    dsns = [db["dsn"] for db in config["databases"].values()] + [config["store"]["dsn"]]
    for dsn in dsns:
        url = urlsplit(dsn)
        assert url.hostname == "postgres" and url.hostname in compose()["services"]
        assert f"CREATE ROLE {url.username} " in init, f"{url.username} is not created by the init script"
        assert f"CREATE DATABASE {url.path.lstrip('/')}" in init
    # The demo SQL the init script includes is mounted where it looks for it.
    mounts = bind_mounts(compose()["services"]["postgres"])
    for line in init.splitlines():
        if line.startswith("\\i "):
            included = host_path(line.split()[1], mounts)
            assert included is not None and included.is_file(), line


def test_gateway_gets_a_password_for_every_database_it_connects_to() -> None:
    env = compose()["services"]["gateway"]["environment"]
    for name in gateway_config()["databases"]:
        assert f"NL2SQL_DATABASES__{name.upper()}__PASSWORD" in env
    assert "NL2SQL_STORE__PASSWORD" in env
    # The same variable feeds the role's password in Postgres and the gateway's side.
    postgres_env = compose()["services"]["postgres"]["environment"]
    assert env["NL2SQL_DATABASES__DEMO__PASSWORD"] == postgres_env["NL2SQL_READER_PASSWORD"]
    assert env["NL2SQL_STORE__PASSWORD"] == postgres_env["NL2SQL_STORE_PASSWORD"]


def test_published_ports_bind_loopback_only() -> None:
    for name, service in compose()["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    assert compose()["services"]["gateway"]["ports"] == [f"127.0.0.1:8000:{gateway_config()['server']['port']}"]


def test_grafana_provisioning_points_at_the_dashboards() -> None:
    grafana = compose()["services"]["grafana"]
    mounts = bind_mounts(grafana)
    provider = yaml.safe_load((DEPLOY / "grafana/provisioning/dashboards/nl2sql-gateway.yaml").read_text())
    for entry in provider["providers"]:
        folder = host_path(entry["options"]["path"], mounts)
        assert folder is not None and list(folder.glob("*.json")), "the provider's path holds no dashboard"
    home = host_path(grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"], mounts)
    assert home is not None and home.is_file()
    datasource = yaml.safe_load((DEPLOY / "grafana/provisioning/datasources/prometheus.yaml").read_text())
    assert datasource["datasources"][0]["url"] == "http://prometheus:9090"
    assert host_path("/etc/grafana/provisioning/datasources/prometheus.yaml", mounts) is not None


def _docker_compose_available() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _docker_compose_available(), reason="the docker compose plugin is not installed")
def test_docker_compose_accepts_the_file() -> None:
    # `config` only resolves and validates the file: it needs the client, not a running engine.
    result = subprocess.run(["docker", "compose", "-f", str(COMPOSE), "config", "--quiet"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
