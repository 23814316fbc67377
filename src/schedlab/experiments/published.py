"""Published figures that schedlab's runs are checked against.

FGD (Weng et al., USENIX ATC '23), Alibaba GPU-2023 default pod list on the 1,213 GPU nodes,
workload inflated to 1.3× capacity, mean over seeds 42..51: unallocated GPU % at arrived 100 %
and 130 %.
"""

FGD_UNALLOCATED_AT_100: dict[str, float] = {
    "random": 13.70,
    "dotprod": 9.38,
    "gpu-clustering": 8.35,
    "gpu-packing": 8.22,
    "bestfit": 7.14,
    "fgd": 4.77,
}

FGD_UNALLOCATED_AT_130: dict[str, float] = {
    "random": 12.53,
    "dotprod": 9.15,
    "gpu-clustering": 8.12,
    "gpu-packing": 8.00,
    "bestfit": 6.92,
    "fgd": 4.61,
}

#: The pod list and inflation the published figures were measured on.
FGD_REFERENCE_TRACE = "openb_pod_list_default"
FGD_REFERENCE_INFLATE = 1.3


def reference_for(pods_label: str, inflate: float) -> dict[str, float] | None:
    """Published unallocated-% at 100 for this workload, if the paper measured it."""
    if pods_label == FGD_REFERENCE_TRACE and abs(inflate - FGD_REFERENCE_INFLATE) < 1e-9:
        return FGD_UNALLOCATED_AT_100
    return None
