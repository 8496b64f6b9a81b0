"""Resource layer: Kubernetes-shaped objects, parsed, validated, normalized and admitted.

Pure Python (pydantic + PyYAML): no database, no clock.

    docs = parse_documents(text, "examples/x.yaml")      # or iter_documents(stream) / iter_path(path)
    obj, errors = validate(docs[0])                     # Resource | None, [FieldError]
    outcome = admit([obj, ...], state)                  # AdmissionOutcome
    outcome.refused / outcome.changes / outcome.rejection_record()
    result.normalized                                   # the dict stored in events

Layout: ``parse`` (YAML/JSON documents -> validated models), ``kinds`` (the kind registry),
``quantity`` (Kubernetes quantities), ``errors``; ``models/`` one module per API group
(``meta``, ``core``, ``scheduling``, ``policy``, ``quota``, ``podledger``) plus ``values`` (shared
field rules) and ``registry`` (``validate_raw``); ``admission/`` one module per admission rule
(``priority``, ``templates``, ``references``, ``immutability``, ``quotas``) plus ``request``
(the entry point ``admit``), ``state`` and ``outcome``.
"""

from ledger.resources.admission import (
    AdmissionOutcome,
    AdmissionResult,
    AdmissionState,
    InMemoryState,
    Rejection,
    admit,
)
from ledger.resources.errors import DocumentParseError, FieldError, InvalidObjectError
from ledger.resources.kinds import (
    KINDS,
    KindInfo,
    UnknownKindError,
    WrongApiVersionError,
    check_api_version,
    get_kind,
    resolve_kind,
)
from ledger.resources.models import (
    BUILTIN_PRIORITY_CLASSES,
    MODELS,
    CompositePodGroup,
    ElasticQuota,
    ElasticQuotaTree,
    Node,
    ObjectKey,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PriorityClass,
    Resource,
    SchedulerConfig,
    SchedulerConfigSpec,
    Workload,
    effective_requests,
    from_normalized,
    model_for,
    pod_effective_requests,
    validate_scheduler_config_spec,
)
from ledger.resources.parse import (
    Document,
    iter_documents,
    iter_path,
    load_objects,
    parse_documents,
    validate,
)
from ledger.resources.quantity import format_quantity, parse_quantity, to_base_units, to_int, to_milli

__all__ = [
    "BUILTIN_PRIORITY_CLASSES",
    "KINDS",
    "MODELS",
    "AdmissionOutcome",
    "AdmissionResult",
    "AdmissionState",
    "CompositePodGroup",
    "Document",
    "DocumentParseError",
    "ElasticQuota",
    "ElasticQuotaTree",
    "FieldError",
    "InMemoryState",
    "InvalidObjectError",
    "KindInfo",
    "Node",
    "ObjectKey",
    "Pod",
    "PodDisruptionBudget",
    "PodGroup",
    "PriorityClass",
    "Rejection",
    "Resource",
    "SchedulerConfig",
    "SchedulerConfigSpec",
    "UnknownKindError",
    "Workload",
    "WrongApiVersionError",
    "admit",
    "check_api_version",
    "effective_requests",
    "format_quantity",
    "from_normalized",
    "get_kind",
    "iter_documents",
    "iter_path",
    "load_objects",
    "model_for",
    "parse_documents",
    "parse_quantity",
    "pod_effective_requests",
    "resolve_kind",
    "to_base_units",
    "to_int",
    "to_milli",
    "validate",
    "validate_scheduler_config_spec",
]
