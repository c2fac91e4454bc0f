"""An application instrumented with OpenTelemetry's Python SDK, in front of
the server whyslow records (issue 53, item 6).

Each GET is its server span and, inside it, a client span for its call to
the backend (BACKEND_URL) carrying the W3C traceparent, injected as
OpenTelemetry's HTTP client instrumentations do. Its spans go over
OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT as each ends. It answers with the
ids of its spans and the traceparent it sent, as JSON.

Usage: otel_app.py PORT
"""
import json
import os
import sys
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("whyslow-test-shop")
BACKEND = os.environ["BACKEND_URL"]


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        with tracer.start_as_current_span(f"GET {self.path}", kind=trace.SpanKind.SERVER,
                                          context=propagate.extract(dict(self.headers))) as server:
            with tracer.start_as_current_span("GET", kind=trace.SpanKind.CLIENT,
                                              attributes={"http.request.method": "GET", "url.full": BACKEND}) as client:
                headers = {}
                propagate.inject(headers)
                with urllib.request.urlopen(urllib.request.Request(BACKEND, headers=headers)) as r:
                    r.read()
                    client.set_attribute("http.response.status_code", r.status)
        body = json.dumps({
            "trace_id": format(server.get_span_context().trace_id, "032x"),
            "server_span_id": format(server.get_span_context().span_id, "016x"),
            "client_span_id": format(client.get_span_context().span_id, "016x"),
            "traceparent": headers.get("traceparent", ""),
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
