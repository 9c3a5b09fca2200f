"""Model adapters: the only place torch lives (detectors, colour classifier, generators, embedders).

Modules import torch and the model libraries lazily, inside the functions that need them, so that importing
``t2ibench.models.<module>`` for its types never loads torch.
"""
