"""Django admin for the annotation domain: every model is browsable; bulky text is read-only."""

from __future__ import annotations

from django.contrib import admin

from annotation.models import (
    HIT,
    AnswerSpan,
    Assignment,
    Batch,
    Corpus,
    Distractor,
    Document,
    ExpertAnswer,
    Job,
    Passage,
    QAPair,
    ReasoningStep,
    Validation,
)


@admin.register(Corpus)
class CorpusAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "license", "created")
    search_fields = ("name", "description")


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("name", "corpus", "original_split", "num_pages", "updated")
    list_filter = ("corpus", "original_split")
    search_fields = ("name", "title")
    readonly_fields = ("text_sha256", "created", "updated")


@admin.register(Passage)
class PassageAdmin(admin.ModelAdmin):
    list_display = ("id", "corpus", "document", "position", "filter_status", "short_text")
    list_filter = ("corpus", "filter_status")
    search_fields = ("text",)
    raw_id_fields = ("document", "used_by")
    readonly_fields = ("text_sha256",)

    @admin.display(description="text")
    def short_text(self, obj: Passage) -> str:
        return obj.text[:100]


class HITInline(admin.TabularInline):
    model = HIT
    extra = 0
    fields = ("position", "document", "status", "max_assignments", "platform_ref")
    raw_id_fields = ("document",)
    show_change_link = True


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "provider", "corpus", "status", "reward_cents", "created")
    list_filter = ("kind", "provider", "status")
    search_fields = ("name",)
    inlines = [HITInline]


class AssignmentInline(admin.TabularInline):
    model = Assignment
    extra = 0
    fields = ("worker", "status", "accepted_at", "submitted_at", "time_on_task_seconds")
    readonly_fields = fields
    show_change_link = True


@admin.register(HIT)
class HITAdmin(admin.ModelAdmin):
    list_display = ("id", "batch", "position", "document", "status")
    list_filter = ("status", "batch__kind")
    raw_id_fields = ("document", "qa_pair", "passages")
    inlines = [AssignmentInline]


class QAPairInline(admin.StackedInline):
    model = QAPair
    extra = 0
    fields = ("position", "question_type", "question", "answer", "status", "qc_flags", "evidence")
    readonly_fields = ("evidence",)
    show_change_link = True

    @admin.display(description="spans / steps")
    def evidence(self, obj: QAPair) -> str:
        """Each span with its offsets and page, or each reasoning step, one per line."""
        lines = [f"[{s.start}:{s.end}] p.{s.page}: {s.text}" for s in obj.spans.all()]
        lines += [f"step {s.position}: {s.text}" for s in obj.steps.all()]
        return "\n".join(lines) or "-"


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("id", "hit", "worker", "status", "accepted_at", "submitted_at", "time_on_task_seconds")
    list_filter = ("status", "hit__batch")
    raw_id_fields = ("hit", "worker")
    readonly_fields = ("draft_saved_at", "submitted_at", "time_on_task_seconds")
    inlines = [QAPairInline]


class AnswerSpanInline(admin.TabularInline):
    model = AnswerSpan
    extra = 0


class ReasoningStepInline(admin.TabularInline):
    model = ReasoningStep
    extra = 0


class DistractorInline(admin.TabularInline):
    model = Distractor
    extra = 0
    fields = ("text", "origin", "position", "model_score", "model_rank", "selected")


@admin.register(QAPair)
class QAPairAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "corpus",
        "question_type",
        "answer_source",
        "short_question",
        "original_split",
        "status",
    )
    list_filter = ("corpus", "question_type", "original_split", "status")
    search_fields = ("external_id", "question", "answer")
    raw_id_fields = ("document", "passage", "assignment")
    readonly_fields = ("answer_source",)
    inlines = [AnswerSpanInline, ReasoningStepInline, DistractorInline]

    @admin.display(description="question")
    def short_question(self, obj: QAPair) -> str:
        return obj.question[:90]


@admin.register(Validation)
class ValidationAdmin(admin.ModelAdmin):
    list_display = ("id", "qa_pair", "assignment", "flags", "created")
    raw_id_fields = ("qa_pair", "assignment")


@admin.register(ExpertAnswer)
class ExpertAnswerAdmin(admin.ModelAdmin):
    list_display = ("id", "qa_pair", "question_type", "assignment", "created")
    list_filter = ("question_type",)
    raw_id_fields = ("qa_pair", "assignment")


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "status", "progress_done", "progress_total", "queue", "created")
    list_filter = ("status", "kind", "queue")
    readonly_fields = ("created", "started_at", "finished_at")
