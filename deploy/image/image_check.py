#!/usr/bin/env python3
"""Builds bloomproxy's image from a binary built on the host and checks what is in it.

Containers cannot run here (no usable runtime), so the image is checked from outside:
deploy/image/rootfs.sh assembles the file system, podman builds
deploy/image/Containerfile.prebuilt (FROM scratch + COPY, no RUN), `podman save --format
oci-dir` exports it, and its layers are unpacked and inspected:

  - exactly the expected files: the binary, the libraries ldd names for it, the dynamic loader,
    passwd/group/nsswitch.conf, the CA bundle and OpenSSL's link to it; all owned by root and
    writable by root only;
  - the binary runs from that file system alone: the image's loader lists every library it
    loads inside the unpacked image (with the host's cache and directories out of the way),
    and, as root, `chroot --userspec=UID:GID` runs `bloomproxy --version` as the image's user;
  - the image config: a numeric non-root USER that /etc/passwd names, the ENTRYPOINT, the
    exposed ports.

    deploy/image/image_check.py --binary build/bloomproxy [--tag NAME] [--store DIR] [--keep DIR]
    deploy/image/image_check.py --image localhost/bloomproxy:latest [--store DIR] [--keep DIR]

--image checks an image built otherwise (from the Dockerfile: scripts/image.sh --dockerfile).
--store gives podman a private storage (vfs) under DIR instead of the system's; the tests use
it. Used by scripts/image.sh and tests/integration/test_deploy.py. Standard library only.
"""

import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ROOTFS_SH = HERE / "rootfs.sh"
CONTAINERFILE = HERE / "Containerfile.prebuilt"
DOCKERFILE = REPO / "Dockerfile"

BINARY_PATH = "usr/local/bin/bloomproxy"
CA_BUNDLE = "etc/ssl/certs/ca-certificates.crt"
# Files every image has besides the binary and its libraries; symlinks with their targets.
FIXED_FILES = {BINARY_PATH, "etc/passwd", "etc/group", "etc/nsswitch.conf", CA_BUNDLE}
FIXED_SYMLINKS = {"usr/lib/ssl/cert.pem": "/" + CA_BUNDLE}
ENTRYPOINT = ["/usr/local/bin/bloomproxy"]


def podman_cmd(store=None):
    """The podman command line; with `store`, a private vfs storage under it that never
    touches the system's (no cgroups, no journal: nothing here runs a container)."""
    cmd = ["podman", "--cgroup-manager", "cgroupfs", "--events-backend", "none"]
    if store is not None:
        store = Path(store)
        cmd += ["--root", str(store / "root"), "--runroot", str(store / "run"),
                "--tmpdir", str(store / "tmp"), "--storage-driver", "vfs"]
    return cmd


def run(cmd, **kw):
    res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if res.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s%s" % (" ".join(map(str, cmd)), res.returncode,
                                                     res.stdout, res.stderr))
    return res.stdout


def build_image(binary, workdir, podman, tag):
    """Assembles the image's file system from `binary` and builds the prebuilt Containerfile."""
    context = Path(workdir) / "context"
    context.mkdir(parents=True)
    run(["sh", ROOTFS_SH, binary, context / "rootfs"])
    run([*podman, "build", "--pull=never", "-f", CONTAINERFILE, "-t", tag, context])


def export_image(podman, tag, workdir):
    """Saves the image as an OCI directory and unpacks its layers in order.
    Returns (config, rootfs, entries): the image config (JSON), the unpacked directory, and
    {path: tarfile.TarInfo} of every layer entry (ownership and modes as in the image)."""
    oci = Path(workdir) / "oci"
    run([*podman, "save", "--format", "oci-dir", "-o", oci, tag])

    def blob(digest):
        algo, hexdigest = digest.split(":", 1)
        return oci / "blobs" / algo / hexdigest

    index = json.loads((oci / "index.json").read_text())
    manifest = json.loads(blob(index["manifests"][0]["digest"]).read_text())
    config = json.loads(blob(manifest["config"]["digest"]).read_text())
    rootfs = Path(workdir) / "rootfs"
    rootfs.mkdir()
    entries = {}
    for layer in manifest["layers"]:
        with tarfile.open(blob(layer["digest"]), "r:*") as tar:
            members = tar.getmembers()
            for m in members:
                name = os.path.normpath(m.name).lstrip("/")
                if os.path.basename(name).startswith(".wh."):
                    raise AssertionError(f"whiteout {name} in a FROM scratch image")
                if name not in ("", "."):
                    entries[name] = m
            wanted = [m for m in members if not (m.isdev() or m.ischr())]
            # 'tar' keeps absolute symlink targets (usr/lib/ssl/cert.pem), which 'data' refuses.
            extra = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
            tar.extractall(rootfs, members=wanted, **extra)
    return config, rootfs, entries


def ldd_paths(binary):
    """Paths (absolute) of the libraries and loader ldd resolves for `binary` on this host."""
    out = run(["ldd", binary])
    paths = set()
    for line in out.splitlines():
        m = re.match(r"\s*\S+ => (/\S+)", line) or re.match(r"\s*(/\S+) \(", line)
        if m:
            paths.add(m.group(1))
    return paths


def file_problems(entries, lib_paths):
    """Differences between the image's files and the expected ones (FIXED_FILES and the
    absolute `lib_paths`); wrong owners or modes."""
    problems = []
    files = {n for n, m in entries.items() if m.isfile()}
    links = {n: m.linkname for n, m in entries.items() if m.issym() or m.islnk()}
    others = {n for n, m in entries.items() if not (m.isfile() or m.isdir() or m.issym()
                                                    or m.islnk())}
    want = FIXED_FILES | {p.lstrip("/") for p in lib_paths}
    if files != want:
        problems.append("files: missing %s, unexpected %s"
                        % (sorted(want - files), sorted(files - want)))
    if links != FIXED_SYMLINKS:
        problems.append(f"links: {links}, expected {FIXED_SYMLINKS}")
    if others:
        problems.append(f"special files: {sorted(others)}")
    for name, m in sorted(entries.items()):
        if m.uid != 0 or m.gid != 0:
            problems.append(f"{name} owned by {m.uid}:{m.gid}, not root")
        if not m.issym() and m.mode & (stat.S_IWGRP | stat.S_IWOTH):
            problems.append(f"{name} mode {oct(m.mode)} is writable by others than root")
    binary_entry = entries.get(BINARY_PATH)
    if binary_entry is not None and binary_entry.mode & 0o777 != 0o755:
        problems.append(f"{BINARY_PATH} mode {oct(binary_entry.mode)}, expected 0o755")
    return problems


def dangling_links(rootfs, entries):
    """Symlinks of the image whose target, read inside the image, is not a file there."""
    dangling = []
    for name, m in entries.items():
        if m.issym():
            target = Path(rootfs) / (m.linkname.lstrip("/") if m.linkname.startswith("/")
                                     else os.path.join(os.path.dirname(name), m.linkname))
            if not (target.is_file() and not target.is_symlink()):
                dangling.append(f"{name} -> {m.linkname}")
    return dangling


def loader_of(rootfs):
    """The dynamic loader the image's binary names (its PT_INTERP), inside `rootfs`."""
    out = run(["readelf", "-l", Path(rootfs) / BINARY_PATH])
    m = re.search(r"Requesting program interpreter: (/\S+?)\]", out)
    if not m:
        raise AssertionError("the binary names no program interpreter")
    return Path(rootfs) / m.group(1).lstrip("/")


def libraries_loaded_from(rootfs):
    """{soname: path} of every library the image's loader loads for the binary when told to
    look only inside `rootfs` (its own cache and the host's ld.so.cache are not read). A path
    outside `rootfs` means the image lacks that library."""
    rootfs = Path(rootfs)
    lib_dirs = sorted({str(p.parent) for p in rootfs.rglob("*.so*") if p.is_file()})
    out = run([loader_of(rootfs), "--inhibit-cache", "--library-path", ":".join(lib_dirs),
               "--list", rootfs / BINARY_PATH], env={})
    loaded = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m:
            loaded[m.group(1)] = m.group(2)
    return loaded


def run_in_rootfs(rootfs, user, *args):
    """Runs the image's binary with `args` as `user` ("UID:GID") chrooted into `rootfs`, in
    its own PID and mount namespaces with a /proc, as a container runtime would (a sanitized
    test build reads its options and maps from /proc). Plain chroot where unshare is refused.
    Needs root."""
    chroot = [shutil.which("chroot"), f"--userspec={user}", str(rootfs), "/" + BINARY_PATH,
              *args]
    proc = Path(rootfs) / "proc"  # a mount point in the unpacked copy only, not in the image
    proc.mkdir(exist_ok=True)
    if shutil.which("unshare"):
        res = subprocess.run([shutil.which("unshare"), "--mount", "--pid", "--fork",
                              f"--mount-proc={proc}", *chroot],
                             capture_output=True, text=True, env={}, timeout=30)
        if not res.stderr.startswith("unshare:"):
            return res
    return subprocess.run(chroot, capture_output=True, text=True, env={}, timeout=30)


def config_problems(config, ports):
    """Checks of the image config: non-root numeric USER named in the image's passwd,
    ENTRYPOINT, exposed `ports` (ints)."""
    problems = []
    c = config.get("config", {})
    user = c.get("User", "")
    m = re.fullmatch(r"(\d+)(?::(\d+))?", user)
    if not m or int(m.group(1)) == 0 or (m.group(2) is not None and int(m.group(2)) == 0):
        problems.append(f"User {user!r} is not a numeric non-root uid[:gid]")
    if c.get("Entrypoint") != ENTRYPOINT:
        problems.append(f"Entrypoint {c.get('Entrypoint')!r}, expected {ENTRYPOINT!r}")
    exposed = set(c.get("ExposedPorts", {}))
    if exposed != {f"{p}/tcp" for p in ports}:
        problems.append(f"ExposedPorts {sorted(exposed)}, expected {sorted(ports)}")
    return problems


def passwd_names_user(rootfs, user):
    """True when the image's /etc/passwd and /etc/group have the uid and gid of `user`."""
    uid, _, gid = user.partition(":")
    gid = gid or uid
    passwd = (Path(rootfs) / "etc/passwd").read_text().splitlines()
    group = (Path(rootfs) / "etc/group").read_text().splitlines()
    return (any(line.split(":")[2:4] == [uid, gid] for line in passwd)
            and any(line.split(":")[2] == gid for line in group))


def final_stage(path):
    """The instructions of the last stage of a Dockerfile (comments dropped, continuation lines
    joined), with the COPY of the image's file system written as `COPY <rootfs> /`."""
    text = re.sub(r"\\\n", " ", Path(path).read_text())
    lines = [" ".join(line.split()) for line in text.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    last_from = max(i for i, line in enumerate(lines) if line.upper().startswith("FROM "))
    stage = lines[last_from:]
    return [re.sub(r"^COPY (--from=build /rootfs/|rootfs/) /$", "COPY <rootfs> /", line)
            for line in stage]


def exposed_ports_of(path):
    ports = set()
    for line in final_stage(path):
        if line.upper().startswith("EXPOSE "):
            ports |= {int(p.split("/")[0]) for p in line.split()[1:]}
    return ports


def check_image(podman, tag, work, lib_paths=None):
    """Every check above on image `tag`, exported under `work`. `lib_paths`: the libraries the
    image must hold (absolute paths; default: those its own loader loads from it).
    Returns the list of problems (empty: the image is right)."""
    config, rootfs, entries = export_image(podman, tag, work)
    user = config.get("config", {}).get("User", "")
    loaded = libraries_loaded_from(rootfs)
    inside = str(rootfs) + "/"
    outside = {s: p for s, p in loaded.items() if not p.startswith(inside)}
    if lib_paths is None:
        lib_paths = {p[len(rootfs.as_posix()):] for p in loaded.values() if p.startswith(inside)}
    problems = file_problems(entries, lib_paths)
    if outside:
        problems.append(f"libraries not in the image: {outside}")
    problems += [f"dangling link {d}" for d in dangling_links(rootfs, entries)]
    problems += config_problems(config, exposed_ports_of(DOCKERFILE))
    if not passwd_names_user(rootfs, user):
        problems.append(f"/etc/passwd or /etc/group lacks the image's user {user}")
    if final_stage(DOCKERFILE) != final_stage(CONTAINERFILE):
        problems.append("the final stages of Dockerfile and Containerfile.prebuilt differ")
    if os.geteuid() == 0 and shutil.which("chroot"):
        res = run_in_rootfs(rootfs, user, "--version")
        print(f"in the image, as {user}: {(res.stdout + res.stderr).strip()}")
        if res.returncode != 0 or not res.stdout.startswith("bloomproxy "):
            problems.append(f"bloomproxy --version in the image: exit {res.returncode}")
    size = sum(m.size for m in entries.values() if m.isfile())
    print(f"image {tag}: {len(entries)} entries, {size / 1e6:.1f} MB of files, user {user}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--binary", help="build the image from this binary, then check it")
    what.add_argument("--image", help="check this image (e.g. built from the Dockerfile)")
    ap.add_argument("--tag", default="localhost/bloomproxy:latest", help="with --binary")
    ap.add_argument("--store", help="private podman storage directory (default: the system's)")
    ap.add_argument("--keep", help="directory for the context, export and unpacked file system "
                                   "(default: a temporary one, removed)")
    args = ap.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="bp-image-"))
    work.mkdir(parents=True, exist_ok=True)
    podman = podman_cmd(args.store)
    try:
        if args.binary:
            build_image(args.binary, work, podman, args.tag)
            problems = check_image(podman, args.tag, work, ldd_paths(args.binary))
        else:
            problems = check_image(podman, args.image, work)
        for p in problems:
            print("PROBLEM:", p, file=sys.stderr)
        print("image check: " + ("OK" if not problems else f"{len(problems)} problem(s)"))
        return 1 if problems else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
