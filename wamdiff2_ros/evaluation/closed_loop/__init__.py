"""Closed-loop benchmark: seeded routes in the synthetic world, driven by a policy, scored per step.

Modules, one job each: ``routes`` (the route set and the world each builds),
``vehicle`` (kinematic bicycle), ``policies`` (autopilot, constant velocity, checkpoints),
``monitor`` (the metrics accumulator fed with ego poses and road users), ``comfort``,
``scoring`` (driving score and its coefficients), ``pdm_probe`` (per-step PDM terms),
``runner`` (one route in-process), ``benchmark`` (every policy on every route, in
parallel processes), ``report`` (JSON, Markdown table, BEV plots).
"""
