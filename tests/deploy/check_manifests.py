#!/usr/bin/env python3
# check_manifests.py — checks deploy/ (Kubernetes manifests, the containerd block, the installer, the image) for the mistakes a cluster would only report at run time.
#
# Usage: check_manifests.py SRC   (SRC: a checkout, or a copy of one with deploy/ changed)
# Prints one line per problem and exits 1 if there is any, 0 otherwise. No cluster, no kubectl:
# the schema of the kinds deploy/ uses is written down here, and each cross-reference (selector
# to labels, volume to Secret key, probe to port and route, RuntimeClass to containerd handler,
# installer path to BinaryName, flag to the server's option table) is checked against the
# file that defines the other end, the server's own sources included.
import glob
import os
import re
import sys
import tomllib

import yaml

SRC = sys.argv[1] if len(sys.argv) > 1 else "."
KUBE = os.path.join(SRC, "deploy", "kubernetes")
BLOCK = os.path.join(SRC, "deploy", "containerd", "airlock-runtime.toml")
INSTALLER = os.path.join(KUBE, "install-node.sh")
CONTAINERFILE = os.path.join(SRC, "deploy", "image", "Containerfile")

problems = []


def bad(where, msg):
    problems.append("%s: %s" % (where, msg))


# ---- the schema of the kinds we use ---------------------------------------------------------

KINDS = {
    ("v1", "Namespace"): False,  # namespaced?
    ("v1", "ServiceAccount"): True,
    ("v1", "Secret"): True,
    ("v1", "Service"): True,
    ("v1", "Pod"): True,
    ("v1", "PersistentVolumeClaim"): True,
    ("apps/v1", "Deployment"): True,
    ("apps/v1", "DaemonSet"): True,
    ("node.k8s.io/v1", "RuntimeClass"): False,
}
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")
TAINT_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}


def need(where, obj, key, typ):
    """obj[key], of type typ; None (and a problem) when missing or of another type."""
    if not isinstance(obj, dict) or key not in obj:
        bad(where, "missing %s" % key)
        return None
    if not isinstance(obj[key], typ):
        bad(where, "%s is %s, not %s" % (key, type(obj[key]).__name__, typ.__name__))
        return None
    return obj[key]


def check_labels(where, labels):
    for k, v in (labels or {}).items():
        if not LABEL_KEY.match(str(k)):
            bad(where, "bad label key %r" % k)
        if not isinstance(v, str) or not LABEL_VALUE.match(v):
            bad(where, "label %s: value %r is not a string label value (quote true/false/numbers)" % (k, v))


def load_docs():
    docs = []
    files = sorted(glob.glob(os.path.join(KUBE, "*.yaml")))
    if not files:
        bad(KUBE, "no manifest")
    for path in files:
        name = os.path.relpath(path, SRC)
        try:
            with open(path) as f:
                loaded = list(yaml.safe_load_all(f))
        except yaml.YAMLError as e:
            bad(name, "not YAML: %s" % str(e).replace("\n", " "))
            continue
        for i, d in enumerate(loaded):
            if d is None:
                continue
            where = "%s[%d]" % (name, i)
            if not isinstance(d, dict):
                bad(where, "a document is not a mapping")
                continue
            docs.append((where, d))
    return docs


def check_meta(where, d):
    key = (d.get("apiVersion"), d.get("kind"))
    if key not in KINDS:
        bad(where, "unknown apiVersion/kind %s/%s" % key)
        return None
    meta = need(where, d, "metadata", dict)
    if meta is None:
        return None
    name = need(where, meta, "name", str)
    if name and not DNS_SUBDOMAIN.match(name):
        bad(where, "name %r is not a DNS subdomain" % name)
    if KINDS[key] and not isinstance(meta.get("namespace"), str):
        bad(where, "%s needs metadata.namespace" % key[1])
    if not KINDS[key] and "namespace" in meta:
        bad(where, "%s is cluster-scoped: no namespace" % key[1])
    check_labels(where, meta.get("labels"))
    return name


# ---- pods ---------------------------------------------------------------------------------------


def container_ports(c):
    return {p.get("name"): p.get("containerPort") for p in c.get("ports") or [] if isinstance(p, dict)}


def check_probe(where, c, probe, routes, socket):
    handlers = [h for h in ("httpGet", "tcpSocket", "exec", "grpc") if h in probe]
    if len(handlers) != 1:
        bad(where, "a probe needs exactly one handler, has %s" % handlers)
        return
    ports = container_ports(c)
    if "httpGet" in probe or "tcpSocket" in probe:
        h = probe.get("httpGet") or probe.get("tcpSocket")
        port = h.get("port")
        if port not in ports and port not in ports.values():
            bad(where, "probe port %r is none of the container's ports %s" % (port, ports))
        if "httpGet" in probe and h.get("path", "/").split("?")[0] not in routes:
            bad(where, "probe path %r is not a route of the server" % h.get("path"))
    if "exec" in probe:
        cmd = need(where, probe["exec"], "command", list) or []
        if "--unix-socket" in cmd:
            path = cmd[cmd.index("--unix-socket") + 1]
            if socket and path != socket:
                bad(where, "probe asks socket %s, the server listens on %s" % (path, socket))
            urls = [a for a in cmd if a.startswith("http://")]
            if not urls or re.sub(r"^http://[^/]*", "", urls[0]) not in routes:
                bad(where, "probe URL %s is not a route of the server" % urls)
    for k in ("periodSeconds", "timeoutSeconds", "failureThreshold"):
        if k in probe and (not isinstance(probe[k], int) or probe[k] < 1):
            bad(where, "probe %s must be a positive integer" % k)


def flag(cmd, name):
    return cmd[cmd.index(name) + 1] if name in cmd and cmd.index(name) + 1 < len(cmd) else None


def check_serve(where, c, spec, volumes, ctx):
    """The container that runs `airlock serve`: its flags, token mounts and probes."""
    cmd = c.get("command", []) + c.get("args", [])
    for a in cmd[cmd.index("serve") + 1 :]:
        if a.startswith("--") and a[2:].split("=")[0] not in ctx["serve_flags"]:
            bad(where, "airlock serve has no option %s" % a)
    listen = flag(cmd, "--http")
    ports = container_ports(c)
    if not listen:
        bad(where, "airlock serve without --http: nothing listens on a container port")
    elif int(listen.rsplit(":", 1)[1]) not in ports.values():
        bad(where, "--http %s: port not among the container's ports %s" % (listen, ports))
    elif listen.startswith("127.") or listen.startswith("[::1]"):
        bad(where, "--http %s listens on loopback: the Service cannot reach it" % listen)
    if (spec.get("securityContext") or {}).get("fsGroup") is not None:
        bad(where, "fsGroup adds group read to the token files: airlock serve refuses them")
    mounts = {m.get("mountPath"): m for m in c.get("volumeMounts") or []}
    for opt in ("--token-file", "--approver-token-file"):
        path = flag(cmd, opt)
        if not path:
            continue
        m = mounts.get(path)
        if not m or "subPath" not in m:
            bad(where, "%s %s: not a subPath mount of a Secret key (a Secret volume's files are symlinks, "
                "airlock opens token files with O_NOFOLLOW)" % (opt, path))
            continue
        v = volumes.get(m.get("name"), {})
        sec = v.get("secret")
        if not sec:
            bad(where, "%s %s: volume %s is not a Secret" % (opt, path, m.get("name")))
            continue
        mode = sec.get("defaultMode", 0o644)
        for item in sec.get("items") or []:
            if item.get("path") == m["subPath"] and "mode" in item:
                mode = item["mode"]
        if not isinstance(mode, int) or mode & 0o077:
            bad(where, "%s %s: mode %s lets group or others read it: airlock serve refuses the file"
                % (opt, path, oct(mode) if isinstance(mode, int) else mode))
    socket = flag(cmd, "--socket")
    for kind in ("readinessProbe", "livenessProbe", "startupProbe"):
        if kind not in c:
            bad(where, "no %s" % kind)
        elif isinstance(c[kind], dict):
            check_probe("%s %s" % (where, kind), c, c[kind], ctx["routes"], socket)
    ctx["serve_containers"].append((where, c, spec))


def check_pod_spec(where, spec, ns, ctx):
    if spec is None:
        return
    volumes = {}
    for v in spec.get("volumes") or []:
        if not DNS_LABEL.match(str(v.get("name"))):
            bad(where, "volume name %r is not a DNS label" % v.get("name"))
        volumes[v.get("name")] = v
        sec = v.get("secret")
        if sec:
            ctx["secret_refs"].append((where, ns, sec.get("secretName"), sec, v["name"]))
        if "persistentVolumeClaim" in v:
            ctx["refs"].append((where, "PersistentVolumeClaim", ns, v["persistentVolumeClaim"].get("claimName")))
    if spec.get("serviceAccountName"):
        ctx["refs"].append((where, "ServiceAccount", ns, spec["serviceAccountName"]))
    if spec.get("runtimeClassName"):
        ctx["refs"].append((where, "RuntimeClass", None, spec["runtimeClassName"]))
    check_labels(where + " nodeSelector", spec.get("nodeSelector"))
    for t in spec.get("tolerations") or []:
        if t.get("effect") and t["effect"] not in TAINT_EFFECTS:
            bad(where, "toleration effect %r" % t["effect"])
    names = set()
    for kind in ("initContainers", "containers"):
        for c in spec.get(kind) or []:
            cw = "%s %s" % (where, c.get("name"))
            if not DNS_LABEL.match(str(c.get("name"))) or c.get("name") in names:
                bad(cw, "container name missing, not a DNS label, or repeated")
            names.add(c.get("name"))
            image = c.get("image")
            if not isinstance(image, str) or not image:
                bad(cw, "no image")
            elif "@" not in image and (":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")):
                bad(cw, "image %s: name a version (a tag other than latest, or a digest)" % image)
            for k in ("command", "args"):
                if k in c and not (isinstance(c[k], list) and all(isinstance(a, str) for a in c[k])):
                    bad(cw, "%s must be a list of strings" % k)
            for p in c.get("ports") or []:
                n, num = p.get("name"), p.get("containerPort")
                if not isinstance(num, int) or not 0 < num < 65536:
                    bad(cw, "containerPort %r" % num)
                if n is not None and not re.match(r"^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$", str(n)):
                    bad(cw, "port name %r (a DNS label of at most 15 characters)" % n)
            for m in c.get("volumeMounts") or []:
                if m.get("name") not in volumes:
                    bad(cw, "volumeMount %s names no volume of the pod" % m.get("name"))
                if not str(m.get("mountPath", "")).startswith("/"):
                    bad(cw, "mountPath %r is not absolute" % m.get("mountPath"))
            for k in ("requests", "limits"):
                for r, q in ((c.get("resources") or {}).get(k) or {}).items():
                    if not QUANTITY.match(str(q)):
                        bad(cw, "resources.%s.%s %r is not a quantity" % (k, r, q))
            for k in ("readinessProbe", "livenessProbe", "startupProbe"):
                if kind == "initContainers" and k in c:
                    bad(cw, "an init container has no %s" % k)
            cmd = (c.get("command") or []) + (c.get("args") or [])
            if len(cmd) >= 2 and cmd[0].endswith("/airlock") and cmd[1] == "serve":
                check_serve(cw, c, spec, volumes, ctx)
            if cmd and cmd[0].endswith("install-node.sh"):
                ctx["installers"].append((cw, c, spec))
    if not spec.get("containers"):
        bad(where, "no containers")


def check_workload(where, d, ctx):
    spec = need(where, d, "spec", dict) or {}
    ns = d["metadata"].get("namespace")
    if d["kind"] == "Pod":
        check_pod_spec(where, spec, ns, ctx)
        return
    sel = (need(where, spec, "selector", dict) or {}).get("matchLabels") or {}
    tmpl = need(where, spec, "template", dict) or {}
    labels = (tmpl.get("metadata") or {}).get("labels") or {}
    check_labels(where + " template", labels)
    if not sel:
        bad(where, "selector.matchLabels is empty")
    for k, v in sel.items():
        if labels.get(k) != v:
            bad(where, "selector %s=%s does not match the template's labels %s" % (k, v, labels))
    ctx["pod_labels"].append((where, ns, labels, tmpl))
    check_pod_spec(where, tmpl.get("spec"), ns, ctx)
    ann = (tmpl.get("metadata") or {}).get("annotations") or {}
    if ann.get("prometheus.io/scrape") == "true":
        ports = set()
        for c in (tmpl.get("spec") or {}).get("containers") or []:
            ports |= set(container_ports(c).values())
        if ann.get("prometheus.io/path", "/metrics") not in ctx["routes"]:
            bad(where, "prometheus.io/path %r is not a route of the server" % ann.get("prometheus.io/path"))
        if not str(ann.get("prometheus.io/port", "")).isdigit() or int(ann["prometheus.io/port"]) not in ports:
            bad(where, "prometheus.io/port %r is not a container port %s" % (ann.get("prometheus.io/port"), ports))


def check_runtimeclass(where, d, ctx):
    h = need(where, d, "handler", str)
    if h and not DNS_LABEL.match(h):
        bad(where, "handler %r is not a DNS label" % h)
    sched = d.get("scheduling") or {}
    if not (sched.get("nodeSelector") or {}):
        bad(where, "no scheduling.nodeSelector: pods of this class would land on nodes without the runtime")
    check_labels(where + " nodeSelector", sched.get("nodeSelector"))
    for k, q in ((d.get("overhead") or {}).get("podFixed") or {}).items():
        if not QUANTITY.match(str(q)):
            bad(where, "overhead.podFixed.%s %r is not a quantity" % (k, q))
    ctx["runtimeclasses"].append((where, d))


def check_service(where, d, ctx):
    spec = need(where, d, "spec", dict) or {}
    sel = spec.get("selector") or {}
    ns = d["metadata"].get("namespace")
    pods = [(w, t) for (w, n, labels, t) in ctx["pod_labels"] if n == ns and sel and all(labels.get(k) == v for k, v in sel.items())]
    if not pods:
        bad(where, "selector %s matches no workload's pods in %s" % (sel, ns))
    for p in need(where, spec, "ports", list) or []:
        tp = p.get("targetPort", p.get("port"))
        for w, t in pods:
            named = {}
            for c in (t.get("spec") or {}).get("containers") or []:
                named.update(container_ports(c))
            if tp not in named and tp not in named.values():
                bad(where, "targetPort %r is no port of %s (%s)" % (tp, w, named))


def check_secret(where, d, ctx):
    keys = set((d.get("data") or {}).keys()) | set((d.get("stringData") or {}).keys())
    ctx["secrets"][(d["metadata"].get("namespace"), d["metadata"]["name"])] = keys


# ---- the containerd block, the installer, the image -----------------------------------------


def check_containerd(ctx):
    name = os.path.relpath(BLOCK, SRC)
    try:
        with open(BLOCK, "rb") as f:
            cfg = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        bad(name, "not TOML: %s" % e)
        return None
    runtimes = cfg.get("plugins", {}).get("io.containerd.grpc.v1.cri", {}).get("containerd", {}).get("runtimes", {})
    if len(runtimes) != 1:
        bad(name, "should register exactly one runtime, registers %s" % list(runtimes))
        return None
    handler, rt = next(iter(runtimes.items()))
    if rt.get("runtime_type") != "io.containerd.runc.v2":
        bad(name, "runtime_type %r: the runc shim (io.containerd.runc.v2) is what drives a runc-compatible binary" % rt.get("runtime_type"))
    binary = (rt.get("options") or {}).get("BinaryName")
    if not isinstance(binary, str) or not binary.startswith("/"):
        bad(name, "options.BinaryName %r must be an absolute path" % binary)
        return None
    if os.path.basename(binary) != "airlock-runc":
        bad(name, "BinaryName %s: airlock speaks runc's command line only when run as airlock-runc" % binary)
    known = {"BinaryName", "Root", "SystemdCgroup", "NoPivotRoot", "NoNewKeyring", "ShimCgroup", "IoUid", "IoGid",
             "CriuPath", "CriuImagePath", "CriuWorkPath"}
    for k in rt.get("options") or {}:
        if k not in known:
            bad(name, "options.%s is not an option of the runc shim" % k)
    with open(BLOCK) as f:
        text = f.read()
    if not re.search(r"^# BEGIN airlock$.*^# END airlock$", text, re.S | re.M):
        bad(name, "the block is not between the '# BEGIN airlock' and '# END airlock' lines the installer replaces")
    # Appended to a main configuration (containerd's own defaults, the smallest form of them
    # here) the result must still parse and hold both runtimes.
    base = ctx.get("containerd_default") or (
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
        '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n    runtime_type = "io.containerd.runc.v2"\n')
    try:
        merged = tomllib.loads(base + "\n" + text)
        rts = merged["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
        if set(rts) != {"runc", handler}:
            bad(name, "appended to containerd's defaults the runtimes are %s" % list(rts))
    except (tomllib.TOMLDecodeError, KeyError) as e:
        bad(name, "appended to containerd's defaults it does not parse: %s" % e)
    return handler, binary


def shell_default(path, var):
    """The default of VAR=${ENVVAR:-default} in a shell script."""
    with open(path) as f:
        m = re.search(r"^%s=\$\{[A-Z_]+:-([^}]*)\}" % var, f.read(), re.M)
    return m.group(1) if m else None


def check_installation(ctx, handler, binary):
    bin_dir = os.path.dirname(binary)
    inst = os.path.relpath(INSTALLER, SRC)
    if shell_default(INSTALLER, "BIN_DIR") != bin_dir:
        bad(inst, "installs to %s by default, containerd's BinaryName is %s" % (shell_default(INSTALLER, "BIN_DIR"), binary))
    with open(CONTAINERFILE) as f:
        cf = f.read()
    installed = set(re.findall(r"/out(/[^\s\\]+)", cf))
    block_in_image = shell_default(INSTALLER, "BLOCK")
    if block_in_image not in installed:
        bad(os.path.relpath(CONTAINERFILE, SRC), "does not install the containerd block where install-node.sh reads it (%s)" % block_in_image)
    if shell_default(INSTALLER, "SRC_BIN") not in installed:
        bad(os.path.relpath(CONTAINERFILE, SRC), "does not install airlock where install-node.sh copies it from")
    if not ctx["installers"]:
        bad(KUBE, "no container runs install-node.sh")
    # The last stage without its comments: what the running image has.
    final = "\n".join(l for l in cf.rsplit("\nFROM ", 1)[-1].splitlines() if not l.lstrip().startswith("#"))
    for where, c, spec in ctx["serve_containers"]:
        for kind in ("readinessProbe", "livenessProbe", "startupProbe"):
            cmd = ((c.get(kind) or {}).get("exec") or {}).get("command") or []
            if cmd and not re.search(r"\b%s\b" % re.escape(cmd[0]), final):
                bad(where, "%s runs %s, which the image's last stage does not install" % (kind, cmd[0]))
    for where, c, spec in ctx["installers"]:
        if c["command"][0] not in installed:
            bad(where, "runs %s, which the image does not have" % c["command"][0])
        env = {e.get("name"): e.get("value") for e in c.get("env") or []}
        if env.get("AIRLOCK_BIN_DIR", bin_dir) != bin_dir:
            bad(where, "AIRLOCK_BIN_DIR=%s, containerd's BinaryName is %s" % (env["AIRLOCK_BIN_DIR"], binary))
        root = env.get("HOST_ROOT", "/host")
        if root not in [m.get("mountPath") for m in c.get("volumeMounts") or []]:
            bad(where, "HOST_ROOT %s is not mounted" % root)
        if not (c.get("securityContext") or {}).get("privileged") or not spec.get("hostPID"):
            bad(where, "the installer needs privileged and hostPID to restart the node's containerd")
        for w, rc in ctx["runtimeclasses"]:
            if rc.get("handler") != handler:
                continue
            want = (rc.get("scheduling") or {}).get("nodeSelector") or {}
            have = spec.get("nodeSelector") or {}
            if any(have.get(k) != v for k, v in want.items()):
                bad(where, "runs on nodeSelector %s, the RuntimeClass sends pods to %s" % (have, want))
            tols = [(t.get("key"), t.get("effect")) for t in spec.get("tolerations") or []]
            for t in (rc.get("scheduling") or {}).get("tolerations") or []:
                if (t.get("key"), t.get("effect")) not in tols:
                    bad(where, "does not tolerate %s:%s, which pods of the RuntimeClass tolerate" % (t.get("key"), t.get("effect")))
    for w, rc in ctx["runtimeclasses"]:
        if rc.get("handler") != handler:
            bad(w, "handler %r is not the containerd runtime %r" % (rc.get("handler"), handler))


def server_facts(ctx):
    """The server's routes (GET) and airlock serve's options, read from its sources."""
    with open(os.path.join(SRC, "src", "http", "route.c")) as f:
        ctx["routes"] = set(re.findall(r'\{"GET", "([^"{}]+)"', f.read()))
    with open(os.path.join(SRC, "src", "serve", "main.c")) as f:
        ctx["serve_flags"] = set(re.findall(r'\{"([a-z-]+)", (?:required|no)_argument', f.read()))


def main():
    ctx = {"secret_refs": [], "refs": [], "secrets": {}, "pod_labels": [], "runtimeclasses": [], "installers": [],
           "serve_containers": [], "containerd_default": os.environ.get("CONTAINERD_DEFAULT_CONFIG_TEXT")}
    server_facts(ctx)
    docs = load_docs()
    defined = set()
    for where, d in docs:
        name = check_meta(where, d)
        if name is None:
            continue
        defined.add((d["kind"], d["metadata"].get("namespace"), name))
        if d["kind"] == "Secret":
            check_secret(where, d, ctx)
    for kind in ("Deployment", "DaemonSet", "Pod", "RuntimeClass", "Service"):
        for where, d in docs:
            if d.get("kind") != kind or (d.get("apiVersion"), kind) not in KINDS:
                continue
            {"RuntimeClass": check_runtimeclass, "Service": check_service}.get(kind, check_workload)(where, d, ctx)
    namespaces = {n for (k, _, n) in defined if k == "Namespace"} | {"default"}
    for k, ns, n in defined:
        if ns is not None and ns not in namespaces:
            bad("%s/%s" % (k, n), "namespace %s is not defined in deploy/kubernetes" % ns)
    for where, kind, ns, n in ctx["refs"]:
        if (kind, ns, n) not in defined:
            bad(where, "refers to %s %s, which deploy/kubernetes does not define" % (kind, n))
    for where, ns, n, sec, vol in ctx["secret_refs"]:
        keys = ctx["secrets"].get((ns, n))
        if keys is None:
            bad(where, "volume %s: Secret %s/%s is not defined in deploy/kubernetes" % (vol, ns, n))
            continue
        wanted = {i.get("key") for i in sec.get("items") or []}
        for c_where, c, spec in ctx["serve_containers"]:
            for m in c.get("volumeMounts") or []:
                if m.get("name") == vol and "subPath" in m and not sec.get("items"):
                    wanted.add(m["subPath"])
        for k in wanted - keys:
            bad(where, "volume %s: Secret %s has no key %s" % (vol, n, k))
    if not ctx["serve_containers"]:
        bad(KUBE, "no container runs airlock serve")
    got = check_containerd(ctx)
    if got:
        check_installation(ctx, *got)
    for p in problems:
        print(p)
    print("check_manifests: %d documents, %d problems" % (len(docs), len(problems)), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
