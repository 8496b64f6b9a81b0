"""The HTTP edge: a FastAPI app (``app.create_app``) whose routes parse a request, call one
service of ``api.services`` and render its answer; errors map to one JSON shape (``errors``)."""
