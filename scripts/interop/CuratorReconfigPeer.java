import java.io.FileOutputStream;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.CuratorZookeeperClient;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.HostProvider;
import org.apache.zookeeper.client.StaticHostProvider;
import org.apache.zookeeper.data.Stat;

/**
 * One Curator 5.4 service for the reconfiguration interop program (scripts/reconfig-interop.sh):
 * an {@link InterProcessMutex} contender and a {@link LeaderLatch} participant on one client, with
 * Curator's EnsembleTracker on (its default) or off ({@code ensembleTracker(false)}), logging where
 * the client is connected every 100 ms while the ensemble's servers are replaced. The Rust twin is
 * examples/reconfig_peer.rs: same arguments, same lines.
 *
 * <p>Usage: {@code CuratorReconfigPeer CONNECT LOCK_PATH LATCH_PATH NAME LOCK_LOG LATCH_LOG CONN_LOG
 * CONTROL_DIR}
 *
 * <p>Until CONTROL_DIR/NAME.close appears: the lock is acquired (2 s a try), held HOLD_MS and
 * released, again and again; LOCK_LOG gets {@code NAME START <epoch ns>} and {@code NAME END <epoch
 * ns>} around each critical section; an error goes to CONN_LOG ({@code NAME ERR <us> lock <error>})
 * and the loop goes on after 200 ms. The latch (id NAME) logs to LATCH_LOG {@code NAME JOIN <us>
 * java latch} once first queued, {@code NAME LEADER <us> <czxid of our node> <sequence>} from
 * isLeader() (after checking hasLeadership()), {@code NAME NOTLEADER <us> listener}, {@code NAME
 * CLOSING <us>} and {@code NAME CLOSED <us>}. A leadership lasts LEAD_MS: then the participant
 * logs {@code NAME NOTLEADER <us> rotate}, closes its latch and joins again with a new one, at the
 * back of the queue (a leadership told while that latch closed ends with {@code NAME NOTLEADER
 * <us> retired} once the close returned). Every 100 ms CONN_LOG gets {@code NAME CONN <us> server=<host:port|->
 * list=<the ZooKeeper handle's server list> session=<hex> state=<ZooKeeper state> cs=<Curator's
 * connection string>}.
 *
 * <p>How the monitor looks without disturbing what it measures: {@code
 * getZookeeperClient().getZooKeeper()} is not called, since while disconnected it applies a
 * pending connection string (ConnectionState.checkNewConnectionString) and it hands out queued
 * background exceptions. Instead the handle is read through Curator's fields
 * (CuratorZookeeperClient.state, ConnectionState.handleHolder, HandleHolder.getZooKeeper(), which
 * only returns the current handle once the client started); the connected server is the
 * handle's {@code testableRemoteSocketAddress()} while both its state and Curator's {@code
 * isConnected()} say connected (after a lost connection ZooKeeper's state stays CONNECTED while
 * its SendThread waits up to 1 s before the next attempt; Curator's flag drops at the
 * Disconnected event); the list is its
 * ClientCnxn's StaticHostProvider (what {@code updateServerList} changes); {@code cs} is {@code
 * getCurrentConnectionString()}, the ensemble provider's string, which the EnsembleTracker sets.
 * Reflection on classpath classes works on Java 17 without flags.
 *
 * <p>Environment: SESSION_MS (default 6000), HOLD_MS (default 50), LEAD_MS (default 1000), TRACKER (1, the default: the
 * EnsembleTracker on; 0: off). Each line is one O_APPEND write. Exit status: 0 after the close
 * (a client close that takes more than 10 s is abandoned), 1 when not connected within 30 s, 2 on
 * bad arguments.
 */
public final class CuratorReconfigPeer {
    private CuratorReconfigPeer() {}

    /** A log file: one unbuffered write per line. */
    private static final class Log {
        private final FileOutputStream out;

        Log(String path) throws IOException {
            out = new FileOutputStream(path, true);
        }

        synchronized void line(String line) {
            try {
                out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                System.err.println("log write failed: " + e);
            }
        }
    }

    private static long nowUs() {
        Instant i = Instant.now();
        return i.getEpochSecond() * 1_000_000L + i.getNano() / 1_000;
    }

    private static long nowNs() {
        Instant i = Instant.now();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    private static long sequenceOf(String node) {
        int i = node.length();
        while (i > 0 && Character.isDigit(node.charAt(i - 1))) {
            i--;
        }
        return i == node.length() ? -1 : Long.parseLong(node.substring(i));
    }

    private static Field field(Class<?> c, String name) throws NoSuchFieldException {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            try {
                Field f = k.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException e) {
                // look in the superclass
            }
        }
        throw new NoSuchFieldException(c.getName() + "." + name);
    }

    private static String address(SocketAddress a) {
        if (a instanceof InetSocketAddress) {
            InetSocketAddress i = (InetSocketAddress) a;
            String host = i.getAddress() != null ? i.getAddress().getHostAddress() : i.getHostString();
            return host + ":" + i.getPort();
        }
        return String.valueOf(a);
    }

    /** Reads Curator's current ZooKeeper handle and its connection without calling getZooKeeper(). */
    private static final class Probe {
        private final CuratorZookeeperClient zc;
        private final Object handleHolder;
        private final Method holderGetZooKeeper;
        private final Field cnxnField;
        private final Field hostProviderField;
        private final Method remote;

        Probe(CuratorZookeeperClient zc) throws Exception {
            this.zc = zc;
            Object state = field(CuratorZookeeperClient.class, "state").get(zc);
            handleHolder = field(state.getClass(), "handleHolder").get(state);
            holderGetZooKeeper = handleHolder.getClass().getDeclaredMethod("getZooKeeper");
            holderGetZooKeeper.setAccessible(true);
            cnxnField = field(ZooKeeper.class, "cnxn");
            hostProviderField = field(cnxnField.getType(), "hostProvider");
            remote = ZooKeeper.class.getDeclaredMethod("testableRemoteSocketAddress");
            remote.setAccessible(true);
        }

        String sample() {
            String server = "-", list = "?", session = "0x0", state = "NONE";
            try {
                ZooKeeper zk = (ZooKeeper) holderGetZooKeeper.invoke(handleHolder);
                if (zk != null) {
                    ZooKeeper.States s = zk.getState();
                    state = String.valueOf(s);
                    session = "0x" + Long.toHexString(zk.getSessionId());
                    // ZooKeeper's state stays CONNECTED while its SendThread waits (up to 1 s)
                    // before reconnecting; Curator's flag drops at the Disconnected event.
                    if (s != null && s.isConnected() && zc.isConnected()) {
                        SocketAddress a = (SocketAddress) remote.invoke(zk);
                        if (a != null) {
                            server = address(a);
                        }
                    }
                    HostProvider hp = (HostProvider) hostProviderField.get(cnxnField.get(zk));
                    if (hp instanceof StaticHostProvider) {
                        StaticHostProvider shp = (StaticHostProvider) hp;
                        List<String> l = new ArrayList<>();
                        for (int i = 0; i < shp.size(); i++) {
                            InetSocketAddress x = shp.getServerAtIndex(i);
                            if (x != null) {
                                l.add(x.getHostString() + ":" + x.getPort());
                            }
                        }
                        list = String.join(",", l);
                    }
                }
            } catch (Exception e) {
                state = "PROBE-ERROR:" + e.getClass().getSimpleName();
            }
            String cs = zc.getCurrentConnectionString();
            return "server=" + server + " list=" + list + " session=" + session + " state=" + state + " cs="
                    + (cs == null ? "-" : cs.replace(' ', '_'));
        }
    }

    /**
     * One latch of the election (a new one after each rotation); {@code leadingSince} is the
     * System.nanoTime() of its last isLeader(), 0 when it does not lead.
     */
    private static final class Turn {
        final LeaderLatch latch;
        final AtomicLong leadingSince = new AtomicLong();
        private final String name;
        private final Log log;

        private Turn(LeaderLatch latch, String name, Log log) {
            this.latch = latch;
            this.name = name;
            this.log = log;
        }

        static Turn join(CuratorFramework client, String path, String name, Log log) throws Exception {
            LeaderLatch latch = new LeaderLatch(client, path, name);
            Turn turn = new Turn(latch, name, log);
            latch.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                    long t = nowUs();
                    turn.leadingSince.set(Math.max(1, System.nanoTime()));
                    String term = "-1 -1";
                    for (int attempt = 0; attempt < 3 && term.startsWith("-1"); attempt++) {
                        try {
                            String ours = latch.getOurPath();
                            Stat st = ours == null ? null : client.checkExists().forPath(ours);
                            if (st != null) {
                                term = st.getCzxid() + " " + sequenceOf(ours);
                            }
                        } catch (Exception e) {
                            System.err.println(name + ": reading our node: " + e);
                        }
                    }
                    log.line(name + " LEADER " + t + " " + term + (latch.hasLeadership() ? "" : " (hasLeadership=false)"));
                }

                @Override
                public void notLeader() {
                    turn.leadingSince.set(0);
                    log.line(name + " NOTLEADER " + nowUs() + " listener");
                }
            });
            latch.start();
            return turn;
        }

        boolean joined() {
            return latch.getOurPath() != null;
        }

        /**
         * {@code NOTLEADER rotate} (when it leads) before the close, so that the leadership ends in
         * the log before the node goes; a leadership told while the latch closed ends with {@code
         * NOTLEADER retired} once close() returned.
         */
        void retire(Log conn) {
            if (leadingSince.getAndSet(0) != 0) {
                log.line(name + " NOTLEADER " + nowUs() + " rotate");
            }
            try {
                latch.close();
            } catch (Exception e) {
                conn.line(name + " ERR " + nowUs() + " latch close " + String.valueOf(e).replace('\n', ' '));
            }
            if (leadingSince.get() != 0) {
                log.line(name + " NOTLEADER " + nowUs() + " retired");
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 8) {
            System.err.println("usage: CuratorReconfigPeer CONNECT LOCK_PATH LATCH_PATH NAME LOCK_LOG LATCH_LOG CONN_LOG CONTROL_DIR");
            System.exit(2);
        }
        String connect = args[0], lockPath = args[1], latchPath = args[2], name = args[3];
        Log locks = new Log(args[4]);
        Log latchLog = new Log(args[5]);
        Log conn = new Log(args[6]);
        Path closeFile = Paths.get(args[7], name + ".close");
        int sessionMs = Integer.parseInt(System.getenv().getOrDefault("SESSION_MS", "6000"));
        long holdMs = Long.parseLong(System.getenv().getOrDefault("HOLD_MS", "50"));
        long leadMs = Long.parseLong(System.getenv().getOrDefault("LEAD_MS", "1000"));
        boolean track = !"0".equals(System.getenv().getOrDefault("TRACKER", "1"));

        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(Math.min(5_000, sessionMs))
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .ensembleTracker(track)
                .build();
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.err.println(name + ": not connected within 30 s");
            System.exit(1);
        }
        AtomicBoolean stop = new AtomicBoolean(false);

        Probe probe = new Probe(client.getZookeeperClient());
        Thread monitor = new Thread(() -> {
            while (!stop.get()) {
                conn.line(name + " CONN " + nowUs() + " " + probe.sample());
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "monitor");
        monitor.setDaemon(true);
        monitor.start();

        Turn turn = Turn.join(client, latchPath, name, latchLog);
        InterProcessMutex mutex = new InterProcessMutex(client, lockPath);
        Thread contender = new Thread(() -> {
            while (!stop.get()) {
                try {
                    if (mutex.acquire(2, TimeUnit.SECONDS)) {
                        try {
                            locks.line(name + " START " + nowNs());
                            Thread.sleep(holdMs);
                            locks.line(name + " END " + nowNs());
                        } finally {
                            mutex.release();
                        }
                    }
                } catch (Exception e) {
                    conn.line(name + " ERR " + nowUs() + " lock " + String.valueOf(e).replace('\n', ' '));
                    try {
                        Thread.sleep(200);
                    } catch (InterruptedException ie) {
                        return;
                    }
                }
            }
        }, "contender");
        contender.setDaemon(true);
        contender.start();

        long joinBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!turn.joined() && System.nanoTime() < joinBy && !Files.exists(closeFile)) {
            Thread.sleep(10);
        }
        latchLog.line(name + " JOIN " + nowUs() + " java latch");
        while (!Files.exists(closeFile)) {
            long since = turn.leadingSince.get();
            if (since != 0 && System.nanoTime() - since >= TimeUnit.MILLISECONDS.toNanos(leadMs)) {
                turn.retire(conn);
                turn = null;
                while (turn == null) {
                    try {
                        turn = Turn.join(client, latchPath, name, latchLog);
                    } catch (Exception e) {
                        conn.line(name + " ERR " + nowUs() + " latch " + String.valueOf(e).replace('\n', ' '));
                        Thread.sleep(200);
                    }
                }
            }
            Thread.sleep(20);
        }
        stop.set(true);
        contender.join(5_000);
        latchLog.line(name + " CLOSING " + nowUs());
        LeaderLatch latch = turn.latch;
        Thread closer = new Thread(() -> {
            try {
                latch.close();
            } catch (Exception e) {
                System.err.println(name + ": latch close: " + e);
            }
            latchLog.line(name + " CLOSED " + nowUs());
            client.close();
        }, "closer");
        closer.setDaemon(true);
        closer.start();
        closer.join(10_000);
        if (closer.isAlive()) {
            System.err.println(name + ": the close did not finish within 10 s; exiting");
        }
        System.exit(0);
    }
}
