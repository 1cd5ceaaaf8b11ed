"""The settings object: file + environment, secrets only from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.settings import ConfigError, load_settings


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gw.toml"
    path.write_text(text)
    return path


def test_file_and_environment_with_env_winning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, """
[server]
port = 9000
[databases.sales]
dsn = "postgresql://reader@db:5432/sales"
pool_max_size = 4
[databases.sales.limits]
max_rows = 50
[databases.sales.safety]
extra_functions = ["my_pure_fn"]
max_joins = 3
""")
    monkeypatch.setenv("NL2SQL_CONFIG", str(path))
    monkeypatch.setenv("NL2SQL_SERVER__PORT", "9100")
    monkeypatch.setenv("NL2SQL_DATABASES__SALES__PASSWORD", "s3cret")
    settings = load_settings()
    assert settings.server.port == 9100
    sales = settings.databases["sales"]
    assert sales.pool_max_size == 4 and sales.limits.max_rows == 50
    assert sales.safety.max_joins == 3 and "my_pure_fn" in sales.safety.extra_functions
    assert sales.password is not None and sales.password.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)


@pytest.mark.parametrize("text", [
    '[databases.x]\ndsn = "postgresql://u:hunter2@db/x"\n',
    '[databases.x]\ndsn = "postgresql://u@db/x"\npassword = "hunter2"\n',
    '[llm]\napi_key = "sk-123"\n',
])
def test_secrets_in_the_file_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv("NL2SQL_CONFIG", str(write(tmp_path, text)))
    with pytest.raises(ConfigError, match="environment"):
        load_settings()


def test_bad_values_name_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NL2SQL_CONFIG", str(write(tmp_path, '[databases.x]\ndsn = "mysql://x"\n')))
    with pytest.raises(ConfigError, match="dsn"):
        load_settings()
    monkeypatch.setenv("NL2SQL_CONFIG", str(write(tmp_path, "[server]\nprot = 1\n")))
    with pytest.raises(ConfigError, match="prot"):
        load_settings()


@pytest.mark.parametrize(("listed", "says"), [
    ('["empty_result", "empty_reslt"]', "unknown finding code 'empty_reslt' (did you mean 'empty_result'?)"),
    ('["hidden_column"]', "'hidden_column' is a safety code: it arrives inside `blocked`"),
    ('["repeated_sql"]', "'repeated_sql' cannot trigger a reflection"),
])
def test_reflect_on_takes_only_registered_codes_that_can_trigger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  listed: str, says: str) -> None:
    """A typo in reflect_on used to be accepted and then never trigger; now it names the codes it takes."""
    from gateway.findings import REFLECTABLE

    path = write(tmp_path, f'[databases.sales]\ndsn = "postgresql://r@db/sales"\n[databases.sales.ask]\n'
                           f"reflect_on = {listed}\n")
    monkeypatch.setenv("NL2SQL_CONFIG", str(path))
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert f"{path}: databases.sales.ask.reflect_on: " in message and says in message
    assert "reflect_on takes: " + ", ".join(sorted(REFLECTABLE)) in message
    assert "empty_result" in REFLECTABLE and "hidden_column" not in REFLECTABLE


def test_reflect_on_accepts_registered_codes_and_the_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.settings import FINDING_CODES_REFLECTED_BY_DEFAULT, AskPolicy

    path = write(tmp_path, '[databases.sales]\ndsn = "postgresql://r@db/sales"\n[databases.sales.ask]\n'
                           'reflect_on = ["null_heavy", "exec_error", "truncated"]\n')
    monkeypatch.setenv("NL2SQL_CONFIG", str(path))
    assert load_settings().databases["sales"].ask.reflect_on == {"null_heavy", "exec_error", "truncated"}
    assert AskPolicy().reflect_on == FINDING_CODES_REFLECTED_BY_DEFAULT


def test_openai_standard_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    settings = load_settings()
    assert settings.llm.base_url == "http://127.0.0.1:9/v1"
    assert settings.llm.api_key is not None and settings.llm.api_key.get_secret_value() == "sk-test"
    monkeypatch.setenv("NL2SQL_LLM__BASE_URL", "http://127.0.0.1:10/v1")
    assert load_settings().llm.base_url == "http://127.0.0.1:10/v1"
