"""Training: AR stage 0, progressive block adaptation, block and model distillation."""
