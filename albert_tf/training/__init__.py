"""Training: the job skeleton, the training loop and its checkpoints, the output_dir lock, and
the pretraining job."""
