"""Every Kubernetes manifest the project ships, rendered by kustomize, is valid against the
Kubernetes API schemas (kubernetes-validate, offline), passes checkov, and wires what the
workers rely on. The benchmark Job the adapter creates is held to the same bar.

kustomize and checkov come from `make tools` (.tools/): checkov pins packaging<24, which the
test venv's pytest cannot share."""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from actions.adapters.kubernetes_specs import RunPod, run_job
from actions.adapters.settings import KubernetesSettings, project_image
from collectors.logs.settings import TailSettings
from collectors.logs.tailer import LogTailer
from collectors.sink import RecordingSink
from schemas.events.triggers import QuarantineNodesPayload
from tests.support.kube_rbac import granted
from tests.support.kustomize import K8S, ROOT, Doc, render

CHECKOV = ROOT / ".tools" / "checkov" / "bin" / "checkov"
TARGETS = ("base", "overlays/production", "overlays/shadow")
# An older Kubernetes many clusters still run, and the newest schema the validator knows.
VERSIONS = ("1.32.0", kubernetes_validate.latest_version())
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "Job")


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[Doc]]:
    return {target: render(target) for target in TARGETS}


def benchmark_job(gpus: int = 8) -> Doc:
    settings = KubernetesSettings()
    pod = RunPod(settings.run_image, gpus, settings.gpu_resource, "4", "16Gi")
    command = ["python3", "-m", "actions.benchmark.runner", "--json"]
    job = run_job("centrality-run-0a1b2c3d-0", "gpu-1", command, {}, pod, 900)
    job["metadata"]["namespace"] = "centrality"
    return job


def of_kind(docs: list[Doc], *kinds: str) -> Iterator[Doc]:
    return (d for d in docs if d["kind"] in kinds)


def pod_spec(doc: Doc) -> Doc:
    return dict(doc["spec"]["template"]["spec"])


def named(docs: list[Doc], kind: str, name: str) -> Doc:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


# --- schemas -------------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("version", VERSIONS)
def test_every_rendered_manifest_matches_the_api_schema(
    rendered: dict[str, list[Doc]], target: str, version: str
) -> None:
    docs = rendered[target]
    assert {"DaemonSet", "StatefulSet", "Deployment", "ClusterRole"} <= {d["kind"] for d in docs}
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_benchmark_job_matches_the_api_schema(version: str) -> None:
    kubernetes_validate.validate(benchmark_job(), version, strict=True)


def test_the_validator_rejects_what_the_api_server_would(rendered: dict[str, list[Doc]]) -> None:
    sink = dict(named(rendered["base"], "Deployment", "centrality-sink"))
    sink["spec"] = {**sink["spec"], "replica": 2}  # a typo the API server refuses
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(sink, VERSIONS[-1], strict=True)


# --- checkov -------------------------------------------------------------------------------


def checkov(directory: Path) -> Doc:
    assert CHECKOV.exists(), "checkov is installed by `make tools`"
    result = subprocess.run(
        [
            str(CHECKOV),
            "--config-file",
            str(K8S / ".checkov.yaml"),
            "--directory",
            str(directory),
            "--output",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(directory), "BC_SKIP_MAPPING": "TRUE"},
    )
    report = json.loads(result.stdout)
    return dict(report[0] if isinstance(report, list) else report)


@pytest.fixture(scope="module")
def scanned(rendered: dict[str, list[Doc]], tmp_path_factory: pytest.TempPathFactory) -> Doc:
    out = tmp_path_factory.mktemp("rendered")
    for target, docs in rendered.items():
        name = target.replace("/", "-")
        (out / f"{name}.yaml").write_text(yaml.safe_dump_all(docs))
    (out / "benchmark-job.yaml").write_text(yaml.safe_dump(benchmark_job()))
    return checkov(out)


def test_checkov_passes_every_rendered_manifest(scanned: Doc) -> None:
    failed = [
        f"{c['check_id']} {c['resource']} ({c['file_path']})"
        for c in scanned["results"]["failed_checks"]
    ]
    assert failed == []
    assert scanned["summary"]["passed"] > 500
    scanned_files = {c["file_path"].rsplit("/", 1)[-1] for c in scanned["results"]["passed_checks"]}
    assert scanned_files == {
        "base.yaml",
        "overlays-production.yaml",
        "overlays-shadow.yaml",
        "benchmark-job.yaml",
    }


def test_every_skipped_check_says_why(scanned: Doc) -> None:
    skipped = scanned["results"]["skipped_checks"]
    assert skipped, "the DaemonSet's uid 0 is a recorded exception"
    for check in skipped:
        assert len(check["check_result"].get("suppress_comment") or "") > 20, check["check_id"]


def test_checkov_fails_a_weakened_manifest(rendered: dict[str, list[Doc]], tmp_path: Path) -> None:
    sink = copy.deepcopy(named(rendered["base"], "Deployment", "centrality-sink"))
    container = pod_spec(sink)["containers"][0]
    container["securityContext"] = {"privileged": True}
    del container["livenessProbe"]
    (tmp_path / "weak.yaml").write_text(yaml.safe_dump(sink))
    failed = {c["check_id"] for c in checkov(tmp_path)["results"]["failed_checks"]}
    assert {"CKV_K8S_16", "CKV_K8S_8", "CKV_K8S_20"} <= failed


# --- what the workers rely on ----------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_workloads_run_the_project_image_with_probes_and_limits(
    rendered: dict[str, list[Doc]], target: str
) -> None:
    workloads = list(of_kind(rendered[target], *WORKLOADS))
    assert len(workloads) == 6
    for doc in workloads:
        for c in pod_spec(doc)["containers"]:
            where = f"{doc['kind']}/{doc['metadata']['name']}/{c['name']}"
            assert c["image"] == project_image(), where
            assert c["command"][0] == "centrality", where
            assert {"cpu", "memory"} <= set(c["resources"]["requests"]), where
            assert {"cpu", "memory"} <= set(c["resources"]["limits"]), where
            assert c["securityContext"]["capabilities"]["drop"] == ["ALL"], where
            assert c["securityContext"]["readOnlyRootFilesystem"] is True, where
            if doc["kind"] != "Job":
                port = c["livenessProbe"]["httpGet"]["port"]
                assert c["livenessProbe"]["httpGet"]["path"] == "/healthz", where
                assert c["readinessProbe"]["httpGet"]["path"] == "/readyz", where
                [declared] = [p for p in c["ports"] if p["name"] == port]
                env = {e["name"]: e.get("value") for e in c.get("env", [])}
                settings = env.get("CENTRALITY_METRICS_ADDR") or "0.0.0.0:9400"
                assert settings.endswith(f":{declared['containerPort']}"), where


def test_the_agent_reads_the_host_read_only_and_tolerates_gpu_and_quarantine_taints(
    rendered: dict[str, list[Doc]],
) -> None:
    agent = named(rendered["base"], "DaemonSet", "centrality-agent")
    spec = pod_spec(agent)
    assert spec["runtimeClassName"] == "nvidia"
    assert spec["automountServiceAccountToken"] is False
    tolerated = {t["key"] for t in spec["tolerations"]}
    assert {"nvidia.com/gpu", QuarantineNodesPayload.model_fields["taint"].default} <= tolerated
    host_paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    assert host_paths == {"host-log": "/var/log", "state": "/var/lib/centrality"}
    for c in spec["containers"]:
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        assert mounts["host-log"].get("readOnly") is True
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert "privileged" not in c["securityContext"]
    [agent_container] = [c for c in spec["containers"] if c["name"] == "agent"]
    env = {e["name"]: e for e in agent_container["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all"
    assert env["CENTRALITY_AGENT_NODE"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


def test_streams_keep_their_tables_on_volumes_with_standbys(
    rendered: dict[str, list[Doc]],
) -> None:
    streams = named(rendered["overlays/production"], "StatefulSet", "centrality-streams")
    assert streams["spec"]["replicas"] == 6
    [claim] = streams["spec"]["volumeClaimTemplates"]
    [container] = pod_spec(streams)["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    [data] = [m for m in container["volumeMounts"] if m["name"] == claim["metadata"]["name"]]
    assert env["CENTRALITY_STREAMS_DATA_DIR"].startswith(data["mountPath"] + "/")
    [settings] = [
        d["data"]
        for d in of_kind(rendered["overlays/production"], "ConfigMap")
        if d["metadata"]["namespace"] == "centrality"
    ]
    assert int(settings["CENTRALITY_STREAMS_STANDBY_REPLICAS"]) >= 1


def test_rbac_is_narrow_and_bound_to_the_workloads_that_call_the_api(
    rendered: dict[str, list[Doc]],
) -> None:
    """No wildcards, no secrets. That each verb is needed, and no more, is proven on a real API
    server by tests/integration/test_kubernetes_rbac.py."""
    docs = rendered["base"]
    grants = set().union(*(granted(d["rules"]) for d in of_kind(docs, "ClusterRole", "Role")))
    assert not any("*" in grant for grant in grants)
    assert not any(resource == "secrets" for _, resource, _ in grants)
    # Each binding names a ServiceAccount that exists where it says, used by one workload.
    accounts = {
        (d["metadata"]["namespace"], d["metadata"]["name"]) for d in of_kind(docs, "ServiceAccount")
    }
    for binding in of_kind(docs, "ClusterRoleBinding", "RoleBinding"):
        for subject in binding["subjects"]:
            assert (subject["namespace"], subject["name"]) in accounts
    tokens = {
        pod_spec(d)["serviceAccountName"]
        for d in of_kind(docs, *WORKLOADS)
        if pod_spec(d).get("automountServiceAccountToken") is not False
    }
    assert tokens == {"centrality-watcher", "centrality-actions"}


def test_secrets_come_from_secrets_and_the_trigger_key_only_where_needed(
    rendered: dict[str, list[Doc]],
) -> None:
    holders = set()
    for doc in of_kind(rendered["base"], *WORKLOADS):
        spec = pod_spec(doc)
        secrets = {v["secret"]["secretName"] for v in spec.get("volumes", []) if "secret" in v}
        if "centrality-trigger-key" in secrets:
            holders.add(doc["metadata"]["name"])
        for c in spec["containers"]:
            for e in c.get("env", []):
                assert not any(w in e["name"] for w in ("PASSWORD", "TOKEN", "KEY=")), e
            assert all("secretRef" in s or "configMapRef" in s for s in c.get("envFrom", []))
    assert holders == {"centrality-streams", "centrality-actions"}


def test_disruption_budgets_select_running_workers(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["base"]
    selected = {
        pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"]
        for pdb in of_kind(docs, "PodDisruptionBudget")
    }
    names = {
        d["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"]
        for d in of_kind(docs, "Deployment", "StatefulSet")
        if d["spec"]["replicas"] > 1
    }
    assert selected == names == {"centrality-streams", "centrality-actions", "centrality-sink"}


def test_shadow_overlay_only_shadows(rendered: dict[str, list[Doc]]) -> None:
    [settings] = [
        d["data"]
        for d in of_kind(rendered["overlays/shadow"], "ConfigMap")
        if d["metadata"]["namespace"] == "centrality"
    ]
    assert settings["CENTRALITY_ACTIONS_DRY_RUN"] == "true"
    actions = named(rendered["overlays/shadow"], "Deployment", "centrality-actions")
    assert actions["spec"]["replicas"] == 1


def test_the_benchmark_job_requests_the_gpus_and_runs_the_project_image() -> None:
    [container] = benchmark_job(gpus=8)["spec"]["template"]["spec"]["containers"]
    assert container["image"] == project_image()
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert container["resources"]["requests"] == container["resources"]["limits"]
    [none] = benchmark_job(gpus=0)["spec"]["template"]["spec"]["containers"]
    assert "nvidia.com/gpu" not in none["resources"]["limits"]


def test_the_tailer_names_kubernetes_jobs_from_kubelet_log_paths(
    rendered: dict[str, list[Doc]], tmp_path: Path
) -> None:
    agent = named(rendered["base"], "DaemonSet", "centrality-agent")
    [tail] = [c for c in pod_spec(agent)["containers"] if c["name"] == "tail"]
    env = {e["name"]: e.get("value") for e in tail["env"]}
    settings = TailSettings(
        paths=tuple(json.loads(env["CENTRALITY_TAIL_PATHS"])),
        job_pattern=env["CENTRALITY_TAIL_JOB_PATTERN"],
        job_template=env["CENTRALITY_TAIL_JOB_TEMPLATE"],
        state_file=tmp_path / "offsets.json",
        node="gpu-1",
    )
    tailer = LogTailer(settings, RecordingSink())
    pods = "/host/var/log/pods"
    uid = "96d459e4-c1a6-4412-b38d-dbf299dafd19"
    assert tailer._job_of(f"{pods}/ml_train-x7k2p_{uid}/trainer/0.log") == "k8s/ml/train"
    assert (
        tailer._job_of(f"{pods}/ml_bert-2-epochs-3-q9zt4_{uid}/t/1.log") == "k8s/ml/bert-2-epochs"
    )
    assert tailer._job_of(f"{pods}/research_llama-worker-3_{uid}/pytorch/0.log") == (
        "k8s/research/llama"
    )
    # A bare pod (here the kubelet path of `kubectl run nginx`) belongs to no job.
    bare = f"{pods}/default_nginx_{uid}/nginx/0.log"
    assert tailer._job_of(bare) == f"file/gpu-1{bare}"


@pytest.mark.parametrize("target", TARGETS)
def test_files_the_settings_name_are_mounted(rendered: dict[str, list[Doc]], target: str) -> None:
    docs = rendered[target]
    settings = {d["metadata"]["namespace"]: d["data"] for d in of_kind(docs, "ConfigMap")}
    for doc in of_kind(docs, *WORKLOADS):
        spec = pod_spec(doc)
        for c in spec["containers"]:
            env = dict(settings[doc["metadata"]["namespace"]])
            env.update({e["name"]: e["value"] for e in c.get("env", []) if "value" in e})
            mounted = [m["mountPath"] for m in c.get("volumeMounts", [])]
            for name in ("CENTRALITY_KAFKA_SSL_CAFILE", "CENTRALITY_TRIGGER_KEY_FILE"):
                if name in env:
                    where = f"{doc['metadata']['name']}/{c['name']}: {name}"
                    assert any(env[name].startswith(m + "/") for m in mounted), where
