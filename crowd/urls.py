"""Routes of the crowd app (included at ``crowd/``): platform webhooks."""

from django.urls import path

from crowd import views

app_name = "crowd"

urlpatterns = [
    path("webhooks/prolific/", views.prolific_webhook, name="prolific-webhook"),
]
