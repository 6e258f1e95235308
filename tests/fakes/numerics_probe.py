"""What a stage process computes under: torch's capability and the pinned variables, and whether torch
was already loaded when the stage's module started (in a warm fork: imported once by the server)."""
import json
import os
import sys

if __name__ == "__main__":
    preloaded = "torch" in sys.modules
    import torch

    print(json.dumps({"preloaded": preloaded, "capability": torch.backends.cpu.get_cpu_capability(),
                      **{k: os.environ.get(k) for k in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "OMP_NUM_THREADS")}}))
