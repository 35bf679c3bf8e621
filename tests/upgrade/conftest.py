"""``city_agent_0_1/`` is a project of its own (written against 0.1.0): its tests run in a child
pytest from ``test_project_from_0_1.py``, never collected by this suite."""

collect_ignore = ["city_agent_0_1"]
