# pykernel.py - airlock's Python kernel: runs the cells of one interpreter context, framed on fd 0 (see manager/context.h).
#
# It is embedded in airlock and started as `python3 -c <this text>`: nothing in the sandbox can
# change it before it runs. It is a payload like any exec (sandbox user, seccomp, Landlock,
# cgroup); it trusts nothing it is sent and the manager trusts nothing it sends back.
import ast
import base64
import io
import json
import linecache
import os
import queue
import resource
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback

if os.getppid() != 1:  # only as a payload, beneath its exec's init: kill_others sweeps the pid namespace
    sys.exit("airlock kernel: not in an exec's pid namespace")
SOCK = os.dup(0)  # non-inheritable: no cell process ever holds the channel
_null = os.open("/dev/null", os.O_RDWR)
os.dup2(_null, 0)  # a cell reading stdin reads nothing, never a frame
os.close(_null)
OWN_OUT, OWN_ERR = os.dup(1), os.dup(2)  # the kernel's own streams, restored after each cell
SEND_LOCK = threading.Lock()
MAIN_TID = threading.main_thread().ident
WS = os.environ.pop("AL_KERNEL_WORKSPACE", "/workspace")
LANGUAGE = os.environ.pop("AL_KERNEL_LANGUAGE", "python")
SHELL = os.environ.pop("AL_KERNEL_SHELL", "bash")
STATE = {"in_cell": False, "interrupted": False, "killed": 0, "images": [], "image_bytes": 0,
         "images_dropped": 0, "image_max": 0}


def send(kind, payload):
    data = struct.pack(">cI", kind, len(payload)) + payload
    with SEND_LOCK:
        view = memoryview(data)
        while view:
            n = os.write(SOCK, view)
            view = view[n:]


def read_exact(n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(SOCK, n - len(buf))
        if not chunk:
            os._exit(0)  # the manager closed the channel: the context is deleted
        buf += chunk
    return buf


def others():
    """Every live process of this exec's pid namespace but its init and us: the cell's."""
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
        except OSError:
            continue
        if stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3] not in (b"Z", b"X"):
            found.append(int(name))
    return found


def reap():
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def kill_others():
    """Kills every process the cell started, forks and double-forked daemons included: they all
    live in this pid namespace, and one sweep finds nothing only once all are dead."""
    for _ in range(400):
        pids = others()
        reap()
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                STATE["killed"] += 1
            except OSError:
                pass
        time.sleep(0.005)


def interrupt():
    if not STATE["in_cell"]:
        return
    STATE["interrupted"] = True
    kill_others()  # first: os.system() ignores SIGINT while its child runs
    if STATE["in_cell"]:  # outside the cell's own code SIGINT is ignored anyway (see cell())
        signal.pthread_kill(MAIN_TID, signal.SIGINT)


def reader(q):
    while True:
        kind, n = struct.unpack(">cI", read_exact(5))
        body = read_exact(n)
        if kind == b"x":
            q.put(json.loads(body))
        elif kind == b"i":
            interrupt()


def pump(fd, kind):
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if not data:
            os.close(fd)
            return
        send(kind, data)


class Capture:
    """The cell's fd 1 and 2 (its subprocesses' too) as pipes, forwarded as frames."""

    def __enter__(self):
        self.threads = []
        for fd, kind in ((1, b"o"), (2, b"e")):
            r, w = os.pipe()
            os.dup2(w, fd)
            os.close(w)
            t = threading.Thread(target=pump, args=(r, kind), daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def __exit__(self, *exc):
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:
                pass
        kill_others()  # nothing the cell started outlives it, nor holds a pipe open
        os.dup2(OWN_OUT, 1)
        os.dup2(OWN_ERR, 2)
        for t in self.threads:
            t.join(2.0)
        return False


# ---- matplotlib: figures shown or left open come back as PNG ----

def take_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in list(plt.get_fignums()):
        fig = plt.figure(num)
        buf = io.BytesIO()
        try:
            fig.savefig(buf, format="png")
        except Exception as e:
            sys.stderr.write("airlock: figure %s not rendered: %s\n" % (num, e))
        plt.close(fig)
        data = base64.b64encode(buf.getvalue()).decode()
        if not data:
            continue
        if STATE["image_bytes"] + len(data) > STATE["image_max"]:
            # Said where the cell's reader looks, and counted in the result: never a silent loss.
            STATE["images_dropped"] += 1
            sys.stderr.write("airlock: figure %s dropped: its PNG is %d bytes as base64, over what is left "
                             "(%d) of the cell's image limit of %d bytes (server.cell_image_limit)\n"
                             % (num, len(data), STATE["image_max"] - STATE["image_bytes"], STATE["image_max"]))
            continue
        STATE["image_bytes"] += len(data)
        w, h = fig.get_size_inches() * fig.dpi
        STATE["images"].append({"mime": "image/png", "data": data, "width": int(w), "height": int(h)})


class _InlineBackend:
    """A matplotlib backend module, made when matplotlib imports it: Agg drawing, and show()
    hands the figures to the cell's result."""

    def find_spec(self, name, path, target=None):
        import importlib.util
        return importlib.util.spec_from_loader(name, self) if name == "airlock_inline" else None

    def create_module(self, spec):
        return None

    def exec_module(self, mod):
        from matplotlib import backend_bases
        from matplotlib.backends import backend_agg
        mod.FigureCanvas = backend_agg.FigureCanvasAgg
        mod.FigureManager = getattr(backend_agg, "FigureManager", backend_bases.FigureManagerBase)
        mod.show = lambda *a, **k: take_figures()


sys.meta_path.insert(0, _InlineBackend())
os.environ["MPLBACKEND"] = "module://airlock_inline"
os.environ.setdefault("MPLCONFIGDIR", "/tmp/.airlock-mpl")
os.environ.setdefault("XDG_CACHE_HOME", "/tmp/.airlock-cache")  # caches stay out of the cell's file list


# ---- one cell ----

def snapshot():
    seen, n = {}, 0
    for top, dirs, files in os.walk(WS):
        if top == WS and ".airlock" in dirs:
            dirs.remove(".airlock")
        for f in files:
            n += 1
            if n > 20000:
                return seen, True
            p = os.path.join(top, f)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            seen[os.path.relpath(p, WS)] = (st.st_size, st.st_mtime_ns)
    return seen, False


def changed(before, after):
    out = [{"path": p, "size": v[0]} for p, v in sorted(after.items()) if before.get(p) != v]
    return out[:200], len(out) > 200


def display(value, text_max):
    mod = type(value).__module__ or ""
    text = html = None
    kind = type(value).__name__
    try:
        if mod.startswith("pandas") and hasattr(value, "to_string"):
            text = value.to_string(max_rows=60)
            frame = value.to_frame() if kind == "Series" else value
            html = frame.to_html(max_rows=60, max_cols=20) if hasattr(frame, "to_html") else None
    except Exception:
        text = html = None
    if text is None:
        text = repr(value)
    if html is not None and len(html) > text_max:
        html = None
    return {"type": kind, "text": text[:text_max], "html": html, "truncated": len(text) > text_max}


def error_of(e, first):
    tb = e.__traceback__
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell"):
        tb = tb.tb_next
    lines = traceback.format_exception(type(e), e, tb) if tb else traceback.format_exception_only(type(e), e)
    if first and tb is None and not isinstance(e, SyntaxError):
        lines = traceback.format_exception(type(e), e, e.__traceback__)
    return {"ename": type(e).__name__, "evalue": str(e), "traceback": "".join(lines)}


NS = {"__name__": "__main__", "__builtins__": __builtins__}
COUNT = [0]


def run(code):
    COUNT[0] += 1
    name = "<cell-%d>" % COUNT[0]
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    tree = ast.parse(code, name, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, name, "exec"), NS)
    return eval(compile(last, name, "eval"), NS) if last is not None else None


# ---- shell contexts: each cell a fresh bash that starts from the last cell's saved state ----

STATE_DIR = None
SHELL_PRELUDE = r"""
__al_base=" $(compgen -v | tr '\n' ' ') "
__al_save() {
  local __al_n
  {
    for __al_n in $(compgen -v); do
      case "$__al_base" in *" $__al_n "*) continue ;; esac
      case "$__al_n" in __al_*) continue ;; esac
      declare -p "$__al_n" 2>/dev/null
    done
    declare -f
    alias -p
    printf 'cd %q\n' "$PWD"
  } >"$__AL_STATE.new" 2>/dev/null && mv -f "$__AL_STATE.new" "$__AL_STATE"
}
[ -f "$__AL_STATE" ] && . "$__AL_STATE" 2>/dev/null
trap __al_save EXIT
"""
SHELL_RUN = '__al_cell=$__AL_CELL; unset __AL_CELL; eval "$__al_cell"'


def run_shell(code):
    """Variables, functions, aliases and the directory carry over; processes never do."""
    global STATE_DIR
    if STATE_DIR is None:
        import tempfile
        STATE_DIR = tempfile.mkdtemp(prefix=".airlock-shell-")
    # The cell comes in the environment and leaves it before it runs: as bash's -c argument it
    # was the whole of the cell's line in ps, and its processes would inherit it as a variable.
    env = dict(os.environ, __AL_STATE=os.path.join(STATE_DIR, "state.sh"), __AL_CELL=SHELL_PRELUDE + code + "\n")
    return subprocess.call([SHELL, "-c", SHELL_RUN], env=env, cwd=WS)


def usage():
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + b.ru_utime, a.ru_stime + b.ru_stime


def cell(req):
    text_max = int(req.get("text_max", 1 << 20))
    STATE.update(interrupted=False, killed=0, images=[], image_bytes=0, images_dropped=0,
                 image_max=int(req.get("image_max", 4 << 20)))
    res = {"exit_code": 0, "value": None, "error": None}
    before, ftrunc = snapshot()
    u0, s0 = usage()
    with Capture():
        STATE["in_cell"] = True
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            if LANGUAGE == "shell":
                res["exit_code"] = run_shell(req["code"])
                value = None
            else:
                value = run(req["code"])
            if value is not None:
                NS["_"] = value
                res["value"] = display(value, text_max)
        except SystemExit as e:
            code = e.code
            if code is not None and not isinstance(code, int):
                sys.stderr.write("%s\n" % (code,))
                code = 1
            res["exit_code"] = code or 0
        except BaseException as e:  # KeyboardInterrupt too: the interrupt is the cell's end
            res["error"] = error_of(e, False)
            # Within the output limit, as every text of the answer: the manager takes no bigger one.
            for k in ("evalue", "traceback"):
                res["error"][k] = res["error"][k][:text_max]
            res["exit_code"] = 1
            sys.stderr.write(res["error"]["traceback"])
        finally:
            # A late interrupt must not land in the kernel's own code: from here on it is ignored.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            STATE["in_cell"] = False
        take_figures()
    u1, s1 = usage()
    after, ftrunc2 = snapshot()
    res["files"], more = changed(before, after)
    res.update(files_truncated=more or ftrunc or ftrunc2, images=STATE["images"],
               images_dropped=STATE["images_dropped"], interrupted=STATE["interrupted"],
               processes_killed=STATE["killed"], user_s=u1 - u0, system_s=s1 - s0)
    return res


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for f in (sys.stdout, sys.stderr):
        f.reconfigure(line_buffering=True)
    q = queue.Queue()
    threading.Thread(target=reader, args=(q,), daemon=True).start()
    send(b"h", json.dumps({"pid": os.getpid(), "version": sys.version.split()[0]}).encode())
    while True:
        try:
            req = q.get()
        except KeyboardInterrupt:
            continue
        try:
            res = cell(req)
        except KeyboardInterrupt:  # a late interrupt, after the cell's own code
            res = {"exit_code": 1, "interrupted": True, "value": None, "images": [], "files": [],
                   "error": {"ename": "KeyboardInterrupt", "evalue": "", "traceback": ""}}
        send(b"r", json.dumps(res).encode())


main()
