"""The admin names the search log settings as one would say them (issue 42, point 7)."""


def test_the_admin_says_search_log_settings(admin_client):
    index = admin_client.get("/admin/").content.decode()
    changelist = admin_client.get("/admin/searchlogs/searchlogsettings/").content.decode()

    assert "Search log settings<" in index and "settingss" not in index
    assert "settingss" not in changelist
