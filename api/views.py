"""The REST API's endpoints: corpora, batches, assignments and jobs, over the console's services.

Every action goes through the service the console page calls (``NewBatchForm``,
``crowd.services.launching`` and ``crowd.services.batch_status`` for batches, ``crowd.services.review``
for decisions and bonuses), so the API holds no rule of its own: what the page refuses, the API refuses
with 400 and the service's words.

Security behavior: token (``Authorization: Token ...``) or session authentication (session requests that
change anything need Django's CSRF token, as DRF's ``SessionAuthentication`` enforces); reads need the
researcher ``view`` permission and each action its own (``launch``, ``manage``, ``review``, ``pay``) through
:class:`api.permissions.ResearcherAction`; anonymous requests get 401 or 403. Requests are throttled per
user (``REST_FRAMEWORK['DEFAULT_THROTTLE_RATES']``). Malformed bodies and query values give 400, unknown
objects 404, never a 5xx.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet
from django.http import QueryDict
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError as ApiValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.models import Assignment, Corpus, IllegalTransition, Job
from api import action_serializers as a
from api import serializers as s
from console.review_views import outcome, plain
from crowd.services.review import ReviewError, approve_assignment, bonus, reject_assignment
from evaluation.forms import StartBenchmarkForm
from evaluation.models import BenchmarkRun
from evaluation.services.items import BenchmarkInputError
from exports.forms import ReleaseForm
from exports.models import Release
from exports.release_files import ReleaseError, read_manifest
from exports.release_store import release_root
from exports.services.exporting import ExportRequest, ExportRequestError, start_export


class ChoiceFilters:
    """Filter a list by exact values of choice fields (``?status=published``); an unknown value is a 400.

    ``choice_filters`` maps a query parameter to the model field's choices.
    """

    choice_filters: dict[str, tuple[str, ...]] = {}

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        query = self.request.query_params  # type: ignore[attr-defined]
        for name, values in self.choice_filters.items():
            wanted = query.get(name, "")
            if wanted:
                if wanted not in values:
                    raise ApiValidationError({name: [f"One of {', '.join(values)}."]})
                queryset = queryset.filter(**{name: wanted})
        return queryset


def _choice_parameters(filters: dict[str, tuple[str, ...]]) -> list[OpenApiParameter]:
    return [OpenApiParameter(name, str, enum=list(values)) for name, values in filters.items()]


def _refused(exc: Exception) -> ApiValidationError:
    """A service's refusal as a 400 with its words."""
    text = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
    return ApiValidationError({"detail": plain(text)})


@extend_schema_view(list=extend_schema(parameters=_choice_parameters({"kind": tuple(Corpus.Kind.values)})))
class CorpusViewSet(ChoiceFilters, viewsets.ReadOnlyModelViewSet):
    """Corpora with their document and passage counts."""

    serializer_class = s.CorpusSerializer
    choice_filters = {"kind": tuple(Corpus.Kind.values)}
    queryset = Corpus.objects.annotate(
        n_documents=Count("documents", distinct=True), n_passages=Count("passages", distinct=True)
    ).order_by("name")

    @extend_schema(responses={200: a.CorpusStatusSerializer})
    @action(detail=True, methods=["get"])
    def status(self, request: Request, pk: str) -> Response:
        """What the imports and filter runs left in the corpus (documents, passages by filter status, QA
        pairs by split and type) and the jobs that ran on it (filtering), newest first.

        Importers run as commands in one transaction (``import_syllabusqa`` and the like): a corpus is
        listed once its import committed, so these counts are its import's outcome.
        """
        corpus = self.get_object()

        def by(rows: QuerySet[Any], field: str) -> dict[str, int]:
            counted = rows.order_by().values(field).annotate(n=Count("id")).order_by(field)
            return {str(row[field] or ""): row["n"] for row in counted}

        jobs = Job.objects.filter(params__corpus=corpus.name).order_by("-pk")[:20]
        body = {
            "id": corpus.pk,
            "name": corpus.name,
            "source": corpus.source,
            "created": corpus.created,
            "documents": corpus.documents.count(),
            "documents_by_split": by(corpus.documents.all(), "original_split"),
            "passages": corpus.passages.count(),
            "passages_by_filter_status": by(corpus.passages.all(), "filter_status"),
            "qa_pairs": corpus.qa_pairs.count(),
            "qa_pairs_by_split": by(corpus.qa_pairs.all(), "original_split"),
            "qa_pairs_by_type": by(corpus.qa_pairs.all(), "question_type"),
            "jobs": [
                {
                    "id": j.pk,
                    "kind": j.kind,
                    "status": j.status,
                    "created": j.created.isoformat(),
                    "error": j.error,
                }
                for j in jobs
            ],
        }
        return Response(a.CorpusStatusSerializer(body).data)


class AssignmentViewSet(viewsets.ReadOnlyModelViewSet):
    """Assignments, filtered by ``batch``, ``status`` and ``worker`` (pseudonym); approve, reject, bonus."""

    serializer_class = s.AssignmentSerializer
    action_permissions = {"approve": "review", "reject": "review", "bonus": "pay"}

    def get_queryset(self) -> QuerySet[Assignment]:
        rows = Assignment.objects.select_related("hit", "worker").order_by("-pk")
        query = self.request.query_params
        batch = query.get("batch", "")
        if batch:
            if not batch.isdigit() or len(batch) > 18:
                raise ApiValidationError({"batch": ["A batch id."]})
            rows = rows.filter(hit__batch_id=int(batch))
        state = query.get("status", "")
        if state:
            if state not in Assignment.Status.values:
                raise ApiValidationError({"status": [f"One of {', '.join(Assignment.Status.values)}."]})
            rows = rows.filter(status=state)
        worker = query.get("worker", "")
        if worker:
            rows = rows.filter(worker__pseudonym=worker[:200])
        return rows

    @extend_schema(
        parameters=[
            OpenApiParameter("batch", int, description="Only this batch's assignments."),
            OpenApiParameter("status", str, enum=list(Assignment.Status.values)),
            OpenApiParameter("worker", str, description="A worker's pseudonym."),
        ]
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    def _done(self, assignment: Assignment, detail: str) -> Response:
        assignment.refresh_from_db()
        body = {"id": assignment.pk, "status": assignment.status, "detail": detail}
        return Response(s.OutcomeSerializer(body).data)

    @extend_schema(request=s.ApproveSerializer, responses={200: s.OutcomeSerializer})
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        """Approve a submission: stored here, sent to its platform, the reward paid through the ledger."""
        assignment = self.get_object()
        body = s.ApproveSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            approve_assignment(
                assignment, body.validated_data["feedback"], body.validated_data["confirm_no_work"]
            )
        except (IllegalTransition, ValidationError, ReviewError) as exc:
            raise _refused(exc) from exc
        return self._done(assignment, outcome(assignment))

    @extend_schema(request=s.RejectSerializer, responses={200: s.OutcomeSerializer})
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        """Reject a submission with a reason (the platform's rules on reasons apply)."""
        assignment = self.get_object()
        body = s.RejectSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            reject_assignment(assignment, body.validated_data["reason"], body.validated_data["category"])
        except (IllegalTransition, ValidationError, ReviewError) as exc:
            raise _refused(exc) from exc
        return self._done(assignment, outcome(assignment))

    @extend_schema(request=s.BonusSerializer, responses={200: s.OutcomeSerializer})
    @action(detail=True, methods=["post"])
    def bonus(self, request: Request, pk: str) -> Response:
        """Pay a bonus through the payment ledger: once per reason, so a retry pays nothing more."""
        assignment = self.get_object()
        body = s.BonusSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            result = bonus(assignment, data["cents"], data["reason"], confirm_no_work=data["confirm_no_work"])
        except (ValidationError, ReviewError) as exc:
            raise _refused(exc) from exc
        return self._done(assignment, f"bonus {result.status.value.replace('_', ' ')}")


@extend_schema_view(list=extend_schema(parameters=_choice_parameters({"status": tuple(Job.Status.values)})))
class JobViewSet(ChoiceFilters, viewsets.ReadOnlyModelViewSet):
    """Long-running jobs (imports, QC, exports, benchmarks): status, progress, result."""

    serializer_class = s.JobSerializer
    queryset = Job.objects.order_by("-pk")
    choice_filters = {"status": tuple(Job.Status.values)}


def _as_form(data: dict[str, Any]) -> QueryDict:
    """A JSON body as a form's POST data (lists stay lists, ``None`` is left out)."""
    form_data = QueryDict(mutable=True)
    for key, value in data.items():
        if value is None:
            continue
        form_data.setlist(key, [str(v) for v in value] if isinstance(value, list) else [str(value)])
    return form_data


class ReleaseViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Registered releases and the files their manifests list; ``POST`` builds one as a job."""

    serializer_class = s.ReleaseSerializer
    queryset = Release.objects.order_by("name", "-created", "-pk")
    action_permissions = {"create": "export"}

    @extend_schema(request=a.ReleaseCreateSerializer, responses={202: s.JobSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Queue the export job of a new release (the New release page's checks); follow it at ``jobs/``.

        A refusal found while building (privacy, duplicates) ends the job failed with ``result.refused``;
        send the same body again with ``allow`` naming those codes to build it anyway.
        """
        body = a.ReleaseCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        form = ReleaseForm(_as_form(body.form_data()))
        if not form.is_valid() or form.export_request is None:
            raise ApiValidationError(form.errors.get_json_data())
        export = form.export_request
        allow = tuple(body.validated_data.get("allow") or ())
        if allow:
            export = ExportRequest.from_params({**export.to_params(), "allow": list(allow)})
        try:
            job = start_export(export)
        except ExportRequestError as exc:
            raise _refused(exc) from exc
        return Response(s.JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: s.ReleaseFileSerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=None)
    def files(self, request: Request, pk: str) -> Response:
        """The manifest's files (path, sha256, rows); 409 when the release directory has no valid manifest."""
        release = self.get_object()
        try:
            manifest = read_manifest(release_root(release))
        except ReleaseError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        rows = [
            {"path": str(e.get("path", "")), "sha256": str(e.get("sha256", "")), "rows": e.get("rows")}
            for e in manifest.get("files") or []
            if isinstance(e, dict)
        ]
        return Response(s.ReleaseFileSerializer(rows, many=True).data)


BENCHMARK_FILTERS = {"status": tuple(BenchmarkRun.Status.values)}


@extend_schema_view(list=extend_schema(parameters=_choice_parameters(BENCHMARK_FILTERS)))
class BenchmarkViewSet(ChoiceFilters, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Benchmark runs with their overall metrics; one run with its metrics by stratum and timings;
    ``POST`` starts one (on the ``gpu`` queue)."""

    queryset = BenchmarkRun.objects.order_by("-pk")
    choice_filters = BENCHMARK_FILTERS
    action_permissions = {"create": "benchmark"}

    @extend_schema(request=a.BenchmarkStartSerializer, responses={202: s.BenchmarkRunSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Start a run on a release as the leaderboard page does; an identical run is reused."""
        from evaluation.services.runs import queue_run  # loads the ML stack: only this action needs it

        body = a.BenchmarkStartSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        release = Release.objects.filter(pk=data.pop("release")).first()
        if release is None:
            raise ApiValidationError({"release": ["No such release."]})
        form = StartBenchmarkForm(release, _as_form(data))
        if not form.is_valid():
            raise ApiValidationError(form.errors.get_json_data())
        try:
            run, _ = queue_run(release, form.cleaned_data)
        except (BenchmarkInputError, ReleaseError) as exc:
            raise _refused(exc) from exc
        return Response(s.BenchmarkRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    def get_serializer_class(self) -> type:
        return s.BenchmarkResultSerializer if self.action == "retrieve" else s.BenchmarkRunSerializer
