"""The API's batches: list, one with progress and cost, estimate, create (a draft, or published at once
after its estimate), publish, pause and resume, through the New batch page's form and services.

Security behavior: as :mod:`api.views` (token or session with CSRF; ``view`` to read, ``launch`` to
estimate, create and publish, ``manage`` to pause and resume). Publishing at once needs the estimate of
exactly the values sent, as the New batch page's Publish button does (``console.launch_views``): the
client sends back the ``estimated`` digest ``estimate/`` gave, and any changed value means a 409 with the
new estimate, nothing created. Expert batches (built from a release, opened at once on the local crowd)
take the same path, as on the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import QueryDict
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError as ApiValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.hits import BuiltFrom, handler_for
from annotation.models import Batch, IllegalTransition
from annotation.platforms import Platform
from annotation.services.batches import BatchSpecError
from api import serializers as s
from api.views import ChoiceFilters, _choice_parameters, _refused
from console.batch_form import NewBatchForm
from console.launch_views import fingerprint
from console.progress import live_progress
from crowd.services.batch_status import change_status
from crowd.services.budget import spent_cents
from crowd.services.launching import (
    QualificationChoiceError,
    create_draft,
    dry_run,
    launch,
    qualification_options,
)
from crowd.services.lifecycle import LifecycleError, estimate_for
from evaluation.services.expert import create_expert_batch, sample_item_ids
from exports.release_files import ReleaseError
from exports.release_store import release_root


def _estimate_body(hits: int, estimate: Any, currency: str) -> dict[str, Any]:
    return {
        "hits": hits,
        "currency": currency,
        "assignments": estimate.assignments,
        "rewards_cents": estimate.rewards_cents,
        "bonuses_cents": estimate.bonuses_cents,
        "fees_cents": estimate.fees_cents,
        "total_cents": estimate.total_cents,
    }


FREE_FIELDS = ("rewards_cents", "bonuses_cents", "fees_cents", "total_cents")


@dataclass(frozen=True)
class Filled:
    """A batch body read through the New batch form: the form, the digest of its values (the page's
    ``fingerprint``), whether to publish at once, the digest the client confirmed, and if it is an
    expert batch (built from a release)."""

    form: NewBatchForm
    fingerprint: str
    publish: bool
    estimated: str
    expert: bool


BATCH_FILTERS = {
    "status": tuple(Batch.Status.values),
    "kind": tuple(Batch.Kind.values),
    "provider": tuple(Platform.values()),
}


@extend_schema_view(list=extend_schema(parameters=_choice_parameters(BATCH_FILTERS)))
class BatchViewSet(ChoiceFilters, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Batches: list, one with progress and cost, create (as the New batch page), publish, pause, resume."""

    queryset = Batch.objects.select_related("corpus").order_by("-created", "-pk")
    choice_filters = BATCH_FILTERS
    action_permissions = {
        "create": "launch",
        "estimate": "launch",
        "publish": "launch",
        "pause": "manage",
        "resume": "manage",
    }

    def get_serializer_class(self) -> type:
        if self.action in ("create", "estimate"):
            return s.BatchCreateSerializer
        return s.BatchDetailSerializer if self.action == "retrieve" else s.BatchSerializer

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        batch = self.get_object()
        return Response(s.BatchDetailSerializer(self._detail(batch)).data)

    @staticmethod
    def _detail(batch: Batch) -> Batch:
        """``batch`` with ``progress``, ``cost`` and ``estimate`` attached (the batch page's figures)."""
        live = live_progress(batch)
        batch.progress = {
            "places_total": live["places"]["total"],
            "states": {row["state"]: row["n"] for row in live["places"]["states"]},
            "hits_total": live["hits"]["total"],
            "hits_completed": live["hits"]["completed"],
        }
        batch.cost = spent_cents(batch)
        batch.estimate = _estimate_body(batch.hits.count(), estimate_for(batch), batch.currency)
        return batch

    def _form(self, request: Request) -> Filled:
        """The New batch form filled from the body; a bad body or a form error is a 400."""
        body = s.BatchCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = QueryDict(mutable=True)
        for key, value in body.form_data().items():
            data.setlist(key, [str(v) for v in value] if isinstance(value, list) else [str(value)])
        form = NewBatchForm(data)
        if not form.is_valid():
            raise ApiValidationError(form.errors.get_json_data())
        return Filled(
            form=form,
            fingerprint=fingerprint(data),
            publish=body.validated_data["publish"],
            estimated=body.validated_data.get("estimated", ""),
            expert=handler_for(form.cleaned_data["kind"]).built_from == BuiltFrom.RELEASE,
        )

    def _spec(self, form: NewBatchForm) -> Any:
        data = form.cleaned_data
        try:
            options = qualification_options(
                data["provider"],
                data["require_qualification"].pk if data.get("require_qualification") else None,
                [b.pk for b in data.get("exclude_batches") or []],
            )
        except QualificationChoiceError as exc:
            raise ApiValidationError({exc.field: [str(exc)]}) from exc
        return form.spec(options)

    def _estimate(self, filled: Filled) -> dict[str, Any]:
        """The New batch page's estimate of the filled form (expert batches: the sample, nothing paid)."""
        data = filled.form.cleaned_data
        try:
            if filled.expert:
                split = data.get("split") or "test"
                ids = sample_item_ids(release_root(data["release"]), split, data["sample"], 0)
                free = {"assignments": len(ids), **dict.fromkeys(FREE_FIELDS, 0)}
                note = (
                    f"An expert batch samples {len(ids)} question(s) of the {split} split of "
                    f"{data['release']} and opens at once on the local crowd; nothing is paid."
                )
                body = {"hits": len(ids), "currency": "USD", **free}
            else:
                hits, estimate, currency = dry_run(self._spec(filled.form))
                body, note = _estimate_body(hits, estimate, currency), ""
        except (BatchSpecError, LifecycleError, ReleaseError) as exc:
            raise _refused(exc) from exc
        return {**body, "estimated": filled.fingerprint, "note": note}

    @extend_schema(
        request=s.BatchCreateSerializer,
        responses={201: s.BatchDetailSerializer, 409: s.EstimateFirstSerializer},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Create a draft batch (its HITs and its estimate), or with ``publish`` publish it at once.

        Publishing at once needs the estimate first, as on the New batch page: ``estimated`` must be the
        digest ``estimate/`` gave for exactly these values. Without it, or with any value changed since, the
        answer is 409 with the estimate of the values sent (and its ``estimated``), and nothing is created.
        Expert batches have no draft (they open at once), so they always take this path.
        """
        filled = self._form(request)
        if filled.expert or filled.publish:
            if not filled.publish or filled.estimated != filled.fingerprint:
                detail = (
                    "Publishing needs the estimate of exactly these values first: check it, then send the "
                    'same body with "publish": true and its "estimated".'
                )
                body = {"detail": detail, "estimate": self._estimate(filled)}
                return Response(s.EstimateFirstSerializer(body).data, status=status.HTTP_409_CONFLICT)
        try:
            if filled.expert:
                batch = self._open_expert(filled, request.user)
            elif filled.publish:
                batch, _ = launch(self._spec(filled.form), created_by=request.user)
            else:
                batch, _ = create_draft(self._spec(filled.form), created_by=request.user)
        except (BatchSpecError, LifecycleError, ReleaseError) as exc:
            raise _refused(exc) from exc
        return Response(s.BatchDetailSerializer(self._detail(batch)).data, status=status.HTTP_201_CREATED)

    @staticmethod
    def _open_expert(filled: Filled, user: Any) -> Batch:
        """The New batch page's expert batch: a seeded sample of a release split, open on the local crowd."""
        data = filled.form.cleaned_data
        return create_expert_batch(
            data["release"],
            data["sample"],
            split=data.get("split") or "test",
            name=data.get("name") or "",
            time_limit_minutes=data["time_limit"],
            created_by=user,
        )

    @extend_schema(request=s.BatchCreateSerializer, responses={200: s.ConfirmableEstimateSerializer})
    @action(detail=False, methods=["post"])
    def estimate(self, request: Request) -> Response:
        """What a batch with these values would cost (the New batch page's estimate); creates nothing.
        Its ``estimated`` lets ``POST /batches/`` publish exactly these values at once."""
        return Response(s.ConfirmableEstimateSerializer(self._estimate(self._form(request))).data)

    def _change(self, action_name: str) -> Response:
        batch = self.get_object()
        try:
            change_status(batch, action_name)
        except (IllegalTransition, LifecycleError) as exc:
            raise _refused(exc) from exc
        batch.refresh_from_db()
        return Response(s.BatchDetailSerializer(self._detail(batch)).data)

    @extend_schema(request=None, responses={200: s.BatchDetailSerializer})
    @action(detail=True, methods=["post"])
    def publish(self, request: Request, pk: str) -> Response:
        """Publish a draft on its platform (or resume a paused batch's listing)."""
        return self._change("publish")

    @extend_schema(request=None, responses={200: s.BatchDetailSerializer})
    @action(detail=True, methods=["post"])
    def pause(self, request: Request, pk: str) -> Response:
        """Pause a published batch on its platform: no new claims."""
        return self._change("pause")

    @extend_schema(request=None, responses={200: s.BatchDetailSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str) -> Response:
        """Resume a paused batch."""
        return self._change("resume")
