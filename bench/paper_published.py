"""The FGD paper artifact's published results for the three openb pod lists (docs/paper.md).

Source: ``hkust-adsl/kubernetes-scheduler-simulator``, ``experiments/analysis/expected_results/
analysis_allo_discrete.csv`` (one row per pod list, policy, tune 1.3 and seed 42..51; one column
per arrived GPU demand X = 0..130 % of the 6,212 GPUs). Mean and sample sd (n - 1) over the ten
seeds, computed from the per-seed values transcribed by hand (each X = 130 mean was checked
against an independent earlier transcription).
"""

from __future__ import annotations

# The artifact's 17 pod lists (``openb_pod_list_<name>.csv``), by family of the sensitivity study
# (each family varies one property of the default list; the default list belongs to none).
FAMILIES: dict[str, tuple[str, ...]] = {
    "GPU-sharing tasks (% of GPU tasks)": ("gpushare40", "gpushare60", "gpushare80", "gpushare100"),
    "GPU-model constraints (% of GPU tasks)": ("gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33"),
    "multi-GPU tasks (% of GPU tasks)": ("multigpu20", "multigpu30", "multigpu40", "multigpu50"),
    "non-GPU CPU demand (% of the default list's)": ("cpu050", "cpu100", "cpu200", "cpu250"),
}
ALL_TRACES: tuple[str, ...] = ("default",) + tuple(t for f in FAMILIES.values() for t in f)

# (pod list, policy) -> {X: (mean %, sd)}
ALLOC: dict[tuple[str, str], dict[int, tuple[float, float]]] = {
    ("default", "Random"): {90: (85.02, 0.29), 100: (86.30, 0.33), 130: (87.47, 0.32)},
    ("default", "DotProduct"): {90: (89.98, 0.05), 100: (90.62, 0.19), 130: (90.85, 0.20)},
    ("default", "GpuClustering"): {90: (89.98, 0.05), 100: (91.65, 0.61), 130: (91.88, 0.62)},
    ("default", "GpuPacking"): {90: (89.98, 0.05), 100: (91.78, 0.53), 130: (92.00, 0.54)},
    ("default", "BestFit"): {90: (89.99, 0.04), 100: (92.86, 0.14), 130: (93.08, 0.13)},
    ("default", "FGD"): {90: (89.98, 0.05), 100: (95.23, 0.11), 130: (95.39, 0.08)},
    ("gpuspec33", "Random"): {90: (77.40, 0.38), 100: (83.87, 0.26), 130: (86.46, 0.13)},
    ("gpuspec33", "DotProduct"): {90: (72.60, 0.36), 100: (79.82, 0.25), 130: (89.14, 0.38)},
    ("gpuspec33", "GpuClustering"): {90: (73.87, 0.33), 100: (81.09, 0.22), 130: (92.12, 0.68)},
    ("gpuspec33", "GpuPacking"): {90: (75.00, 0.50), 100: (82.22, 0.39), 130: (93.22, 0.63)},
    ("gpuspec33", "BestFit"): {90: (73.10, 0.32), 100: (80.39, 0.27), 130: (93.09, 0.15)},
    ("gpuspec33", "FGD"): {90: (80.62, 0.29), 100: (87.84, 0.18), 130: (94.55, 0.14)},
    ("multigpu50", "Random"): {90: (75.07, 0.76), 100: (81.28, 0.83), 130: (90.27, 0.44)},
    ("multigpu50", "DotProduct"): {90: (89.95, 0.38), 100: (94.73, 0.20), 130: (94.85, 0.21)},
    ("multigpu50", "GpuClustering"): {90: (89.85, 0.20), 100: (95.69, 0.28), 130: (95.81, 0.29)},
    ("multigpu50", "GpuPacking"): {90: (89.87, 0.20), 100: (96.06, 0.31), 130: (96.18, 0.31)},
    ("multigpu50", "BestFit"): {90: (89.97, 0.08), 100: (95.62, 0.18), 130: (95.74, 0.19)},
    ("multigpu50", "FGD"): {90: (89.93, 0.12), 100: (97.09, 0.11), 130: (97.18, 0.10)},
}

# (policy, X) -> (mean %, sd) of the fragmentation ratio (fragmented / idle GPU milli) on the
# default pod list, seeds 42..51 (``analysis_frag_ratio_discrete.csv``, columns X = 50 and 80)
FRAG_RATIO: dict[tuple[str, int], tuple[float, float]] = {
    ("Random", 50): (30.17, 0.74),
    ("Random", 80): (74.64, 2.20),
    ("BestFit", 50): (21.62, 0.29),
    ("BestFit", 80): (41.49, 0.88),
    ("FGD", 50): (17.86, 0.15),
    ("FGD", 80): (29.86, 0.19),
}
