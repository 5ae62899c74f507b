#!/usr/bin/env bash
# Start a real Apache ZooKeeper (Debian's `zookeeper` package) standalone on loopback, for
# scripts/foreign-clients.sh and scripts/compare-states.sh (--server apache).
# usage: zk-standalone.sh PORT DATADIR   -> runs in foreground; background it yourself.
set -euo pipefail
PORT=${1:-2181}; DIR=${2:-$(mktemp -d)}
mkdir -p "$DIR/data"
cat > "$DIR/zoo.cfg" <<CFG
tickTime=2000
dataDir=$DIR/data
clientPort=$PORT
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
minSessionTimeout=1000
maxSessionTimeout=60000
CFG
CP="/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"
exec java -Xmx512m -Dzookeeper.snapshot.trust.empty=true -cp "$CP" org.apache.zookeeper.server.ZooKeeperServerMain "$DIR/zoo.cfg"
