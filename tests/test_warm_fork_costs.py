"""What a warm fork (flows/warm_server.py) no longer pays per stage: a new SSLContext for each Prefect client it
builds (the CA bundle loaded again, ~23 ms each) and the server's inherited weakref finalizers at its exit. Each
case runs in a fresh interpreter: both change process-wide state (the ssl module, the finalizer registry)."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

COUNTING = """
import ssl
made = []
original = ssl.create_default_context
def counting(*args, **kwargs):
    made.append(kwargs.get("cafile"))
    return original(*args, **kwargs)
ssl.create_default_context = counting
from flows.warm_preload import share_verified_tls_context
"""


def _python(code: str, **env) -> str:
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**_base_env(), **env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _base_env() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")} | {"PYTHONPATH": str(ROOT)}


def test_prefect_clients_after_the_preload_build_no_tls_context():
    out = _python(COUNTING + """
import certifi
share_verified_tls_context()
built = len(made)
from prefect.client.orchestration import PrefectClient, SyncPrefectClient
for _ in range(3):
    PrefectClient("http://127.0.0.1:9/api")
    SyncPrefectClient("http://127.0.0.1:9/api")
print(built, len(made))
print(ssl.create_default_context(cafile=certifi.where()) is ssl.create_default_context(cafile=certifi.where()))
""", SSL_CERT_FILE="", SSL_CERT_DIR="")   # a machine without either: certifi's
    built, after = map(int, out.split()[:2])
    assert built == 1, "certifi's bundle, built once in the server before any fork"
    assert after == built, "six Prefect clients later, not one more context was built"
    assert out.split()[2] == "True"


def test_the_bundle_ssl_cert_file_names_is_shared_too(tmp_path):
    import certifi

    bundle = tmp_path / "ca.pem"   # another file than certifi's: httpx loads SSL_CERT_FILE's when it is set
    bundle.write_bytes(open(certifi.where(), "rb").read())
    out = _python(COUNTING + """
import os
share_verified_tls_context()
from prefect.client.orchestration import PrefectClient
PrefectClient("http://127.0.0.1:9/api")
print(len(made), sorted(set(made)) == sorted({os.environ["SSL_CERT_FILE"], __import__("certifi").where()}))
""", SSL_CERT_FILE=str(bundle), SSL_CERT_DIR="")
    assert out.split() == ["2", "True"], "one context per bundle, both built in the server; the client built none"


def test_other_tls_contexts_stay_new_and_changes_to_them_stay_theirs():
    out = _python(COUNTING + """
import certifi
share_verified_tls_context()
a, b = ssl.create_default_context(), ssl.create_default_context()
a.check_hostname = False
a.verify_mode = ssl.CERT_NONE   # what Prefect does to its insecure context
shared = ssl.create_default_context(cafile=certifi.where())
client = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=certifi.where())
print(a is not b, shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname, client is not shared)
""")
    assert out.split() == ["True", "True", "True"]


def test_a_fork_leaves_the_servers_finalizers_to_the_server_and_runs_its_own(tmp_path):
    out = _python(f"""
import atexit, os, weakref
from pathlib import Path
from flows.warm_server import inherited_finalizers_off
folder = Path({str(tmp_path)!r})
class Held: pass
held = Held()
weakref.finalize(held, lambda: (folder / f"server-{{os.getpid()}}").write_text("ran"))
pid = os.fork()
if pid == 0:
    inherited_finalizers_off()
    mine = Held()
    weakref.finalize(mine, lambda: (folder / "fork").write_text("ran"))
    atexit._run_exitfuncs()   # what the warm fork runs at its end
    os._exit(0)
os.waitpid(pid, 0)
print(sorted(p.name for p in folder.iterdir()))
""")
    assert out.strip() == "['fork']", "the fork ran its own finalizer and none of the server's"
    assert len(list(tmp_path.glob("server-*"))) == 1, "the server's ran at the server's own exit"
