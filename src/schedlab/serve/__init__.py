"""Live mode: drive a real Slurm cluster with the same policy objects the replay simulator runs.

``client`` wraps Slurm's commands, ``slurm_state`` reads their JSON, ``live`` builds the policy's
snapshot, ``apply`` turns decisions into ``scontrol`` calls, ``journal`` records everything,
``loop`` runs the cycles, and ``import_slurm`` turns a recorded run back into a workload.
"""
