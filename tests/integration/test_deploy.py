"""The container image and the Kubernetes manifests (Dockerfile, deploy/).

There is no container runtime here, so nothing is deployed. Instead:
  - every manifest under deploy/kubernetes parses, and what it says agrees with the binary: the
    ConfigMap's bloomproxy.conf passes `--test-conf`; the sidecar's probes are on the admin port
    that file sets and GET paths the binary serves (a proxy started with that file and the
    Secret's environment answers them, and 404 elsewhere); its secret environment variables
    are options the binary reads (the proxy AUTHs upstream with one and asks clients for the
    other); the grace period outlasts the drain; the pod runs as the image's non-root user;
  - the image (deploy/image/Containerfile.prebuilt, the Dockerfile's final stage, from the
    binary under test) is built with podman in a private storage, exported and checked file by
    file (deploy/image/image_check.py). Skipped only when podman is not installed.
Needs python3-yaml; podman and buildah for the image part (scripts/deps.sh installs them).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from bp_helpers import BLOOMPROXY_BIN, HOST, REPO, free_port, wait_until

sys.path.insert(0, str(REPO / "deploy" / "image"))
import image_check  # noqa: E402

K8S = REPO / "deploy" / "kubernetes"
PROBE_PATHS = {"livenessProbe": "/healthz", "readinessProbe": "/readyz",
               "startupProbe": "/healthz"}


def clean_env(extra=None):
    """The caller's environment without any BLOOMPROXY_* variable (they configure the proxy),
    plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLOOMPROXY_")}
    env.update(extra or {})
    return env


def manifests():
    """{file name: [documents]} of every YAML file under deploy/kubernetes."""
    files = sorted(K8S.glob("*.yaml")) + sorted(K8S.glob("*.yml"))
    assert files, f"no manifests in {K8S}"
    return {f.name: [d for d in yaml.safe_load_all(f.read_text()) if d is not None]
            for f in files}


def objects(kind):
    return [d for name, docs in manifests().items() if name != "kustomization.yaml"
            for d in docs if d.get("kind") == kind]


def the(kind):
    found = objects(kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def pod_spec():
    return the("Deployment")["spec"]["template"]["spec"]


def sidecar():
    """The bloomproxy container (a native sidecar in initContainers, or in containers)."""
    spec = pod_spec()
    found = [c for c in spec.get("initContainers", []) + spec["containers"]
             if c["name"] == "bloomproxy"]
    assert len(found) == 1, "the Deployment has no (or several) containers named bloomproxy"
    return found[0]


def parse_conf(text):
    """{directive: [arguments]} of a bloomproxy.conf (the last line of a directive wins)."""
    conf = {}
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            conf[words[0].lower()] = words[1:]
    return conf


def config_file(tmp_path):
    """The ConfigMap's bloomproxy.conf written to a file, and its directives. The sidecar's
    command line must name it where the ConfigMap is mounted."""
    cm = the("ConfigMap")
    spec = pod_spec()
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = [m for m in sidecar()["volumeMounts"]
              if volumes[m["name"]].get("configMap", {}).get("name") == cm["metadata"]["name"]]
    assert len(mounts) == 1, "the sidecar does not mount the ConfigMap (once)"
    key = "bloomproxy.conf"
    assert key in cm["data"], f"the ConfigMap has no {key}"
    conf_args = [a for a in sidecar().get("args", []) + sidecar().get("command", [])
                 if a.endswith(".conf")]
    assert conf_args == [mounts[0]["mountPath"].rstrip("/") + "/" + key], conf_args
    path = tmp_path / key
    path.write_text(cm["data"][key])
    return path, parse_conf(cm["data"][key])


def secret_env():
    """{env name: value} of the sidecar's variables taken from the Secret's stringData."""
    secrets = {s["metadata"]["name"]: s.get("stringData", {}) for s in objects("Secret")}
    env = {}
    for e in sidecar().get("env", []):
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            assert ref["key"] in secrets.get(ref["name"], {}), \
                f"{e['name']}: Secret {ref['name']} has no key {ref['key']}"
            env[e["name"]] = secrets[ref["name"]][ref["key"]]
    return env


def http_get(port, path):
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}{path}", timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_manifests_parse_and_kustomization_lists_them():
    docs = manifests()
    for name, file_docs in docs.items():
        assert file_docs, f"{name} is empty"
        for d in file_docs:
            assert d.get("apiVersion") and d.get("kind"), f"{name}: no apiVersion/kind"
            if d["kind"] != "Kustomization":
                assert d.get("metadata", {}).get("name"), f"{name}: a {d['kind']} with no name"
    listed = the_kustomization()["resources"]
    assert sorted(listed) == sorted(n for n in docs if n != "kustomization.yaml")
    kinds = {d["kind"] for file_docs in docs.values() for d in file_docs}
    assert {"Deployment", "ConfigMap", "Secret", "PodDisruptionBudget"} <= kinds


def the_kustomization():
    return manifests()["kustomization.yaml"][0]


def test_config_map_passes_test_conf(tmp_path):
    path, conf = config_file(tmp_path)
    res = subprocess.run([BLOOMPROXY_BIN, "--test-conf", "--config", str(path)],
                         capture_output=True, text=True, env=clean_env(), timeout=30)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "configuration OK" in res.stdout
    # The file is what the sidecar needs: an upstream, the admin port on every interface (the
    # kubelet probes the pod's IP), clients on the pod's loopback only.
    assert conf["upstream"], "no upstream"
    assert conf["admin-bind"] in (["0.0.0.0"], ["::"])
    assert int(conf["admin-port"][0]) > 0
    assert conf.get("bind", ["127.0.0.1"]) == ["127.0.0.1"]


def test_probes_are_on_the_admin_port_and_the_paths_it_serves(tmp_path):
    _, conf = config_file(tmp_path)
    admin_port = int(conf["admin-port"][0])
    c = sidecar()
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    for probe, path in PROBE_PATHS.items():
        if probe == "startupProbe" and probe not in c:
            continue
        get = c[probe]["httpGet"]
        assert get["path"] == path, f"{probe} GETs {get['path']}, not {path}"
        port = ports[get["port"]] if isinstance(get["port"], str) else get["port"]
        assert port == admin_port, f"{probe} on port {port}, admin-port is {admin_port}"
    annotations = the("Deployment")["spec"]["template"]["metadata"].get("annotations", {})
    if "prometheus.io/port" in annotations:
        assert int(annotations["prometheus.io/port"]) == admin_port


def test_proxy_with_the_pods_config_serves_probes_and_uses_the_secrets(
        tmp_path, redis_factory, proxy, helpers):
    """bloomproxy started as the pod starts it (the ConfigMap's file, the Secret's variables),
    only with loopback addresses and free ports for the test."""
    path, _ = config_file(tmp_path)
    env = secret_env()
    assert set(env) == {"BLOOMPROXY_UPSTREAM_PASSWORD", "BLOOMPROXY_REQUIREPASS"}, env
    upstream = redis_factory(password=env["BLOOMPROXY_UPSTREAM_PASSWORD"])
    admin = free_port()
    p = proxy("--config", path, "--admin-port", admin, "--admin-bind", HOST,
              upstream=upstream.address, env=env)
    assert http_get(admin, "/healthz") == 200
    wait_until(lambda: http_get(admin, "/readyz") == 200, 10, what="/readyz 200")
    assert http_get(admin, "/no-such-path") == 404
    with p.raw() as conn:
        assert conn.command("GET", "k") == helpers.Err(
            b"NOAUTH Authentication required.")
        assert conn.command("AUTH", env["BLOOMPROXY_REQUIREPASS"]) == b"OK"
        # The proxy AUTHs upstream with BLOOMPROXY_UPSTREAM_PASSWORD: the write reaches Redis.
        assert conn.command("SET", "deploy-key", "v") == b"OK"
    assert upstream.client().get("deploy-key") == b"v"


def test_secret_variables_are_options_the_binary_knows():
    usage = subprocess.run([BLOOMPROXY_BIN, "--help"], capture_output=True, text=True,
                           env=clean_env(), timeout=30).stdout
    names = [e["name"] for e in sidecar().get("env", [])]
    assert names
    for name in names:
        assert name.startswith("BLOOMPROXY_"), name
        option = name[len("BLOOMPROXY_"):].lower().replace("_", "-")
        assert f"--{option} " in usage, f"{name}: bloomproxy has no option --{option}"


def test_grace_period_outlasts_the_drain(tmp_path):
    _, conf = config_file(tmp_path)
    drain_ms = int(conf.get("shutdown-timeout-ms", ["5000"])[0])
    grace = pod_spec()["terminationGracePeriodSeconds"]
    assert grace * 1000 > drain_ms, f"grace {grace}s, shutdown-timeout-ms {drain_ms}"


def test_pod_runs_as_the_images_non_root_user_with_least_privilege():
    spec = pod_spec()
    c = sidecar()
    pod_sc, sc = spec.get("securityContext", {}), c["securityContext"]
    image_user = next(line.split()[1] for line in image_check.final_stage(image_check.DOCKERFILE)
                      if line.startswith("USER "))
    uid, _, gid = image_user.partition(":")
    assert sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is True
    assert sc.get("runAsUser", pod_sc.get("runAsUser")) == int(uid) != 0
    assert sc.get("runAsGroup", pod_sc.get("runAsGroup")) == int(gid or uid)
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"]
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(c["resources"][kind]), f"sidecar {kind}"
    if c in spec.get("initContainers", []):
        assert c.get("restartPolicy") == "Always", "an init container that never exits"


def test_disruption_budget_and_service_select_the_deployments_pods():
    labels = the("Deployment")["spec"]["template"]["metadata"]["labels"]
    selector = the("Deployment")["spec"]["selector"]["matchLabels"]
    assert selector.items() <= labels.items()
    pdb = the("PodDisruptionBudget")["spec"]
    assert pdb["selector"]["matchLabels"].items() <= labels.items()
    for service in objects("Service"):
        assert service["spec"]["selector"].items() <= labels.items()


def test_image_exposes_the_configured_ports(tmp_path):
    _, conf = config_file(tmp_path)
    assert image_check.exposed_ports_of(image_check.DOCKERFILE) == {
        int(conf.get("port", ["6380"])[0]), int(conf["admin-port"][0])}


def test_dockerfile_final_stage_is_the_prebuilt_one():
    stage = image_check.final_stage(image_check.DOCKERFILE)
    assert stage == image_check.final_stage(image_check.CONTAINERFILE)
    assert stage[0] == "FROM scratch" and "COPY <rootfs> /" in stage
    text = image_check.DOCKERFILE.read_text()
    assert "FROM ${DEBIAN_IMAGE} AS build" in text and "ARG DEBIAN_IMAGE=debian:12-slim" in text
    assert "deploy/image/rootfs.sh /build/bloomproxy /rootfs" in text


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """The image built from the binary under test in a private podman storage, exported:
    (config, rootfs, entries). The storage is removed afterwards."""
    if not shutil.which("podman"):
        pytest.skip("podman is not installed (scripts/deps.sh installs it)")
    work = tmp_path_factory.mktemp("image")
    store = work / "store"
    podman = image_check.podman_cmd(store)
    tag = "localhost/bloomproxy-test:latest"
    try:
        image_check.build_image(BLOOMPROXY_BIN, work, podman, tag)
        yield image_check.export_image(podman, tag, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_image_holds_only_the_binary_its_libraries_and_user_files(image):
    _, rootfs, entries = image
    assert image_check.file_problems(entries, image_check.ldd_paths(BLOOMPROXY_BIN)) == []
    assert image_check.dangling_links(rootfs, entries) == []
    assert (rootfs / image_check.BINARY_PATH).read_bytes() == Path(BLOOMPROXY_BIN).read_bytes()


def test_image_binary_loads_every_library_from_the_image(image):
    _, rootfs, _ = image
    loaded = image_check.libraries_loaded_from(rootfs)
    # Every library the binary names (DT_NEEDED; libuv, hiredis and OpenSSL only when the build
    # links them as shared libraries, BLOOMPROXY_STATIC_DEPS=OFF), glibc always.
    dynamic = subprocess.run(["readelf", "-d", rootfs / image_check.BINARY_PATH],
                             capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    names = {Path(k).name for k in loaded}
    assert "libc.so.6" in needed and set(needed) <= names, (needed, loaded)
    outside = {k: v for k, v in loaded.items() if not v.startswith(f"{rootfs}/")}
    assert outside == {}, "libraries missing from the image"
    res = subprocess.run([image_check.loader_of(rootfs), "--inhibit-cache", "--library-path",
                          ":".join(sorted({str(Path(p).parent) for p in loaded.values()})),
                          rootfs / image_check.BINARY_PATH, "--version"],
                         capture_output=True, text=True, env={}, timeout=30)
    assert res.returncode == 0 and res.stdout.startswith("bloomproxy "), res.stdout + res.stderr


def test_image_runs_as_its_non_root_user(image):
    config, rootfs, _ = image
    assert image_check.config_problems(
        config, image_check.exposed_ports_of(image_check.DOCKERFILE)) == []
    user = config["config"]["User"]
    assert image_check.passwd_names_user(rootfs, user)
    if os.geteuid() != 0 or not shutil.which("chroot"):
        pytest.skip("chroot needs root")
    # As the runtime would run it: the image's file system as /, the image's user.
    res = image_check.run_in_rootfs(rootfs, user, "--version")
    assert res.returncode == 0 and res.stdout.startswith("bloomproxy "), res.stdout + res.stderr
    res = image_check.run_in_rootfs(rootfs, user, "--test-conf", "--upstream", "redis:6379")
    assert res.returncode == 0 and "configuration OK" in res.stdout, res.stdout + res.stderr
