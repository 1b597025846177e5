"""Celery tasks of the evaluation app. Tasks named ``gpu_*`` are routed to the ``gpu`` queue.

The execution service (scikit-learn, pandas, pyarrow, the models) is imported by the task that runs a
benchmark: default-queue workers import this module at start too, and never run it.
"""

from __future__ import annotations

import platform
import socket
from typing import Any

from config.jobs import shared_task


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


@shared_task(name="evaluation.tasks.gpu_run_benchmark", bind=True, acks_late=True)
def gpu_run_benchmark(self: Any, run_id: int) -> dict[str, Any]:
    """Execute one :class:`~evaluation.models.BenchmarkRun` (generation, fine-tuning, model metrics).

    Thin: the service does the work and stores everything on the row. Progress goes to the row and to
    the task state (``PROGRESS`` with stage/done/total). Safe to run twice: a done run is returned as it
    is, and an interrupted SFT run reuses the adapter its first attempt finished. Failures are stored on
    the run and not retried (they are bugs or bad input, not transient).
    """

    def notify(progress: dict[str, Any]) -> None:
        if self.request.id and not self.request.is_eager:
            self.update_state(state="PROGRESS", meta=progress)

    from evaluation.services.execution import execute_run  # the metrics' and models' libraries

    run = execute_run(run_id, notify=notify)
    return {"run": run.pk, "status": run.status, "metrics": run.metrics, "results_path": run.results_path}
