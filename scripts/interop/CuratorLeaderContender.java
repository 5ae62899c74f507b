import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.data.Stat;

/**
 * One Curator 5.4 leader-election participant, for the interop proof with ours
 * (scripts/leader-interop.sh; the Rust side is examples/leader_contender.rs, same log format,
 * checked by scripts/interop/check_leaders.py).
 *
 * <p>Usage: {@code CuratorLeaderContender CONNECT latch|selector PATH NAME LOG CONTROL_DIR
 * [HOLD_MIN_MS HOLD_MAX_MS]}
 *
 * <p>{@code NAME JOIN <us> java latch|selector} is logged once our node is among the
 * participants. latch: a {@link LeaderLatch} with id NAME; its {@link LeaderLatchListener} logs {@code NAME
 * LEADER <us> <czxid of getOurPath()> <sequence>} (after checking {@code hasLeadership()}) and
 * {@code NAME NOTLEADER <us> listener}. selector: a {@link LeaderSelector} (Standard policy: {@link
 * LeaderSelectorListenerAdapter}, auto-requeue) whose takeLeadership logs {@code NAME START <us>
 * <czxid> <sequence>} (its own {@code lock-} node: the first child, whose data is NAME), holds for
 * a random HOLD_MIN_MS..HOLD_MAX_MS (default 200..800) unless interrupted, and logs {@code NAME
 * END <us>}. When CONTROL_DIR/NAME.close appears the participant logs {@code NAME CLOSING <us>},
 * closes, logs {@code NAME CLOSED <us>} and exits 0. Times: microseconds since the epoch ({@link
 * Instant#now()}). Each line is one O_APPEND write. The session timeout is SESSION_MS (env,
 * default 4000).
 */
public final class CuratorLeaderContender {
    private CuratorLeaderContender() {}

    private static FileOutputStream out;

    private static synchronized void log(String line) {
        try {
            out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            System.err.println("log write failed: " + e);
        }
    }

    private static long nowUs() {
        Instant i = Instant.now();
        return i.getEpochSecond() * 1_000_000L + i.getNano() / 1_000;
    }

    private static long sequenceOf(String node) {
        int i = node.length();
        while (i > 0 && Character.isDigit(node.charAt(i - 1))) {
            i--;
        }
        return i == node.length() ? -1 : Long.parseLong(node.substring(i));
    }

    /** The first node under path (election order: by sequence), if its data is id: "czxid seq". */
    private static String firstNodeOf(CuratorFramework client, String path, String id) throws Exception {
        List<String> kids = client.getChildren().forPath(path);
        kids.sort((a, b) -> Long.compare(sequenceOf(a), sequenceOf(b)));
        for (String k : kids) {
            Stat st = new Stat();
            byte[] data;
            try {
                data = client.getData().storingStatIn(st).forPath(ZKPaths.makePath(path, k));
            } catch (org.apache.zookeeper.KeeperException.NoNodeException e) {
                continue;
            }
            if (new String(data, StandardCharsets.UTF_8).equals(id)) {
                return st.getCzxid() + " " + sequenceOf(k);
            }
            return "-1 -1";
        }
        return "-1 -1";
    }

    interface ParticipantsSource {
        java.util.Collection<org.apache.curator.framework.recipes.leader.Participant> get() throws Exception;
    }

    /** Waits (30 s at most) until our node is among the participants, so JOIN means queued. */
    private static void awaitJoined(ParticipantsSource ps, String id) throws Exception {
        long end = System.nanoTime() + 30_000_000_000L;
        while (System.nanoTime() < end) {
            for (org.apache.curator.framework.recipes.leader.Participant p : ps.get()) {
                if (p.getId().equals(id)) {
                    return;
                }
            }
            Thread.sleep(5);
        }
        throw new IllegalStateException(id + ": not among the participants within 30 s");
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6 && args.length != 8) {
            System.err.println(
                    "usage: CuratorLeaderContender CONNECT latch|selector PATH NAME LOG CONTROL_DIR [HOLD_MIN_MS HOLD_MAX_MS]");
            System.exit(2);
        }
        String connect = args[0], mode = args[1], path = args[2], name = args[3];
        out = new FileOutputStream(args[4], true);
        java.nio.file.Path closeFile = Paths.get(args[5], name + ".close");
        long holdMin = args.length == 8 ? Long.parseLong(args[6]) : 200;
        long holdMax = args.length == 8 ? Long.parseLong(args[7]) : 800;
        int sessionMs = Integer.parseInt(System.getenv().getOrDefault("SESSION_MS", "4000"));
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(15_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        client.start();
        if (!client.blockUntilConnected(30, java.util.concurrent.TimeUnit.SECONDS)) {
            System.err.println(name + ": not connected");
            System.exit(1);
        }
        if (mode.equals("latch")) {
            LeaderLatch latch = new LeaderLatch(client, path, name);
            latch.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                    long t = nowUs();
                    String term = "-1 -1";
                    try {
                        String ours = latch.getOurPath();
                        Stat st = ours == null ? null : client.checkExists().forPath(ours);
                        if (st != null) {
                            term = st.getCzxid() + " " + sequenceOf(ours);
                        }
                    } catch (Exception e) {
                        System.err.println(name + ": reading our node: " + e);
                    }
                    log(name + " LEADER " + t + " " + term + (latch.hasLeadership() ? "" : " (hasLeadership=false)"));
                }

                @Override
                public void notLeader() {
                    log(name + " NOTLEADER " + nowUs() + " listener");
                }
            });
            latch.start();
            awaitJoined(() -> latch.getParticipants(), name);
            log(name + " JOIN " + nowUs() + " java latch");
            while (!Files.exists(closeFile)) {
                Thread.sleep(20);
            }
            log(name + " CLOSING " + nowUs());
            latch.close();
            log(name + " CLOSED " + nowUs());
        } else if (mode.equals("selector")) {
            LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework c) throws Exception {
                    long t = nowUs();
                    String term = firstNodeOf(c, path, name);
                    log(name + " START " + t + " " + term);
                    try {
                        Thread.sleep(ThreadLocalRandom.current().nextLong(holdMin, holdMax + 1));
                    } finally {
                        log(name + " END " + nowUs());
                    }
                }
            });
            selector.setId(name);
            selector.autoRequeue();
            selector.start();
            awaitJoined(() -> selector.getParticipants(), name);
            log(name + " JOIN " + nowUs() + " java selector");
            while (!Files.exists(closeFile)) {
                Thread.sleep(20);
            }
            log(name + " CLOSING " + nowUs());
            selector.close();
            log(name + " CLOSED " + nowUs());
        } else {
            System.err.println("MODE must be latch or selector: " + mode);
            System.exit(2);
        }
        client.close();
        System.exit(0);
    }
}
