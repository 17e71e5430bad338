from django.apps import AppConfig
from django.conf import settings

from config.memory import keep_freed_memory


class MetricsConfig(AppConfig):
    name = "metrics"
    verbose_name = "Metrics"

    def ready(self):
        # Each recompute allocates and frees megabytes of arrays (config/memory.py).
        keep_freed_memory(settings.FREED_MEMORY_KEPT)
