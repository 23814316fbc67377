"""``schedlab serve kubernetes``: the serve loop with Kubernetes as the engine it reads and drives.

Private modules, imported only by the commands that use them (the rest of schedlab never pays
for an HTTP client): :mod:`.api` (the REST client and kubeconfig), :mod:`.quantity` (exact
resource quantities), :mod:`.objects` (pods and nodes as the loop needs them).
"""
