#!/usr/bin/env bash
# kazoo's own reconfiguration tests (kazoo.tests.test_client.TestReconfig: test_no_super_auth,
# test_add_remove_observer, test_bad_input) against Debian's Apache ZooKeeper 3.8, started by
# kazoo's own test harness (kazoo/testing/harness.py): a 3-server ensemble with
# reconfigEnabled=true, 4lw.commands.whitelist=* and the super user super:test. Every test
# must pass and none may be skipped (TestReconfig skips itself on a server older than 3.5).
#
# usage: scripts/kazoo-reconfig.sh
#
# kazoo's harness cannot use servers it did not start; it is driven by its environment:
#   ZOOKEEPER_CLASSPATH   the server's class path (Debian's jars in /usr/share/java)
#   ZOOKEEPER_VERSION     3.8.0 (the harness turns reconfig on and adds the super user for >= 3.5)
#   ZOOKEEPER_PORT_OFFSET where its ports start: server i (0..2) takes OFFSET+10i .. OFFSET+10i+3
#                         (client, election, quorum, admin); picked free here (its default,
#                         20000, is fixed)
#   TRAVIS                unset (it would make the tests trust ZOOKEEPER_VERSION instead of
#                         asking the server)
# The servers listen on every interface (kazoo's zoo.cfg has no clientPortAddress) and
# "localhost" for the quorum.
#
# Needs: java (17), Debian's zookeeper jars, and for /usr/bin/python3: kazoo, pytest and mock
# (apt-get install zookeeper python3-kazoo python3-pytest python3-mock).
# The run is bounded (RUN_TIMEOUT s, default 300); whatever it started is killed on exit.
# Prints "kazoo-reconfig: N passed, N failed, N skipped" and the time; exits 0 only when
# every test passed and none was skipped. KEEP_WORK=1 keeps the work directory (server logs).
set -euo pipefail

PY=/usr/bin/python3
J=/usr/share/java
RUN_TIMEOUT=${RUN_TIMEOUT:-300}

log() { printf '[kazoo-reconfig] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

[ -x "$PY" ] || die "$PY not found"
for m in kazoo pytest mock; do
  "$PY" -c "import $m" 2>/dev/null ||
    die "python module $m missing for $PY (apt-get install python3-kazoo python3-pytest python3-mock)"
done
[ -f "$J/zookeeper.jar" ] || die "$J/zookeeper.jar missing (apt-get install zookeeper)"
command -v java >/dev/null || die "no java on PATH"

WORK=$(mktemp -d -t kazoo-reconfig.XXXXXX)
PGID=""
cleanup() {
  if [ -n "$PGID" ]; then
    kill -- "-$PGID" 2>/dev/null || true
  fi
  if [ "${KEEP_WORK:-}" = 1 ]; then
    log "work directory kept: $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

# A port offset whose 12 ports are free now, on every interface and on loopback.
OFFSET=$("$PY" - <<'EOF'
import random, socket, sys
def free(port):
    for host in ("0.0.0.0", "127.0.0.1"):
        s = socket.socket()
        try:
            s.bind((host, port))
        except OSError:
            return False
        finally:
            s.close()
    return True
rng = random.Random()
for _ in range(200):
    base = rng.randrange(20000, 60000, 10)
    if all(free(base + 10 * i + k) for i in range(3) for k in range(4)):
        print(base)
        sys.exit(0)
sys.exit("no free port range found")
EOF
) || die "no free ports for kazoo's servers"

export ZOOKEEPER_CLASSPATH="$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar"
export ZOOKEEPER_VERSION=3.8.0
export ZOOKEEPER_PORT_OFFSET=$OFFSET
export TMPDIR=$WORK
unset TRAVIS ZOOKEEPER_PATH ZOOKEEPER_OBSERVER_START_ID ZOOKEEPER_JAAS_AUTH ZOOKEEPER_CLUSTER_SIZE || true
log "kazoo $("$PY" -c 'import kazoo.version as v; print(v.__version__)' 2>/dev/null || echo '?'), ZooKeeper $ZOOKEEPER_VERSION (Debian's jars), ports from $OFFSET"

start=$(date +%s.%N)
cd "$WORK"
# In a process group of its own (setsid), so that the JVMs kazoo starts die with it on a timeout.
set +e
setsid timeout --kill-after=10 "$RUN_TIMEOUT" "$PY" -m pytest -p no:cacheprovider \
  --pyargs kazoo.tests.test_client -k TestReconfig -v -rs \
  --junitxml="$WORK/junit.xml" >"$WORK/pytest.log" 2>&1 &
PGID=$!
wait "$PGID"
status=$?
set -e
PGID=""
elapsed=$("$PY" -c "import time; print(f'{time.time() - $start:.1f}')")
cat "$WORK/pytest.log" >&2

[ -f "$WORK/junit.xml" ] || die "pytest wrote no report (exit $status)"
read -r tests failed skipped <<<"$("$PY" - "$WORK/junit.xml" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
k = sum(int(s.get("skipped", 0)) for s in suites)
print(t, f, k)
EOF
)"
passed=$((tests - failed - skipped))
echo "kazoo-reconfig: $passed passed, $failed failed, $skipped skipped"
log "kazoo's TestReconfig on ZooKeeper $ZOOKEEPER_VERSION: $tests tests in ${elapsed}s (pytest exit $status)"
[ "$status" -eq 0 ] || die "pytest exited $status"
[ "$tests" -gt 0 ] || die "no test ran"
[ "$failed" -eq 0 ] || die "$failed failed"
[ "$skipped" -eq 0 ] || die "$skipped skipped"
log "OK"
