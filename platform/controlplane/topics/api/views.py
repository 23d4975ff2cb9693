import base64
import binascii

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from controlplane.access import actions, checks
from controlplane.access.rest import ActionViewMixin, actor_of
from controlplane.audit.models import Source
from controlplane.core.errors import KafkaApiError
from controlplane.core.filters import FilterBackend
from controlplane.core.serializers import ErrorSerializer, one_line

from .. import message_browser, services
from ..describe import config_entries, partition_rows
from ..filtersets import PartitionFilterSet, TopicFilterSet
from ..listing import ORDERINGS, SortedTopics, topic_summaries
from ..message_format import export_csv, export_jsonl, message_row
from ..models import Partition
from .serializers import (
    CreatePartitionsSerializer,
    MessagePageSerializer,
    PartitionSerializer,
    ProducedSerializer,
    ProduceSerializer,
    TopicConfigsPatchSerializer,
    TopicCreateSerializer,
    TopicDetailSerializer,
    TopicSerializer,
)

_NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, description="the topic's name")
_NOT_FOUND = OpenApiResponse(ErrorSerializer, description="no such topic (UNKNOWN_TOPIC_OR_PARTITION)")
_INVALID = OpenApiResponse(ErrorSerializer, description="Kafka would refuse it: INVALID_TOPIC_EXCEPTION, "
                                                        "INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, "
                                                        "INVALID_CONFIG, INVALID_REQUEST, …")


def _validated(serializer_class, data):
    body = serializer_class(data=data)
    if not body.is_valid():
        raise KafkaApiError("INVALID_REQUEST", one_line(body.errors))
    return body.validated_data


@extend_schema_view(
    list=extend_schema(summary="Topics with partitions, replication factor, under-replicated and offline partitions, "
                               "size, messages and produce rate (kafka-topics --list)",
                       parameters=[OpenApiParameter("ordering", str, description="one of " + ", ".join(ORDERINGS)
                                                    + "; a leading '-' sorts descending")]),
    retrieve=extend_schema(summary="A topic's partitions (leader, replicas, ISR, log offsets) and every config with "
                                   "its source, type, default and documentation (--describe)",
                           parameters=[_NAME], responses={200: TopicDetailSerializer, 404: _NOT_FOUND}),
    create=extend_schema(summary="Create a topic (--create); admin role", request=TopicCreateSerializer,
                         responses={201: TopicDetailSerializer, 200: OpenApiResponse(description="validate_only: "
                                    "the topic as it would be"), 400: _INVALID,
                                    409: OpenApiResponse(ErrorSerializer, description="TOPIC_ALREADY_EXISTS")}),
    partial_update=extend_schema(summary="Set or delete config overrides (kafka-configs --alter); admin role",
                                 parameters=[_NAME], request=TopicConfigsPatchSerializer,
                                 responses={200: TopicDetailSerializer, 400: _INVALID, 404: _NOT_FOUND}),
    destroy=extend_schema(summary="Delete a topic and its data (--delete); admin role", parameters=[_NAME],
                          responses={204: None, 404: _NOT_FOUND}),
)
class TopicViewSet(ActionViewMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Topics from the metadata store; changes go through `topics.services` (as Kafka's Admin API does) and are
    checked and audited."""

    serializer_class = TopicSerializer
    filterset_class = TopicFilterSet
    lookup_field = "name"
    lookup_value_regex = r"[a-zA-Z0-9._-]+"
    filter_backends = (FilterBackend,)  # sorting is topic_summaries' (unreported sizes last either way)
    mutations = {"create": actions.CREATE_TOPICS, "partial_update": actions.ALTER_CONFIGS,
                 "destroy": actions.DELETE_TOPICS, "partitions": actions.CREATE_PARTITIONS}

    def required_action(self, request):
        if getattr(self, "action", None) == "messages":
            return actions.PRODUCE_TEST_MESSAGES if request.method == "POST" else actions.READ_MESSAGES
        return super().required_action(request)

    def get_queryset(self):
        try:
            return topic_summaries(ordering=self.request.query_params.get("ordering", "name"))
        except ValueError as e:
            raise KafkaApiError("INVALID_REQUEST", str(e)) from None

    def paginate_queryset(self, queryset):
        return super().paginate_queryset(SortedTopics(queryset))

    def audit_target(self) -> str:
        if "name" in self.kwargs:
            return f"topic:{self.kwargs['name']}"
        return f"topic:{self.request_body().get('name')}"

    def handle_exception(self, exc):
        if isinstance(exc, KafkaApiError):
            return Response(exc.as_json(), status=exc.status)
        return super().handle_exception(exc)

    def _detail(self, name: str, status_code: int = status.HTTP_200_OK) -> Response:
        topic = topic_summaries().filter(name=name).first()
        if topic is None:
            raise KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION", f"This server does not host this topic: {name}")
        topic.partition_rows, topic.config_entries = partition_rows(topic), config_entries(topic)
        return Response(TopicDetailSerializer(topic).data, status=status_code)

    def retrieve(self, request, name: str):
        return self._detail(name)

    def create(self, request):
        body = _validated(TopicCreateSerializer, request.data)
        if body["validate_only"]:
            return Response(services.create_topic(body["name"], body["partitions"], body["replication_factor"],
                                                  configs=body["configs"], validate_only=True))
        with self.audited_change() as change:
            services.create_topic(body["name"], body["partitions"], body["replication_factor"],
                                  configs=body["configs"])
            change.after = services.audit_state(body["name"])
        return self._detail(body["name"], status.HTTP_201_CREATED)

    def partial_update(self, request, name: str):
        body = _validated(TopicConfigsPatchSerializer, request.data)
        new = {k: v for k, v in body["configs"].items() if v is not None}
        deleted = [k for k, v in body["configs"].items() if v is None]
        if body["validate_only"]:
            return Response(services.alter_configs(name, new, deleted, validate_only=True))
        with self.audited_change() as change:
            change.before = services.audit_state(name)
            services.alter_configs(name, new, deleted)
            change.after = services.audit_state(name)
        return self._detail(name)

    def destroy(self, request, name: str):
        with self.audited_change() as change:
            change.before = services.audit_state(name)
            services.delete_topic(name)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(summary="Add partitions: grow the topic to `count` (--alter --partitions); admin role",
                   parameters=[_NAME], request=CreatePartitionsSerializer,
                   responses={200: TopicDetailSerializer, 400: _INVALID, 404: _NOT_FOUND})
    @action(detail=True, methods=["post"])
    def partitions(self, request, name: str):
        body = _validated(CreatePartitionsSerializer, request.data)
        if body["validate_only"]:
            return Response(services.create_partitions(name, body["count"], validate_only=True))
        with self.audited_change() as change:
            change.before = services.audit_state(name)
            services.create_partitions(name, body["count"])
            change.after = services.audit_state(name)
        return self._detail(name)

    @extend_schema(
        methods=["GET"], summary="Browse messages (operator role): seek, filter, decode; JSON page, or export",
        description="One bounded read over the Kafka protocol: at most `limit` messages, at most "
                    f"{message_browser.SCAN_BUDGET} records examined; continue with `cursor`. `export=jsonl|csv` "
                    "answers the same page as a file.",
        parameters=[_NAME, *(OpenApiParameter(n, str, description=d) for n, d in (
            ("partitions", "0,2 (default: all)"), ("start", "earliest | latest (default) | offset | timestamp"),
            ("last", "with start=latest: the last N records per partition"), ("offset", "with start=offset"),
            ("timestamp", "with start=timestamp: ms since the epoch or ISO 8601"),
            ("tz", "IANA zone for an ISO time without offset (default UTC)"),
            ("order", "oldest (forward, default) | newest (newest first)"), ("limit", "1-500, default 50"),
            ("key_contains", "substring of the key"), ("value_contains", "substring of the value"),
            ("header", "a header name, or name=value-substring"), ("json_path", "$.a.b[0] or $.a == value"),
            ("decode", "text (default) | json | hex | base64 | avro (values in Confluent's wire format)"),
            ("avro_schema", "with decode=avro: the values' Avro schema (JSON); a JSON path then reads the record"),
            ("schema_id", "with decode=avro: the id values must carry (others are shown as such)"),
            ("cursor", "from the previous page"),
            ("export", "jsonl | csv")))],
        responses={200: MessagePageSerializer, 400: _INVALID, 403: ErrorSerializer, 404: _NOT_FOUND})
    @extend_schema(methods=["POST"], summary="Produce one test message (operator role), acks=all",
                   parameters=[_NAME], request=ProduceSerializer,
                   responses={201: ProducedSerializer, 400: _INVALID, 404: _NOT_FOUND})
    @action(detail=True, methods=["get", "post"])
    def messages(self, request, name: str):
        if request.method == "POST":
            return self._produce(request, name)
        try:
            checks.authorize(actor_of(request), Source.REST, actions.READ_MESSAGES, f"topic:{name}")
        except checks.ActionRefused as refused:
            return Response({"error": "TOPIC_AUTHORIZATION_FAILED", "message": refused.reason}, status=403)
        browse = message_browser.parse_browse_request(request.query_params)
        page = browse.run(name)
        export = request.query_params.get("export", "")
        if export in ("jsonl", "csv"):
            body = (export_jsonl if export == "jsonl" else export_csv)(page.messages, browse.decoding)
            return HttpResponse(body, content_type="application/x-ndjson" if export == "jsonl" else "text/csv",
                                headers={"Content-Disposition": f'attachment; filename="{name}.{export}"'})
        if export:
            raise KafkaApiError("INVALID_REQUEST", "export must be jsonl or csv")
        rows = [message_row(m, browse.decoding) for m in page.messages]
        return Response(MessagePageSerializer({"messages": rows, "cursor": page.cursor, "scanned": page.scanned,
                                               "watermarks": {str(p): list(w) for p, w in page.watermarks.items()}
                                               }).data)

    def _produce(self, request, name: str) -> Response:
        body = _validated(ProduceSerializer, request.data)
        as_bytes = (lambda s: None if s is None else base64.b64decode(s, validate=True)) \
            if body["encoding"] == "base64" else (lambda s: None if s is None else s.encode())
        try:
            key, value = as_bytes(body["key"]), as_bytes(body["value"])
            headers = [(k, as_bytes(v)) for k, v in body["headers"].items()]
        except binascii.Error:
            raise KafkaApiError("INVALID_REQUEST", "key, value and headers must be base64") from None
        with self.audited_change() as change:
            written = message_browser.produce(name, value, key, headers, body["partition"])
            change.after = {"partition": written.partition, "offset": written.offset}
        return Response(ProducedSerializer({"partition": written.partition, "offset": written.offset,
                                            "timestamp": written.timestamp_ms}).data, status=status.HTTP_201_CREATED)


class PartitionViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Partition.objects.select_related("topic")
    serializer_class = PartitionSerializer
    filterset_class = PartitionFilterSet
    ordering_fields = ("partition", "leader", "leader_epoch")
