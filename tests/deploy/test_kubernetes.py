"""The Kubernetes manifests of deploy/kubernetes (docs/kubernetes.md), offline: the kustomization's
resources exist and render; every object matches the vendored subset of the Kubernetes and
Prometheus Operator APIs (kubernetes_subset.schema.json, its sources in its $comment); the
objects fit together (selectors, the port and its name, probes) and say what docs/metrics.md and
docs/kubernetes.md say. Where kubectl is on PATH, `kubectl kustomize` renders the same objects.

Needs python3-yaml and python3-jsonschema (scripts/install-deps test)."""
import copy
import json
import pathlib
import re
import shutil
import subprocess

import jsonschema
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
BASE = ROOT / "deploy" / "kubernetes" / "base"
SCHEMA = json.loads((pathlib.Path(__file__).with_name("kubernetes_subset.schema.json")).read_text())


def kustomization():
    return yaml.safe_load((BASE / "kustomization.yaml").read_text())


def render():
    """What kustomize makes of the base, for the transformers it uses (namespace, labels)."""
    k = kustomization()
    assert set(k) <= {"apiVersion", "kind", "namespace", "labels", "resources"}, set(k)
    out = []
    for name in k["resources"]:
        path = BASE / name
        assert path.is_file(), f"kustomization.yaml lists {name}, which is not there"
        for doc in yaml.safe_load_all(path.read_text()):
            doc = copy.deepcopy(doc)
            meta = doc.setdefault("metadata", {})
            if doc["kind"] != "Namespace":
                meta["namespace"] = k["namespace"]
            for group in k.get("labels", []):
                meta.setdefault("labels", {}).update(group["pairs"])
            out.append(doc)
    return out


def by_kind(objs):
    found = {}
    for o in objs:
        assert o["kind"] not in found, f"two {o['kind']} objects"
        found[o["kind"]] = o
    return found


def test_every_object_matches_the_api():
    objs = render()
    assert sorted(o["kind"] for o in objs) == ["DaemonSet", "Namespace", "Service", "ServiceMonitor"]
    for o in objs:
        schema = dict(SCHEMA, **{"$ref": f"#/$defs/{o['kind']}"})
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(o))
        assert not errors, f"{o['kind']}: {errors[0].message} at {list(errors[0].path)}"


def test_the_schema_catches_a_misspelt_field():
    ds = copy.deepcopy(by_kind(render())["DaemonSet"])
    ds["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}
    schema = dict(SCHEMA, **{"$ref": "#/$defs/DaemonSet"})
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(ds))


def default_port():
    text = (ROOT / "docs" / "metrics.md").read_text()
    m = re.search(r"`joules serve` listens on port (\d+) unless", text)
    assert m, "docs/metrics.md no longer states the default port"
    return int(m.group(1))


def test_the_pieces_fit_together():
    k = by_kind(render())
    ds, svc, sm, ns = k["DaemonSet"], k["Service"], k["ServiceMonitor"], k["Namespace"]
    assert ns["metadata"]["name"] == ds["metadata"]["namespace"] == svc["metadata"]["namespace"]
    pod = ds["spec"]["template"]
    pod_labels = pod["metadata"]["labels"]
    spec = pod["spec"]
    for selector in (ds["spec"]["selector"]["matchLabels"], svc["spec"]["selector"]):
        assert selector.items() <= pod_labels.items()
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()

    port = default_port()
    (c,) = spec["containers"]
    (p,) = c["ports"]
    assert (p["name"], p["containerPort"]) == ("metrics", port)
    assert c["command"] == ["joules"]
    socket = "/var/lib/kubelet/pod-resources/kubelet.sock"
    assert c["args"] == ["serve", "--listen", f"0.0.0.0:{port}", "--kubernetes",
                         "--kubelet-socket", socket]
    # The kubelet's pod-resources socket: its directory from the host, read-only, under the
    # same path.
    (v,) = spec["volumes"]
    assert v["hostPath"] == {"path": "/var/lib/kubelet/pod-resources", "type": "Directory"}
    (mount,) = c["volumeMounts"]
    assert mount == {"name": v["name"], "mountPath": v["hostPath"]["path"], "readOnly": True}
    assert socket.startswith(mount["mountPath"] + "/")
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert svc["spec"]["clusterIP"] == "None"  # headless: each pod is a target
    (sp,) = svc["spec"]["ports"]
    assert (sp["name"], sp["port"], sp["targetPort"]) == ("metrics", port, "metrics")
    (ep,) = sm["spec"]["endpoints"]
    assert (ep["port"], ep["path"]) == ("metrics", "/metrics")

    assert c["readinessProbe"]["httpGet"] == {"path": "/metrics", "port": "metrics"}
    assert spec["hostPID"] is False
    assert spec["runtimeClassName"] == "nvidia"
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    env = {e["name"]: e for e in c["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all"
    assert env["JOULES_HOSTNAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    # Every GPU is read without taking one from the workloads.
    for section in ("requests", "limits"):
        assert not any(r.startswith("nvidia.com/") for r in c["resources"].get(section, {}))
    assert c["resources"]["limits"]["memory"] and c["resources"]["requests"]["cpu"]


def test_the_docs_show_these_files_and_commands():
    text = (ROOT / "docs" / "kubernetes.md").read_text()
    assert "kubectl apply -k deploy/kubernetes/base" in text
    for name in kustomization()["resources"]:
        assert f"deploy/kubernetes/base/{name}" in text, name
    assert "pod-resources" in text and "--kubernetes" in text


def normalised(objs):
    return sorted((json.dumps(o, sort_keys=True) for o in objs))


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_kustomize_renders_the_same_objects():
    r = subprocess.run(["kubectl", "kustomize", str(BASE)], capture_output=True, text=True,
                       timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert normalised(yaml.safe_load_all(r.stdout)) == normalised(render())
