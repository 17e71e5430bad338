from django.apps import AppConfig


class SearchlogsConfig(AppConfig):
    name = "searchlogs"
    verbose_name = "Search logs"
