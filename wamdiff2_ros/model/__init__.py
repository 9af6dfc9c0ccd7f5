"""The diffusion VLA: Qwen3-VL backbone, tokenizer, codecs, block-causal masks, losses."""
