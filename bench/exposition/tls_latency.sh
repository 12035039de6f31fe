#!/bin/sh
# /metrics latency over TLS against plain HTTP, with curl as the scraper: `joules serve --backend
# sim --sim-gpus 8` plain, with TLS (--web-config-file, a P-256 certificate made here with
# openssl), and with TLS and basic auth (bcrypt cost 10); and, when BASELINE is given, another
# joules binary plain (the plain path before and after a change).
#
# Each server gets N scrapes on one keep-alive connection (as Prometheus scrapes), then N/5 on a
# new connection each (`Connection: close`, no TLS session reuse: a full handshake every time).
# Latency is curl's time_total of each transfer (request to last byte; connect and handshake
# included on a new connection), with `Accept-Encoding: gzip` as Prometheus sends it.  Prints
# median and p99 per server and mode.
#
# Usage: bench/exposition/tls_latency.sh JOULES [N] [BASELINE]    (default N: 1000)
set -eu
joules=$1
n=${2:-1000}
baseline=${3:-}
tmp=$(mktemp -d)
pids=""
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

cd "$tmp"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key \
  -out server.pem -days 2 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 2>/dev/null
printf 'tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n' >tls.yml
# bcrypt of "bench", cost 10.
hash=$(python3 -W ignore -c 'import crypt; print(crypt.crypt("bench", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))')
printf 'tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\nbasic_auth_users:\n  bench: %s\n' \
  "$hash" >auth.yml

# start NAME BINARY [ARGS...]: serves on a free port, prints its URL into NAME.url
start() {
  name=$1 bin=$2
  shift 2
  "$bin" serve --backend sim --sim-gpus 8 --listen 127.0.0.1:0 "$@" 2>"$name.log" &
  pids="$pids $!"
  i=0
  while ! grep -q '://' "$name.log" 2>/dev/null; do
    i=$((i + 1))
    [ $i -gt 100 ] && { cat "$name.log" >&2; exit 1; }
    sleep 0.1
  done
  grep -o 'https\?://[^ ]*/metrics' "$name.log" >"$name.url"
}

# measure NAME COUNT [CURL ARGS...]: COUNT transfers; prints "median p99" in ms
measure() {
  name=$1 count=$2
  shift 2
  url=$(cat "$name.url")
  : >urls
  i=0
  while [ $i -lt "$count" ]; do
    printf 'url = "%s"\noutput = "/dev/null"\n' "$url" >>urls
    i=$((i + 1))
  done
  curl -sS --cacert server.pem -H 'Accept-Encoding: gzip' -w '%{http_code} %{time_total}\n' \
    -K urls "$@" >times
  python3 - "$name" "$*" <<'PY'
import statistics, sys
rows = [line.split() for line in open("times")]
assert all(code == "200" for code, _ in rows), set(code for code, _ in rows)
t = sorted(float(s) * 1000 for _, s in rows)
p99 = t[min(len(t) - 1, int(0.99 * len(t)))]
mode = "new connection" if "close" in sys.argv[2] else "keep-alive"
print(f"{sys.argv[1]:<12} {mode:<15} n={len(t):<5} median {statistics.median(t):7.3f} ms  p99 {p99:7.3f} ms")
PY
}

start plain "$joules"
start tls "$joules" --web-config-file tls.yml
start tls+auth "$joules" --web-config-file auth.yml
[ -n "$baseline" ] && start baseline "$baseline"
sleep 1
for name in plain tls tls+auth ${baseline:+baseline}; do
  auth=""
  [ "$name" = tls+auth ] && auth="-u bench:bench"
  # shellcheck disable=SC2086
  measure "$name" "$n" $auth
  # shellcheck disable=SC2086
  measure "$name" $((n / 5)) $auth -H 'Connection: close' --no-sessionid
done
