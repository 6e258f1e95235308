"""What a warm fork must reproduce of a plain process: argv, cwd, environment, stdin/stdout/stderr,
the exit status, and (with `sleep`) its death when the client dies. Run as `python -m ...` or handed off."""
import os
import sys
import time

if __name__ == "__main__":
    what, *rest = sys.argv[1:]
    print(f"argv={sys.argv[1:]} cwd={os.getcwd()} probe={os.environ.get('PROBE_VALUE')} pid={os.getpid()}", flush=True)
    print(f"stdin={sys.stdin.read().strip()}", flush=True)
    print("to stderr", file=sys.stderr, flush=True)
    if what == "sleep":
        time.sleep(float(rest[0]))
    elif what == "raise":
        raise RuntimeError("the probe failed")
    sys.exit(int(rest[0]) if what == "exit" else 0)
