app_name = "metrics"
urlpatterns: list = []
