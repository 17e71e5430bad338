"""OpenAPI generation (drf-spectacular) adapted to nested Input/Output serializers."""

from drf_spectacular import openapi
from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme


class TokenScheme(KnoxTokenScheme):
    """The schema's "knoxApiToken" security scheme for config.api.tokens' subclass."""

    target_class = "config.api.tokens.TokenAuthentication"


class AutoSchema(openapi.AutoSchema):
    def get_serializer_name(self, serializer, direction):
        # Every view nests its own "OutputSerializer"; naming components after the
        # view too ("ProjectListApi.OutputSerializer" -> "ProjectListOutput") keeps
        # them apart in the schema.
        parts = type(serializer).__qualname__.split(".")
        return "".join(part.removesuffix("Api").removesuffix("Serializer") for part in parts)
