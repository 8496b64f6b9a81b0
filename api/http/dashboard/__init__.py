"""The HTML dashboard's assets: templates, static files and server-rendered SVG charts."""
