"""``schedlab serve kubernetes``: the serve loop with Kubernetes as the engine it reads and drives.

Private modules, imported only by the commands that use them (the rest of schedlab never pays
for an HTTP client): :mod:`.api` (the REST client) and :mod:`.kubeconfig`, :mod:`.quantity`
(exact resource quantities), :mod:`.objects` (pods and nodes as the loop needs them),
:mod:`.cache` (list + watch), :mod:`.view` (the snapshot), :mod:`.decide` (the policy's passes
and GPU shares), :mod:`.binder` (bindings, evictions, reasons, Events), :mod:`.lease` (one
active instance), :mod:`.server` (the loop), :mod:`.topology` (the network from node labels),
:mod:`.check` (``serve check``), :mod:`.import_run` (``trace import-kubernetes``),
:mod:`.status` (``serve status --kubernetes``), :mod:`.extender` (kube-scheduler's extender)
and :mod:`.fake` (an in-memory API server for tests and benchmarks).
"""
