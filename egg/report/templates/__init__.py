"""Jinja templates and the shared stylesheet of the HTML reports (a package so they ship as data)."""
