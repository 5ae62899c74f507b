import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * One reader or writer of a Curator {@link InterProcessReadWriteLock}, used to prove that
 * foreign clients interoperate on a ZooKeeper server (see scripts/foreign-clients.sh).
 *
 * <p>Usage: {@code CuratorRwContender CONNECT LOCK_PATH NAME ITERATIONS HOLD_MS LOG_FILE
 * read|write}
 *
 * <p>Each iteration acquires the read or the write lock, appends {@code NAME START <epoch
 * nanos>} to LOG_FILE, holds the lock for HOLD_MS, appends {@code NAME END <epoch nanos>} and
 * releases: the log format of CuratorMutexContender, checked by {@code check_overlap.py --rw}
 * (readers may overlap readers; a writer overlaps nobody). No downgrade is attempted: Debian's
 * Curator is 5.4, which has the downgrade bug CURATOR-621.
 *
 * <p>Start barrier (optional): as in CuratorMutexContender (CONTENDER_READY_DIR,
 * CONTENDER_GO_FILE).
 *
 * <p>Exit status: 0 on success, 1 on any error, 2 on bad arguments.
 */
public final class CuratorRwContender {
    private static final long BARRIER_TIMEOUT_MS = 120_000;
    private static final long ACQUIRE_TIMEOUT_S = 120;

    private CuratorRwContender() {}

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
        if (args.length != 7) {
            System.err.println(
                    "usage: CuratorRwContender CONNECT LOCK_PATH NAME ITERATIONS HOLD_MS LOG_FILE read|write");
            System.exit(2);
        }
        String connect = args[0];
        String lockPath = args[1];
        String name = args[2];
        int iterations = Integer.parseInt(args[3]);
        long holdMs = Long.parseLong(args[4]);
        String logFile = args[5];
        String kind = args[6];
        if (!kind.equals("read") && !kind.equals("write")) {
            System.err.println("lock kind must be read or write, got " + kind);
            System.exit(2);
        }

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
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, lockPath);
            InterProcessMutex lock = kind.equals("read") ? rw.readLock() : rw.writeLock();
            barrier(name);
            for (int i = 0; i < iterations; i++) {
                if (!lock.acquire(ACQUIRE_TIMEOUT_S, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(name + ": lock not acquired within " + ACQUIRE_TIMEOUT_S + " s");
                }
                try {
                    append(out, name + " START " + nowNanos());
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
