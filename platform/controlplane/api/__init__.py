"""The REST API's root: one router for every app's read endpoints, plus the OpenAPI schema and docs."""
