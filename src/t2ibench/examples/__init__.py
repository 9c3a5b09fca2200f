"""Bundled, offline examples (data shipped with scikit-learn)."""
