#!/usr/bin/env bash
# A throwaway MinIO server on 127.0.0.1 for the S3 tests.
#
#   scripts/minio.sh install          build MinIO into $CACHE/go/bin unless it is there
#   scripts/minio.sh start STATE_DIR  start it on a free loopback port with a temporary data
#                                     directory, create the test bucket, and write
#                                     STATE_DIR/env (source it: endpoint, keys, bucket, and
#                                     ADZ_MINIO_DATA, the data directory, for the tests that
#                                     damage an object on the server's disk)
#   scripts/minio.sh stop STATE_DIR   stop that server and remove its data
#   scripts/minio.sh kill STATE_DIR   kill it as a crash would (SIGKILL), keeping its data
#   scripts/minio.sh restart STATE_DIR  start it again on the same port and data
#   scripts/minio.sh start-dist STATE_DIR  a 4-node erasure-coded deployment instead: 4 server
#                                     processes on free loopback ports, 2 drives each (8 drives,
#                                     one erasure set, parity EC:4), the bucket created through
#                                     node 1; STATE_DIR/env as for start, plus ADZ_MINIO_NODES
#                                     (the 4 ports; AWS_ENDPOINT_URL is node 1)
#   scripts/minio.sh kill-node STATE_DIR I  SIGKILL node I (1-4) of a start-dist deployment
#   (stop also stops every node of a start-dist deployment)
#
# Nothing listens beyond 127.0.0.1. Every wait is bounded. With NETNS=NAME set, the server, its
# port probe and its health checks run inside that network namespace (`ip netns exec`), so its
# 127.0.0.1 is the namespace's own loopback (scripts/netlink.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${CACHE:-$ROOT/.cache}"
MINIO="${MINIO:-$CACHE/go/bin/minio}"
ACCESS_KEY="${ADZ_MINIO_USER:-adz-test-user}"
SECRET_KEY="${ADZ_MINIO_PASSWORD:-adz-test-password}"
BUCKET="${ADZ_S3_BUCKET:-adz-test}"

log() { echo "minio.sh: $*" >&2; }

# The prefix that runs a command in $NETNS when it is set; `ip netns exec` execs the command, so
# $! stays the server's pid.
NSX=()
if [[ -n "${NETNS:-}" ]]; then NSX=(ip netns exec "$NETNS"); fi

install() {
    if [[ -x "$MINIO" ]]; then
        return 0
    fi
    if ! command -v go >/dev/null 2>&1; then
        log "go is not installed; it is needed once to build MinIO (apt-get install golang-go, or https://go.dev)"
        exit 1
    fi
    log "building MinIO with go install (about 5 minutes the first time; cached in $(dirname "$MINIO"))"
    mkdir -p "$(dirname "$MINIO")"
    GOBIN="$(dirname "$MINIO")" timeout 3600 go install github.com/minio/minio@latest
    [[ -x "$MINIO" ]] || { log "go install finished but $MINIO is missing"; exit 1; }
}

# Starts MinIO with the port, console port and data dir recorded in STATE_DIR and waits until it
# answers (up to 60 s); fails if it does not.
launch() {
    local state="$1" port console data
    port="$(cat "$state/port")"
    console="$(cat "$state/console")"
    data="$(cat "$state/data")"
    MINIO_ROOT_USER="$ACCESS_KEY" MINIO_ROOT_PASSWORD="$SECRET_KEY" \
        MINIO_BROWSER=off MINIO_UPDATE=off MINIO_CI_CD=1 \
        "${NSX[@]}" "$MINIO" server --quiet --address "127.0.0.1:$port" \
        --console-address "127.0.0.1:$console" "$data" >>"$state/minio.log" 2>&1 &
    echo $! >"$state/pid"
    local i
    for i in $(seq 1 120); do
        if "${NSX[@]}" curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/minio/health/live" 2>/dev/null; then
            return 0
        fi
        kill -0 "$(cat "$state/pid")" 2>/dev/null || return 1
        sleep 0.5
    done
    return 1
}

free_port() {
    "${NSX[@]}" python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

start() {
    local state="$1"
    install
    mkdir -p "$state"
    local data port console endpoint
    data="$(mktemp -d "${TMPDIR:-/tmp}/adz-minio-data.XXXXXX")"
    endpoint=""
    # A port found free can be taken before MinIO binds it: try a few.
    for _ in 1 2 3; do
        port="$(free_port)"
        console="$(free_port)"
        echo "$port" >"$state/port"
        echo "$console" >"$state/console"
        echo "$data" >"$state/data"
        if launch "$state"; then
            endpoint="http://127.0.0.1:$port"
        fi
        [[ -n "$endpoint" ]] && break
        log "MinIO did not come up on port $port; log:"
        tail -5 "$state/minio.log" >&2 || true
        kill "$(cat "$state/pid")" 2>/dev/null || true
    done
    if [[ -z "$endpoint" ]]; then
        stop "$state"
        log "could not start MinIO"
        exit 1
    fi
    make_bucket "$state" "$endpoint" || { stop "$state"; exit 1; }
    write_env "$state" "$endpoint" "$data" "export ADZ_MINIO_BIN=$MINIO"
    log "MinIO at $endpoint (pid $(cat "$state/pid")), bucket $BUCKET; env in $state/env"
}

# Creates the test bucket through ENDPOINT with a signed PUT (curl speaks AWS SigV4); 409 (it
# exists) is fine.
# write_env STATE ENDPOINT DATA EXTRA_LINE: the environment the tests source from STATE/env.
write_env() {
    cat >"$1/env" <<EOF
export AWS_ENDPOINT_URL=$2
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_REGION=us-east-1
export AWS_ALLOW_HTTP=true
export ADZ_S3_BUCKET=$BUCKET
export ADZ_MINIO_DATA=$3
$4
EOF
}

make_bucket() {
    local state="$1" endpoint="$2" code
    code="$("${NSX[@]}" curl -sS -o "$state/mkbucket.out" -w '%{http_code}' --max-time 20 -X PUT \
        --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ACCESS_KEY:$SECRET_KEY" \
        "$endpoint/$BUCKET")"
    if [[ "$code" != 200 && "$code" != 409 ]]; then
        log "creating bucket $BUCKET failed with HTTP $code: $(cat "$state/mkbucket.out")"
        return 1
    fi
}

# 4 nodes x 2 drives on loopback. Every node gets the same endpoint list and serves the drives
# of its own port; MINIO_CI_CD=1 lets the drives share the root disk. In a container (with
# /.dockerenv) MinIO waits forever for a loopback endpoint "to resolve to a valid IP";
# _MINIO_SERVER_LOCAL=HOST:PORT (its own switch for that case, cmd/endpoint.go) names the node's
# own endpoint instead. Waits up to 60 s for every node to answer with write quorum.
start_dist() {
    local state="$1"
    install
    mkdir -p "$state"
    local data i port endpoints=() ports=()
    data="$(mktemp -d "${TMPDIR:-/tmp}/adz-minio-dist.XXXXXX")"
    echo "$data" >"$state/data"
    for i in 1 2 3 4; do
        port="$(free_port)"
        ports+=("$port")
        echo "$port" >"$state/node$i.port"
        endpoints+=("http://127.0.0.1:$port$data/n$i/d1" "http://127.0.0.1:$port$data/n$i/d2")
    done
    for i in 1 2 3 4; do
        MINIO_ROOT_USER="$ACCESS_KEY" MINIO_ROOT_PASSWORD="$SECRET_KEY" \
            MINIO_BROWSER=off MINIO_UPDATE=off MINIO_CI_CD=1 \
            _MINIO_SERVER_LOCAL="127.0.0.1:${ports[$((i - 1))]}" \
            "${NSX[@]}" "$MINIO" server --quiet --address "127.0.0.1:${ports[$((i - 1))]}" \
            --console-address "127.0.0.1:$(free_port)" "${endpoints[@]}" \
            >>"$state/node$i.log" 2>&1 &
        echo $! >"$state/node$i.pid"
    done
    local deadline=$((SECONDS + 60)) up=0
    while ((SECONDS < deadline)); do
        up=0
        for i in 1 2 3 4; do
            if ! kill -0 "$(cat "$state/node$i.pid")" 2>/dev/null; then
                log "node $i exited; its log:"
                tail -20 "$state/node$i.log" >&2
                stop "$state"
                exit 1
            fi
            if "${NSX[@]}" curl -fsS -o /dev/null --max-time 2 \
                "http://127.0.0.1:${ports[$((i - 1))]}/minio/health/cluster" 2>/dev/null; then
                up=$((up + 1))
            fi
        done
        ((up == 4)) && break
        sleep 0.5
    done
    if ((up != 4)); then
        log "the 4-node deployment did not reach write quorum in 60 s ($up nodes ready); node 1 log:"
        tail -20 "$state/node1.log" >&2
        stop "$state"
        exit 1
    fi
    local endpoint="http://127.0.0.1:${ports[0]}"
    make_bucket "$state" "$endpoint" || { stop "$state"; exit 1; }
    write_env "$state" "$endpoint" "$data" "export ADZ_MINIO_NODES=\"${ports[*]}\""
    log "4-node MinIO on ports ${ports[*]}, bucket $BUCKET; env in $state/env"
}

kill_node() {
    local state="$1" i="$2" pid
    [[ -f "$state/node$i.pid" ]] || { log "no node $i in $state"; exit 1; }
    pid="$(cat "$state/node$i.pid")"
    kill -9 "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.25
    done
    log "node $i (pid $pid) did not die"
    exit 1
}

crash() {
    local state="$1"
    if [[ -f "$state/pid" ]]; then
        kill -9 "$(cat "$state/pid")" 2>/dev/null || true
        local i
        for i in $(seq 1 40); do
            kill -0 "$(cat "$state/pid")" 2>/dev/null || break
            sleep 0.25
        done
    fi
}

restart() {
    local state="$1"
    crash "$state"
    launch "$state" || { log "MinIO did not come back; log:"; tail -5 "$state/minio.log" >&2; exit 1; }
    log "MinIO restarted at http://127.0.0.1:$(cat "$state/port") (pid $(cat "$state/pid"))"
}

stop() {
    local state="$1" pidfile pids=() pid
    for pidfile in "$state/pid" "$state"/node?.pid; do
        [[ -f "$pidfile" ]] || continue
        pids+=("$(cat "$pidfile")")
        rm -f "$pidfile"
    done
    if ((${#pids[@]})); then
        kill "${pids[@]}" 2>/dev/null || true
        local i
        for i in $(seq 1 40); do # up to 10 s, then force
            kill -0 "${pids[@]}" 2>/dev/null || break
            sleep 0.25
        done
        for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    fi
    if [[ -f "$state/data" ]]; then
        rm -rf "$(cat "$state/data")"
        rm -f "$state/data"
    fi
    rm -f "$state/env"
}

case "${1:-}" in
install) install ;;
start) start "${2:?usage: minio.sh start STATE_DIR}" ;;
stop) stop "${2:?usage: minio.sh stop STATE_DIR}" ;;
kill) crash "${2:?usage: minio.sh kill STATE_DIR}" ;;
restart) restart "${2:?usage: minio.sh restart STATE_DIR}" ;;
start-dist) start_dist "${2:?usage: minio.sh start-dist STATE_DIR}" ;;
kill-node) kill_node "${2:?usage: minio.sh kill-node STATE_DIR I}" "${3:?usage: minio.sh kill-node STATE_DIR I}" ;;
*)
    echo "usage: scripts/minio.sh install | start|start-dist|stop|kill|restart STATE_DIR | kill-node STATE_DIR I" >&2
    exit 2
    ;;
esac
