"""The scheduler's edge: everything between the pure core (``scheduler``) and the ledger.

``bridge`` folds the log into the core and appends decisions through a unit of work;
``translate`` turns stored manifests into core model objects; ``decision_events`` maps each
decision to its event (type, stream, payload); ``controllers`` emulates the controllers that
recreate preempted pods; ``worker`` is the leader-elected long-running process. Only these
modules of ``scheduler`` import ``ledger`` (tests/test_import_rules.py).
"""
