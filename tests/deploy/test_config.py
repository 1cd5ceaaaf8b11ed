"""The TOML files shipped for the image, compose and Kubernetes load with the gateway's own settings."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gateway.settings import load_settings
from tests.deploy.paths import DEPLOY, K8S


def _k8s_config(tmp_path: Path) -> Path:
    (configmap,) = [d for d in yaml.safe_load_all((K8S / "configmap-config.yaml").read_text())]
    path = tmp_path / "nl2sql-gateway.toml"
    path.write_text(configmap["data"]["nl2sql-gateway.toml"])
    return path


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    import os

    for name in list(os.environ):
        if name.startswith(("NL2SQL_", "OPENAI_")):
            monkeypatch.delenv(name)
    return monkeypatch


def test_image_default_config_loads(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("NL2SQL_CONFIG", str(DEPLOY / "config/image.toml"))
    settings = load_settings()
    assert settings.server.host == "0.0.0.0" and settings.databases == {}
    # Databases can then come from the environment alone, as the Dockerfile's header says.
    clean_env.setenv("NL2SQL_DATABASES__SALES__DSN", "postgresql://reader@db:5432/sales")
    clean_env.setenv("NL2SQL_DATABASES__SALES__PASSWORD", "pw")
    sales = load_settings().databases["sales"]
    assert sales.dsn.endswith("/sales") and sales.password and sales.password.get_secret_value() == "pw"


def test_compose_config_loads_with_passwords_from_the_environment(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("NL2SQL_CONFIG", str(DEPLOY / "config/nl2sql-gateway.toml"))
    clean_env.setenv("NL2SQL_DATABASES__DEMO__PASSWORD", "reader-pw")
    clean_env.setenv("NL2SQL_STORE__PASSWORD", "store-pw")
    settings = load_settings()
    demo = settings.databases["demo"]
    assert demo.dsn == "postgresql://nl2sql_reader@postgres:5432/demo"
    assert demo.password is not None and demo.password.get_secret_value() == "reader-pw"
    assert settings.store.password is not None and settings.store.password.get_secret_value() == "store-pw"
    assert settings.store.dsn and settings.server.host == "0.0.0.0"


def test_kubernetes_config_loads_with_the_secrets_env(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("NL2SQL_CONFIG", str(_k8s_config(tmp_path)))
    (secret,) = list(yaml.safe_load_all((K8S / "secret.yaml").read_text()))
    for name, value in secret["stringData"].items():
        clean_env.setenv(name, value)
    settings = load_settings()
    assert settings.databases["warehouse"].password is not None
    assert settings.llm.api_key is not None and settings.llm.model

