"""A benchmark plugin that lives outside the t2ibench package (tests/unit/test_plugin.py registers it by name): the
files a new benchmark adds, at their smallest, to show that every hub picks it up with no edit of its own."""
