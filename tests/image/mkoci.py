#!/usr/bin/env python3
# mkoci.py — assembles OCI images from busybox-static for the image tests: good ones and hostile ones.
#
# Usage: mkoci.py FORMAT OUT [VARIANT]
#   FORMAT  layout (a directory), oci-archive (a tar of the layout) or docker (docker save)
#   VARIANT good (default) or one hostile case: dotdot, absolute, symlink-parent, hardlink-out,
#           device, fifo, setuid (accepted, bits dropped), digest-mismatch, truncated, sparse10g,
#           whiteout-dotdot, size-negative and size-absurd (a layer descriptor's "size" -1 or 2^62,
#           layouts only), bigfile, wide (a Debian-shaped root, for bench/image.sh); other-user (a User past the
#           sandbox's ids and a WorkingDir the image lacks: not applied); bin-only (busybox in /bin, no
#           /usr, no bash) and static (one static binary at the root, nothing else); owners (User "1001:1001" and files of
#           several owners: /home/app 1001, /root 0, a 4755 file of uid 0, a file of uid 70000) and
#           owners-named (the same, User "app2", uid 1001 in the image's /etc/passwd) and group-root
#           (the same, User "1001:0"); root-owners (the same files, User "0:0" and /var, /var/lib: the image
#           of airlock-runc's idmapped-rootfs tests)
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile

BUSYBOX = "/bin/busybox"


def ti(name, kind=tarfile.REGTYPE, size=0, mode=0o644, link="", owner=(0, 0)):
    t = tarfile.TarInfo(name)
    t.type, t.size, t.mode, t.linkname, t.mtime = kind, size, mode, link, 1700000000
    t.uid, t.gid = owner
    return t


def add_file(tar, name, data, mode=0o644, owner=(0, 0)):
    tar.addfile(ti(name, size=len(data), mode=mode, owner=owner), io.BytesIO(data))


def bare_layer(variant):
    """bin-only: busybox in /bin, a passwd in /etc, no /usr, no bash (how busybox's own image looks);
    static: one static binary at the root and nothing else (FROM scratch)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        with open(BUSYBOX, "rb") as f:
            exe = f.read()
        if variant == "static":
            add_file(tar, "busybox", exe, 0o755)
            return buf.getvalue()
        for d in ("bin", "etc", "tmp"):
            tar.addfile(ti(d + "/", tarfile.DIRTYPE, mode=0o755))
        add_file(tar, "bin/busybox", exe, 0o755)
        for applet in ("sh", "cat", "ls", "echo", "id", "stat", "sleep", "true", "test", "uname"):
            tar.addfile(ti("bin/" + applet, tarfile.SYMTYPE, link="busybox"))
        add_file(tar, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
        # The image's own trust store (a marker, not a certificate): what its TLS clients trust.
        for d in ("etc/ssl", "etc/ssl/certs"):
            tar.addfile(ti(d + "/", tarfile.DIRTYPE, mode=0o755))
        add_file(tar, "etc/ssl/certs/ca-certificates.crt", b"# the bin-only image's own CA bundle\n")
    return buf.getvalue()


def base_layer(variant):
    if variant in ("bin-only", "static"):
        return bare_layer(variant)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in ("usr", "usr/bin", "usr/share", "usr/share/opq", "etc", "tmp", "opt", "opt/app", "srv"):
            tar.addfile(ti(d + "/", tarfile.DIRTYPE, mode=0o755))
        with open(BUSYBOX, "rb") as f:
            add_file(tar, "usr/bin/busybox", f.read(), 0o755)
        for applet in ("sh", "cat", "ls", "echo", "id", "stat", "sleep", "true", "test"):
            tar.addfile(ti("usr/bin/" + applet, tarfile.SYMTYPE, link="busybox"))
        tar.addfile(ti("bin", tarfile.SYMTYPE, link="usr/bin"))
        # The languages table's shell is bash: busybox's sh stands in for it.
        add_file(tar, "usr/bin/bash", b'#!/usr/bin/busybox sh\nexec /usr/bin/busybox sh "$@"\n', 0o755)
        add_file(tar, "usr/share/gone.txt", b"lower\n")
        add_file(tar, "usr/share/opq/old.txt", b"lower\n")
        add_file(tar, "etc/image-release", b"mkoci busybox\n")
        # The whole root is shown: /etc beside airlock's own files, /opt, /srv; and a user.
        add_file(tar, "etc/app.conf", b"app-conf\n")
        add_file(tar, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/opt/app:/bin/sh\n"
                 b"app2:x:1001:1001:app2:/home/app:/bin/sh\n")
        add_file(tar, "etc/group", b"root:x:0:\napp:x:1000:\napp2:x:1001:\n")
        add_file(tar, "opt/app/data.txt", b"opt-data\n")
        hostile(tar, variant)
    return buf.getvalue()


def hostile(tar, variant):
    if variant == "dotdot":
        add_file(tar, "usr/../../../tmp/airlock-escape-dotdot", b"escaped\n")
    elif variant == "absolute":
        add_file(tar, "/tmp/airlock-escape-absolute", b"escaped\n")
    elif variant == "symlink-parent":
        tar.addfile(ti("usr/evil", tarfile.SYMTYPE, link="/tmp"))
        add_file(tar, "usr/evil/airlock-escape-symlink", b"escaped\n")
    elif variant == "hardlink-out":
        tar.addfile(ti("usr/shadow", tarfile.LNKTYPE, link="../etc/shadow"))
    elif variant == "hardlink-abs":
        tar.addfile(ti("usr/shadow", tarfile.LNKTYPE, link="/etc/shadow"))
    elif variant == "device":
        t = ti("usr/mem", tarfile.CHRTYPE, mode=0o666)
        t.devmajor, t.devminor = 1, 1
        tar.addfile(t)
    elif variant == "fifo":
        tar.addfile(ti("usr/fifo", tarfile.FIFOTYPE))
    elif variant == "setuid":
        add_file(tar, "usr/bin/suid", b"#!/bin/sh\n", 0o6755)
    elif variant in ("owners", "owners-named", "group-root", "root-owners"):
        dirs = (("home", (0, 0), 0o755), ("home/app", (1001, 1001), 0o755), ("root", (0, 0), 0o700))
        if variant == "root-owners":
            dirs += (("var", (0, 0), 0o755), ("var/lib", (0, 0), 0o755))
        for d, owner, mode in dirs:
            tar.addfile(ti(d + "/", tarfile.DIRTYPE, mode=mode, owner=owner))
        add_file(tar, "home/app/own.txt", b"app2's\n", owner=(1001, 1001))
        add_file(tar, "home/app/other.txt", b"1002's\n", owner=(1002, 1003))
        add_file(tar, "usr/bin/rootsuid", b"#!/bin/sh\n", 0o4755, owner=(0, 0))
        add_file(tar, "opt/far.txt", b"far\n", owner=(70000, 70000))
        tar.addfile(ti("opt/link", tarfile.SYMTYPE, link="far.txt", owner=(1002, 1002)))
    elif variant == "whiteout-dotdot":
        add_file(tar, "usr/../.wh.etc", b"")
    elif variant == "wide":
        # A Debian-shaped root for the benchmark: its top-level directories and 150 /etc entries.
        for d in ("boot", "home", "media", "mnt", "root", "run", "var", "var/lib", "var/log"):
            tar.addfile(ti(d + "/", tarfile.DIRTYPE, mode=0o755))
        for i in range(100):
            add_file(tar, "etc/conf%d" % i, b"x\n")
        for i in range(40):
            tar.addfile(ti("etc/dir%d/" % i, tarfile.DIRTYPE, mode=0o755))
            add_file(tar, "etc/dir%d/f" % i, b"x\n")
        for i in range(10):
            tar.addfile(ti("etc/link%d" % i, tarfile.SYMTYPE, link="conf%d" % i))


def top_layer(variant="good"):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        if variant in ("bin-only", "static"):
            add_file(tar, "hello.txt", b"hello from the top layer\n")
            # A name beyond ASCII (pax stores it as UTF-8): Debian's own trees have them.
            add_file(tar, "na\u00efve-\u540d\u524d.txt", b"a UTF-8 name\n")
            return buf.getvalue()
        add_file(tar, "usr/share/hello.txt", b"hello from the top layer\n")
        add_file(tar, "usr/share/.wh.gone.txt", b"")
        tar.addfile(ti("usr/share/opq/", tarfile.DIRTYPE, mode=0o755))
        add_file(tar, "usr/share/opq/.wh..wh..opq", b"")
        add_file(tar, "usr/share/opq/new.txt", b"upper\n")
    return buf.getvalue()


def sparse_claim():
    """A tar header claiming a 10 GB member, followed by 1 KiB of it and nothing more."""
    enc = (tarfile.GNU_FORMAT, "utf-8", "surrogateescape")
    return ti("usr/", tarfile.DIRTYPE, mode=0o755).tobuf(*enc) + ti("usr/huge", size=10 << 30).tobuf(*enc) + b"\0" * 1024


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def blobs_for(variant):
    l1 = base_layer(variant)
    if variant == "sparse10g":
        l1 = sparse_claim()
    if variant == "bigfile":
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            add_file(tar, "big.bin", b"\0" * (3 << 20))
        l1 = buf.getvalue()
    return [gzip.compress(l1, mtime=0), l1], top_layer(variant)


def oci(variant):
    (l1gz, l1raw), l2 = blobs_for(variant)
    layers = [(l1gz, "application/vnd.oci.image.layer.v1.tar+gzip"), (l2, "application/vnd.oci.image.layer.v1.tar")]
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        # PATH and HOME: airlock's own win over them; MARKER is one only the image sets
        "config": {"Env": ["PATH=/usr/bin:/bin", "HOME=/image-home", "IMAGE_GREETING=hello", "MARKER=from-image"],
                   "Entrypoint": ["echo"], "Cmd": ["image-cmd"],
                   # other-user: a uid the posture does not grant, and a WorkingDir the image lacks
                   "WorkingDir": {"other-user": "/nonexistent", "bin-only": "/", "static": "/"}.get(variant, "/opt/app"),
                   "User": {"other-user": "70000:70000", "owners": "1001:1001",
                            "owners-named": "app2", "group-root": "1001:0", "root-owners": "0:0", "bin-only": "",
                            "static": ""}.get(variant, "app")},
        "rootfs": {"type": "layers", "diff_ids": [sha(l1raw), sha(l2)]},
    }).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(config), "size": len(config)},
        "layers": [{"mediaType": m, "digest": sha(b), "size": len(b)} for b, m in layers],
    })
    manifest = json.loads(manifest)
    # size-negative, size-absurd: the first layer's descriptor gives a size no blob can have
    manifest["layers"][0]["size"] = {"size-negative": -1, "size-absurd": 1 << 62}.get(variant, len(l1gz))
    manifest = json.dumps(manifest).encode()
    index = json.dumps({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": sha(manifest), "size": len(manifest),
        "annotations": {"org.opencontainers.image.ref.name": "latest"}}]}).encode()
    files = {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}', "index.json": index}
    for b in (config, manifest, l1gz, l2):
        files["blobs/sha256/" + sha(b)[7:]] = b
    if variant == "digest-mismatch":
        files["blobs/sha256/" + sha(l1gz)[7:]] = l1gz[:-8] + b"tampered"
    if variant == "truncated":
        files["blobs/sha256/" + sha(l1gz)[7:]] = l1gz[: len(l1gz) // 2]
    return files


def docker(variant):
    (_, l1), l2 = blobs_for(variant)
    config = json.dumps({
        "architecture": "amd64", "os": "linux", "config": {"Env": ["PATH=/usr/bin:/bin", "IMAGE_GREETING=hello"]},
        "rootfs": {"type": "layers", "diff_ids": [sha(l1), sha(l2)]},
    }).encode()
    cfgname = sha(config)[7:] + ".json"
    manifest = json.dumps([{"Config": cfgname, "RepoTags": ["mkoci:latest"],
                            "Layers": ["l1/layer.tar", "l2/layer.tar"]}]).encode()
    files = {"manifest.json": manifest, cfgname: config, "l1/layer.tar": l1, "l2/layer.tar": l2}
    if variant == "digest-mismatch":
        files["l1/layer.tar"] = l1[:-8] + b"tampered"
    if variant == "truncated":
        files["l1/layer.tar"] = l1[: len(l1) // 2]
    return files


def write_tar(path, files):
    with tarfile.open(path, "w") as tar:
        for name, data in files.items():
            add_file(tar, name, data)


def main():
    fmt, out = sys.argv[1], sys.argv[2]
    variant = sys.argv[3] if len(sys.argv) > 3 else "good"
    files = docker(variant) if fmt == "docker" else oci(variant)
    if fmt == "layout":
        for name, data in files.items():
            os.makedirs(os.path.dirname(os.path.join(out, name)), exist_ok=True)
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
    else:
        write_tar(out, files)


if __name__ == "__main__":
    main()
