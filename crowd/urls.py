"""Routes of the crowd app (included at ``crowd/``): platform webhooks, payment settling."""

from django.urls import path

from crowd import views

app_name = "crowd"

urlpatterns = [
    path("webhooks/<str:platform>/", views.platform_webhook, name="platform-webhook"),
    path("payments/<int:pk>/resolve/", views.payment_resolve, name="payment-resolve"),
]
