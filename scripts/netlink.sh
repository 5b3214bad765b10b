#!/usr/bin/env bash
# A real TCP link that stays on this machine: a network namespace of its own whose loopback is
# shaped by tc (a token bucket), with MinIO and a TCP sink listening on its 127.0.0.1. Whatever
# runs inside it (adz, zstd, curl) talks to them over kernel TCP with real socket buffers, at
# the shaped rate, and nothing leaves the machine. See docs/REAL-LINKS.md.
#
#   scripts/netlink.sh start STATE_DIR [--rate 1gbit|10gbit|RATE|none] [--burst SIZE]
#                      [--delay MS] [--mtu BYTES] [--sink keep|discard] [--no-minio]
#       make the namespace, shape its loopback, start the sink and MinIO, write STATE_DIR/env
#   scripts/netlink.sh exec STATE_DIR [--] CMD [ARG...]
#       run CMD inside the namespace with STATE_DIR/env sourced: AWS_ENDPOINT_URL and the keys,
#       ADZ_S3_BUCKET, ADZ_SINK_ADDR (host:port of the sink), ADZ_LINK_RATE, ADZ_LINK_BYTES_PER_S
#   scripts/netlink.sh sink-wait STATE_DIR N [SECONDS]
#       wait (default 30 s) until the sink's Nth connection (1, 2, ...) has ended; print its
#       record: {"conn", "bytes", "seconds" (accept to end), "first_to_last_s", "mb_per_s", "file"}
#   scripts/netlink.sh status STATE_DIR     the namespace, its qdisc with counters, the servers
#   scripts/netlink.sh stop STATE_DIR       kill the servers and everything left in the
#                                           namespace, delete it, remove the sink's data
#
# RATE is in tc's units: 1gbit, 10gbit, 800mbit, or 100mbps (megabytes per second). The default
# burst, 256kb, is what a 1GbE switch port buffers; --delay needs the kernel's netem qdisc and
# delays each packet by MS one way (so the round trip grows by 2 x MS). --sink keep (default)
# writes each connection's bytes to STATE_DIR/sink/conn-N.bin; discard only counts them.
# Needs root (ip netns). Exit status 77 when a namespace cannot be made (not root). Every wait
# is bounded; callers should `trap 'scripts/netlink.sh stop STATE_DIR' EXIT`.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${CACHE:-$ROOT/.cache}"
export CACHE

log() { echo "netlink.sh: $*" >&2; }
die() {
    log "$*"
    exit 1
}

# The sink: accepts connections on 127.0.0.1 (a port the kernel picks), one thread each, and
# records per connection the bytes and the times of accept, first and last byte.
SINK_PY='
import json, os, socket, sys, threading, time

port_file, out_dir, mode = sys.argv[1:4]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(64)
with open(port_file + ".tmp", "w") as f:
    f.write("%d\n" % srv.getsockname()[1])
os.rename(port_file + ".tmp", port_file)


def put(name, text):
    path = os.path.join(out_dir, name)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def serve(conn, n, t_accept):
    path = os.path.join(out_dir, "conn-%d.bin" % n)
    out = open(path, "wb") if mode == "keep" else None
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    total, t_first, error = 0, None, None
    try:
        while True:
            k = conn.recv_into(buf)
            if k == 0:
                break
            if t_first is None:
                t_first = time.monotonic()
            total += k
            if out:
                out.write(view[:k])
    except OSError as e:
        error = str(e)
    t_last = time.monotonic()
    conn.close()
    if out:
        out.close()
    span = t_last - t_first if t_first is not None else 0.0
    rec = {
        "conn": n,
        "bytes": total,
        "seconds": round(t_last - t_accept, 6),
        "first_to_last_s": round(span, 6),
        "mb_per_s": round(total / span / 1e6, 3) if span > 0 else None,
        "file": path if out else None,
        "error": error,
    }
    line = json.dumps(rec)
    put("conn-%d.json" % n, line + "\n")
    with open(os.path.join(out_dir, "sink.log"), "a") as f:
        f.write(line + "\n")


n = 0
while True:
    conn, _ = srv.accept()
    t = time.monotonic()
    n += 1
    put("conn-%d.open" % n, "")
    threading.Thread(target=serve, args=(conn, n, t), daemon=True).start()
'

need() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed (scripts/deps.sh installs iproute2 and socat)"
    done
}

ns_of() { cat "$1/netns" 2>/dev/null || true; }

# Kills a pid and waits up to 5 s for it, then SIGKILL.
kill_wait() {
    local pid="$1"
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 20); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.25
    done
    kill -9 "$pid" 2>/dev/null || true
}

start() {
    local state="$1"
    shift
    local rate=1gbit burst=256kb delay="" mtu="" sink=keep minio=1
    while [[ $# -gt 0 ]]; do
        case "$1" in
        --rate) rate="${2:?--rate needs a value}"; shift 2 ;;
        --burst) burst="${2:?--burst needs a value}"; shift 2 ;;
        --delay) delay="${2:?--delay needs a value in ms}"; shift 2 ;;
        --mtu) mtu="${2:?--mtu needs a value}"; shift 2 ;;
        --sink) sink="${2:?--sink needs keep or discard}"; shift 2 ;;
        --no-minio) minio=0; shift ;;
        *) die "start: unknown option $1" ;;
        esac
    done
    [[ "$sink" == keep || "$sink" == discard ]] || die "--sink is keep or discard, not $sink"
    [[ -z "$delay" || "$delay" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--delay is in milliseconds, not $delay"
    need ip tc python3 curl
    mkdir -p "$state"
    state="$(cd "$state" && pwd)"
    local old
    old="$(ns_of "$state")"
    if [[ -n "$old" && -e "/run/netns/$old" ]]; then
        die "$state already runs namespace $old; stop it first"
    fi

    local ns err
    ns="adz-nl-$$-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
    if ! err="$(ip netns add "$ns" 2>&1)"; then
        log "cannot create a network namespace (ip netns add: $err)."
        log "The shaped link needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and a kernel with network namespaces."
        exit 77
    fi
    echo "$ns" >"$state/netns"
    # From here on, a failure tears down what was made.
    trap 'stop "'"$state"'" >/dev/null 2>&1 || true' EXIT

    ip netns exec "$ns" ip link set lo up
    if [[ -n "$mtu" ]]; then ip netns exec "$ns" ip link set lo mtu "$mtu"; fi
    local bytes_per_s=""
    if [[ "$rate" != none ]]; then
        ip netns exec "$ns" tc qdisc add dev lo root handle 1: tbf rate "$rate" burst "$burst" latency 20ms ||
            die "tc refused the token bucket (rate $rate, burst $burst)"
        bytes_per_s="$(ip netns exec "$ns" tc -j qdisc show dev lo |
            python3 -c 'import json,sys; print(next(q["options"]["rate"] for q in json.load(sys.stdin) if q["kind"] == "tbf"))')"
    fi
    if [[ -n "$delay" ]]; then
        local parent=(root)
        [[ "$rate" != none ]] && parent=(parent 1:1)
        ip netns exec "$ns" tc qdisc add dev lo "${parent[@]}" handle 10: netem delay "${delay}ms" 2>/dev/null ||
            die "--delay needs the kernel's netem qdisc (sch_netem), which this kernel does not have"
    fi

    # The sink, run by the real interpreter (not a shim) so that its pid is the one to kill.
    local py
    py="$(python3 -c 'import sys; print(sys.executable)')"
    mkdir -p "$state/sink"
    rm -f "$state/sink/"*
    ip netns exec "$ns" "$py" -c "$SINK_PY" "$state/sink/port" "$state/sink" "$sink" \
        >>"$state/sink.err" 2>&1 &
    echo $! >"$state/sink.pid"
    for _ in $(seq 1 40); do # up to 10 s
        [[ -s "$state/sink/port" ]] && break
        kill -0 "$(cat "$state/sink.pid")" 2>/dev/null || die "the sink died: $(tail -3 "$state/sink.err")"
        sleep 0.25
    done
    [[ -s "$state/sink/port" ]] || die "the sink did not start within 10 s"
    local port
    port="$(cat "$state/sink/port")"

    if [[ "$minio" == 1 ]]; then
        NETNS="$ns" "$ROOT/scripts/minio.sh" start "$state/minio" || die "MinIO did not start in $ns"
    fi

    {
        echo "export ADZ_NETNS=$ns"
        echo "export ADZ_LINK_RATE=$rate"
        echo "export ADZ_LINK_BYTES_PER_S=$bytes_per_s"
        echo "export ADZ_LINK_DELAY_MS=$delay"
        echo "export ADZ_SINK_HOST=127.0.0.1"
        echo "export ADZ_SINK_PORT=$port"
        echo "export ADZ_SINK_ADDR=127.0.0.1:$port"
        echo "export ADZ_SINK_DIR=$state/sink"
        if [[ "$minio" == 1 ]]; then cat "$state/minio/env"; fi
    } >"$state/env"
    trap - EXIT
    local with_minio=""
    [[ "$minio" == 1 ]] && with_minio="; MinIO at $(grep AWS_ENDPOINT_URL "$state/minio/env" | cut -d= -f2)"
    log "namespace $ns: lo shaped to ${rate}${delay:+, +${delay} ms each way}; sink at 127.0.0.1:$port ($sink)$with_minio"
    log "run commands in it with: scripts/netlink.sh exec $state -- CMD; stop it with: scripts/netlink.sh stop $state"
}

exec_in() {
    local state="$1"
    shift
    [[ "${1:-}" == -- ]] && shift
    [[ $# -gt 0 ]] || die "exec: no command given"
    local ns
    ns="$(ns_of "$state")"
    [[ -n "$ns" && -e "/run/netns/$ns" && -f "$state/env" ]] || die "no running link in $state (scripts/netlink.sh start $state)"
    # shellcheck disable=SC2016 # expanded by the inner bash, after the env is sourced
    exec ip netns exec "$ns" bash -c '. "$0" && exec "$@"' "$state/env" "$@"
}

sink_wait() {
    local state="$1" n="$2" seconds="${3:-30}"
    [[ "$n" =~ ^[0-9]+$ ]] || die "sink-wait: N is a connection number (1, 2, ...), not $n"
    for _ in $(seq 1 $((seconds * 10))); do
        if [[ -f "$state/sink/conn-$n.json" ]]; then
            cat "$state/sink/conn-$n.json"
            return 0
        fi
        sleep 0.1
    done
    die "the sink's connection $n did not end within $seconds s"
}

status() {
    local state="$1" ns
    ns="$(ns_of "$state")"
    if [[ -z "$ns" || ! -e "/run/netns/$ns" ]]; then
        echo "no running link in $state"
        return 1
    fi
    echo "namespace $ns"
    ip netns exec "$ns" tc -s qdisc show dev lo
    local pid
    pid="$(cat "$state/sink.pid" 2>/dev/null || true)"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        echo "sink pid $pid at 127.0.0.1:$(cat "$state/sink/port"), $(find "$state/sink" -name 'conn-*.json' | wc -l) connections ended"
    else
        echo "sink not running"
    fi
    pid="$(cat "$state/minio/pid" 2>/dev/null || true)"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        echo "MinIO pid $pid at 127.0.0.1:$(cat "$state/minio/port")"
    else
        echo "MinIO not running"
    fi
}

# Idempotent; never fails, so that it can run from traps.
stop() {
    local state="$1" ns pid
    [[ -d "$state" ]] || return 0
    if [[ -f "$state/sink.pid" ]]; then
        kill_wait "$(cat "$state/sink.pid")"
        rm -f "$state/sink.pid"
    fi
    if [[ -d "$state/minio" ]]; then
        "$ROOT/scripts/minio.sh" stop "$state/minio" || true
    fi
    ns="$(ns_of "$state")"
    if [[ -n "$ns" && -e "/run/netns/$ns" ]]; then
        # Whatever `exec` left running in the namespace is ours: end it by pid.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill_wait "$pid"; done
        ip netns del "$ns" 2>/dev/null || log "could not delete namespace $ns"
    fi
    rm -f "$state/netns" "$state/env" "$state/sink/"*.bin
}

cmd="${1:-}"
state="${2:-}"
if [[ -z "$cmd" || -z "$state" ]]; then
    echo "usage: scripts/netlink.sh start|stop|exec|status|sink-wait STATE_DIR ... (see the script's header)" >&2
    exit 2
fi
shift 2
case "$cmd" in
start) start "$state" "$@" ;;
stop) stop "$state" ;;
exec) exec_in "$state" "$@" ;;
status) status "$state" ;;
sink-wait) sink_wait "$state" "${1:?usage: netlink.sh sink-wait STATE_DIR N [SECONDS]}" "${2:-30}" ;;
*)
    echo "usage: scripts/netlink.sh start|stop|exec|status|sink-wait STATE_DIR ... (see the script's header)" >&2
    exit 2
    ;;
esac
