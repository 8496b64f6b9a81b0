"""The HTML dashboard: templates, static files, SQL queries and server-rendered SVG charts."""
