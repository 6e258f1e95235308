"""What a stage process computes under: torch's capability, numpy's dispatch and its OpenBLAS's core, the
pinned variables, and whether torch and numpy were already loaded when the stage's module started (in a warm
fork: imported once by the server)."""
import json
import os
import sys

if __name__ == "__main__":
    preloaded = "torch" in sys.modules and "numpy" in sys.modules
    import torch

    from tasks.core.numerics import numpy_kernels

    kernels = numpy_kernels()
    print(json.dumps({"preloaded": preloaded, "capability": torch.backends.cpu.get_cpu_capability(),
                      "numpy": kernels["numpy_dispatch"], "openblas": [b["core"] for b in kernels["openblas"]],
                      **{k: os.environ.get(k) for k in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "OMP_NUM_THREADS")}}))
