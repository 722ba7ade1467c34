"""Pretraining data: instances (n-gram masking, sentence order), TFRecords, input pipelines."""
