#!/usr/bin/env bash
# A private Slurm cluster on localhost for developing and testing `schedlab serve slurm`.
#
#   scripts/slurm-dev-cluster.sh start  [--nodes N] [--gpus G] [--dir DIR] [--no-submit-hold]
#                                       [--topology [--leaf-nodes K]]
#   scripts/slurm-dev-cluster.sh status [--dir DIR]
#   scripts/slurm-dev-cluster.sh stop   [--dir DIR]
#
# start installs Slurm and munge from Debian's archive when they are missing, writes a
# configuration with N nodes of G dummy GPUs (all served by slurmd processes on this host, on
# non-default ports), starts munged, slurmctld and one slurmd per node, waits until every node is
# idle, and prints the `export SLURM_CONF=...` line a shell needs. Everything (configuration,
# state, logs, sockets, dummy device files, the job-completion file) lives under DIR, default
# /tmp/schedlab-slurm. A second start while the cluster runs only says so.
#
# The ports are derived from DIR (a checksum of its path picks one of 500 blocks of 65 ports
# from 20000 up), so clusters in different folders do not collide; start refuses a port that
# something else already listens on. Partition `gpu` (the default) is managed by schedlab: the
# Lua job_submit plugin (docs/job_submit.lua) holds every job submitted to it. Partition `free`
# spans the same nodes and is left to Slurm. --no-submit-hold leaves the plugin out.
#
# --topology adds a switch tree (TopologyPlugin=topology/tree and DIR/etc/topology.conf): leaf
# switches leaf1, leaf2, ... of K nodes each (--leaf-nodes, default 2; the last may have fewer)
# under one switch `spine`, which `scontrol show topology` reports and `schedlab serve slurm`
# reads. With 4 nodes: leaf1 = node[1-2], leaf2 = node[3-4].
#
# stop ends only the processes this script started, by the PIDs it recorded under DIR/run: SIGTERM
# first, SIGKILL after a grace period (a slurmd whose controller is gone ignores SIGTERM).
set -euo pipefail

CMD="${1:-}"
[[ -n "$CMD" ]] && shift
NODES=4
GPUS=8
DIR=/tmp/schedlab-slurm
SUBMIT_HOLD=1
TOPOLOGY=0
LEAF_NODES=2
GRACE=5

usage() {
    sed -n '3,7p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --nodes) NODES="${2:?--nodes needs a number}"; shift 2 ;;
        --gpus) GPUS="${2:?--gpus needs a number}"; shift 2 ;;
        --dir) DIR="${2:?--dir needs a folder}"; shift 2 ;;
        --no-submit-hold) SUBMIT_HOLD=0; shift ;;
        --topology) TOPOLOGY=1; shift ;;
        --leaf-nodes) LEAF_NODES="${2:?--leaf-nodes needs a number}"; shift 2 ;;
        -h|--help) usage ;;
        *) echo "slurm-dev-cluster: unknown option '$1'" >&2; usage ;;
    esac
done
[[ "$NODES" =~ ^[1-9][0-9]*$ ]] || { echo "slurm-dev-cluster: --nodes must be ≥ 1 (got '$NODES')" >&2; exit 2; }
[[ "$GPUS" =~ ^[1-9][0-9]*$ ]] || { echo "slurm-dev-cluster: --gpus must be ≥ 1 (got '$GPUS')" >&2; exit 2; }
[[ "$LEAF_NODES" =~ ^[1-9][0-9]*$ ]] || { echo "slurm-dev-cluster: --leaf-nodes must be ≥ 1 (got '$LEAF_NODES')" >&2; exit 2; }
((NODES <= 64)) || { echo "slurm-dev-cluster: --nodes must be ≤ 64 (got '$NODES')" >&2; exit 2; }

DIR=$(realpath -m "$DIR")
# One block of 65 ports per folder: the controller's, then one per node.
PORT_BLOCK=$(($(printf '%s' "$DIR" | cksum | cut -d' ' -f1) % 500))
CTLD_PORT=$((20000 + PORT_BLOCK * 65))
NODE_PORT_BASE=$((CTLD_PORT + 1))
REPO_ROOT="$(cd "$(dirname "$0")/.." && pwd)"

CONF="$DIR/etc/slurm.conf"
RUN="$DIR/run"
MUNGE="$DIR/munge"
export SLURM_CONF="$CONF"

say() { echo "slurm-dev-cluster: $*" >&2; }

alive() {  # alive PIDFILE: the recorded process still runs
    [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

install_packages() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
        && command -v sbatch >/dev/null && command -v munged >/dev/null; then
        return
    fi
    if [[ $(id -u) -ne 0 ]]; then
        say "Slurm is not installed and installing it needs root"
        exit 1
    fi
    say "installing Slurm and munge from Debian's archive"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
}

write_config() {
    local last=$((NODE_PORT_BASE + NODES - 1)) max_gpu=$((GPUS - 1)) k g
    mkdir -p "$DIR/etc" "$DIR/state" "$DIR/log" "$RUN" "$DIR/spool"
    cat >"$CONF" <<EOF
# Written by scripts/slurm-dev-cluster.sh: $NODES nodes × $GPUS dummy GPUs on localhost.
ClusterName=schedlab-dev
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$RUN/slurmctld.daemon.pid
SlurmdPidFile=$RUN/slurmd-%n.daemon.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.txt
MailProg=/bin/true
MpiDefault=none
SchedulerParameters=batch_sched_delay=0,sched_min_interval=100000
MinJobAge=3600
ReturnToService=2
SlurmdTimeout=10
InactiveLimit=0
KillWait=2
JobRequeue=1
NodeName=node[1-$NODES] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$NODE_PORT_BASE-$last] CPUs=16 RealMemory=64000 Gres=gpu:$GPUS State=UNKNOWN
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=free Nodes=ALL MaxTime=INFINITE State=UP
EOF
    if ((SUBMIT_HOLD)); then
        echo "JobSubmitPlugins=lua" >>"$CONF"
        # The plugin names its managed partitions in its first lines.
        sed -e 's/^local MANAGED = .*/local MANAGED = { gpu = true }/' \
            -e 's/^local DEFAULT_PARTITION = .*/local DEFAULT_PARTITION = "gpu"/' \
            "$REPO_ROOT/docs/job_submit.lua" >"$DIR/etc/job_submit.lua"
    fi
    rm -f "$DIR/etc/topology.conf"
    if ((TOPOLOGY)); then
        write_topology
    fi
    : >"$DIR/etc/gres.conf"
    echo "AutoDetect=off" >>"$DIR/etc/gres.conf"
    for ((k = 1; k <= NODES; k++)); do
        mkdir -p "$DIR/dev/node$k" "$DIR/spool/node$k"
        for ((g = 0; g < GPUS; g++)); do
            [[ -e "$DIR/dev/node$k/nvidia$g" ]] || mknod "$DIR/dev/node$k/nvidia$g" c 1 3
        done
        echo "NodeName=node$k Name=gpu File=$DIR/dev/node$k/nvidia[0-$max_gpu]" >>"$DIR/etc/gres.conf"
    done
    : >"$DIR/jobcomp.txt"  # a fresh controller numbers jobs from 1 again
}

write_topology() {  # leaf switches of LEAF_NODES nodes each under one spine
    local leaves=$(((NODES + LEAF_NODES - 1) / LEAF_NODES)) k first last
    echo "TopologyPlugin=topology/tree" >>"$CONF"
    {
        echo "# Written by scripts/slurm-dev-cluster.sh: $leaves leaf switches under one spine."
        for ((k = 1; k <= leaves; k++)); do
            first=$(((k - 1) * LEAF_NODES + 1))
            last=$((k * LEAF_NODES < NODES ? k * LEAF_NODES : NODES))
            if ((first == last)); then
                echo "SwitchName=leaf$k Nodes=node$first"
            else
                echo "SwitchName=leaf$k Nodes=node[$first-$last]"
            fi
        done
        if ((leaves == 1)); then
            echo "SwitchName=spine Switches=leaf1"
        else
            echo "SwitchName=spine Switches=leaf[1-$leaves]"
        fi
    } >"$DIR/etc/topology.conf"
}

start_munge() {
    alive "$RUN/munged.pid" && return
    mkdir -p "$MUNGE"
    chmod 711 "$MUNGE"
    [[ -s "$MUNGE/munge.key" ]] || mungekey --create --keyfile="$MUNGE/munge.key" >/dev/null
    chown -R munge:munge "$MUNGE"
    chmod 600 "$MUNGE/munge.key"
    runuser -u munge -- munged --socket="$MUNGE/munge.socket" --key-file="$MUNGE/munge.key" \
        --pid-file="$MUNGE/munged.pid" --log-file="$MUNGE/munged.log" \
        --seed-file="$MUNGE/munged.seed"
    for _ in $(seq 50); do
        [[ -s "$MUNGE/munged.pid" ]] && break
        sleep 0.1
    done
    cp "$MUNGE/munged.pid" "$RUN/munged.pid"
}

daemon() {  # daemon NAME CMD...: run CMD in the foreground of its own session, record its PID
    local name="$1"
    shift
    setsid "$@" </dev/null >>"$DIR/log/$name.out" 2>&1 &
    echo $! >"$RUN/$name.pid"
}

wait_idle() {
    local i states
    for i in $(seq 300); do
        states=$(sinfo -h -N -o '%t' 2>/dev/null | sort -u | tr '\n' ' ')
        if [[ "$states" == "idle " ]] && [[ $(sinfo -h -N -o '%N' | sort -u | wc -l) -eq $NODES ]]; then
            return 0
        fi
        sleep 0.2
    done
    say "nodes did not become idle within 60 s (states: ${states:-none}); see $DIR/log"
    return 1
}

port_busy() {  # port_busy PORT: something listens on 127.0.0.1:PORT
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

start() {
    if alive "$RUN/slurmctld.pid"; then
        say "already running in $DIR"
        echo "export SLURM_CONF=$CONF"
        return 0
    fi
    local p
    for ((p = CTLD_PORT; p < NODE_PORT_BASE + NODES; p++)); do
        if port_busy "$p"; then
            say "port $p (block $CTLD_PORT-$((NODE_PORT_BASE + NODES - 1)) of $DIR) is in use"
            exit 1
        fi
    done
    install_packages
    rm -rf "$DIR/state" "$DIR/spool"
    write_config
    start_munge
    daemon slurmctld slurmctld -D -i -f "$CONF"
    local i
    for i in $(seq 300); do
        scontrol ping 2>/dev/null | grep -q UP && break
        if ! alive "$RUN/slurmctld.pid"; then
            say "slurmctld exited; see $DIR/log/slurmctld.log"
            tail -5 "$DIR/log/slurmctld.log" >&2 || true
            exit 1
        fi
        sleep 0.1
    done
    scontrol ping 2>/dev/null | grep -q UP || { say "slurmctld does not answer"; exit 1; }
    for ((k = 1; k <= NODES; k++)); do
        daemon "slurmd-node$k" slurmd -D -N "node$k" -f "$CONF"
    done
    wait_idle
    say "up: $NODES nodes × $GPUS GPUs in $DIR"
    echo "export SLURM_CONF=$CONF"
}

stop_pid() {  # stop_pid PIDFILE: SIGTERM, then SIGKILL after the grace period
    local file="$1" pid i
    [[ -s "$file" ]] || return 0
    pid=$(cat "$file")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq $((GRACE * 10))); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$file"
}

stop() {
    if [[ ! -d "$RUN" ]]; then
        say "nothing to stop in $DIR"
        return 0
    fi
    local f
    # Nodes first (they talk to the controller while they shut down), then the controller, then
    # munge; each by its own recorded PID.
    for f in "$RUN"/slurmd-*.pid; do
        [[ -e "$f" && "$f" != *.daemon.pid ]] && stop_pid "$f" &
    done
    wait
    stop_pid "$RUN/slurmctld.pid"
    stop_pid "$RUN/munged.pid"
    rm -f "$RUN"/*.daemon.pid
    say "stopped ($DIR)"
}

status() {
    if ! alive "$RUN/slurmctld.pid"; then
        say "not running ($DIR)"
        return 1
    fi
    echo "export SLURM_CONF=$CONF"
    sinfo -N -o '%N %T %G %C' 2>&1
}

case "$CMD" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) usage ;;
esac
