"""deploy/k8s/: the StatefulSet runs N partitioned workers, worker K with ``--partition K/N``.

The pod's entrypoint snippet is run for real (``sh``, a stand-in ``siltwatch`` on PATH
that prints its arguments) with each pod's hostname, and what it would exec is parsed
by the CLI's own parser: every worker gets a distinct, valid partition of the
``replicas`` workers, and a hostname without an ordinal is refused in one line.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from app.cli import build_parser
from ingest.sites import parse_partition

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
MANIFEST = K8S / "ingest-statefulset.yaml"
ENV_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")  # Kubernetes' $(VAR) in args


def objects() -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text(encoding="utf-8")) if d]
    return {d["kind"]: d for d in docs}


def container() -> dict[str, Any]:
    (only,) = objects()["StatefulSet"]["spec"]["template"]["spec"]["containers"]
    return dict(only)


def literal_env() -> dict[str, str]:
    return {e["name"]: e["value"] for e in container()["env"] if "value" in e}


def exec_argv(tmp_path: Path, hostname: str) -> subprocess.CompletedProcess[str]:
    """Run the pod's command with ``hostname``; a stand-in siltwatch prints its argv."""
    fake = tmp_path / "siltwatch"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n', encoding="utf-8")
    fake.chmod(0o755)
    spec = container()
    declared = {e["name"] for e in spec["env"]}
    args = []
    for arg in spec["args"]:
        for name in ENV_REF.findall(arg):
            assert name in declared, f"$({name}) in the args is not an env var of the container"
        args.append(ENV_REF.sub(lambda m: f"<{m.group(1)}>", arg))
    env = {
        **literal_env(),
        "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}",
        "HOSTNAME": hostname,
    }
    return subprocess.run(
        [*spec["command"], *args], env=env, capture_output=True, text=True, timeout=30
    )


def test_each_pod_ordinal_becomes_its_partition_of_replicas_workers(tmp_path: Path) -> None:
    sts = objects()["StatefulSet"]
    replicas = sts["spec"]["replicas"]
    assert int(literal_env()["WORKERS"]) == replicas
    parser = build_parser()
    partitions = set()
    for ordinal in range(replicas):
        run = exec_argv(tmp_path, f"{sts['metadata']['name']}-{ordinal}")
        assert run.returncode == 0, run.stderr
        args = parser.parse_args(run.stdout.splitlines())
        assert args.command == "serve"
        partition = parse_partition(args.partition)
        assert (partition.index, partition.count) == (ordinal, replicas)
        assert args.sites == ["/sites"]
        assert args.client_id is None  # the default per-partition id: one session per worker
        assert args.db == "<SILTWATCH_DB>"
        partitions.add(args.partition)
    assert len(partitions) == replicas


def test_a_pod_name_without_an_ordinal_is_refused_in_one_line(tmp_path: Path) -> None:
    run = exec_argv(tmp_path, "siltwatch-ingest")
    assert run.returncode == 1
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1
    assert "does not end in -<ordinal>" in run.stderr


def test_the_headless_service_names_the_statefulset_pods() -> None:
    found = objects()
    service, sts = found["Service"], found["StatefulSet"]
    assert service["spec"]["clusterIP"] == "None"
    assert sts["spec"]["serviceName"] == service["metadata"]["name"]
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()
    ports = {p["name"] for p in container()["ports"]}
    assert {p["name"] for p in service["spec"]["ports"]} <= ports


# The whole layout: every manifest, the standby twin, the references between them.

STANDBY = K8S / "ingest-standby.yaml"
WORKER_SETS = (MANIFEST, STANDBY)


def manifest_docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def kustomization() -> dict[str, Any]:
    return dict(yaml.safe_load((K8S / "kustomization.yaml").read_text(encoding="utf-8")))


def statefulset(path: Path) -> dict[str, Any]:
    (only,) = [d for d in manifest_docs(path) if d["kind"] == "StatefulSet"]
    return only


def serve_container(sts: dict[str, Any]) -> dict[str, Any]:
    (only,) = sts["spec"]["template"]["spec"]["containers"]
    return dict(only)


def run_entrypoint(tmp_path: Path, spec: dict[str, Any], hostname: str) -> list[str]:
    """What the container would exec as ``siltwatch`` for pod ``hostname``."""
    fake = tmp_path / "siltwatch"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n', encoding="utf-8")
    fake.chmod(0o755)
    args = [ENV_REF.sub(lambda m: f"<{m.group(1)}>", a) for a in spec["args"]]
    env = {e["name"]: e["value"] for e in spec["env"] if "value" in e}
    env |= {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}", "HOSTNAME": hostname}
    run = subprocess.run(
        [*spec["command"], *args], env=env, capture_output=True, text=True, timeout=30
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_every_manifest_parses_and_kustomization_lists_exactly_the_files_present() -> None:
    present = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    for name in present:
        docs = manifest_docs(K8S / name)
        assert docs, f"{name} holds no object"
        for doc in docs:
            assert {"apiVersion", "kind", "metadata"} <= doc.keys(), name
    resources = kustomization()["resources"]
    assert len(resources) == len(set(resources))
    assert set(resources) == present
    for generator in kustomization()["configMapGenerator"]:
        for file in generator["files"]:
            path = file.split("=", 1)[-1]  # "key=path" names the ConfigMap's key
            assert (K8S / path).is_file(), f"configMapGenerator {generator['name']}: {file}"


def defined_names() -> dict[str, set[str]]:
    """Names of the Secrets, ConfigMaps and Services the manifests create."""
    found: dict[str, set[str]] = {"Secret": set(), "ConfigMap": set(), "Service": set()}
    for path in K8S.glob("*.yaml"):
        if path.name == "kustomization.yaml":
            continue
        for doc in manifest_docs(path):
            if doc["kind"] in found:
                found[doc["kind"]].add(doc["metadata"]["name"])
    found["ConfigMap"] |= {g["name"] for g in kustomization()["configMapGenerator"]}
    return found


def test_every_name_the_workloads_reference_exists_in_some_manifest() -> None:
    names = defined_names()
    for path in K8S.glob("*.yaml"):
        if path.name == "kustomization.yaml":
            continue
        for doc in manifest_docs(path):
            if doc["kind"] not in ("StatefulSet", "Deployment"):
                continue
            pod = doc["spec"]["template"]["spec"]
            where = f"{path.name} {doc['metadata']['name']}"
            if "serviceName" in doc["spec"]:
                assert doc["spec"]["serviceName"] in names["Service"], where
            for volume in pod.get("volumes", []):
                if "secret" in volume:
                    assert volume["secret"]["secretName"] in names["Secret"], where
                if "configMap" in volume:
                    assert volume["configMap"]["name"] in names["ConfigMap"], where
            for container in pod["containers"]:
                for env in container.get("env", []):
                    ref = env.get("valueFrom", {}).get("secretKeyRef")
                    if ref:
                        assert ref["name"] in names["Secret"], f"{where}: {env['name']}"


def test_the_workers_broker_and_database_are_services_of_the_layout() -> None:
    names = defined_names()
    for path in WORKER_SETS:
        args = serve_container(statefulset(path))["args"]
        (broker,) = [a.split("=", 1)[1] for a in args if a.startswith("--broker=")]
        host = broker.split("://", 1)[1].split(":")[0]
        service, namespace = host.split(".")[:2]
        assert service in names["Service"], broker
        assert namespace == kustomization()["namespace"], broker
    secret = next(
        d
        for d in manifest_docs(K8S / "postgres.yaml")
        if d["metadata"]["name"] == "siltwatch-postgres"
    )
    cluster = next(d for d in manifest_docs(K8S / "postgres.yaml") if d["kind"] == "Cluster")
    url = secret["stringData"]["url"]
    assert url.startswith("postgresql://")
    # CloudNativePG names the primary's Service <cluster>-rw.
    assert url.split("@", 1)[1].split("/")[0] == f"{cluster['metadata']['name']}-rw"
    assert cluster["spec"]["instances"] == 3


def test_the_standby_runs_the_same_partition_with_standby_for_each_ordinal(
    tmp_path: Path,
) -> None:
    primary, standby = statefulset(MANIFEST), statefulset(STANDBY)
    parser = build_parser()
    replicas = primary["spec"]["replicas"]
    assert standby["spec"]["replicas"] == replicas
    for sts in (primary, standby):
        env = {e["name"]: e.get("value") for e in serve_container(sts)["env"]}
        assert int(str(env["WORKERS"])) == replicas, sts["metadata"]["name"]
    for ordinal in range(replicas):
        seen = []
        for sts in (primary, standby):
            argv = run_entrypoint(
                tmp_path, serve_container(sts), f"{sts['metadata']['name']}-{ordinal}"
            )
            args = parser.parse_args(argv)
            assert args.command == "serve"
            assert args.standby, f"{sts['metadata']['name']}-{ordinal} runs without --standby"
            assert args.client_id is None  # the same per-partition session for both
            seen.append(args)
        assert seen[0].partition == seen[1].partition == f"{ordinal}/{replicas}"
        first, second = (vars(a) for a in seen)
        assert first == second  # the twins differ in nothing but the pod they run in


def test_the_standby_is_never_scheduled_beside_its_own_partitions_worker() -> None:
    primary, standby = statefulset(MANIFEST), statefulset(STANDBY)
    primary_labels = primary["spec"]["template"]["metadata"]["labels"]
    standby_labels = standby["spec"]["template"]["metadata"]["labels"]
    # Distinct selectors: neither StatefulSet may claim the other's pods.
    assert primary["spec"]["selector"]["matchLabels"].items() <= primary_labels.items()
    assert not standby["spec"]["selector"]["matchLabels"].items() <= primary_labels.items()
    for sts, other in ((standby, primary_labels), (primary, standby_labels)):
        terms = sts["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        (term,) = terms
        assert term["topologyKey"] == "kubernetes.io/hostname"
        assert term["labelSelector"]["matchLabels"].items() <= other.items()
        assert term["matchLabelKeys"] == ["apps.kubernetes.io/pod-index"]  # same ordinal
    (pdb,) = [d for d in manifest_docs(STANDBY) if d["kind"] == "PodDisruptionBudget"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= primary_labels.items()
    assert pdb["spec"]["selector"]["matchLabels"].items() <= standby_labels.items()


def test_prometheus_scrapes_the_port_the_workers_serve_metrics_on() -> None:
    (config,) = [d for d in manifest_docs(K8S / "prometheus.yaml") if d["kind"] == "ConfigMap"]
    prom = yaml.safe_load(config["data"]["prometheus.yml"])
    (job,) = prom["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    keep = {
        tuple(r["source_labels"]): r["regex"]
        for r in job["relabel_configs"]
        if r.get("action") == "keep"
    }
    port_name = keep[("__meta_kubernetes_pod_container_port_name",)]
    app = keep[("__meta_kubernetes_pod_label_app_kubernetes_io_name",)]
    for path in WORKER_SETS:
        sts = statefulset(path)
        assert sts["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == app
        spec = serve_container(sts)
        (metrics,) = [a.split("=", 1)[1] for a in spec["args"] if a.startswith("--metrics=")]
        ports = {p["name"]: p["containerPort"] for p in spec["ports"]}
        assert ports[port_name] == int(metrics.rsplit(":", 1)[1]), path.name


def test_every_worker_delivers_alerts_with_links_to_the_console_and_mirrors_to_influxdb(
    tmp_path: Path,
) -> None:
    """Both worker sets run --notify with notify.toml (a ConfigMap of kustomization.yaml),
    whose secrets are files of the mounted Secret and whose outboxes are on the worker's
    volume, and --public-url (the console's links). The file loads as serve loads it
    once those secret files exist."""
    from alerts.notify_config import load_notify

    mounts: dict[str, str] = {}
    for path in WORKER_SETS:
        sts = statefulset(path)
        spec = serve_container(sts)
        argv = run_entrypoint(tmp_path, spec, f"{sts['metadata']['name']}-0")
        args = build_parser().parse_args(argv)
        assert args.notify == "/etc/siltwatch/notify/notify.toml", path.name
        assert args.public_url == "<CONSOLE_URL>", path.name
        assert args.influx_v2_url == "http://influxdb:8086", "every site mirrored for Grafana"
        assert {e["name"] for e in spec["env"]} >= {"CONSOLE_URL"}
        volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
        mounts = {m["mountPath"]: m["name"] for m in spec["volumeMounts"]}
        assert volumes[mounts["/etc/siltwatch/notify"]]["configMap"]["name"] == "siltwatch-notify"
        secret = volumes[mounts["/run/secrets/notify"]]["secret"]["secretName"]
        assert secret == "siltwatch-notify"
        token = volumes[mounts[str(Path(args.influx_token_file).parent)]]["secret"]
        assert token["secretName"] == "influxdb-auth"
        assert token["items"] == [{"key": "siltwatch-write-token", "path": "token"}]
        assert mounts["/data"] in {
            c["metadata"]["name"] for c in sts["spec"]["volumeClaimTemplates"]
        }
    (generator,) = [
        g for g in kustomization()["configMapGenerator"] if g["name"] == "siltwatch-notify"
    ]
    assert generator["files"] == ["notify.toml"]
    text = (K8S / "notify.toml").read_text(encoding="utf-8")
    (secrets,) = [
        d
        for d in manifest_docs(K8S / "secrets.yaml")
        if d["metadata"]["name"] == "siltwatch-notify"
    ]
    here = tmp_path / "notify"
    for key in secrets["stringData"]:
        (here / "secrets").mkdir(parents=True, exist_ok=True)
        (here / "secrets" / key).write_text("x\n", encoding="utf-8")
        (here / "secrets" / key).chmod(0o600)
    local = text.replace("/run/secrets/notify", str(here / "secrets")).replace("/data", str(here))
    assert local != text
    (here / "notify.toml").write_text(local, encoding="utf-8")
    notify = load_notify(here / "notify.toml")
    assert notify.outbox_path.parent == here, "the outboxes live on the worker's volume"
    assert notify.smtp is not None and notify.sms is not None
