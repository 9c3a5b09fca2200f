"""GenEval 2 (Kamath et al. 2025): 800 prompts judged by a vision-language model, scored by Soft-TIFA.

The benchmark's whole slice: ``suite`` (the release pin, reader and prompt selection), ``metrics`` (Soft-TIFA, the
numpy-only arithmetic), ``evaluate`` (judging a scan of images, resumable), ``report`` (its section), ``steps``
(its calls in the refresh) and ``benchmark`` (the registry entry). Importing this package imports none of them.
"""
