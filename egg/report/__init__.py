"""Run reports: ``report.json`` (this package's models) and, later, ``report.html``."""

from egg.report.model import RunReport, build_report

__all__ = ["RunReport", "build_report"]
