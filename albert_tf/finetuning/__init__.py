"""Fine-tuning: task data (GLUE, ...), features, objectives, evaluation and prediction."""
