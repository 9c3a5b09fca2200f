"""GenEval (Ghosh et al. 2023): detector-based checks of objects, counts, colours and positions (Table 2).

``evaluate`` judges images with the detector and colour classifier (resumable) and ``benchmark`` is the registry
entry; the suite's templates and object vocabulary (``t2ibench.benchmarks.geneval.suite``) and the Table 2 arithmetic
(``t2ibench.benchmarks.geneval.metrics``) stay below the models, which read the same vocabulary. Importing this package
imports none of them.
"""
