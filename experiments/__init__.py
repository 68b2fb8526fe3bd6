"""The research harness: operator workloads, hand schedules, baselines, the experiment driver and
MLflow tracking. ``python run.py +experiment=dep_conv`` is the entry point (see ``configs/``)."""
