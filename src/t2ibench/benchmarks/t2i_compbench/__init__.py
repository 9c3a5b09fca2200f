"""T2I-CompBench++ (Huang et al., NeurIPS 2023 / TPAMI 2025): compositional prompts in eight categories, each scored by
the reference's rule (BLIP-VQA, detector boxes, depth, CLIPScore, 3-in-1): docs/t2i_compbench.md."""
