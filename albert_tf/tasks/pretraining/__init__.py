"""Masked LM and sentence-order pretraining: run_pretraining's flags, main and job."""
