import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.data.Stat;

/**
 * One contender for a Curator lock, used to prove that foreign clients interoperate on a
 * ZooKeeper server (see scripts/foreign-clients.sh).
 *
 * <p>Usage: {@code CuratorMutexContender CONNECT LOCK_PATH NAME ITERATIONS HOLD_MS LOG_FILE
 * [mutex|semaphore]}
 *
 * <p>Each iteration acquires the lock ({@link InterProcessMutex} or {@link
 * InterProcessSemaphoreMutex}), appends {@code NAME START <epoch nanos>} to LOG_FILE, holds the
 * lock for HOLD_MS, appends {@code NAME END <epoch nanos>} and releases. Every line is a single
 * O_APPEND write, so several processes can share LOG_FILE. The clock is the wall clock, shared
 * with the other contenders (Python's {@code time.time_ns()}).
 *
 * <p>With the environment variable CONTENDER_LOG_NODE=1 the START line is {@code NAME START
 * <epoch nanos> <lock node> <queue id>}, so that check_overlap.py --fifo can check that grants
 * follow the queue (sequence) order. The lock node is the sequential node this grant was made
 * to: for the mutex, our lock node ({@code getLockPath()}, protected in Curator 5.4, hence the
 * subclass), checked to be the first of {@code getParticipantNodes()} (the holder); for the
 * semaphore mutex, whose lease node Curator does not expose, the first lease of {@code
 * LOCK_PATH/leases} in sequence order (with one lease, every other lease node was created
 * later, by the next waiter). The queue id is the czxid of the node's parent: the parent is a
 * container, which the server deletes when it is empty, and a re-created parent starts its
 * sequence numbers at 0 again.
 *
 * <p>Start barrier (optional): if the environment variable CONTENDER_READY_DIR is set, the
 * contender creates the file {@code NAME} in it once connected, then waits for the file named by
 * CONTENDER_GO_FILE to exist before contending, so that all contenders really compete.
 *
 * <p>Exit status: 0 on success, 1 on any error, 2 on bad arguments.
 */
public final class CuratorMutexContender {
    private static final long BARRIER_TIMEOUT_MS = 120_000;
    private static final long ACQUIRE_TIMEOUT_S = 120;

    private CuratorMutexContender() {}

    /** Curator's InterProcessMutex, with its protected lock path made visible. */
    private static final class NodeMutex extends InterProcessMutex {
        NodeMutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String heldNode() throws Exception {
            String ours = getLockPath();
            Collection<String> participants = getParticipantNodes();
            String first = participants.isEmpty() ? null : participants.iterator().next();
            if (ours == null || !ours.equals(first)) {
                throw new IllegalStateException(
                        "holder's lock node " + ours + " is not the first participant: " + participants);
            }
            return ours;
        }
    }

    /** The sequence number at the end of a sequential node's name. */
    private static long sequenceOf(String node) {
        int i = node.length();
        while (i > 0 && Character.isDigit(node.charAt(i - 1))) {
            i--;
        }
        if (node.length() - i < 10) {
            throw new IllegalStateException("not a sequential node: " + node);
        }
        return Long.parseLong(node.substring(i));
    }

    /** The czxid of the parent of our node (it cannot be deleted while our node exists). */
    private static long queueId(CuratorFramework client, String node) throws Exception {
        Stat stat = client.checkExists().forPath(ZKPaths.getPathAndNode(node).getPath());
        if (stat == null) {
            throw new IllegalStateException("the parent of our lock node " + node + " does not exist");
        }
        return stat.getCzxid();
    }

    /** The semaphore mutex's lease node: the first lease in sequence order. */
    private static String heldLease(CuratorFramework client, String lockPath) throws Exception {
        String leases = ZKPaths.makePath(lockPath, "leases");
        List<String> children = new ArrayList<>(client.getChildren().forPath(leases));
        if (children.isEmpty()) {
            throw new IllegalStateException("no lease node under " + leases + " while holding the lock");
        }
        children.sort(Comparator.comparingLong(CuratorMutexContender::sequenceOf));
        return ZKPaths.makePath(leases, children.get(0));
    }

    private static long nowNanos() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    private static void append(FileOutputStream out, String line) throws IOException {
        // FileOutputStream is unbuffered: one write(2) per call, on an O_APPEND descriptor.
        out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    }

    private static void barrier(String name) throws Exception {
        String readyDir = System.getenv("CONTENDER_READY_DIR");
        String goFile = System.getenv("CONTENDER_GO_FILE");
        if (readyDir == null || readyDir.isEmpty() || goFile == null || goFile.isEmpty()) {
            return;
        }
        Files.write(Paths.get(readyDir, name), new byte[0]);
        Path go = Paths.get(goFile);
        long deadline = System.currentTimeMillis() + BARRIER_TIMEOUT_MS;
        while (!Files.exists(go)) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException(name + ": no go signal within " + BARRIER_TIMEOUT_MS + " ms");
            }
            Thread.sleep(10);
        }
    }

    public static void main(String[] args) {
        if (args.length < 6 || args.length > 7) {
            System.err.println(
                    "usage: CuratorMutexContender CONNECT LOCK_PATH NAME ITERATIONS HOLD_MS LOG_FILE [mutex|semaphore]");
            System.exit(2);
        }
        String connect = args[0];
        String lockPath = args[1];
        String name = args[2];
        int iterations = Integer.parseInt(args[3]);
        long holdMs = Long.parseLong(args[4]);
        String logFile = args[5];
        String kind = args.length == 7 ? args[6] : "mutex";
        if (!kind.equals("mutex") && !kind.equals("semaphore")) {
            System.err.println("lock kind must be mutex or semaphore, got " + kind);
            System.exit(2);
        }

        boolean logNode = "1".equals(System.getenv("CONTENDER_LOG_NODE"));
        int status = 0;
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(30_000)
                .connectionTimeoutMs(15_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 10))
                .build();
        try (FileOutputStream out = new FileOutputStream(logFile, true)) {
            client.start();
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(name + ": could not connect to " + connect);
            }
            NodeMutex mutex = kind.equals("mutex") ? new NodeMutex(client, lockPath) : null;
            InterProcessLock lock = mutex != null ? mutex : new InterProcessSemaphoreMutex(client, lockPath);
            barrier(name);
            for (int i = 0; i < iterations; i++) {
                if (!lock.acquire(ACQUIRE_TIMEOUT_S, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(name + ": lock not acquired within " + ACQUIRE_TIMEOUT_S + " s");
                }
                try {
                    if (logNode) {
                        String node = mutex != null ? mutex.heldNode() : heldLease(client, lockPath);
                        long queue = queueId(client, node);
                        append(out, name + " START " + nowNanos() + " " + node + " " + queue);
                    } else {
                        append(out, name + " START " + nowNanos());
                    }
                    Thread.sleep(holdMs);
                    append(out, name + " END " + nowNanos());
                } finally {
                    lock.release();
                }
            }
        } catch (Exception e) {
            System.err.println(name + ": " + e);
            e.printStackTrace();
            status = 1;
        } finally {
            client.close();
        }
        System.exit(status);
    }
}
