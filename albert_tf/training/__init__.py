"""Training: the pretraining step, the loop, checkpointing."""
