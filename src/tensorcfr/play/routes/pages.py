"""Routes of the page itself: ``/`` (also HEAD), its static files, and ``/docs`` (the API as a
plain page built from the OpenAPI description). No request touches the file system: the
page's files are read from the package once, at start-up (:func:`load_static`)."""

from importlib import resources
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from tensorcfr.play.routes.context import bad

__all__ = ["STATIC_FILES", "load_static", "openapi_html", "router"]

router = APIRouter(include_in_schema=False)

STATIC_FILES = {"index.html": "text/html; charset=utf-8",
                "app.js": "text/javascript; charset=utf-8",
                "style.css": "text/css; charset=utf-8"}


def load_static() -> dict[str, bytes]:
    """The page's files, read from the installed package (once, at start-up)."""
    folder = resources.files("tensorcfr.play") / "static"
    return {name: (folder / name).read_bytes() for name in STATIC_FILES}


def _static_response(request: Request, name: str) -> Response:
    return Response(request.app.state.static[name], media_type=STATIC_FILES[name],
                    headers={"Cache-Control": "no-cache"})


@router.api_route("/", methods=["GET", "HEAD"])
def page(request: Request) -> Response:
    return _static_response(request, "index.html")


@router.get("/static/{name}")
def static_file(name: str, request: Request) -> Response:
    if name not in request.app.state.static or name == "index.html":
        raise bad("not found", 404)
    return _static_response(request, name)


@router.get("/docs")
def api_docs(request: Request) -> Response:
    """The API as a plain page built from the OpenAPI description (no CDN, no script)."""
    state = request.app.state
    if getattr(state, "api_page", None) is None:
        state.api_page = openapi_html(request.app.openapi()).encode()
    return Response(state.api_page, media_type="text/html; charset=utf-8")


def openapi_html(spec: dict[str, Any]) -> str:
    """A self-contained HTML page listing the API of an OpenAPI description: every path and
    method with its summary, parameters, request body schema and responses."""
    from html import escape

    def schema_name(schema: dict[str, Any]) -> str:
        if "$ref" in schema:
            return schema["$ref"].rsplit("/", 1)[-1]
        if "anyOf" in schema:
            return " | ".join(schema_name(s) for s in schema["anyOf"])
        return str(schema.get("type", "object"))

    info = spec.get("info", {})
    rows = []
    for path, methods in spec.get("paths", {}).items():
        for method, op in methods.items():
            params = ", ".join(
                f"{p['name']} ({p.get('in')}, {schema_name(p.get('schema', {}))})"
                for p in op.get("parameters", []))
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            body_text = schema_name(body.get("schema", {})) if body else ""
            codes = ", ".join(op.get("responses", {}))
            rows.append(f"<tr><td><code>{escape(method.upper())}</code></td>"
                        f"<td><code>{escape(path)}</code></td><td>{escape(op.get('summary', ''))}"
                        f"</td><td>{escape(params)}</td><td>{escape(body_text)}</td>"
                        f"<td>{escape(codes)}</td></tr>")
    schemas = []
    for name, schema in spec.get("components", {}).get("schemas", {}).items():
        fields = "; ".join(f"{k}: {schema_name(v)}" for k, v in schema.get("properties", {}).items())
        schemas.append(f"<tr><td><code>{escape(name)}</code></td><td>{escape(fields)}</td></tr>")
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(info.get('title', 'API'))} API</title>"
            "<link rel=\"stylesheet\" href=\"/static/style.css\"></head>"
            "<body class=\"api-docs\"><main class=\"panel\">"
            f"<h1>{escape(info.get('title', 'API'))} {escape(str(info.get('version', '')))}</h1>"
            f"<p>{escape(info.get('description', ''))}</p>"
            "<p>The machine-readable description: <a href=\"/openapi.json\">/openapi.json</a>. "
            "Errors are JSON <code>{\"detail\": \"...\"}</code>.</p>"
            "<table class=\"analysis-table\"><thead><tr><th>method</th><th>path</th><th>what</th>"
            "<th>parameters</th><th>JSON body</th><th>responses</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table><h2>Schemas</h2>"
            "<table class=\"analysis-table\"><tbody>" + "".join(schemas)
            + "</tbody></table><p><a href=\"/\">back to the game</a></p></main></body></html>")
