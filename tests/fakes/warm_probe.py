"""What a warm fork must reproduce of a plain process: argv, cwd, environment, stdin/stdout/stderr,
the exit status, and (with `sleep`) its death when the client dies. Run as `python -m ...` or handed off.
`costs`: what the fork is spared (the weakref finalizers its exit would run, whether TLS contexts are shared)."""
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
    elif what == "costs":
        import ssl
        import weakref

        at_exit = sum(f.atexit for f in weakref.finalize._registry)
        print(f"finalizers={len(weakref.finalize._registry)} at_exit={at_exit} "
              f"tls_shared={hasattr(ssl.create_default_context, 'shared')}", flush=True)
    elif what == "raise":
        raise RuntimeError("the probe failed")
    sys.exit(int(rest[0]) if what == "exit" else 0)
