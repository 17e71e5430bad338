from django.core.management.base import BaseCommand, CommandError

from judgements import exporters
from judgements.management.commands.export_judgements import write
from judgements.models import ResultList


class Command(BaseCommand):
    help = "Stream a result list as a TREC run file (qid Q0 docid rank score tag)."

    def add_arguments(self, parser):
        parser.add_argument("result_list", type=int, help="result list id")
        parser.add_argument("--output", "-o", help="default: standard output")

    def handle(self, *args, **options):
        try:
            result_list = ResultList.objects.select_related("project").get(
                pk=options["result_list"]
            )
        except ResultList.DoesNotExist:
            raise CommandError(f"No result list has the id {options['result_list']}.") from None
        write(
            exporters.result_list_export(result_list=result_list), options["output"], self.stderr
        )
