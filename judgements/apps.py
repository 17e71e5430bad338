from django.apps import AppConfig
from django.db.models.signals import post_migrate


def ensure_role_groups(sender, using="default", **kwargs) -> None:
    from django.contrib.auth.models import Group

    from judgements.roles import Role

    for role in Role:
        Group.objects.using(using).get_or_create(name=role.value)


class JudgementsConfig(AppConfig):
    name = "judgements"
    verbose_name = "Judgements"

    def ready(self) -> None:
        # Migration 0002 creates the role groups; `manage.py flush` (and the test
        # runner's flush between transactional tests) empties them again and then
        # emits post_migrate, as Django relies on for permissions, so recreate them here.
        post_migrate.connect(ensure_role_groups, sender=self)
