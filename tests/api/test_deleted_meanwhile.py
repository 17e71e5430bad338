"""A result list or project deleted while one of its metrics endpoints reads it answers
404 (or the body of the moment it was read), never a 500 (issue 36, point 5).

The race is made deterministic with a hook: the view's own selector runs for real, then
the deletion a deletion job would make (``bulk.*_delete_fast``, set-based SQL), then the
view reads on. Before the fix the query names read after it were missing (``KeyError``).
"""

import pytest

from judgements import bulk
from metrics.api import views
from metrics.api.common import DELETED_MEANWHILE


def deleting_after(monkeypatch, name: str, delete) -> None:
    """Make ``views.<name>`` run for real, then ``delete()``, then answer."""
    real = getattr(views, name)

    def hooked(*args, **kwargs):
        found = real(*args, **kwargs)
        delete()
        return found

    monkeypatch.setattr(views, name, hooked)


@pytest.mark.parametrize(
    ("name", "path"),
    [("unjudged_work", "unjudged/?k=3"), ("result_list_metrics", "metrics/")],
)
def test_a_project_deleted_during_the_read_is_a_404(charlie, shop, monkeypatch, name, path):
    prod = shop.result_lists.get(name="prod")
    deleting_after(monkeypatch, name, lambda: bulk.project_delete_fast(shop.slug))

    response = charlie.get(f"/api/result-lists/{prod.pk}/{path}")

    assert response.status_code == 404, response.content
    assert DELETED_MEANWHILE in str(response.json()), response.json()


@pytest.mark.parametrize(
    ("name", "path"),
    [("unjudged_work", "unjudged/?k=3"), ("result_list_metrics", "metrics/")],
)
def test_a_list_deleted_during_the_read_answers_what_was_read(
    charlie, shop, monkeypatch, name, path
):
    prod = shop.result_lists.get(name="prod")
    before = charlie.get(f"/api/result-lists/{prod.pk}/{path}").json()
    deleting_after(monkeypatch, name, lambda: bulk.result_list_delete_fast(prod.pk))

    response = charlie.get(f"/api/result-lists/{prod.pk}/{path}")

    # Its queries are the project's and stay: the body is the one read, whole.
    assert response.status_code == 200, response.content
    assert response.json()["results"] == before["results"]
    assert charlie.get(f"/api/result-lists/{prod.pk}/{path}").status_code == 404


def test_a_compared_list_deleted_after_the_form_found_it_is_a_404(charlie, shop, monkeypatch):
    first, second = shop.result_lists.order_by("captured_at")
    deleting_after(monkeypatch, "valid", lambda: bulk.result_list_delete_fast(second.pk))

    response = charlie.get(f"/api/projects/{shop.slug}/compare/?a={first.pk}&b={second.pk}")

    assert response.status_code == 404, response.content
    assert DELETED_MEANWHILE in str(response.json()), response.json()


def test_the_compared_project_deleted_during_the_read_is_a_404(charlie, shop, monkeypatch):
    first, second = shop.result_lists.order_by("captured_at")
    real = views.dashboards.comparison

    def hooked(*args, **kwargs):
        found = real(*args, **kwargs)
        bulk.project_delete_fast(shop.slug)
        return found

    monkeypatch.setattr(views.dashboards, "comparison", hooked)

    response = charlie.get(f"/api/projects/{shop.slug}/compare/?a={first.pk}&b={second.pk}")

    assert response.status_code == 404, response.content
