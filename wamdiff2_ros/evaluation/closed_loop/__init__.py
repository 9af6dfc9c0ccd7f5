"""Closed-loop benchmark: seeded routes in the synthetic world, driven by a policy, scored per step.

Modules, one job each: ``routes`` (the route set and the world each builds),
``vehicle`` (kinematic bicycle), ``policies`` (autopilot, constant velocity, checkpoints),
``monitor`` (the metrics accumulator fed with ego poses and road users), ``comfort``,
``scoring`` (driving score and its coefficients), ``pdm_probe`` (per-step PDM terms),
``runner`` (one route in-process), ``benchmark`` (every policy on every route, in
parallel processes), ``report`` (JSON, Markdown table, BEV plots).

The route and the metrics do not depend on how the ego's state arrives. To score a
route driven elsewhere (e.g. ``sim_node`` over DDS), build its world and feed a
monitor the ego pose and the other road users at every step::

    route = build_route(route_spec(index, seed))          # the same map, signals, actors
    monitor = RouteMonitor(route.world.map, route.world.map.route, route.start_s, route.goal_s,
                           MonitorLimits(timeout_s=route.spec.timeout_s))
    monitor.update(EgoSample(t, x, y, yaw, speed, yaw_rate), agents)   # per step, map frame
    metrics = monitor.finish()
"""
