"""Celery tasks of the evaluation app. Tasks named ``gpu_*`` are routed to the ``gpu`` queue."""

from __future__ import annotations

import platform
import socket
from typing import Any

from celery import shared_task


@shared_task(name="evaluation.tasks.gpu_environment", bind=True, acks_late=True)
def gpu_environment(self: Any) -> dict[str, Any]:
    """Describe the worker that runs gpu jobs: host, queue, torch version and the device it will use.

    Researchers run it to check that a gpu worker is up and sees its accelerator; on a machine
    without one the same code reports ``cpu`` and gpu jobs still run, slowly.
    """
    import torch

    cuda = torch.cuda.is_available()
    delivery = getattr(self.request, "delivery_info", None) or {}
    return {
        "hostname": socket.gethostname(),
        "worker": self.request.hostname,
        "queue": delivery.get("routing_key"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": "cuda" if cuda else "cpu",
        "cuda_devices": torch.cuda.device_count() if cuda else 0,
        "threads": torch.get_num_threads(),
    }
