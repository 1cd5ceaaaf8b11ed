"""deploy/k8s/ manifests validate against the Kubernetes schemas and fit together (names, ports, probes, user)."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy.paths import DOCKERFILE, K8S

KUBERNETES_VERSION = "1.30"
KINDS = {"Deployment", "Service", "HorizontalPodAutoscaler", "ConfigMap", "Secret", "PodDisruptionBudget"}


def manifests() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def one(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [m for m in manifests() if m["kind"] == kind and (name is None or m["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def container() -> dict[str, Any]:
    (gateway,) = one("Deployment")["spec"]["template"]["spec"]["containers"]
    return gateway


def config_toml() -> dict[str, Any]:
    return tomllib.loads(one("ConfigMap", "nl2sql-gateway-config")["data"]["nl2sql-gateway.toml"])


def test_kinds_present_and_listed_in_the_kustomization() -> None:
    assert {m["kind"] for m in manifests()} == KINDS
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    assert listed == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


@pytest.mark.parametrize("manifest", manifests(), ids=lambda m: f"{m['kind']}/{m['metadata']['name']}")
def test_manifest_validates_strictly_against_the_kubernetes_schema(manifest: dict[str, Any]) -> None:
    kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


def test_strict_validation_catches_a_misspelt_field() -> None:
    broken = copy.deepcopy(one("Deployment"))
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["paht"] = "/readyz"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def test_probes_check_healthz_and_readyz_on_the_served_port() -> None:
    gateway = container()
    ports = {p["name"]: p["containerPort"] for p in gateway["ports"]}
    assert gateway["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert gateway["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert gateway["startupProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert gateway[probe]["httpGet"]["port"] in ports
    assert set(ports.values()) == {config_toml()["server"]["port"]}
    assert gateway["args"][gateway["args"].index("--port") + 1] == str(config_toml()["server"]["port"])


def test_resources_are_requested_and_limited() -> None:
    resources = container()["resources"]
    for kind in ("cpu", "memory"):
        assert resources["requests"][kind] and resources["limits"][kind]


def test_runs_as_the_images_non_root_user() -> None:
    pod = one("Deployment")["spec"]["template"]["spec"]
    security = pod["securityContext"]
    assert security["runAsNonRoot"] is True and security["runAsUser"] != 0
    uid = re.search(r"^USER (\d+)", DOCKERFILE.read_text(), re.M)
    assert uid and int(uid.group(1)) == security["runAsUser"], "runAsUser must be the image's USER"
    hardening = container()["securityContext"]
    assert hardening["allowPrivilegeEscalation"] is False and hardening["capabilities"]["drop"] == ["ALL"]


def test_termination_grace_outlasts_the_servers_drain() -> None:
    from gateway.serving.server import IDLE_GRACE_S
    from gateway.settings import ServerSettings

    # SIGTERM: idle connections get IDLE_GRACE_S, then requests in flight server.drain_timeout_s (its default:
    # the manifests do not set it), then the pools close; Kubernetes must not SIGKILL the pod before that.
    drain = IDLE_GRACE_S + ServerSettings().drain_timeout_s
    assert one("Deployment")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > drain


def test_references_between_manifests_resolve() -> None:
    deployment = one("Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert one("Service")["spec"]["selector"].items() <= pod_labels.items()
    assert one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    target = one("HorizontalPodAutoscaler")["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert one("Service")["spec"]["ports"][0]["targetPort"] in {p["name"] for p in container()["ports"]}
    for volume in deployment["spec"]["template"]["spec"]["volumes"]:
        if "configMap" in volume:
            one("ConfigMap", volume["configMap"]["name"])
    for source in container()["envFrom"]:
        one("Secret", source["secretRef"]["name"])


def test_config_and_rules_are_mounted_where_the_settings_look() -> None:
    mounts = {m["name"]: m for m in container()["volumeMounts"]}
    env = {e["name"]: e["value"] for e in container()["env"]}
    assert mounts["config"]["mountPath"] == env["NL2SQL_CONFIG"]
    assert mounts["config"]["subPath"] in one("ConfigMap", "nl2sql-gateway-config")["data"]
    assert mounts["rules"]["mountPath"] == config_toml()["rules_dir"]
    # Rules reload without a restart only when the ConfigMap is mounted as a folder, not with subPath.
    assert "subPath" not in mounts["rules"]


def test_secret_holds_placeholders_for_every_password_the_config_needs() -> None:
    secret = one("Secret")["stringData"]
    assert set(secret.values()) == {"REPLACE-ME"}, "only placeholders may be committed"
    for name in config_toml()["databases"]:
        assert f"NL2SQL_DATABASES__{name.upper()}__PASSWORD" in secret
    assert "NL2SQL_STORE__PASSWORD" in secret


def test_rules_configmap_holds_valid_rule_files(tmp_path: Path) -> None:
    loading = pytest.importorskip("gateway.rules.loading")
    for name, text in one("ConfigMap", "nl2sql-gateway-rules")["data"].items():
        assert name.removesuffix(".yaml") in config_toml()["databases"], f"{name} is for no configured database"
        path = tmp_path / name
        path.write_text(text)
        parsed, problems = loading.parse_file(path)
        assert parsed is not None and not [p for p in problems if p.severity == "error"], problems


def test_hpa_keeps_at_least_two_replicas() -> None:
    spec = one("HorizontalPodAutoscaler")["spec"]
    assert 2 <= spec["minReplicas"] < spec["maxReplicas"]
    assert spec["metrics"][0]["resource"]["name"] == "cpu"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_renders_every_manifest() -> None:
    result = subprocess.run(["kubectl", "kustomize", str(K8S)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    rendered = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert {d["kind"] for d in rendered} == KINDS
    assert all(d["metadata"]["labels"]["app.kubernetes.io/part-of"] == "nl2sql-gateway" for d in rendered)
