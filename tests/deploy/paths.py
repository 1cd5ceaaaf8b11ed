"""Where the deployment files live in the repository."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
COMPOSE = DEPLOY / "compose.yaml"
K8S = DEPLOY / "k8s"
PROMETHEUS = DEPLOY / "prometheus"
ALERTS = PROMETHEUS / "alerts.yml"
DASHBOARDS = DEPLOY / "grafana" / "dashboards"
OPERATIONS = ROOT / "docs" / "operations.md"


def bind_mounts(service: dict[str, Any]) -> dict[str, Path]:
    """A compose service's bind mounts (short syntax, relative sources): container path -> host path."""
    mounts = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            mounts[target] = (COMPOSE.parent / source).resolve()
    return mounts


def host_path(container_path: str, mounts: dict[str, Path]) -> Path | None:
    """The repository file a container path shows, through the deepest mount that covers it."""
    for target, source in sorted(mounts.items(), key=lambda m: -len(m[0])):
        if container_path == target or container_path.startswith(target.rstrip("/") + "/"):
            return (source / container_path[len(target):].lstrip("/")).resolve()
    return None
