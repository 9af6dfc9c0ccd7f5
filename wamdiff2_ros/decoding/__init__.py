"""AR and block-diffusion decoders: a readable reference and a fast static-cache engine."""
