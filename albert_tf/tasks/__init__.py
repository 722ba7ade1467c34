"""Fine-tuning tasks, one folder each: data reading, features, model head, objective, metrics, job
and export."""
