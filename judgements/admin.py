from django.contrib import admin

from judgements.models import Document, Hit, Judgement, Project, Query, ResultList


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "judges_per_pair", "pool_depth", "metric_k", "consensus"]
    prepopulated_fields = {"slug": ["name"]}
    search_fields = ["name", "slug"]


@admin.register(Query)
class QueryAdmin(admin.ModelAdmin):
    list_display = ["text", "project"]
    list_filter = ["project"]
    search_fields = ["text", "description"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["external_id", "title", "project"]
    list_filter = ["project"]
    search_fields = ["external_id", "title"]


@admin.register(ResultList)
class ResultListAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "engine", "captured_at", "created_by"]
    list_filter = ["project"]
    search_fields = ["name", "engine"]
    raw_id_fields = ["created_by"]


@admin.register(Hit)
class HitAdmin(admin.ModelAdmin):
    list_display = ["result_list", "query", "rank", "document", "score"]
    list_filter = ["result_list__project", "result_list"]
    list_select_related = ["result_list", "query", "document"]
    raw_id_fields = ["result_list", "query", "document"]
    search_fields = ["query__text", "document__external_id"]


@admin.register(Judgement)
class JudgementAdmin(admin.ModelAdmin):
    """Judgements are an append-only log: the admin shows them and never edits them."""

    list_display = ["created_at", "rater", "query", "document", "kind", "grade", "source"]
    list_filter = ["kind", "source", "query__project"]
    list_select_related = ["rater", "query", "document"]
    search_fields = ["query__text", "document__external_id", "rater__username"]
    date_hierarchy = "created_at"
    show_full_result_count = False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
