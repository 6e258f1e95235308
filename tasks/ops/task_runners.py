"""Task runners by name (params `scale.task_runner`; tasks/core/registry.py style): where per-RM and
per-chunk work runs (flows/runner.py submits to it). A kind makes its Prefect task runner, asks it for
an RM entry's `resources` (e.g. {gpu: 1}) and refuses up front what no worker can ever run. Prefect,
Dask and Ray load only when a runner is made."""
from __future__ import annotations

import contextlib

from tasks.core.errors import ConfigError
from tasks.core.registry import Registry

TASK_RUNNERS = Registry("task runner")
DASK_NAMES = {"gpu": "GPU", "cpu": "CPU"}   # the names `dask worker --resources "GPU=1"` conventionally uses


def _fmt(d: dict) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in sorted(d.items())) or "nothing"


@TASK_RUNNERS.register("local")
class Local:
    """Prefect's thread pool inside the stage process, one chunk at a time (the default)."""

    def make(self, address):
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=1)   # the model already uses every core

    def submit_options(self, req: dict):
        return contextlib.nullcontext()

    def check_offered(self, runner, req: dict, entry: str) -> None:
        return None


@TASK_RUNNERS.register("dask")
class Dask(Local):
    """prefect-dask's DaskTaskRunner on an existing scheduler (`scale.address`), else a temporary local cluster."""

    def make(self, address):
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(address=address) if address else DaskTaskRunner()

    def submit_options(self, req: dict):
        if not req:
            return contextlib.nullcontext()
        import dask

        return dask.annotate(resources=dask_resources(req))

    def check_offered(self, runner, req: dict, entry: str) -> None:
        """A Dask task asking for a resource no worker declares would wait forever: refuse it now."""
        if not req:
            return
        need = dask_resources(req)
        workers = runner.client.scheduler_info(n_workers=-1)["workers"].values()
        if workers and not any(all((w.get("resources") or {}).get(k, 0) >= v for k, v in need.items())
                               for w in workers):
            offered = sorted({_fmt(w.get("resources") or {}) for w in workers})
            raise ConfigError(f"{entry}.resources: each task needs {_fmt(need)}, but no worker of the Dask cluster "
                              f"offers it (workers offer: {'; '.join(offered)}); start one with "
                              f"`dask worker <scheduler> --resources \"{_fmt(need).replace(', ', ',')}\"`")


@TASK_RUNNERS.register("ray")
class Ray(Local):
    """prefect-ray's RayTaskRunner (`pip install 'prbench[ray]'`)."""

    def make(self, address):
        try:
            from prefect_ray import RayTaskRunner
        except ImportError:
            raise ConfigError("scale.task_runner: ray needs the optional extra: pip install 'prbench[ray]'") from None
        return RayTaskRunner(address=address) if address else RayTaskRunner()

    def submit_options(self, req: dict):
        if not req:
            return contextlib.nullcontext()
        from prefect_ray.context import remote_options

        return remote_options(**ray_options(req))

    def check_offered(self, runner, req: dict, entry: str) -> None:
        if not req:
            return
        import ray

        have = ray.cluster_resources()
        need = {"GPU" if k == "gpu" else "CPU" if k == "cpu" else k: v for k, v in req.items()}
        if any(have.get(k, 0) < v for k, v in need.items()):
            raise ConfigError(f"{entry}.resources: each task needs {_fmt(need)}, the Ray cluster has "
                              f"{_fmt({k: have.get(k, 0) for k in need})}")


def dask_resources(req: dict) -> dict:
    return {DASK_NAMES.get(k, k): v for k, v in req.items()}


def ray_options(req: dict) -> dict:
    opts = {"num_gpus": req["gpu"]} if "gpu" in req else {}
    if "cpu" in req:
        opts["num_cpus"] = req["cpu"]
    custom = {k: v for k, v in req.items() if k not in ("gpu", "cpu")}
    return {**opts, "resources": custom} if custom else opts
