"""The API's project-wide infrastructure, shared by every app's endpoints: error bodies
(``errors``), rate limits (``throttles``), the OpenAPI schema class (``schema``) and
personal API tokens (``tokens``). Each app's endpoints live in the app."""
