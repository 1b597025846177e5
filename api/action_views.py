"""The API's workers (block, unblock, message) and webhooks (endpoints, deliveries, replay, ping).

Security behavior: as :mod:`api.views` (token or session with CSRF; reads need ``view``); block and
unblock need ``block``, a message ``notify``, any change to webhooks ``manage``. A worker is named by
the API's id and shown by pseudonym; their platform id is never returned. An endpoint's secret is
returned only to accounts that may ``manage``. A webhook URL is checked as on the console page (no
private addresses unless ``WEBHOOK_ALLOW_PRIVATE``).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError as ApiValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.models import Batch
from annotation.permissions import can
from api import action_serializers as s
from api.serializers import OutcomeSerializer
from crowd.models import Worker
from crowd.services.review import ReviewError, block_worker, notify_batch_workers, unblock_worker
from webhooks.events import queue_deliveries, send_ping
from webhooks.models import Delivery, Endpoint


class WorkerViewSet(viewsets.ReadOnlyModelViewSet):
    """Workers by pseudonym (``?blocked=true|false``); block, unblock, message on their platform."""

    serializer_class = s.WorkerSerializer
    action_permissions = {"block": "block", "unblock": "block", "message": "notify"}

    def get_queryset(self) -> QuerySet[Worker]:
        rows = Worker.objects.order_by("pk")
        blocked = self.request.query_params.get("blocked", "")
        if blocked:
            if blocked not in ("true", "false"):
                raise ApiValidationError({"blocked": ["true or false."]})
            rows = rows.filter(blocked=blocked == "true")
        return rows

    @extend_schema(parameters=[OpenApiParameter("blocked", bool)])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    def _outcome(self, worker: Worker, detail: str) -> Response:
        state = "blocked" if worker.blocked else "active"
        return Response(OutcomeSerializer({"id": worker.pk, "status": state, "detail": detail}).data)

    @extend_schema(request=s.BlockSerializer, responses={200: OutcomeSerializer})
    @action(detail=True, methods=["post"])
    def block(self, request: Request, pk: str) -> Response:
        """Block a worker here and on their platform (a reason is required and kept)."""
        worker = self.get_object()
        body = s.BlockSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        reason = body.validated_data["reason"].strip()
        if not reason:
            raise ApiValidationError({"reason": ["A block needs a reason (it is kept with the worker)."]})
        try:
            block_worker(worker, reason)
        except ReviewError as exc:
            raise ApiValidationError({"detail": str(exc)}) from exc
        return self._outcome(worker, f"Worker {worker.pseudonym} blocked.")

    @extend_schema(request=s.BlockSerializer, responses={200: OutcomeSerializer})
    @action(detail=True, methods=["post"])
    def unblock(self, request: Request, pk: str) -> Response:
        """Lift a worker's block here and on their platform."""
        worker = self.get_object()
        body = s.BlockSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            unblock_worker(worker, body.validated_data["reason"])
        except ReviewError as exc:
            raise ApiValidationError({"detail": str(exc)}) from exc
        return self._outcome(worker, f"Worker {worker.pseudonym} unblocked.")

    @extend_schema(request=s.MessageSerializer, responses={200: OutcomeSerializer})
    @action(detail=True, methods=["post"])
    def message(self, request: Request, pk: str) -> Response:
        """Message a worker on the platform of a batch they worked on (``batch``)."""
        worker = self.get_object()
        body = s.MessageSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        batch = Batch.objects.filter(pk=data["batch"], hits__assignments__worker=worker).distinct().first()
        if batch is None:
            raise ApiValidationError(
                {"batch": [f"Worker {worker.pseudonym} did no work in Batch({data['batch']})."]}
            )
        try:
            notify_batch_workers(batch, data["subject"], data["message"], workers=[worker])
        except ReviewError as exc:
            raise ApiValidationError({"detail": str(exc)}) from exc
        return self._outcome(worker, f"Message sent to {worker.pseudonym}.")


class EndpointViewSet(viewsets.ModelViewSet):
    """Webhook endpoints: register, change, delete; their deliveries; send a test event."""

    serializer_class = s.EndpointSerializer
    queryset = Endpoint.objects.order_by("pk")
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    action_permissions = {
        "create": "manage",
        "partial_update": "manage",
        "destroy": "manage",
        "ping": "manage",
        "rotate": "manage",
    }

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        context["show_secret"] = can(self.request.user, "manage")
        return context

    def perform_create(self, serializer: s.EndpointSerializer) -> None:  # type: ignore[override]
        serializer.save(created_by=self.request.user)

    @extend_schema(
        parameters=[OpenApiParameter("status", str, enum=list(Delivery.Status.values))],
        responses={200: s.DeliverySerializer(many=True)},
    )
    @action(detail=True, methods=["get"])
    def deliveries(self, request: Request, pk: str) -> Response:
        """The endpoint's delivery log, newest first (``?status=`` filters)."""
        endpoint = self.get_object()
        rows = endpoint.deliveries.select_related("event").prefetch_related("attempt_log").order_by("-pk")
        wanted = request.query_params.get("status", "")
        if wanted:
            if wanted not in Delivery.Status.values:
                raise ApiValidationError({"status": [f"One of {', '.join(Delivery.Status.values)}."]})
            rows = rows.filter(status=wanted)
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(s.DeliverySerializer(page, many=True).data)

    @extend_schema(request=None, responses={202: s.DeliverySerializer})
    @action(detail=True, methods=["post"])
    def ping(self, request: Request, pk: str) -> Response:
        """Queue a ``ping`` event to this endpoint."""
        delivery = send_ping(self.get_object())
        return Response(s.DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=s.RotateSerializer, responses={200: s.EndpointSerializer})
    @action(detail=True, methods=["post"])
    def rotate(self, request: Request, pk: str) -> Response:
        """Give the endpoint a new secret; the old one keeps signing (a second ``v1``) for
        ``overlap_seconds`` (default ``WEBHOOK_SECRET_OVERLAP_SECONDS``; 0 ends it at once)."""
        endpoint = self.get_object()
        body = s.RotateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        endpoint.rotate_secret(overlap_seconds=body.validated_data.get("overlap_seconds"))
        return Response(self.get_serializer(endpoint).data)


class DeliveryViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """One delivery with its attempts; ``replay`` sends it again (same event id, fresh attempts)."""

    serializer_class = s.DeliverySerializer
    queryset = Delivery.objects.select_related("event").prefetch_related("attempt_log")
    action_permissions = {"replay": "manage"}

    @extend_schema(request=None, responses={202: s.DeliverySerializer})
    @action(detail=True, methods=["post"])
    def replay(self, request: Request, pk: str) -> Response:
        """Send the delivery again, whatever its status."""
        delivery = self.get_object()
        delivery.replay()
        queue_deliveries([delivery.pk])
        return Response(s.DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)
