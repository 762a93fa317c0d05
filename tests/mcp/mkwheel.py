"""mkwheel.py MARK OUT — a minimal pure-Python wheel (module airlock_demo, MARK = MARK) for install tests
without a registry."""
import base64, hashlib, sys, zipfile
name, mark, out = "airlock_demo", sys.argv[1], sys.argv[2]
files = {
    name + "/__init__.py": "MARK = %r\n" % mark,
    name + "-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: airlock-demo\nVersion: 1.0\n",
    name + "-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
rec = []
with zipfile.ZipFile(out, "w") as z:
    for n, t in files.items():
        z.writestr(n, t)
        d = base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b"=").decode()
        rec.append("%s,sha256=%s,%d" % (n, d, len(t)))
    rec.append(name + "-1.0.dist-info/RECORD,,")
    z.writestr(name + "-1.0.dist-info/RECORD", "\n".join(rec) + "\n")
