from django.contrib import admin

from searchlogs.models import SearchLogSettings

# One row of settings per project: "settings" is its own plural (Django would add an s).
# Set here rather than in the model's Meta, which would need a migration for a label.
SearchLogSettings._meta.verbose_name_plural = "search log settings"


@admin.register(SearchLogSettings)
class SearchLogSettingsAdmin(admin.ModelAdmin):
    list_display = ["project", "success_dwell"]
