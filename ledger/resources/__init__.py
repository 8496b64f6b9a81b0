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

# Every name is imported on first use (PEP 562): ``ledger.resources.kinds`` (the CLI's ``get``)
# must not pay for pydantic models and admission at start-up.
import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_LAZY: dict[str, str] = {
    "AdmissionOutcome": "ledger.resources.admission",
    "AdmissionResult": "ledger.resources.admission",
    "AdmissionState": "ledger.resources.admission",
    "InMemoryState": "ledger.resources.admission",
    "Rejection": "ledger.resources.admission",
    "admit": "ledger.resources.admission",
    "DocumentParseError": "ledger.resources.errors",
    "FieldError": "ledger.resources.errors",
    "InvalidObjectError": "ledger.resources.errors",
    "KINDS": "ledger.resources.kinds",
    "KindInfo": "ledger.resources.kinds",
    "UnknownKindError": "ledger.resources.kinds",
    "WrongApiVersionError": "ledger.resources.kinds",
    "check_api_version": "ledger.resources.kinds",
    "get_kind": "ledger.resources.kinds",
    "resolve_kind": "ledger.resources.kinds",
    "BUILTIN_PRIORITY_CLASSES": "ledger.resources.models",
    "MODELS": "ledger.resources.models",
    "CompositePodGroup": "ledger.resources.models",
    "ElasticQuota": "ledger.resources.models",
    "ElasticQuotaTree": "ledger.resources.models",
    "Node": "ledger.resources.models",
    "ObjectKey": "ledger.resources.models",
    "Pod": "ledger.resources.models",
    "PodDisruptionBudget": "ledger.resources.models",
    "PodGroup": "ledger.resources.models",
    "PriorityClass": "ledger.resources.models",
    "Resource": "ledger.resources.models",
    "SchedulerConfig": "ledger.resources.models",
    "SchedulerConfigSpec": "ledger.resources.models",
    "Workload": "ledger.resources.models",
    "effective_requests": "ledger.resources.models",
    "from_normalized": "ledger.resources.models",
    "model_for": "ledger.resources.models",
    "pod_effective_requests": "ledger.resources.models",
    "validate_scheduler_config_spec": "ledger.resources.models",
    "Document": "ledger.resources.parse",
    "iter_documents": "ledger.resources.parse",
    "iter_path": "ledger.resources.parse",
    "load_objects": "ledger.resources.parse",
    "parse_documents": "ledger.resources.parse",
    "validate": "ledger.resources.parse",
    "format_quantity": "ledger.resources.quantity",
    "parse_quantity": "ledger.resources.quantity",
    "to_base_units": "ledger.resources.quantity",
    "to_int": "ledger.resources.quantity",
    "to_milli": "ledger.resources.quantity",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
