"""Researcher-facing pages of the annotation app."""

from django.urls import path

from console import (
    account_views,
    bonus_views,
    health_views,
    launch_views,
    message_views,
    quick_export,
    review_views,
    stream_views,
    upload_views,
    verdict_views,
    views,
    webhook_views,
)

app_name = "annotation"
urlpatterns = [
    path("", views.HomeView.as_view(), name="home"),
    path("health/", views.health, name="health"),
    path("health/ready/", health_views.ready, name="ready"),
    path("corpora/upload/", upload_views.upload, name="upload"),
    path("corpora/upload/jobs/<int:pk>/", upload_views.UploadJobView.as_view(), name="upload-job"),
    path("corpora/<slug:name>/", views.CorpusDetailView.as_view(), name="corpus"),
    path("documents/<int:pk>/", views.DocumentDetailView.as_view(), name="document"),
    path("documents/<int:pk>/pdf/", views.document_pdf, name="document-pdf"),
    path("batches/new/", launch_views.new_batch, name="batch-new"),
    path("batches/<int:pk>/", views.BatchDetailView.as_view(), name="batch"),
    path("batches/<int:pk>/progress.json", views.batch_progress, name="batch-progress"),
    path("batches/<int:pk>/submissions.<str:fmt>", quick_export.batch_export, name="batch-export"),
    path("batches/<int:pk>/invites/", review_views.batch_invites, name="batch-invites"),
    path("batches/<int:pk>/status/", review_views.batch_status, name="batch-status"),
    path("batches/<int:pk>/message/", message_views.batch_message, name="batch-message"),
    path("batches/<int:pk>/bonuses/", bonus_views.batch_bonuses, name="batch-bonuses"),
    path("batches/<int:pk>/bonuses/top/", bonus_views.batch_bonus_top, name="batch-bonus-top"),
    path(
        "batches/<int:pk>/validate-verdicts/", verdict_views.validate_verdicts, name="batch-validate-verdicts"
    ),
    path("batches/<int:pk>/by-skill/", review_views.batch_by_skill, name="batch-by-skill"),
    path("assignments/<int:pk>/", review_views.AssignmentDetailView.as_view(), name="assignment"),
    path("assignments/<int:pk>/review/", review_views.review_assignment, name="assignment-review"),
    path("assignments/<int:pk>/bonus/", review_views.bonus_assignment, name="assignment-bonus"),
    path("workers/<int:pk>/block/", review_views.worker_block, name="worker-block"),
    path("review/", review_views.ReviewQueueView.as_view(), name="review-queue"),
    path("review/stream/", stream_views.ReviewStreamView.as_view(), name="review-stream"),
    path("review/compare/<int:pk>/", stream_views.HitCompareView.as_view(), name="review-compare"),
    path("review/decide/", review_views.review_queue_decide, name="review-decide"),
    path("jobs/<int:pk>/", views.JobDetailView.as_view(), name="job"),
    path("accounts/manage/", account_views.account_list, name="accounts"),
    path("accounts/manage/<int:pk>/", account_views.account_change, name="account-change"),
    path("webhooks/", webhook_views.endpoint_list, name="webhooks"),
    path("webhooks/<int:pk>/", webhook_views.endpoint_detail, name="webhook"),
    path("webhooks/<int:pk>/action/", webhook_views.endpoint_action, name="webhook-action"),
    path("webhooks/deliveries/<int:pk>/replay/", webhook_views.delivery_replay, name="webhook-replay"),
]
