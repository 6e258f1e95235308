"""Does LLM.generate_many keep `concurrency` requests in flight?

Starts the fake Gemini server with a fixed latency L per request, sends M distinct requests
through the real google-genai client with C threads and a fresh cache, and prints
throughput / (C / L): 1.0 means C requests were always in flight (target >= 0.8).

The server runs in its own process by default, as a real one would: in-process it shares the
client's GIL and its CPU time would count against the client (--in-process to see that).

    python benchmarks/llm_concurrency.py [--requests 64] [--concurrency 8] [--latency 0.2] [--in-process]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))   # run from anywhere

from tasks.models.llm import LLM, CallCache, GenParams, make_backend  # noqa: E402
from tests.fakes.gemini_server import FakeGeminiServer  # noqa: E402

KEY = "benchmark-key"   # the fake server's key, not a real one


@contextlib.contextmanager
def server_url(latency: float, in_process: bool):
    if in_process:
        with FakeGeminiServer(api_key=KEY, latency_s=latency) as server:
            yield server.url
        return
    proc = subprocess.Popen([sys.executable, "-m", "tests.fakes.gemini_server", "--api-key", KEY,
                             "--latency", str(latency)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.kill()
        proc.wait()


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--in-process", action="store_true", help="run the fake server in this process")
    args = ap.parse_args(argv)
    os.environ["GEMINI_API_KEY"] = KEY
    reqs = [([{"role": "user", "content": f"benchmark question {i}"}], GenParams(seed=i), 0)
            for i in range(args.requests)]
    with server_url(args.latency, args.in_process) as url, tempfile.TemporaryDirectory() as tmp:
        backend = make_backend({"backend": "gemini", "model": "bench", "base_url": url})
        llm = LLM(backend, CallCache(Path(tmp) / "calls.sqlite"), concurrency=args.concurrency)
        start = time.perf_counter()
        out = llm.generate_many(reqs)
        wall = time.perf_counter() - start
        rows = len(llm.cache)
    assert all(o.text == FakeGeminiServer.default_reply(m, p.seed) for o, (m, p, _) in zip(out, reqs))
    throughput = args.requests / wall
    ideal = args.concurrency / args.latency
    ratio = throughput / ideal
    print(f"requests={args.requests} concurrency={args.concurrency} latency_s={args.latency} "
          f"server={'in-process' if args.in_process else 'subprocess'}")
    print(f"wall_s={wall:.3f} throughput={throughput:.1f}/s ideal={ideal:.1f}/s "
          f"backend_calls={llm.stats.calls} cache_rows={rows}")
    print(f"throughput / (C / L) = {ratio:.3f}  ({'ok' if ratio >= 0.8 else 'BELOW TARGET 0.8'})")
    return ratio


if __name__ == "__main__":
    sys.exit(0 if main() >= 0.8 else 1)
