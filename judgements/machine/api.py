"""The machine judges' API: a project's judges (list, create), one judge, and where its
key comes from. Analysts (and admins) only; a key entered here is write-only."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from judgements.api.access import IsAnalyst
from judgements.machine.forms import JUDGE_FIELDS
from judgements.machine.services import machine_judge_create, machine_judge_key_set
from judgements.models import MachineJudge, Project

KEY_HELP = "The API key itself: stored encrypted, never shown again (write-only)."


class JudgeSerializer(serializers.ModelSerializer):
    api_key = serializers.CharField(
        write_only=True, required=False, allow_blank=True, help_text=KEY_HELP
    )
    has_api_key = serializers.BooleanField(read_only=True)

    class Meta:
        model = MachineJudge
        fields = ["id", "kind", *JUDGE_FIELDS, "has_api_key", "key_problem", "created_at"]
        read_only_fields = ["kind", "key_problem", "created_at"]


class JudgeListApi(generics.ListCreateAPIView):
    """A project's machine judges; ``POST`` creates a language-model judge. Its key is
    either ``api_key`` (stored sealed) or ``api_key_env``, the name of a variable that
    starts with the operator's ``MACHINE_JUDGE_KEY_PREFIX``; the base URL must be one
    the outbound policy allows (``OUTBOUND_ALLOW`` for a local model server)."""

    permission_classes = [IsAnalyst]
    serializer_class = JudgeSerializer
    queryset = MachineJudge.objects.none()  # for the schema; get_queryset() is used

    def get_queryset(self):
        project = get_object_or_404(Project, slug=self.kwargs["slug"])
        return project.machine_judges.order_by("name")

    def perform_create(self, serializer):
        project = get_object_or_404(Project, slug=self.kwargs["slug"])
        serializer.instance = machine_judge_create(
            project=project, **dict(serializer.validated_data)
        )


class JudgeDetailApi(generics.RetrieveAPIView):
    permission_classes = [IsAnalyst]
    serializer_class = JudgeSerializer
    queryset = MachineJudge.objects.all()


class JudgeKeyApi(APIView):
    """Where the judge's key comes from from now on: ``api_key`` (stored sealed, replacing
    any), ``api_key_env`` (a prefixed variable), or neither (no key is sent)."""

    class InputSerializer(serializers.Serializer):
        api_key = serializers.CharField(required=False, default="", allow_blank=True)
        api_key_env = serializers.CharField(
            required=False, default="", allow_blank=True, max_length=100
        )

    permission_classes = [IsAnalyst]

    @extend_schema(request=InputSerializer, responses={200: JudgeSerializer})
    def put(self, request, pk):
        judge = get_object_or_404(MachineJudge, pk=pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        machine_judge_key_set(judge=judge, **data.validated_data)
        return Response(JudgeSerializer(judge).data)
