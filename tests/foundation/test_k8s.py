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

from ingest.sites import parse_partition
from siltwatch.cli import build_parser

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
