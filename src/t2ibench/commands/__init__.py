"""The ``t2ibench`` verbs, one module per group: each declares its verbs' options (``add_*``) and runs them
(``_cmd_*``); ``t2ibench.cli`` builds the one parser from them and runs the chosen verb."""
