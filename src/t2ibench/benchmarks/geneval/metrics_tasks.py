"""GenEval's six tasks, in its Table 2's order (numpy-free: the store's schema reads them to build its views)."""

TASKS = ("single_object", "two_object", "counting", "colors", "position", "color_attr")
