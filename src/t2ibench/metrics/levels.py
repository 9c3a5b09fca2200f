"""The interval defaults every estimate shares (standard library only, so a command line can read them cheaply)."""

BOOTSTRAP_RESAMPLES = 1000
"""The default number of bootstrap resamples behind an interval."""
CI_LEVEL = 0.95
"""The default two-sided level of an interval (a fraction in (0, 1))."""
