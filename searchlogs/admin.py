from django.contrib import admin

from searchlogs.models import SearchLogSettings


@admin.register(SearchLogSettings)
class SearchLogSettingsAdmin(admin.ModelAdmin):
    list_display = ["project", "success_dwell"]
