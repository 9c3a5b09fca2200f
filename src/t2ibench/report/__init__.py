"""Rendering of computed rows (Markdown/HTML tables, plots, galleries); nothing here recomputes a metric."""
