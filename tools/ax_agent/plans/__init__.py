"""The session's structured plan: its file, its content hash, its approval and its views.

``model`` is the shape (pydantic at the JSON boundary) and the canonical hash,
``validate`` the semantic rules, ``store`` the file and its approval, ``views``
what a person and the model are shown. The task DAG that executes a plan is
``ax_agent.tasks``.
"""
