"""What the tables were measured on: GPU, driver, torch and CUDA versions, and our system id."""

from __future__ import annotations

import datetime as _dt
import subprocess
from typing import Dict, Optional

# GPU name fragment (as torch reports it) -> inferplan system id. Order matters: GB200 before B200.
SYSTEM_BY_GPU = [
    ("GB200", "gb200_sxm"),
    ("B200", "b200_sxm"),
    ("H200", "h200_sxm"),
    ("H100", "h100_sxm"),
    ("A100", "a100_sxm"),
    ("L40S", "l40s"),
]


def system_for_gpu(gpu_name: str) -> Optional[str]:
    upper = gpu_name.upper()
    for fragment, system in SYSTEM_BY_GPU:
        if fragment in upper:
            return system
    return None


def slug(text: str) -> str:
    """Fallback system id for an unknown GPU: 'NVIDIA RTX 6000 Ada' -> 'nvidia_rtx_6000_ada'."""
    out = "".join(c.lower() if c.isalnum() else "_" for c in text)
    return "_".join(p for p in out.split("_") if p) or "unknown_gpu"


def driver_version() -> str:
    try:
        res = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True)
        return res.stdout.strip().splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def today() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d")


def measured_meta(system: str, torch_version: str, cuda_version: str, gpu: str, driver: str, date: str,
                  generator: str) -> Dict[str, object]:
    from .tables import version_dir

    return {
        "system": system,
        "backend": "torch",
        "version": version_dir(torch_version),
        "kind": "measured",
        "calibrated_on": f"measured on {gpu}",
        "borrowed": False,
        "generator": generator,
        "gpu": gpu,
        "driver": driver,
        "torch": torch_version,
        "cuda": cuda_version,
        "date": date,
    }


def gpu_info() -> Dict[str, object]:
    """Facts about GPU 0 (imports torch)."""
    import torch

    props = torch.cuda.get_device_properties(0)
    return {
        "gpu": torch.cuda.get_device_name(0),
        "capability": (props.major, props.minor),
        "count": torch.cuda.device_count(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "unknown",
        "driver": driver_version(),
    }
