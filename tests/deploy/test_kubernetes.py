"""deploy/kubernetes: valid against the Kubernetes schemas (kubernetes-validate, strict), and what
running N replicas with Redis needs: probes on /readyz and /healthz, a PodDisruptionBudget, a
grace period that covers the drain, resource requests, secrets by reference only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mcpcore.serving import DRAIN_SECONDS, QUIESCE_SECONDS

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml"))
VERSIONS = ["1.29.0", "1.33.0"]
"""The oldest minor still served by the main cloud providers, and a recent one."""


def resources() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in MANIFESTS:
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc:
                out.append((path.name, doc))
    return out


def kind(name: str) -> dict[str, Any]:
    found = [doc for _, doc in resources() if doc["kind"] == name]
    assert len(found) >= 1, f"no {name} in deploy/kubernetes"
    return found[0] if name != "Service" else {d["metadata"]["name"]: d for d in found}


def mcpcore_container() -> dict[str, Any]:
    return kind("Deployment")["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_is_valid_against_the_kubernetes_schemas(version: str) -> None:
    try:
        import kubernetes_validate
    except ImportError:
        pytest.fail("kubernetes-validate is missing: make install (it is in the dev extra)", pytrace=False)
    assert len(resources()) >= 5
    for filename, doc in resources():
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{filename}: {doc['kind']}/{doc['metadata']['name']}: {exc.message} at {list(exc.path)}")


def test_replicas_probe_readiness_and_liveness_and_start_slowly() -> None:
    deployment = kind("Deployment")
    assert deployment["spec"]["replicas"] >= 2
    container = mcpcore_container()
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"


def test_a_disruption_budget_covers_the_replicas() -> None:
    pdb = kind("PodDisruptionBudget")
    labels = kind("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"].get("maxUnavailable") == 1 or pdb["spec"].get("minAvailable", 0) >= 1


def test_the_grace_period_covers_the_prestop_sleep_and_the_drain() -> None:
    spec = kind("Deployment")["spec"]["template"]["spec"]
    pre_stop = mcpcore_container()["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    needed = int(pre_stop[1]) + DRAIN_SECONDS + QUIESCE_SECONDS
    assert needed <= spec["terminationGracePeriodSeconds"] <= needed + 10


def test_every_container_requests_resources_and_runs_unprivileged() -> None:
    for filename, doc in resources():
        if doc["kind"] not in ("Deployment", "StatefulSet"):
            continue
        pod = doc["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, filename
        for container in pod["containers"]:
            requests = container["resources"]["requests"]
            assert requests["cpu"] and requests["memory"], f"{filename}: {container['name']}"
            assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_secrets_are_referenced_never_written() -> None:
    assert not [doc for _, doc in resources() if doc["kind"] == "Secret"]
    env = {e["name"]: e for e in mcpcore_container()["env"]}
    for name in ("REDIS_PASSWORD", "MCP_REQUEST_STATE_KEY", "MCP_STORAGE_CURSOR_KEY"):
        assert env[name]["valueFrom"]["secretKeyRef"]["name"] == "mcpcore-secrets", name
        assert "value" not in env[name]
    assert env["REDIS_URL"]["value"] == "redis://:$(REDIS_PASSWORD)@redis:6379/0"
    names = list(env)
    assert names.index("REDIS_PASSWORD") < names.index("REDIS_URL")  # $(VAR) expands earlier variables only
    assert env["MCP_SESSION_STORE"]["value"] == "redis" and env["MCP_REQUIRE_SHARED_STORE"]["value"] == "true"
    services = kind("Service")
    assert services["redis"]["spec"]["ports"][0]["port"] == 6379
