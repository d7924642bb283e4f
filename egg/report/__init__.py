"""Run reports: ``report.json`` (:mod:`egg.report.model`) and ``report.html`` (:mod:`egg.report.html`)."""

from egg.report.model import RunReport, build_report

__all__ = ["RunReport", "build_report"]
