"""Evaluation: planning, QA and detection metrics, bag scoring, reports and plots."""
