#!/usr/bin/env bash
# `make cluster`: a local three-node Rollcall cluster (PROTOCOL §9, docs/cluster.md).
#   redis-server on 127.0.0.1:6390 (its own folder under .build-cluster/, not the system service),
#   three rollcall nodes on 127.0.0.1:8081-8083 with config.cluster.json,
#   nginx on 127.0.0.1:8080, round-robin over the nodes (WebSocket and HTTP).
# Prints the URLs, then runs until Ctrl-C, which stops everything it started (and only that).
# Variables: ROLLCALL_BINARY (default .build/debug/rollcall), CLUSTER_CONFIG
# (config.cluster.json), CLUSTER_DIR (.build-cluster), NGINX (nginx, else /usr/sbin/nginx).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${CLUSTER_DIR:-$root/.build-cluster}
binary=${ROLLCALL_BINARY:-$root/.build/debug/rollcall}
config=${CLUSTER_CONFIG:-$root/config.cluster.json}
nginx=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
redis_port=6390
proxy_port=8080
node_ports=(8081 8082 8083)

for tool in redis-server redis-cli "$nginx" "$binary"; do
    command -v "$tool" >/dev/null || { echo "cluster: $tool not found (make build installs the packages)" >&2; exit 1; }
done
for port in "$redis_port" "$proxy_port" "${node_ports[@]}"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "cluster: 127.0.0.1:$port is already in use" >&2; exit 1
    fi
done

mkdir -p "$dir/redis" "$dir/nginx" "$dir/logs"
pids=()
stop_all() {
    trap - EXIT INT TERM
    echo; echo "cluster: stopping"
    # nginx first, then the nodes (SIGTERM: close 1001, exit within 5 s), Redis last.
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
}
trap stop_all EXIT
trap 'stop_all; exit 0' INT TERM

wait_for() {  # wait_for DESCRIPTION COMMAND...: up to 10 s
    local what=$1; shift
    for _ in $(seq 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
    echo "cluster: $what did not come up; logs in $dir/logs" >&2; exit 1
}

redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no --daemonize no \
    --dir "$dir/redis" --logfile "$dir/logs/redis.log" &
pids+=($!)
wait_for "redis-server on $redis_port" redis-cli -h 127.0.0.1 -p "$redis_port" ping

cd "$root"  # http.staticDir (examples/web) is relative
for index in "${!node_ports[@]}"; do
    port=${node_ports[index]}
    "$binary" --config "$config" --port "$port" >"$dir/logs/n$((index + 1)).log" 2>&1 &
    pids+=($!)
done
for port in "${node_ports[@]}"; do
    wait_for "rollcall on $port" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
done

upstreams=$(for port in "${node_ports[@]}"; do printf '        server 127.0.0.1:%s;\n' "$port"; done)
cat >"$dir/nginx/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $dir/nginx/nginx.pid;
error_log $dir/logs/nginx-error.log warn;
events { worker_connections 1024; }
http {
    access_log $dir/logs/nginx-access.log;
    client_body_temp_path $dir/nginx/client_body;
    proxy_temp_path $dir/nginx/proxy;
    fastcgi_temp_path $dir/nginx/fastcgi;
    uwsgi_temp_path $dir/nginx/uwsgi;
    scgi_temp_path $dir/nginx/scgi;
    map \$http_upgrade \$connection_upgrade { default upgrade; '' close; }
    upstream rollcall {
$upstreams
    }
    server {
        listen 127.0.0.1:$proxy_port;
        location / {
            proxy_pass http://rollcall;
            proxy_http_version 1.1;
            proxy_set_header Upgrade \$http_upgrade;
            proxy_set_header Connection \$connection_upgrade;
            proxy_set_header Host \$host;
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
            proxy_buffering off;
        }
    }
}
CONF
"$nginx" -p "$dir/nginx/" -c "$dir/nginx/nginx.conf" -e "$dir/logs/nginx-error.log" &
pids+=($!)
wait_for "nginx on $proxy_port" bash -c "exec 3<>/dev/tcp/127.0.0.1/$proxy_port"

cat <<TEXT
cluster: up (logs in $dir/logs)
  clients (nginx, round-robin):  ws://127.0.0.1:$proxy_port/v1   demo: http://127.0.0.1:$proxy_port/
  node n1:                       ws://127.0.0.1:${node_ports[0]}/v1
  node n2:                       ws://127.0.0.1:${node_ports[1]}/v1
  node n3:                       ws://127.0.0.1:${node_ports[2]}/v1
  redis:                         redis-cli -p $redis_port
  gauges:                        curl -s 127.0.0.1:${node_ports[0]}/metrics | grep -E 'rollcall_(cluster_nodes|redis_connected)'
Ctrl-C stops everything.
TEXT
# Until Ctrl-C, or until one of the processes ends on its own.
wait -n "${pids[@]}" || true
echo "cluster: a process ended on its own; see $dir/logs" >&2
